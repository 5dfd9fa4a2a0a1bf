// A replicated redis Cache under a fault test, in its namespace on the real
// node(s): what every scenario asks of it. Its writer runs in a client Pod and
// writes through the client Service, a new connection per write, and logs
// which writes the server acknowledged; its role sampler (testenv's) asks every
// instance, and every other address on the host, whether it is a master.
import { spawn } from 'node:child_process';
import type { EventsV1Event, V1Pod } from '@kubernetes/client-node';
import { Kinds, type KubeClient } from '@regulon/client';
import {
  eventTimeline,
  eventually,
  instancePodsOf,
  localImageCatalog,
  podServerPid,
  startRoleSampler,
  type OpenSession,
  type RoleSampler,
  type TestEnv,
} from '@regulon/testenv';
import { Cache, type CacheObject } from '../api.ts';
import { clientPod, cond, kubectlIn } from './real-node.ts';

/** One write of the writer: its key and number, when it finished (ms), whether the server acknowledged it, and what came back. */
export interface Write {
  key: string;
  n: number;
  at: number;
  acked: boolean;
  reply: string;
}

/** A writer under way (redisUnderTest().startWriter). */
export interface RedisWriter {
  /** Every write so far, in order. */
  writes(): readonly Write[];
  /** Resolves with every write once the writer has written for its time. */
  done(): Promise<Write[]>;
  waitForAcks(n: number, timeoutMs: number): Promise<unknown>;
  /** The first write acknowledged after `ms` (epoch ms). */
  waitForAckAfter(ms: number, timeoutMs: number): Promise<Write>;
  /** Stops reading (the script in the Pod runs out its time); the writes so far. */
  stop(): Promise<readonly Write[]>;
}

const parseWrite = (line: string, prefix: string): Write => {
  const [n, at, ...words] = line.split(' ');
  const reply = words.join(' ');
  return { key: `${prefix}${n}`, n: Number(n), at: Number(at), acked: reply === 'OK', reply };
};

/** Every instance replicating: the status describes the spec, Ready, and each instance primary or linked. */
export const settled = (c: CacheObject, replicas = 3): boolean =>
  c.status?.observedGeneration === c.metadata.generation &&
  cond(c, 'Ready')?.status === 'True' &&
  cond(c, 'ReplicationHealthy')?.status === 'True' &&
  c.status?.instances?.length === replicas &&
  (c.status?.instances ?? []).every((i) => i.state === 'Primary' || i.state === 'Linked');

/** The longest time between two acknowledged writes. */
export function longestGap(acked: readonly Write[]): number {
  let gap = 0;
  for (let i = 1; i < acked.length; i++) gap = Math.max(gap, acked[i]!.at - acked[i - 1]!.at);
  return gap;
}

/**
 * Where the longest run without an acknowledged write lies, relative to `since` (epoch ms), and
 * what the writes inside it got back: what a failed bound on the gap needs to say why.
 */
export function describeLongestGap(writes: readonly Write[], since: number): string {
  let from = 0;
  let to = 0;
  let last: Write | undefined;
  for (const w of writes) {
    if (!w.acked) continue;
    if (last && w.at - last.at > to - from) [from, to] = [last.at, w.at];
    last = w;
  }
  const replies = new Map<string, number>();
  for (const w of writes)
    if (!w.acked && w.at > from && w.at < to) replies.set(w.reply, (replies.get(w.reply) ?? 0) + 1);
  const seconds = (ms: number) => `${ms >= since ? '+' : ''}${((ms - since) / 1000).toFixed(1)} s`;
  return (
    `${to - from} ms from ${seconds(from)} to ${seconds(to)}; the writes in it got ` +
    ([...replies].map(([reply, n]) => `${reply} ×${n}`).join(', ') || 'nothing')
  );
}

/** Whether a process is redis's server (its argv[0] is `redis-server <address>`). */
export const isRedisServer = (argv: string[]): boolean => /redis-server/.test(argv[0] ?? '');

/** Opens one redis connection (from the host, as the manager does), or throws. */
async function connectRedis(host: string, password: string, timeoutMs = 1000) {
  const { createClient } = await import('redis');
  const c = createClient({
    socket: { host, port: 6379, connectTimeout: timeoutMs, reconnectStrategy: false },
    password,
    disableClientInfo: true,
  });
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

/** Asks one instance a command, on a connection of its own. */
export async function askRedis(host: string, args: string[], password: string): Promise<unknown> {
  const c = await connectRedis(host, password);
  try {
    return await c.sendCommand(args, { timeout: 1000 });
  } finally {
    c.destroy();
  }
}

/**
 * The sampler's question to redis: ROLE. A master counts as writable even
 * while it refuses writes for want of replicas (NOREPLICAS), so the count of
 * writable instances is never too low. destroy() drops the socket at once.
 */
export const redisSessions =
  (password: string): OpenSession =>
  async (ip, _name, broken) => {
    const { createClient } = await import('redis');
    const c = createClient({
      socket: { host: ip, port: 6379, connectTimeout: 500, reconnectStrategy: false },
      password,
      disableClientInfo: true,
    });
    c.on('error', broken);
    try {
      await c.connect();
    } catch (err) {
      c.destroy();
      throw err;
    }
    return {
      ask: async () => {
        const reply = await c.sendCommand<unknown[]>(['ROLE']);
        return { role: String(reply[0]) === 'master' ? 'writable' : 'read-only' };
      },
      destroy: () => c.destroy(),
    };
  };

/** What an address that is not one of this Cache's instances answers: another password, or no redis. */
const NOT_THIS_CACHE = /WRONGPASS|NOAUTH|without any password configured|ECONNREFUSED|EHOSTUNREACH/i;

/**
 * A replicated redis Cache `name` in namespace `ns`, and the tools a fault scenario uses on it;
 * `clientPodName` names the Pod the writer runs in.
 */
export function redisUnderTest(
  env: TestEnv,
  client: KubeClient,
  ns: string,
  name: string,
  clientPodName = `${name}-client`,
) {
  const caches = () => client.resource<CacheObject>(Cache.type);
  const pods = () => client.resource<V1Pod>(Kinds.Pod);
  const get = () => caches().get(name, { namespace: ns });
  const kubectl = kubectlIn(env, ns);
  const clientName = clientPodName;
  let password: string | undefined;
  /** The generated password, from the Cache's credentials Secret (read once). */
  const secret = async () => {
    if (password === undefined) {
      const sec = await client.resource(Kinds.Secret).get(`${name}-credentials`, { namespace: ns });
      password = Buffer.from(sec.data!['password']!, 'base64').toString('utf8');
    }
    return password;
  };
  /** Runs a bash script in the client Pod, with REDISCLI_AUTH set from the Cache's Secret. */
  const inClient = (script: string, timeout?: number) =>
    kubectl(
      ['exec', clientName, '--', 'bash', '-c', `set -u; export REDISCLI_AUTH="$PASSWORD"\n${script}`],
      timeout,
    );

  const s = {
    ns,
    name,
    pod: (ordinal: number) => `${name}-${ordinal}`,
    get,
    kubectl,
    password: secret,
    inClient,
    /** The Cache once its status describes its spec and `check` holds. */
    until: (what: string, check: (c: CacheObject) => boolean, timeoutMs = 180_000) =>
      eventually(
        what,
        async () => {
          const c = await get();
          return c.status?.observedGeneration === c.metadata.generation && check(c) ? c : undefined;
        },
        timeoutMs,
        250,
      ).catch(async (err: Error) => {
        const c = await get().catch(() => undefined);
        const conditions = (c?.status?.conditions ?? []).map(
          (x) => `${x.type}=${x.status} ${x.reason}: ${x.message}`,
        );
        const instances = (c?.status?.instances ?? []).map((i) => `${i.name} ${i.role} ${i.state}`);
        err.message += `\nstatus: primary ${c?.status?.currentPrimary}; ${instances.join(', ')}\n${conditions.join('\n')}`;
        throw err;
      }),
    nodeOf: async (pod: string) => (await pods().get(pod, { namespace: ns })).spec?.nodeName,
    uidOf: async (pod: string) => (await pods().get(pod, { namespace: ns })).metadata!.uid!,
    ipOf: async (pod: string) => (await pods().get(pod, { namespace: ns })).status!.podIP!,
    ask: async (host: string, args: string[]) => askRedis(host, args, await secret()),
    /** ROLE's first word: `master` or `slave`. */
    roleOf: async (host: string) => String(((await s.ask(host, ['ROLE'])) as unknown[])[0]),

    /** Three instances with auth and the default failover delay, settled; the client Pod running. */
    async create(): Promise<CacheObject> {
      const ready = await s.createCache();
      await s.startClient();
      return ready;
    },
    /** The Cache alone: three instances with auth and the default failover delay, settled. */
    async createCache(): Promise<CacheObject> {
      await caches().create(
        Cache.object({
          metadata: { name, namespace: ns },
          spec: {
            engine: 'redis',
            version: (await localImageCatalog()).redis![0]!.version,
            mode: 'replicated',
            replicas: 3,
            memory: '64Mi',
            maxMemoryPercent: 50,
            auth: {},
          },
        }),
      );
      return s.until('three instances replicating', (c) => settled(c), 240_000);
    },

    /** The client Pod the writer runs in, with the binding Secret's host, port and password; running. */
    async startClient(): Promise<void> {
      const fromSecret = (key: string) => ({
        name: key.toUpperCase(),
        valueFrom: { secretKeyRef: { name: `${name}-credentials`, key } },
      });
      await pods().create(clientPod(clientName, ns, ['host', 'port', 'password'].map(fromSecret)));
      await eventually(
        'the client Pod running',
        async () => (await pods().get(clientName, { namespace: ns })).status?.phase === 'Running',
        120_000,
        250,
      );
    },

    /** Starts sampling every instance's role; `samplers` stops it at the scenario's end, whatever happens. */
    async sampler(samplers: RoleSampler[]): Promise<RoleSampler> {
      const sampler = await startRoleSampler({
        listInstances: async (signal) =>
          instancePodsOf(
            (
              await pods().list({
                namespace: ns,
                labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/component=cache`,
                signal,
              })
            ).items,
            name,
          ),
        open: redisSessions(await secret()),
        notThisSet: NOT_THIS_CACHE,
      });
      samplers.push(sampler);
      return sampler;
    },

    /**
     * The writer: for `seconds`, a new connection per write through the client Service, one line
     * per write, read as it comes.
     */
    startWriter(seconds: number, prefix = 'w'): RedisWriter {
      const child = spawn(
        env.controlPlane.state.kubectl,
        [
          '--kubeconfig',
          env.kubeconfigPath,
          '-n',
          ns,
          'exec',
          clientName,
          '--',
          'bash',
          '-c',
          `set -u; export REDISCLI_AUTH="$PASSWORD"
end=$(( $(date +%s) + ${seconds} )); i=0
while [ "$(date +%s)" -lt "$end" ]; do
  i=$((i + 1))
  out=$(timeout 1 redis-cli --no-auth-warning -h "$HOST" -p "$PORT" SET ${prefix}$i $i 2>&1 | head -n1)
  echo "$i $(date +%s%3N) \${out:-timeout}"
done`,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      const writes: Write[] = [];
      let partial = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop()!;
        for (const line of lines) if (line) writes.push(parseWrite(line, prefix));
      });
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const done = new Promise<Write[]>((resolve, reject) =>
        child.on('close', (code) => {
          if (partial) writes.push(parseWrite(partial, prefix));
          if (code === 0) resolve(writes);
          else reject(new Error(`the writer exited ${code}: ${stderr.trim().slice(-300)}`));
        }),
      );
      done.catch(() => {});
      const acked = () => writes.filter((w) => w.acked);
      return {
        writes: () => writes,
        done: () => done,
        waitForAcks: (n, timeoutMs) =>
          eventually(`${n} writes acknowledged`, () => Promise.resolve(acked().length >= n), timeoutMs, 100),
        waitForAckAfter: (ms, timeoutMs) =>
          eventually(
            `a write acknowledged after +${ms}`,
            () => Promise.resolve(acked().find((w) => w.at > ms)),
            timeoutMs,
            100,
          ),
        stop: () => {
          child.kill();
          return done.catch(() => writes);
        },
      };
    },
    /** The writer for `seconds`, all its writes once it ends. */
    writeFor: (seconds: number, prefix = 'w'): Promise<Write[]> => s.startWriter(seconds, prefix).done(),
    /** How many of the writes' keys one instance holds, asked 500 at a time. */
    async present(host: string, writes: readonly Write[]): Promise<number> {
      let n = 0;
      for (let i = 0; i < writes.length; i += 500)
        n += Number(await s.ask(host, ['EXISTS', ...writes.slice(i, i + 500).map((w) => w.key)]));
      return n;
    },
    /** The acknowledged writes the current primary lacks. */
    async lost(writes: readonly Write[]): Promise<Write[]> {
      const primary = (await get()).status!.currentPrimary!;
      const ip = await s.ipOf(primary);
      const missing: Write[] = [];
      const acked = writes.filter((w) => w.acked);
      for (let i = 0; i < acked.length; i += 500) {
        const batch = acked.slice(i, i + 500);
        const found = (await s.ask(ip, ['MGET', ...batch.map((w) => w.key)])) as Array<string | null>;
        batch.forEach((w, j) => {
          if (found[j] === null) missing.push(w);
        });
      }
      return missing;
    },
    /** The host PID of the redis server of the Pod with uid `uid`, once it runs (this host sees every node's processes). */
    server: (uid: string) =>
      eventually("redis's server", () => Promise.resolve(podServerPid(uid, isRedisServer))),
    /** The namespace's Events since a moment, as `+seconds object reason: message`: what a slow failover did. */
    timeline: async (fromMs: number): Promise<string> =>
      eventTimeline(
        (await client.resource<EventsV1Event>(Kinds.Event).list({ namespace: ns })).items,
        fromMs,
      ),
    /** Whether the Cache's Ready condition says every instance serves. */
    ready: (c: CacheObject) => cond(c, 'Ready')?.status === 'True',
  };
  return s;
}

export type RedisUnderTest = ReturnType<typeof redisUnderTest>;
