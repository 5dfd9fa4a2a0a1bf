// The Cache controller against real engines on the real node (Debian's redis
// and memcached through the image catalog), each reached from a client Pod by
// the Service DNS name its binding Secret gives, with the password from that
// Secret: auth is enforced, the engine's memory limit is the one the spec
// asks for, the eviction policy evicts (or refuses) when full, a persistent
// redis keeps its data across its Pod's deletion, and Ready follows whether
// the server answers, and a server that cannot start says why in the status.
// Figures are printed as test diagnostics:
//   npx regulon-testenv exec -- npx node --test apps/cache-controller/src/engines.integration.test.ts
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { V1EnvVar, V1Pod } from '@kubernetes/client-node';
import { KubeClient, Kinds, type KubeObject } from '@regulon/client';
import { ImageCatalog } from '@regulon/image-catalog';
import { type Manager, testManager } from '@regulon/runtime';
import { eventually, localImageCatalog, start, type TestEnv } from '@regulon/testenv';
import { Cache, type CacheObject } from './api.ts';
import { clientPod, cond, kubectlIn, serviceTargets } from './testing/real-node.ts';
import { setupCacheController } from './index.ts';

const CLIENT_POD = 'client';
/** A redis version the test's catalog maps to the memcached image: a wrong image, whose redis-server is missing. */
const WRONG_IMAGE_VERSION = '0.0.1';
const MiB = 2 ** 20;

/**
 * The Caches under test, each with the prefix of the client Pod's env vars
 * that carry its binding Secret (`<PREFIX>_HOST`, `_PORT`, `_PASSWORD`).
 * The two redis that get filled have the CRD's smallest memory and
 * percentage (32Mi × 10%), so that filling them takes a few thousand keys.
 */
const CACHES = {
  lru: { env: 'LRU', engine: 'redis', memory: '32Mi', maxMemoryPercent: 10 },
  noevict: {
    env: 'NOEVICT',
    engine: 'redis',
    memory: '32Mi',
    maxMemoryPercent: 10,
    evictionPolicy: 'noeviction',
  },
  persist: {
    env: 'PERSIST',
    engine: 'redis',
    memory: '64Mi',
    maxMemoryPercent: 50,
    persistence: { enabled: true, size: '64Mi' },
  },
  mc: { env: 'MC', engine: 'memcached', memory: '64Mi', maxMemoryPercent: 50 },
} as const;
type CacheName = keyof typeof CACHES;

/** What the spec asks of the engine, computed here from the spec's own numbers: limit × percent / 100. */
const expectedMaxBytes = (name: CacheName): number => {
  const c = CACHES[name];
  return Math.floor((Number(c.memory.replace('Mi', '')) * MiB * c.maxMemoryPercent) / 100);
};

/** Keys of 1 KiB written when filling a redis: well past 3.2 MiB of maxmemory. */
const FILL_KEYS = 8000;

/**
 * Shell functions the client Pod's scripts share. `r CACHE args` runs redis-cli
 * against that Cache's Service with its password (from the env, never a
 * command line); `r_noauth` without one. `fill CACHE` writes FILL_KEYS keys
 * k1..kN of 1 KiB and prints how many writes were refused for memory.
 * `mc_session [N]` sends its stdin to memcached and prints the replies up to
 * the Nth END (default 1) or an error (memcached keeps an unauthenticated connection open, so the end
 * of the reply, not of the connection, is what it waits for).
 */
const PRELUDE = [
  'set -u',
  'exec 2>&1',
  'r() { local h=$1_HOST p=$1_PORT pw=$1_PASSWORD; shift; REDISCLI_AUTH="${!pw}" redis-cli --no-auth-warning -h "${!h}" -p "${!p}" "$@"; }',
  'r_noauth() { local h=$1_HOST p=$1_PORT; shift; redis-cli -h "${!h}" -p "${!p}" "$@"; }',
  'fill() {',
  "  local v; v=$(head -c 1024 /dev/zero | tr '\\0' x)",
  `  for i in $(seq ${FILL_KEYS}); do echo "SET k$i $v"; done | r "$1" 2>&1 | grep -c 'OOM command not allowed' || true`,
  '}',
  'mc_session() {',
  '  local ends=${1:-1}',
  '  exec 3<>"/dev/tcp/$MC_HOST/$MC_PORT"',
  '  cat >&3',
  '  local line',
  '  while IFS= read -r -t 5 line <&3; do',
  "    line=${line%$'\\r'}",
  '    echo "$line"',
  '    case $line in END) ((--ends > 0)) || break ;; *ERROR*) break ;; esac',
  '  done',
  '  exec 3<&-',
  '}',
  '',
].join('\n');

const isReady = (c: CacheObject) =>
  c.status?.observedGeneration === c.metadata.generation && cond(c, 'Ready')?.status === 'True';
/** A value of INFO's output (`name:value` lines). */
const info = (out: string, field: string): number => {
  const m = new RegExp(`^${field}:(\\d+)`, 'm').exec(out);
  assert.ok(m, `${field} in INFO: ${out}`);
  return Number(m[1]);
};

describe('Cache on real redis and memcached', { timeout: 6 * 60_000 }, () => {
  let env: TestEnv;
  /** The redis version the real node's image serves. */
  let redisVersion: string;
  let client: KubeClient;
  let mgr: Manager;
  let running: Promise<void>;
  let ns: string;
  /** When the first Cache was created. */
  let createdAt: number;
  const caches = () => client.resource<CacheObject>(Cache.type);
  const pods = () => client.resource<V1Pod>(Kinds.Pod);
  const get = (name: CacheName) => caches().get(name, { namespace: ns });

  const kubectl = (args: string[]) => kubectlIn(env, ns)(args);
  /** Runs `script` (after PRELUDE) in the client Pod; its output, and the exit status of the script. */
  const inClient = async (script: string): Promise<{ out: string; code: number }> => {
    try {
      return { out: await kubectl(['exec', CLIENT_POD, '--', 'bash', '-c', PRELUDE + script]), code: 0 };
    } catch (err) {
      const e = err as { code?: unknown; stdout?: string };
      // A number is the script's exit status; anything else (kubectl missing, a timeout) is not an answer.
      if (typeof e.code !== 'number') throw err;
      return { out: e.stdout ?? '', code: e.code };
    }
  };
  const ok = async (script: string): Promise<string> => {
    const { out, code } = await inClient(script);
    assert.equal(code, 0, `client script failed (${code}): ${out}`);
    return out;
  };

  const until = (name: CacheName, what: string, check: (c: CacheObject) => boolean, timeoutMs = 120_000) =>
    eventually(
      `Cache ${name}: ${what}`,
      async () => {
        const c = await get(name);
        return check(c) && c;
      },
      timeoutMs,
      200,
    );
  /** The Cache's Pod, once a Ready one other than `notUid` runs. */
  const readyPod = (name: CacheName, notUid?: string) =>
    eventually(
      `a Ready Pod of Cache ${name}`,
      async () => {
        const list = await pods().list({
          namespace: ns,
          labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/component=cache`,
        });
        return list.items.find(
          (p) =>
            p.metadata?.uid !== notUid &&
            !p.metadata?.deletionTimestamp &&
            p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
      },
      120_000,
      200,
    );

  /** Waits until the Cache's client Service sends connections to this Pod, and to no other. */
  const serviceRoutesTo = (name: CacheName, pod: V1Pod) =>
    eventually(
      `Service ${name} routing to Pod ${pod.metadata?.name} (${pod.metadata?.uid})`,
      async () => {
        const ready = await serviceTargets(client, ns, name);
        return ready.length === 1 && ready[0] === pod.metadata?.uid;
      },
      60_000,
      200,
    );

  before(async () => {
    env = await start({ realNodes: 1 });
    await env.installCRDs([Cache.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 100, burst: 200 });
    ns = await env.newNamespace('engines', { realNode: true });
    const local = await localImageCatalog();
    const version = (engine: 'redis' | 'memcached') => local[engine]![0]!.version;
    redisVersion = version('redis');
    mgr = testManager(env.kubeConfig, { namespace: ns });
    const catalog = {
      ...local,
      // Oldest first, as a catalog must be.
      redis: [{ version: WRONG_IMAGE_VERSION, image: local['memcached']![0]!.image }, ...local['redis']!],
    };
    setupCacheController(mgr, { imageCatalog: ImageCatalog.fromDocument(catalog, 'testenv images') });
    running = mgr.start();
    createdAt = Date.now();
    for (const [name, { env: _prefix, ...spec }] of Object.entries(CACHES)) {
      await caches().create(
        Cache.object({
          metadata: { name, namespace: ns },
          // `auth: {}` asks for a generated password (enabled defaults to true).
          spec: { version: version(spec.engine), replicas: 1, auth: {}, ...spec },
        }),
      );
    }
  });
  after(async () => {
    mgr?.stop();
    await running;
    client?.close();
    await env?.stop();
  });

  test('every Cache turns Ready, and its server then answers through its Service with the generated password', async (t) => {
    for (const name of Object.keys(CACHES) as CacheName[]) {
      await until(name, 'Ready', isReady, 180_000);
      t.diagnostic(`${name}: created to Ready in ${((Date.now() - createdAt) / 1000).toFixed(1)} s`);
    }
    // The client gets each Cache's host, port and password from the Cache's own Secret.
    const clientEnv: V1EnvVar[] = [];
    for (const [name, { env: prefix, engine }] of Object.entries(CACHES)) {
      const secretName = (await get(name as CacheName)).status?.binding?.name;
      assert.equal(secretName, `${name}-credentials`);
      const key = (suffix: string, k: string) => ({
        name: `${prefix}_${suffix}`,
        valueFrom: { secretKeyRef: { name: secretName, key: k } },
      });
      clientEnv.push(key('HOST', 'host'), key('PORT', 'port'), key('PASSWORD', 'password'));
      if (engine === 'memcached') clientEnv.push(key('USER', 'username'));
    }
    await pods().create(clientPod(CLIENT_POD, ns, clientEnv));
    await eventually(
      'the client Pod running',
      async () => (await pods().get(CLIENT_POD, { namespace: ns })).status?.phase === 'Running',
      120_000,
      200,
    );
    const hosts = await ok('echo "$LRU_HOST $MC_HOST"');
    assert.equal(hosts.trim(), `lru.${ns}.svc mc.${ns}.svc`);
    // The Service's data path follows Pod readiness by a moment the Cache cannot see: the
    // EndpointSlice, then kube-proxy's rules on the node (CI once saw a Ready Cache's Service
    // still refuse). A refused connection is waited out; any answer is taken as it is, and it
    // must come from the Pod that was Ready when the Cache said so, not from a restart since.
    const readyPods = new Map<CacheName, V1Pod>();
    for (const name of Object.keys(CACHES) as CacheName[]) readyPods.set(name, await readyPod(name));
    const asked = Date.now();
    const mcSession = `printf 'set auth 0 0 %d\\r\\n%s %s\\r\\nversion\\r\\nget nothing\\r\\n' "$(( \${#MC_USER} + 1 + \${#MC_PASSWORD} ))" "$MC_USER" "$MC_PASSWORD" | mc_session`;
    const answers = await eventually(
      'every Cache answering through its Service (not refused)',
      async () => {
        const { out } = await inClient(
          `for c in LRU NOEVICT PERSIST; do echo "$c: $(r $c PING | tr '\\n' ' ')"; done; echo "MC: $(${mcSession} | tr '\\n' ' ')"`,
        );
        return !/refused/i.test(out) && out;
      },
      30_000,
      250,
    );
    t.diagnostic(
      `Services answering ${((Date.now() - asked) / 1000).toFixed(1)} s after the last Cache was Ready`,
    );
    const lines = answers.split('\n').map((l) => l.trim());
    assert.deepEqual(lines.slice(0, 3), ['LRU: PONG', 'NOEVICT: PONG', 'PERSIST: PONG'], answers);
    assert.match(lines[3] ?? '', /^MC: STORED VERSION 1\.6\.\d+ END$/, answers);
    for (const [name, was] of readyPods) {
      const now = await pods().get(was.metadata!.name!, { namespace: ns });
      assert.equal(now.metadata?.uid, was.metadata?.uid, `${name}: its Pod was replaced`);
      const restarts = (p: V1Pod) =>
        p.status?.containerStatuses?.reduce((n, s) => n + s.restartCount, 0) ?? 0;
      assert.equal(restarts(now), restarts(was), `${name}: its server restarted`);
    }
  });

  test('redis refuses a client without the password (NOAUTH) or with a wrong one, and serves the generated one', async () => {
    const out = await ok(
      [
        // Stderr too, on one line: redis-cli reports a failed AUTH there before it sends the command.
        'echo "none: $(r_noauth LRU SET probe-none 1 2>&1 | tr "\\n" " ")"',
        'echo "wrong: $(REDISCLI_AUTH=not-the-password redis-cli --no-auth-warning -h "$LRU_HOST" -p "$LRU_PORT" PING 2>&1 | tr "\\n" " ")"',
        'echo "other cache\'s: $(REDISCLI_AUTH="$NOEVICT_PASSWORD" redis-cli --no-auth-warning -h "$LRU_HOST" -p "$LRU_PORT" PING 2>&1 | tr "\\n" " ")"',
        'echo "right: $(r LRU SET probe 1) $(r LRU GET probe)"',
        'echo "stored unauthenticated: $(r LRU EXISTS probe-none)"',
      ].join('\n'),
    );
    assert.match(out, /^none: (\(error\) )?NOAUTH Authentication required/m);
    assert.match(out, /^wrong: .*WRONGPASS/m);
    assert.doesNotMatch(out, /^wrong: .*PONG/m);
    assert.match(out, /^other cache's: .*WRONGPASS/m);
    assert.doesNotMatch(out, /^other cache's: .*PONG/m);
    assert.match(out, /^right: OK 1$/m);
    assert.match(out, /^stored unauthenticated: 0$/m);
  });

  test('redis maxmemory is memory × maxMemoryPercent / 100, with the policy the spec names', async (t) => {
    for (const [name, policy] of [
      ['lru', 'allkeys-lru'],
      ['noevict', 'noeviction'],
      ['persist', 'allkeys-lru'],
    ] as const) {
      const out = await ok(
        `r ${CACHES[name].env} CONFIG GET maxmemory; r ${CACHES[name].env} CONFIG GET maxmemory-policy`,
      );
      assert.deepEqual(out.trim().split('\n'), [
        'maxmemory',
        String(expectedMaxBytes(name)),
        'maxmemory-policy',
        policy,
      ]);
      t.diagnostic(`${name}: maxmemory ${expectedMaxBytes(name)} bytes, ${policy}`);
    }
  });

  test('allkeys-lru: filling past maxmemory evicts keys and refuses no write', async (t) => {
    const out = await ok(
      // One INFO for the counts after the fill: redis evicts before running any command while it is
      // over maxmemory, reads included, so a DBSIZE after an INFO stats could count keys evicted since.
      `echo "before $(r LRU DBSIZE)"; echo "refused $(fill LRU)"; r LRU INFO stats memory keyspace`,
    );
    const evicted = info(out, 'evicted_keys');
    const used = info(out, 'used_memory');
    const before = Number(/^before (\d+)/m.exec(out)?.[1]);
    const kept = Number(/^db0:keys=(\d+)/m.exec(out)?.[1] ?? 0);
    t.diagnostic(
      `lru: ${FILL_KEYS} keys of 1 KiB written, ${evicted} evicted, ${kept} kept, used_memory ${used} of ${expectedMaxBytes('lru')}`,
    );
    assert.match(out, /^refused 0$/m);
    assert.ok(evicted > 0, `no key evicted: ${out}`);
    assert.ok(kept < FILL_KEYS, `all ${FILL_KEYS} keys kept: ${out}`);
    // Every accepted write is either still there or counted as evicted: nothing vanished otherwise.
    // (Which keys go is not asserted: redis samples keys on a one-second LRU clock, and the whole
    // fill takes less than that, so even the newest key can be the one evicted, as CI once saw.)
    assert.equal(kept + evicted, before + FILL_KEYS, `kept + evicted = keys before + written: ${out}`);
    assert.ok(used <= expectedMaxBytes('lru') * 1.05, `used_memory ${used} well above maxmemory`);
  });

  test('noeviction: filling past maxmemory refuses writes with OOM and evicts nothing', async (t) => {
    const out = await ok(
      `echo "refused $(fill NOEVICT)"; r NOEVICT INFO stats | grep evicted_keys; echo "dbsize $(r NOEVICT DBSIZE)"; echo "first $(r NOEVICT EXISTS k1)"; echo "now: $(r NOEVICT SET one-more x)"`,
    );
    const refused = Number(/^refused (\d+)/m.exec(out)?.[1]);
    const kept = Number(/^dbsize (\d+)/m.exec(out)?.[1]);
    t.diagnostic(`noevict: ${FILL_KEYS} writes, ${kept} stored, ${refused} refused with OOM`);
    assert.ok(refused > 0, `no write refused: ${out}`);
    assert.equal(kept + refused, FILL_KEYS, 'every write either stored or refused');
    assert.equal(info(out, 'evicted_keys'), 0);
    assert.match(out, /^first 1$/m);
    assert.match(out, /^now: OOM command not allowed when used memory > 'maxmemory'/m);
  });

  test('persistent redis keeps a key across its Pod being deleted; a redis without persistence loses it', async (t) => {
    await ok(
      'r PERSIST SET survivor kept >/dev/null; r LRU FLUSHALL >/dev/null; r LRU SET survivor kept >/dev/null',
    );
    const [persistPod, lruPod] = [await readyPod('persist'), await readyPod('lru')];
    const deleted = Date.now();
    await Promise.all([
      pods().delete(persistPod.metadata!.name!, { namespace: ns }),
      pods().delete(lruPod.metadata!.name!, { namespace: ns }),
    ]);
    const [newPersist, newLru] = await Promise.all([
      readyPod('persist', persistPod.metadata!.uid),
      readyPod('lru', lruPod.metadata!.uid),
    ]);
    // Pod Ready comes before the Service's endpoints follow it; only then does the Service name reach the new server.
    await Promise.all([serviceRoutesTo('persist', newPersist), serviceRoutesTo('lru', newLru)]);
    // EndpointSlices follow first; kube-proxy rewrites the node's rules after them, and until it
    // has, a connection to the Service can still go to the old Pod's address (refused).
    await eventually(
      'both Services reach their new servers',
      async () => {
        const { out } = await inClient('echo "persist $(r PERSIST PING)"; echo "lru $(r LRU PING)"');
        return /^persist PONG$/m.test(out) && /^lru PONG$/m.test(out);
      },
      60_000,
      500,
    );
    t.diagnostic(
      `both Pods deleted to replacements Ready and served by their Services: ${((Date.now() - deleted) / 1000).toFixed(1)} s`,
    );
    // The StatefulSet's Pod keeps its name, on the same volume.
    assert.equal(newPersist.metadata?.name, persistPod.metadata?.name);
    await until('persist', 'Ready again', isReady);
    await until('lru', 'Ready again', isReady);
    const out = await ok('echo "persist: $(r PERSIST GET survivor)"; echo "lru: $(r LRU EXISTS survivor)"');
    assert.match(out, /^persist: kept$/m);
    assert.match(out, /^lru: 0$/m);
  });

  test('memcached refuses a client without or with wrong credentials, and its memory limit is the spec’s', async (t) => {
    const auth = (user: string, password: string) =>
      `printf 'set auth 0 0 %d\\r\\n%s %s\\r\\n' "$(( \${#${user}} + 1 + \${#${password}} ))" "$${user}" "$${password}"`;
    const out = await ok(
      [
        // Each refused session on one line: whatever memcached answered, and nothing more.
        `echo "none: $(printf 'stats settings\\r\\n' | mc_session | tr '\\n' ' ')"`,
        `WRONG=not-the-password; echo "wrong: $({ ${auth('MC_USER', 'WRONG')}; printf 'stats settings\\r\\n'; } | mc_session | tr '\\n' ' ')"`,
        // The binary protocol, which has no ASCII auth: a STAT request (magic 0x80, opcode 0x10) gets no bytes back.
        `exec 4<>"/dev/tcp/$MC_HOST/$MC_PORT"; printf '\\x80\\x10' >&4; head -c 22 /dev/zero >&4; echo "binary: $(timeout 2 head -c 64 <&4 | wc -c) bytes"`,
        `{ ${auth('MC_USER', 'MC_PASSWORD')}; printf 'stats settings\\r\\nstats\\r\\n'; } | mc_session 2`,
      ].join('\n'),
    );
    assert.match(out, /^none: CLIENT_ERROR unauthenticated $/m);
    assert.match(out, /^binary: 0 bytes$/m);
    // memcached 1.6.18 answers a wrong password as it answers none (and counts it in auth_errors).
    assert.match(out, /^wrong: CLIENT_ERROR [a-z ]+$/m);
    assert.match(out, /^STORED$/m, 'the generated credentials authenticate');
    assert.match(out, /^STAT auth_enabled_ascii \/run\/memcached\/auth$/m);
    const stat = (name: string) => {
      const m = new RegExp(`^STAT ${name} (\\d+)$`, 'm').exec(out);
      assert.ok(m, `STAT ${name} in: ${out}`);
      return Number(m[1]);
    };
    assert.ok(stat('auth_errors') >= 1, 'the wrong password counted as an auth error');
    t.diagnostic(
      `mc: maxbytes ${stat('maxbytes')}, limit_maxbytes ${stat('limit_maxbytes')} (spec: ${CACHES.mc.memory} × ${CACHES.mc.maxMemoryPercent}%); auth_cmds ${stat('auth_cmds')}, auth_errors ${stat('auth_errors')}`,
    );
    assert.equal(stat('maxbytes'), expectedMaxBytes('mc'));
    assert.equal(stat('limit_maxbytes'), expectedMaxBytes('mc'));
  });

  test('Ready follows the server: a redis that stops answering turns the Cache not Ready, and Ready again once it answers', async (t) => {
    // CLIENT PAUSE ALL holds every command, the readiness probe's too, as a hung server would.
    const PAUSE_MS = 30_000;
    await ok(`r NOEVICT CLIENT PAUSE ${PAUSE_MS} ALL`);
    const paused = Date.now();
    const stalled = await inClient(
      'REDISCLI_AUTH="$NOEVICT_PASSWORD" timeout 2 redis-cli --no-auth-warning -h "$NOEVICT_HOST" -p "$NOEVICT_PORT" PING',
    );
    assert.notEqual(stalled.code, 0, `the paused server answered: ${stalled.out}`);
    const notReady = await until(
      'noevict',
      'not Ready while paused',
      (c) => cond(c, 'Ready')?.status === 'False',
      PAUSE_MS,
    );
    const lostAfterMs = Date.now() - paused;
    assert.ok(lostAfterMs < PAUSE_MS, 'not Ready while the server is still paused');
    assert.equal(cond(notReady, 'Ready')?.reason, 'ReplicasNotReady');
    await until('noevict', 'Ready again', isReady, 60_000);
    t.diagnostic(
      `noevict paused: not Ready after ${(lostAfterMs / 1000).toFixed(1)} s, Ready again ${((Date.now() - paused - PAUSE_MS) / 1000).toFixed(1)} s after the pause ended`,
    );
    assert.equal((await ok('r NOEVICT PING')).trim(), 'PONG');
  });

  test('a server that cannot start: Degraded InstanceFailing with the line of its log that says why, a Warning Event, not Ready; the right image heals it', async (t) => {
    await caches().create(
      Cache.object({
        metadata: { name: 'wrong', namespace: ns },
        spec: {
          engine: 'redis',
          version: WRONG_IMAGE_VERSION,
          replicas: 1,
          memory: '32Mi',
          maxMemoryPercent: 50,
          auth: {},
        },
      }),
    );
    const created = Date.now();
    const failing = await eventually(
      'Cache wrong Degraded InstanceFailing',
      async () => {
        const c = await caches().get('wrong', { namespace: ns });
        return cond(c, 'Degraded')?.reason === 'InstanceFailing' ? c : undefined;
      },
      180_000,
      500,
    );
    const message = cond(failing, 'Degraded')!.message ?? '';
    t.diagnostic(`after ${((Date.now() - created) / 1000).toFixed(1)} s: ${message}`);
    // The container's own last words, not only the kubelet's: the shell found no redis-server in that image.
    assert.match(message, /^Instance wrong-[a-z0-9-]+: .*redis-server: not found/);
    assert.equal(cond(failing, 'Ready')?.status, 'False');
    assert.equal(cond(failing, 'Stalled')?.status ?? 'False', 'False', 'a fixed image heals it: not stalled');
    await eventually('a Warning Event InstanceFailing on wrong', async () => {
      const events = await client
        .resource<
          KubeObject & { reason?: string; type?: string; note?: string; regarding?: { name?: string } }
        >(Kinds.Event)
        .list({ namespace: ns });
      return (
        events.items.some(
          (e) =>
            e.type === 'Warning' &&
            e.reason === 'InstanceFailing' &&
            e.regarding?.name === 'wrong' &&
            /redis-server: not found/.test(e.note ?? ''),
        ) || undefined
      );
    });
    // The right image heals it: Ready, and Degraded gone.
    await caches().patch('wrong', { spec: { version: redisVersion } }, { type: 'merge', namespace: ns });
    await eventually(
      'Cache wrong Ready on the right image',
      async () => {
        const c = await caches().get('wrong', { namespace: ns });
        return isReady(c) && cond(c, 'Degraded')?.status === 'False' ? c : undefined;
      },
      120_000,
      500,
    );
    await caches().delete('wrong', { namespace: ns });
  });
});
