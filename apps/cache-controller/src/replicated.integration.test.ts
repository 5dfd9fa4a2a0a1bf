// A replicated redis Cache on the real node (Debian's redis through the image
// catalog): one primary behind the client Service, replicas behind `-ro`, and
// the manager's failover when the primary's Pod is deleted under a write load.
// A writer in a client Pod writes through the client Service; a sampler on
// the host asks every instance's ROLE every 200 ms. Each instance's agent
// publishes redis's metrics, scraped from the host (a memcached Cache beside it
// too, in the Prometheus scenario). Figures (outage, keys
// lost, time until every instance replicates again) are test diagnostics:
//   npx regulon-testenv exec -- npx node --test apps/cache-controller/src/replicated.integration.test.ts
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import { ImageCatalog } from '@regulon/image-catalog';
import { type Manager, testManager } from '@regulon/runtime';
import {
  cutOffFromApiServer,
  cutOffFromPods,
  cutPodOffFrom,
  eventually,
  loadImagesIntoRealNode,
  localImageCatalog,
  podPids,
  podServerPid,
  podSandboxPid,
  start,
  type TestEnv,
} from '@regulon/testenv';
import { apiServerAddresses, startManagerProcess, stopManagerProcess } from '@regulon/conventions';
import { Cache, type CacheObject } from './api.ts';
import { cond, kubectlIn, serviceTargets } from './testing/real-node.ts';
import { setupCacheController } from './index.ts';
import { ensureManagerImage } from '../../../tools/manager-image/image.ts';
import { MEMCACHED_DASHBOARD, REDIS_DASHBOARD } from '../../../tools/scripts/engine-dashboards.ts';
import {
  assertNoneFiring,
  checkEngineDashboard,
  describeCost,
  scrapeCost,
  untilFiring,
  untilNoneFiring,
  watchInstances,
} from '../../../tools/monitoring/instances.ts';
import { MEMCACHED_METRICS_PORT, REDIS_METRICS_PORT } from './metrics.ts';
import { ENGINE_DEFAULTS } from './versions.ts';
import { REDIS_QUORUM_COMMAND, REDIS_ROLE_COMMAND } from './replication/agent.ts';
import {
  askRedis,
  isRedisServer,
  describeLongestGap,
  longestGap,
  redisUnderTest,
  settled as settledWith,
  type RedisUnderTest,
  type Write,
} from './testing/redis-under-test.ts';
import { parsePrometheusText, sampleValue } from '../../../packages/runtime/src/testing/prometheus.ts';

const CLIENT_POD = 'client';
const NAME = 'sessions';
/** A memcached Cache beside it, whose instances the Prometheus scenario scrapes too. */
const MEMCACHED = 'pages';
const MEMCACHED_REPLICAS = 2;
const REPLICAS = 3;
/** How long the writer writes; the primary's Pod is deleted WRITER_WARMUP_S into it. */
const WRITER_SECONDS = 70;
const WRITER_WARMUP_S = 8;
/** The Cache fails over after this long (spec.replication.failoverDelaySeconds). */
const FAILOVER_DELAY_S = 10;
/** How long the partition scenario cuts the manager off: twice the failover delay. */
const PARTITION_S = 2 * FAILOVER_DELAY_S;
/** The group a manager process runs in when a test cuts it off from the Pods (see cutOffFromPods). */
const CUT_OFF_GID = 64_244;
/** How long the API-server scenario keeps the API server from the manager and the instances. */
const API_OUTAGE_S = 60;

const settled = (c: CacheObject) => settledWith(c, REPLICAS);

/**
 * One memcached session from this host (the real node's Pod addresses are routed here): the login
 * memcached's --auth-file asks for (`set` of "user password"), then `commands`, then quit; the
 * whole answer after the login's STORED.
 */
async function askMemcached(host: string, user: string, password: string, commands: string): Promise<string> {
  const socket = connect(ENGINE_DEFAULTS.memcached.port, host);
  socket.setTimeout(5_000, () => socket.destroy(new Error(`memcached at ${host}: no answer in 5 s`)));
  const token = Buffer.from(`${user} ${password}`);
  socket.write(`set auth 0 0 ${token.length}\r\n${token.toString()}\r\n${commands}quit\r\n`);
  let answer = '';
  for await (const chunk of socket) answer += String(chunk);
  assert.match(answer, /^STORED\r\n/, `memcached at ${host} accepted the login: ${answer.slice(0, 80)}`);
  return answer.slice('STORED\r\n'.length);
}
const readyPod = (p: V1Pod) =>
  !p.metadata?.deletionTimestamp &&
  (p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false);

describe('replicated redis on the real node', { timeout: 15 * 60_000 }, () => {
  let env: TestEnv;
  let client: KubeClient;
  let mgr: Manager;
  let running: Promise<void>;
  let ns: string;
  let password: string;
  let catalogDocument: unknown;
  let agentImage: string | undefined;
  const caches = () => client.resource<CacheObject>(Cache.type);
  const pods = () => client.resource<V1Pod>(Kinds.Pod);
  const get = () => caches().get(NAME, { namespace: ns });
  const instancePods = async () =>
    (
      await pods().list({
        namespace: ns,
        labelSelector: `app.kubernetes.io/instance=${NAME},app.kubernetes.io/component=cache`,
      })
    ).items;

  const kubectl = (args: string[], timeout?: number) => kubectlIn(env, ns)(args, timeout);
  /** The reasons of the Events about the Cache (events.k8s.io/v1, as the runtime writes them). */
  const eventReasons = async () =>
    (
      await kubectl([
        'get',
        'events.events.k8s.io',
        '-o',
        'jsonpath={range .items[*]}{.regarding.kind}/{.regarding.name} {.reason}{"\\n"}{end}',
      ])
    )
      .split('\n')
      .filter((line) => line.startsWith(`Cache/${NAME} `))
      .map((line) => line.split(' ')[1]!);
  /** The Cache under the faults: its writer, sampler and questions to the instances (testing/redis-under-test.ts). */
  let cache: RedisUnderTest;
  const inClient = (script: string, timeout?: number) => cache.inClient(script, timeout);
  const ask = (host: string, args: string[], secret?: string) =>
    secret === undefined ? cache.ask(host, args) : askRedis(host, args, secret);
  const roleOf = async (host: string, secret?: string) =>
    secret === undefined
      ? cache.roleOf(host)
      : String(((await askRedis(host, ['ROLE'], secret)) as unknown[])[0]);
  const writeFor = (seconds: number) => cache.writeFor(seconds);
  const present = (host: string, writes: Write[]) => cache.present(host, writes);
  /** The role sampler, its summary as the scenarios read it: two masters in one round is a split brain. */
  const sampleRoles = async () => {
    const sampler = await cache.sampler([]);
    return {
      async stop() {
        const summary = await sampler.stop();
        return {
          rounds: summary.rounds,
          splitBrains: summary.splitBrainRounds.map(
            (r) => `${new Date(r.atMs).toISOString()}: ${r.writable.join(', ')}`,
          ),
          masters: [...new Set(summary.writableSequence)],
        };
      },
    };
  };
  /** A manager with this suite's options in a process of its own, in the group the partitions match. */
  const managerProcess = () =>
    startManagerProcess(
      new URL('./testing/manager-process.ts', import.meta.url),
      {
        kubeconfigPath: env.kubeconfigPath,
        namespace: ns,
        options: { catalog: catalogDocument, instanceAgentImage: agentImage },
      },
      CUT_OFF_GID,
    );
  /** The primary Lease comes to name `primary`: its agent holds and renews it. */
  const leaseFollows = (primary: string) =>
    eventually(
      `the primary Lease naming ${primary}`,
      async () =>
        (await client.resource(Kinds.Lease).get(`${NAME}-primary`, { namespace: ns })).spec
          ?.holderIdentity === primary,
      30_000,
      200,
    );
  const startManager = () => {
    mgr = testManager(env.kubeConfig, { namespace: ns });
    setupCacheController(mgr, {
      imageCatalog: ImageCatalog.fromDocument(catalogDocument, 'testenv images'),
      instanceAgentImage: agentImage,
    });
    running = mgr.start();
  };
  before(async () => {
    env = await start({ realNodes: 1 });
    await env.installCRDs([Cache.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 100, burst: 200 });
    ns = await env.newNamespace('replicated', { realNode: true });
    cache = redisUnderTest(env, client, ns, NAME, CLIENT_POD);
    const local = await localImageCatalog();
    catalogDocument = local;
    // The instances run under the instance agent, copied from the manager image.
    const image = await ensureManagerImage();
    loadImagesIntoRealNode(env.controlPlane.state.dir, [image]);
    agentImage = image.ref;
    startManager();
    await caches().create(
      Cache.object({
        metadata: { name: NAME, namespace: ns },
        spec: {
          engine: 'redis',
          version: local.redis![0]!.version,
          mode: 'replicated',
          replicas: REPLICAS,
          memory: '64Mi',
          maxMemoryPercent: 50,
          auth: {},
          replication: { failoverDelaySeconds: FAILOVER_DELAY_S },
        },
      }),
    );
    await caches().create(
      Cache.object({
        metadata: { name: MEMCACHED, namespace: ns },
        spec: {
          engine: 'memcached',
          version: local.memcached![0]!.version,
          replicas: MEMCACHED_REPLICAS,
          memory: '64Mi',
          maxMemoryPercent: 75,
          auth: {},
        },
      }),
    );
  });
  after(async () => {
    mgr?.stop();
    await running;
    client?.close();
    await env?.stop();
  });

  test('3 instances turn Ready; writes through the client Service reach every replica; -ro selects the replicas only', async (t) => {
    const createdAt = Date.now();
    const c = await eventually(
      'the replicated Cache Ready with every replica linked',
      async () => settled(await get()) && get(),
      240_000,
      250,
    );
    t.diagnostic(
      `created to Ready with ${REPLICAS} linked instances in ${((Date.now() - createdAt) / 1000).toFixed(1)} s`,
    );
    const primary = c.status?.currentPrimary;
    assert.ok(primary, 'status.currentPrimary');
    const secret = await client.resource(Kinds.Secret).get(`${NAME}-credentials`, { namespace: ns });
    password = Buffer.from(secret.data!['password']!, 'base64').toString('utf8');
    assert.ok(!JSON.stringify(c.status).includes(password), 'no password in the status');

    await cache.startClient();

    // A write through the client Service (the binding Secret's host) lands on the primary...
    assert.equal(
      (await inClient('redis-cli --no-auth-warning -h "$HOST" -p "$PORT" SET greeting hello')).trim(),
      'OK',
    );
    // ...and is on every instance, each asked directly.
    const list = await instancePods();
    assert.equal(list.length, REPLICAS);
    for (const p of list) {
      const ip = p.status!.podIP!;
      await eventually(
        `greeting replicated to ${p.metadata!.name}`,
        async () => (await ask(ip, ['GET', 'greeting'])) === 'hello',
        30_000,
        200,
      );
      assert.equal(await roleOf(ip), p.metadata!.name === primary ? 'master' : 'slave');
    }
    // A replica refuses writes: the -ro Service is for reads. kube-proxy writes a Service's rules a
    // moment after its endpoints, and refuses connections to it until then (CI: "Connection
    // refused" once the Cache said Ready in 9 s): asked until the Service answers at all.
    const ro = await eventually(
      `${NAME}-ro answering`,
      () =>
        inClient(
          `redis-cli --no-auth-warning -h ${NAME}-ro -p "$PORT" SET nope 1 2>&1; redis-cli --no-auth-warning -h ${NAME}-ro -p "$PORT" GET greeting`,
        ),
      30_000,
      500,
    );
    assert.match(ro, /READONLY/);
    assert.match(ro, /^hello$/m);
    const replicaUids = list
      .filter((p) => p.metadata!.name !== primary)
      .map((p) => p.metadata!.uid)
      .sort();
    const primaryUid = list.find((p) => p.metadata!.name === primary)!.metadata!.uid;
    await eventually(
      '-ro routing to the replicas only',
      async () =>
        JSON.stringify(await serviceTargets(client, ns, `${NAME}-ro`)) === JSON.stringify(replicaUids),
      30_000,
      200,
    );
    await eventually(
      'the client Service routing to the primary only',
      async () => JSON.stringify(await serviceTargets(client, ns, NAME)) === JSON.stringify([primaryUid]),
      30_000,
      200,
    );
    // Each instance runs under the instance agent, and the primary's holds the primary Lease.
    for (const p of list)
      assert.match(p.spec!.containers[0]!.command!.join(' '), /agent\.mjs .*--lease sessions-primary/);
    await leaseFollows(primary);
    // The agent's two questions, asked in each container as the agent asks them: the role of each,
    // and on the primary every instance in touch, of the count the topology records.
    const inContainer = async (pod: string, command: string) =>
      (await kubectl(['exec', pod, '-c', 'redis', '--', 'sh', '-c', command])).trim();
    for (const p of list)
      assert.equal(
        await inContainer(p.metadata!.name!, REDIS_ROLE_COMMAND),
        p.metadata!.name === primary ? 'primary' : 'replica',
      );
    assert.equal(await inContainer(primary, REDIS_QUORUM_COMMAND), `${REPLICAS} ${REPLICAS}`);
  });

  test("each instance's agent publishes redis's metrics on the metrics port: redis_exporter's series with the instance's role, the primary's replicas and their offsets, each replica's link; every scrape answers, its cost reported", async (t) => {
    assert.ok(password, 'the first test ran');
    const c = await eventually('settled', async () => settled(await get()) && get());
    const primary = c.status!.currentPrimary!;
    const list = await instancePods();
    const scrape = async (ip: string) => {
      const res = await fetch(`http://${ip}:${REDIS_METRICS_PORT}/metrics`, {
        signal: AbortSignal.timeout(5_000),
      });
      assert.equal(res.status, 200);
      return res.text();
    };
    for (const p of list) {
      const name = p.metadata!.name!;
      const role = name === primary ? 'primary' : 'replica';
      assert.ok(
        p.spec!.containers[0]!.ports!.some(
          (x) => x.name === 'metrics' && x.containerPort === REDIS_METRICS_PORT,
        ),
        `${name} names its metrics port`,
      );
      const text = await scrape(p.status!.podIP!);
      assert.equal(sampleValue(parsePrometheusText(text), 'redis_up', { role }), 1, `${name}: redis_up`);
      assert.ok(
        sampleValue(parsePrometheusText(text), 'redis_db_keys', { db: 'db0', role }) >= 1,
        `${name} holds the greeting`,
      );
      assert.match(
        text,
        new RegExp(`^regulon_instance_primary_lease_held ${role === 'primary' ? 1 : 0}$`, 'm'),
      );
      if (role === 'primary') {
        assert.equal(
          sampleValue(parsePrometheusText(text), 'redis_connected_slaves', { role }),
          REPLICAS - 1,
        );
        const offset = sampleValue(parsePrometheusText(text), 'redis_master_repl_offset', { role });
        // One series per replica, each online and at most the primary's own offset. (The address
        // is the one the replica connected from, which the Service's routing may rewrite.)
        const offsets = text
          .split('\n')
          .filter((l) => l.startsWith('redis_connected_slave_offset_bytes{'))
          .map((l) => ({ online: l.includes('slave_state="online"'), offset: Number(l.split(' ').at(-1)) }));
        assert.equal(offsets.length, REPLICAS - 1, `a series per replica:\n${text}`);
        for (const r of offsets) assert.ok(r.online && r.offset <= offset, JSON.stringify(r));
      } else {
        assert.equal(
          sampleValue(parsePrometheusText(text), 'redis_master_link_up', { role }),
          1,
          `${name}'s link to ${primary}`,
        );
      }
    }
    // What a scrape costs: the engine read it reports, and the agent's memory before and after.
    const primaryPod = list.find((p) => p.metadata!.name === primary)!;
    const cost = await scrapeCost(
      primaryPod.metadata!.uid!,
      `http://${primaryPod.status!.podIP!}:${REDIS_METRICS_PORT}/metrics`,
      50,
    );
    // Every scrape answered: its read of redis finished within the agent's limit. How long the
    // reads took is reported, not bounded here: under CI's load (three engine suites at once) a
    // fork of a client takes hundreds of ms, which says nothing of the agent.
    assert.equal(cost.unanswered, 0, `every scrape answered: ${cost.readsMs.join(', ')} ms`);
    t.diagnostic(`metrics: ${list.length} instances scraped; of ${primary}, ${describeCost(cost)}`);
  });

  test("a plain Prometheus with deploy/'s kubernetes_sd scrape job and the shipped instance alerts finds every instance by its labels and port name: redis_up 1 on each, one primary, its replicas online, a memcached Cache's instances beside them with the hit ratio they served, no alert, every panel of both dashboards with data; the primary filled past maxmemory fires RegulonRedisEvicting, which resolves once the keys go", async (t) => {
    assert.ok(password, 'the first test ran');
    const c = await eventually('settled', async () => settled(await get()) && get());
    // deploy/'s job as it is, told where the API server is and which namespace to look in (this
    // test's, so that other files' Pods stay out).
    // The shipped instance alerts with their `for` at 5 s (watchInstances).
    const prometheus = await watchInstances(env.kubeconfigPath, ns);
    const primary = c.status!.currentPrimary!;
    const primaryIp = (await instancePods()).find((p) => p.metadata!.name === primary)!.status!.podIP!;
    const FILLER = 'regulon-test-filler:';
    const removeFiller = () =>
      askRedis(
        primaryIp,
        [
          'EVAL',
          "for _, k in ipairs(redis.call('KEYS', KEYS[1] .. '*')) do redis.call('DEL', k) end",
          '1',
          FILLER,
        ],
        password,
      );
    try {
      const started = Date.now();
      const up = await eventually(
        'every instance scraped through kubernetes_sd',
        async () => {
          const r = await prometheus.query('redis_up{job="regulon-instances"} == 1');
          return r.length === REPLICAS && r;
        },
        60_000,
        500,
      );
      const byPod: Record<string, string | undefined> = {};
      for (const s of up) byPod[s.metric['pod'] ?? ''] = s.metric['role'];
      assert.deepEqual(
        byPod,
        Object.fromEntries(
          c.status!.instances!.map((i) => [
            i.name,
            i.name === c.status!.currentPrimary ? 'primary' : 'replica',
          ]),
        ),
        'one series per Pod, with its role',
      );
      assert.ok(
        up.every((s) => s.metric['namespace'] === ns && s.metric['owner'] === NAME),
        'namespace and owner on every series',
      );
      const online = await prometheus.query(
        `redis_connected_slave_offset_bytes{slave_state="online", pod="${c.status!.currentPrimary}"}`,
      );
      assert.equal(online.length, REPLICAS - 1, 'the primary lists its replicas online');
      const scraped = (Date.now() - started) / 1000;
      // The memcached Cache beside it: each instance found by the same job, without a role.
      const pages = await eventually(
        'the memcached Cache Ready',
        async () => {
          const m = await caches().get(MEMCACHED, { namespace: ns });
          return (
            m.status?.observedGeneration === m.metadata.generation && cond(m, 'Ready')?.status === 'True' && m
          );
        },
        120_000,
      ).catch(async (err: unknown) => {
        // Why not: its conditions and its Pods' containers, as the API says them.
        const m = await caches().get(MEMCACHED, { namespace: ns });
        const list = await pods().list({
          namespace: ns,
          labelSelector: `app.kubernetes.io/instance=${MEMCACHED}`,
        });
        throw new Error(
          `${(err as Error).message}: ${JSON.stringify(m.status?.conditions)}; ${JSON.stringify(
            list.items.map((p) => [
              p.metadata!.name,
              p.status?.initContainerStatuses,
              p.status?.containerStatuses,
            ]),
          )}`,
        );
      });
      const mcUp = await eventually(
        'every memcached instance scraped',
        async () => {
          const r = await prometheus.query(
            `memcached_up{job="regulon-instances", owner="${MEMCACHED}"} == 1`,
          );
          return r.length === MEMCACHED_REPLICAS && r;
        },
        60_000,
        500,
      );
      assert.ok(
        mcUp.every((x) => x.metric['role'] === undefined && x.metric['namespace'] === ns),
        `memcached's series carry no role: ${JSON.stringify(mcUp.map((x) => x.metric))}`,
      );
      // Through its login, on each instance: a set, two gets that hit and one that misses.
      const mcSecret = await client.resource(Kinds.Secret).get(`${MEMCACHED}-credentials`, { namespace: ns });
      const decode = (key: string) => Buffer.from(mcSecret.data![key]!, 'base64').toString('utf8');
      const mcPods = (
        await pods().list({ namespace: ns, labelSelector: `app.kubernetes.io/instance=${MEMCACHED}` })
      ).items.filter(readyPod);
      assert.equal(mcPods.length, MEMCACHED_REPLICAS, `${pages.metadata.name}'s ready Pods`);
      for (const p of mcPods) {
        const answer = await askMemcached(
          p.status!.podIP!,
          decode('username'),
          decode('password'),
          'set greeting 0 0 5\r\nhello\r\nget greeting\r\nget greeting\r\nget missing\r\n',
        );
        assert.match(answer, /^STORED\r\nVALUE greeting 0 5\r\nhello\r\nEND\r\n/, answer);
      }
      // Healthy: no alert fires for 15 evaluations.
      await assertNoneFiring(prometheus, 15);
      // Two of each instance's three gets hit: the ratio the dashboard shows, from the agent's counters.
      const ratios = await prometheus.query(
        `sum by (pod) (rate(memcached_commands_total{owner="${MEMCACHED}", command="get", status="hit"}[1m])) / sum by (pod) (rate(memcached_commands_total{owner="${MEMCACHED}", command="get"}[1m]))`,
      );
      assert.equal(ratios.length, MEMCACHED_REPLICAS, JSON.stringify(ratios));
      for (const r of ratios)
        assert.ok(Math.abs(Number(r.value[1]) - 2 / 3) < 0.01, `hit ratio ${r.value[1]}`);
      const mcPanels = await checkEngineDashboard(prometheus, MEMCACHED_DASHBOARD);
      assert.deepEqual(mcPanels.empty, [], 'every memcached panel query returns series');
      assert.deepEqual(mcPanels.notFinite, [], 'every memcached panel query returns a number');
      const mcCost = await scrapeCost(
        mcPods[0]!.metadata!.uid!,
        `http://${mcPods[0]!.status!.podIP!}:${MEMCACHED_METRICS_PORT}/metrics`,
        20,
      );
      assert.equal(mcCost.unanswered, 0, describeCost(mcCost));
      t.diagnostic(
        `memcached: ${MEMCACHED_REPLICAS} instances scraped, hit ratio 2/3 as served, its dashboard's ${mcPanels.queries} panel queries with data; ${describeCost(mcCost)}`,
      );
      // The redis dashboard, as shipped, 15 scrapes in: every panel query has data (those that may not say why).
      const panels = await checkEngineDashboard(prometheus, REDIS_DASHBOARD);
      assert.deepEqual(panels.empty, [], 'every panel query returns series');
      assert.deepEqual(panels.notFinite, [], 'every panel query returns a number');
      assert.deepEqual(panels.options['role'], ['primary', 'replica'], 'the role variable offers both roles');
      // Filled past maxmemory (32 MiB here) with 40 MB in steps of 4 MB: each EVAL starts by evicting, as
      // any command does (a script does not evict while it runs).
      const filling = Date.now();
      // Paced, so that the replicas' output buffers drain between steps and stay out of the Pod's memory.
      for (let step = 0; step < 10; step++) {
        await askRedis(
          primaryIp,
          [
            'EVAL',
            `for i = 1, 400 do redis.call('SET', KEYS[1] .. (ARGV[1] * 400 + i), string.rep('x', 10000)) end`,
            '1',
            FILLER,
            String(step),
          ],
          password,
        );
        await delay(200);
      }
      const fired = await untilFiring(prometheus, 'RegulonRedisEvicting', primary, 60_000);
      const firedAfter = (Date.now() - filling) / 1000;
      assert.ok(
        fired.every((a) => a['alertname'] === 'RegulonRedisEvicting'),
        `only the eviction alert fires: ${JSON.stringify(fired)}`,
      );
      await removeFiller();
      await untilNoneFiring(prometheus, 60_000);
      t.diagnostic(
        `a plain Prometheus scraped all ${REPLICAS} instances ${scraped.toFixed(1)} s after it started; the redis dashboard's ${panels.queries} panel queries had data (but those whose panel says why it may not); no alert firing over 15 evaluations; ` +
          `filled past maxmemory: RegulonRedisEvicting firing +${firedAfter.toFixed(1)} s (its for set to 5 s), resolved once the filler went`,
      );
    } finally {
      await removeFiller().catch(() => undefined);
      await prometheus.stop();
    }
  });

  test('the manager cut off from the Pods under a write load: the Services keep every endpoint, nothing fails over, the Cache says why; all as before once healed', async (t) => {
    assert.ok(password, 'the first test ran');
    const before = await eventually(
      'settled before the partition',
      async () => settled(await get()) && get(),
    );
    const primary = before.status!.currentPrimary!;
    const targets = async () =>
      `${(await serviceTargets(client, ns, NAME)).join()} / ${(await serviceTargets(client, ns, `${NAME}-ro`)).join()}`;
    const routing = await targets();
    // The manager moves into a process of its own, in the group the partition cuts off; it starts
    // with no memory, so it is also a new manager's first look. The API server stays reachable.
    mgr.stop();
    await running;
    const child = managerProcess();
    const partition = cutOffFromPods(CUT_OFF_GID);
    const cutAt = Date.now();
    const sampler = await sampleRoles();
    // Both Services' endpoints every 200 ms for the whole partition: any change is a finding.
    const changes: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const now = await targets();
        if (now !== routing) changes.push(`+${((Date.now() - cutAt) / 1000).toFixed(1)} s: ${now}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    try {
      const writer = writeFor(PARTITION_S);
      const blind = await eventually(
        'the Cache says the manager cannot reach its instances',
        async () => {
          const c = await get();
          return cond(c, 'InstancesReachable')?.status === 'False' && c;
        },
        60_000,
      );
      const noticed = Date.now() - cutAt;
      assert.equal(cond(blind, 'Ready')?.status, 'True', 'the instances serve: the kubelet says so');
      assert.equal(blind.status?.currentPrimary, primary);
      const writes = await writer;
      partition.heal();
      const healedAt = Date.now();
      await eventually(
        'reachable again, every instance linked',
        async () => {
          const c = await get();
          return cond(c, 'InstancesReachable')?.status === 'True' && settled(c);
        },
        60_000,
      );
      const recovered = Date.now() - healedAt;
      watching = false;
      await watcher;
      const { rounds, splitBrains, masters } = await sampler.stop();
      assert.deepEqual(changes, [], 'the Services never changed');
      assert.deepEqual(splitBrains, [], 'never two masters at once');
      assert.deepEqual(masters, [primary], 'the primary never moved');
      const reasons = await eventReasons();
      assert.ok(
        reasons.includes('InstancesUnreachable') && reasons.includes('InstancesReachable'),
        `Events: ${reasons.join(', ')}`,
      );
      for (const moved of ['FailoverStarted', 'Fencing', 'Promoted'])
        assert.ok(!reasons.includes(moved), `no ${moved}: ${reasons.join(', ')}`);
      const acked = writes.filter((w) => w.acked);
      const gap = longestGap(acked);
      assert.ok(
        acked.length > 0 && gap < FAILOVER_DELAY_S * 1000,
        `writes went on: the longest gap was ${describeLongestGap(writes, cutAt)}`,
      );
      const primaryPod = await pods().get(primary, { namespace: ns });
      assert.equal(
        await present(primaryPod.status!.podIP!, acked),
        acked.length,
        'no acknowledged write lost',
      );
      t.diagnostic(
        `manager cut off for ${((healedAt - cutAt) / 1000).toFixed(1)} s: InstancesReachable=False after ${(noticed / 1000).toFixed(1)} s; ` +
          `${acked.length} of ${writes.length} writes acknowledged meanwhile, longest gap ${gap} ms; Service endpoint changes ${changes.length}; ` +
          `two-master samples ${splitBrains.length} of ${rounds}; reachable and linked ${(recovered / 1000).toFixed(1)} s after healing`,
      );
    } finally {
      watching = false;
      await watcher;
      partition.heal();
      await sampler.stop();
      await stopManagerProcess(child);
      startManager();
    }
  });

  test('the primary cut off from its replicas stops acknowledging writes (NOREPLICAS) before a failover could happen; the Cache says WritesRefused, nothing fails over; writes acknowledged again once healed', async (t) => {
    assert.ok(password, 'the first test ran');
    const before = await eventually('settled before the cut', async () => settled(await get()) && get());
    const primary = before.status!.currentPrimary!;
    const all = await instancePods();
    const primaryPod = all.find((p) => p.metadata!.name === primary)!;
    const replicaIps = all.filter((p) => p.metadata!.name !== primary).map((p) => p.status!.podIP!);
    const set = (key: string) =>
      inClient(`redis-cli --no-auth-warning -h "$HOST" -p "$PORT" SET ${key} 1 2>&1 | head -n1`);
    assert.equal((await set('before-cut')).trim(), 'OK');
    // The manager and the clients still reach the primary: only its replicas do not.
    const cut = cutPodOffFrom(podSandboxPid(primaryPod.metadata!.uid!), replicaIps);
    const cutAt = Date.now();
    let tries = 0;
    /** Writes the primary acknowledged before it noticed: kept, since nothing fails over. */
    const ackedWhileCut: string[] = [];
    try {
      const refused = await eventually(
        'a write through the client Service refused with NOREPLICAS',
        async () => {
          const key = `while-cut-${++tries}`;
          const out = (await set(key)).trim();
          if (out === 'OK') ackedWhileCut.push(key);
          return /NOREPLICAS/.test(out) && out;
        },
        30_000,
        250,
      );
      const refusedAfter = Date.now() - cutAt;
      // redis counts a replica while it acknowledged within min-replicas-max-lag (half the delay).
      assert.ok(
        refusedAfter < FAILOVER_DELAY_S * 1000,
        `the isolated primary acknowledged writes for ${refusedAfter} ms, past the failover delay`,
      );
      const said = await eventually(
        'Ready=False WritesRefused',
        async () => {
          const c = await get();
          return cond(c, 'Ready')?.status === 'False' && cond(c, 'Ready')?.reason === 'WritesRefused' && c;
        },
        30_000,
        200,
      );
      assert.match(
        cond(said, 'Ready')!.message,
        new RegExp(`^The primary ${primary} refuses writes until 1 replica`),
      );
      assert.equal(said.status?.currentPrimary, primary, 'nothing failed over');
      t.diagnostic(
        `primary cut off from its replicas: writes refused after ${(refusedAfter / 1000).toFixed(1)} s (${refused}); Ready: ${cond(said, 'Ready')!.message}`,
      );
    } finally {
      cut.heal();
    }
    const healedAt = Date.now();
    await eventually(
      'a write acknowledged again',
      async () => (await set('after-heal')).trim() === 'OK',
      30_000,
      250,
    );
    const after = await eventually(
      'settled after healing',
      async () => settled(await get()) && get(),
      60_000,
      200,
    );
    assert.equal(after.status?.currentPrimary, primary);
    t.diagnostic(
      `healed: writes acknowledged and settled ${((Date.now() - healedAt) / 1000).toFixed(1)} s after`,
    );
    assert.deepEqual(
      await ask(primaryPod.status!.podIP!, ['EXISTS', 'before-cut', 'while-cut', 'after-heal']),
      2,
    );
  });

  test('the API server unreachable for 60 s from the manager and every instance: nothing fails over or stops, writes go on, the primary Lease comes back to the primary', async (t) => {
    assert.ok(password, 'the first test ran');
    const before = await eventually(
      'settled before the outage',
      async () => settled(await get()) && get(),
      120_000,
      250,
    );
    const primary = before.status!.currentPrimary!;
    const apiAddresses = await apiServerAddresses(client);
    // The manager in a process of its own, which the outage cuts off from the API server too.
    mgr.stop();
    await running;
    const child = managerProcess();
    const cuts: Array<{ heal(): void }> = [];
    const sampler = await sampleRoles();
    try {
      const primaryUid = (await pods().get(primary, { namespace: ns })).metadata!.uid!;
      const server = podServerPid(primaryUid, isRedisServer);
      assert.ok(server, `the server process of ${primary}`);
      const writer = writeFor(API_OUTAGE_S + 20);
      await new Promise((r) => setTimeout(r, WRITER_WARMUP_S * 1000));
      cuts.push(cutOffFromApiServer(CUT_OFF_GID, env.server));
      for (const i of before.status!.instances!) {
        const uid = (await pods().get(i.name, { namespace: ns })).metadata!.uid!;
        cuts.push(cutPodOffFrom(podSandboxPid(uid), apiAddresses));
      }
      const cutAt = Date.now();
      // The outage itself: past the renew deadline (10 s) the primary's agent has lost its Lease, and
      // serves on while its replicas are in touch with it.
      await new Promise((r) => setTimeout(r, API_OUTAGE_S * 1000));
      for (const cut of cuts.splice(0)) cut.heal();
      const healedAt = Date.now();
      // The holder's name outlives an expired Lease: a renewal stamped after the healing shows the
      // agent holds it again (its clock is this machine's).
      await eventually(
        `${primary} renews the primary Lease again`,
        async () => {
          const lease = await client.resource(Kinds.Lease).get(`${NAME}-primary`, { namespace: ns });
          return (
            lease.spec?.holderIdentity === primary &&
            new Date(lease.spec?.renewTime ?? 0).getTime() >= healedAt
          );
        },
        30_000,
        200,
      );
      const regained = Date.now() - healedAt;
      const writes = await writer;
      const { rounds, splitBrains, masters } = await sampler.stop();
      const acked = writes.filter((w) => w.acked);
      const during = acked.filter((w) => w.at >= cutAt && w.at <= healedAt);
      const gap = longestGap(acked);
      t.diagnostic(
        `API server unreachable for ${((healedAt - cutAt) / 1000).toFixed(1)} s: ${during.length} writes acknowledged meanwhile, longest gap ${gap} ms; the Lease renewed by ${primary} ${(regained / 1000).toFixed(1)} s after; sampler rounds ${rounds}, split brains ${splitBrains.length}`,
      );
      assert.deepEqual(splitBrains, [], 'never two masters at once');
      assert.deepEqual(masters, [primary], 'the primary never moved');
      assert.ok(
        acked.some((w) => w.at >= cutAt + API_OUTAGE_S * 1000 - 2_000),
        'writes acknowledged to the end of the outage',
      );
      const now = podServerPid(primaryUid, isRedisServer);
      assert.equal(
        now,
        server,
        `${primary}'s server ran throughout: neither its agent nor the kubelet stopped it`,
      );
      // Unloaded, the longest gap is well under a second. On a loaded machine the primary may refuse
      // a write for a moment (NOREPLICAS) when a starved replica's once-a-second acknowledgement
      // ages past min-replicas-max-lag (half the failover delay): redis working as configured.
      // What must not happen is an outage as long as a failover delay: the same bound as the
      // manager cut off from the Pods.
      assert.ok(
        gap < FAILOVER_DELAY_S * 1000,
        `writes went on throughout: the longest gap was ${describeLongestGap(writes, cutAt)}`,
      );
      const c = await get();
      const primaryPod = await pods().get(c.status!.currentPrimary!, { namespace: ns });
      assert.equal(await present(primaryPod.status!.podIP!, acked), acked.length, 'no acknowledged key lost');
    } finally {
      for (const cut of cuts) cut.heal();
      await sampler.stop();
      await stopManagerProcess(child);
      startManager();
    }
  });

  test('the primary Pod deleted under a write load: a replica is promoted, writes resume, never two primaries, the old one rejoins', async (t) => {
    assert.ok(password, 'the first test ran');
    const before = await get();
    const oldPrimary = before.status!.currentPrimary!;
    const oldPod = await pods().get(oldPrimary, { namespace: ns });

    const sampler = await sampleRoles();
    const writer = writeFor(WRITER_SECONDS);
    await new Promise((r) => setTimeout(r, WRITER_WARMUP_S * 1000));
    const deletedAt = Date.now();
    await pods().delete(oldPrimary, { namespace: ns });

    const promoted = await eventually(
      'another instance promoted',
      async () => {
        const c = await get();
        const p = c.status?.currentPrimary;
        return p && p !== oldPrimary && cond(c, 'Ready')?.status === 'True' && p;
      },
      120_000,
      200,
    );
    t.diagnostic(
      `deleted ${oldPrimary}; ${promoted} primary (status) after ${((Date.now() - deletedAt) / 1000).toFixed(1)} s`,
    );
    await eventually(
      'every instance replicating again, the old primary as a replica',
      async () => {
        const c = await get();
        const back = c.status?.instances?.find((i) => i.name === oldPrimary);
        return settled(c) && back?.role === 'replica' && back.state === 'Linked';
      },
      180_000,
      250,
    );
    const allReplicating = (Date.now() - deletedAt) / 1000;
    const rejoined = await pods().get(oldPrimary, { namespace: ns });
    assert.notEqual(rejoined.metadata?.uid, oldPod.metadata?.uid, 'a new Pod under the old name');
    assert.ok(readyPod(rejoined));
    assert.equal(await roleOf(rejoined.status!.podIP!), 'slave', 'the old primary rejoined as a replica');

    const writes = await writer;
    const { rounds, splitBrains } = await sampler.stop();

    // The outage: the longest run without an acknowledged write, around the deletion.
    const acked = writes.filter((w) => w.acked);
    const outage = longestGap(acked);
    const afterDeletion = acked.filter((w) => w.at > deletedAt);
    assert.ok(afterDeletion.length > 0, 'writes resumed after the failover');
    const failed = writes.filter((w) => !w.acked).length;

    // Acknowledged keys lost: asked on the new primary, 500 keys at a time.
    const c = await get();
    const primaryPod = await pods().get(c.status!.currentPrimary!, { namespace: ns });
    const lost = acked.length - (await present(primaryPod.status!.podIP!, acked));

    t.diagnostic(
      `writes ${writes.length} (${acked.length} acknowledged, ${failed} refused or timed out); outage ${(outage / 1000).toFixed(1)} s; acknowledged keys lost ${lost}; every instance replicating again ${allReplicating.toFixed(1)} s after the deletion; sampler rounds ${rounds}, split brains ${splitBrains.length}`,
    );
    assert.deepEqual(splitBrains, [], 'never two masters at once');
    assert.ok(rounds > 50, `the sampler ran (${rounds} rounds)`);
    assert.equal(
      lost,
      0,
      'a graceful deletion loses no acknowledged write: the primary waits for its replicas on shutdown',
    );
    const reasons = await eventReasons();
    for (const r of ['FailoverStarted', 'Promoted'])
      assert.ok(reasons.includes(r), `a ${r} Event (${reasons.join(', ')})`);
    // The old primary's agent released the Lease once its server stopped; the new one's holds it.
    await leaseFollows(c.status!.currentPrimary!);
  });

  test('persistence: a primary whose server dies does not come back writable while a replica runs (its append-only file may lack the last second the replica has): the replica takes over, and every key it held before the crash is kept', async (t) => {
    const LEDGER = 'ledger';
    const local = await localImageCatalog();
    await caches().create(
      Cache.object({
        metadata: { name: LEDGER, namespace: ns },
        spec: {
          engine: 'redis',
          version: local.redis![0]!.version,
          mode: 'replicated',
          replicas: 2,
          memory: '64Mi',
          maxMemoryPercent: 50,
          auth: {},
          persistence: { enabled: true, size: '256Mi' },
          replication: { failoverDelaySeconds: 5 },
        },
      }),
    );
    const ledger = () => caches().get(LEDGER, { namespace: ns });
    const healthy = (c: CacheObject) =>
      c.status?.observedGeneration === c.metadata.generation &&
      cond(c, 'Ready')?.status === 'True' &&
      cond(c, 'ReplicationHealthy')?.status === 'True' &&
      c.status?.instances?.length === 2 &&
      c.status.instances.every((i) => i.state === 'Primary' || i.state === 'Linked');
    const before = await eventually(
      `${LEDGER} Ready, its replica linked`,
      async () => {
        const c = await ledger();
        return healthy(c) && c;
      },
      240_000,
      250,
    );
    const secret = await client.resource(Kinds.Secret).get(`${LEDGER}-credentials`, { namespace: ns });
    const ledgerPassword = Buffer.from(secret.data!['password']!, 'base64').toString('utf8');
    const old = before.status!.currentPrimary!;
    const oldPod = await pods().get(old, { namespace: ns });
    const replica = before.status!.instances!.find((i) => i.name !== old)!.name;
    const replicaIp = (await pods().get(replica, { namespace: ns })).status!.podIP!;

    // One connection writing to the primary as fast as it is answered, until the crash.
    const { createClient } = await import('redis');
    const writer = createClient({
      socket: { host: oldPod.status!.podIP!, port: 6379, reconnectStrategy: false },
      password: ledgerPassword,
      disableClientInfo: true,
    });
    writer.on('error', () => undefined);
    await writer.connect();
    let written = 0;
    let writing = true;
    const writes = (async () => {
      while (writing)
        try {
          written++;
          await writer.set(`k${written}`, String(written));
        } catch {
          break;
        }
    })();
    await eventually(
      'the replica holding 2000 keys',
      async () => Number(await ask(replicaIp, ['DBSIZE'], ledgerPassword)) >= 2000 || undefined,
    );
    // What the replica holds the moment before the crash: none of it may be lost.
    const held = (await ask(replicaIp, ['KEYS', 'k*'], ledgerPassword)) as string[];
    const server = podServerPid(oldPod.metadata!.uid!, isRedisServer);
    assert.ok(server, `${old}'s redis-server`);
    process.kill(server, 'SIGKILL');
    const crashedAt = Date.now();
    writing = false;
    await writes;
    writer.destroy();

    const after = await eventually(
      `${replica} promoted, ${old} back as its replica`,
      async () => {
        const c = await ledger();
        return (
          c.status?.currentPrimary === replica &&
          healthy(c) &&
          c.status.instances?.find((i) => i.name === old)?.state === 'Linked' &&
          c
        );
      },
      180_000,
      250,
    );
    t.diagnostic(
      `${old} crashed after ${written} writes; ${replica} primary and ${old} its replica ${((Date.now() - crashedAt) / 1000).toFixed(1)} s later; the replica held ${held.length} keys before`,
    );
    // Its container restarted in place and waited; the manager then fenced the Pod that did not
    // answer (deleted it) before the promotion, so it may be a new Pod by now.
    const restarted = await pods().get(old, { namespace: ns });
    t.diagnostic(
      `${old}: ${restarted.metadata?.uid === oldPod.metadata?.uid ? 'the same Pod' : 'a new Pod (the old one fenced)'}`,
    );
    assert.equal(await roleOf(restarted.status!.podIP!, ledgerPassword), 'slave');
    assert.equal(after.status?.currentPrimary, replica);
    for (const [name, ip] of [
      [replica, replicaIp],
      [old, restarted.status!.podIP!],
    ] as const) {
      let kept = 0;
      for (let i = 0; i < held.length; i += 500)
        kept += Number(await ask(ip, ['EXISTS', ...held.slice(i, i + 500)], ledgerPassword));
      assert.equal(held.length - kept, 0, `keys the replica held before the crash, missing on ${name}`);
    }
  });

  test('persistence, every replica down: a primary whose server dies comes back writable in place from its append-only file, nothing fails over, no acknowledged key lost, and the replica follows it again', async (t) => {
    // The ledger of the scenario before: its primary and one replica, both holding the keys.
    const LEDGER = 'ledger';
    const ledger = () => caches().get(LEDGER, { namespace: ns });
    const before = await ledger();
    const secret = await client.resource(Kinds.Secret).get(`${LEDGER}-credentials`, { namespace: ns });
    const ledgerPassword = Buffer.from(secret.data!['password']!, 'base64').toString('utf8');
    const primary = before.status!.currentPrimary!;
    const replica = before.status!.instances!.find((i) => i.name !== primary)!.name;
    const [primaryPod, replicaPod] = await Promise.all([
      pods().get(primary, { namespace: ns }),
      pods().get(replica, { namespace: ns }),
    ]);
    const primaryIp = primaryPod.status!.podIP!;
    // Acknowledged by the primary while its replica linked (min-replicas-to-write): the file holds
    // each before its reply is sent, and a killed process loses nothing the file was given.
    const acked: string[] = [];
    for (let i = 0; i < 200; i++) {
      await ask(primaryIp, ['SET', `after-failover-${i}`, String(i)], ledgerPassword);
      acked.push(`after-failover-${i}`);
    }
    // The replica hung: it answers nobody, the start script's question included.
    const replicaServer = podPids(replicaPod.metadata!.uid!, isRedisServer);
    assert.ok(replicaServer.length > 0, `${replica}'s redis-server`);
    for (const pid of replicaServer) process.kill(pid, 'SIGSTOP');
    try {
      const server = podServerPid(primaryPod.metadata!.uid!, isRedisServer);
      assert.ok(server, `${primary}'s redis-server`);
      process.kill(server, 'SIGKILL');
      const crashedAt = Date.now();
      const back = await eventually(
        `${primary} writable again in its own Pod`,
        async () => {
          const p = await pods().get(primary, { namespace: ns });
          return (
            p.metadata?.uid === primaryPod.metadata?.uid &&
            (await roleOf(p.status!.podIP!, ledgerPassword).catch(() => '')) === 'master' &&
            p
          );
        },
        120_000,
        250,
      );
      t.diagnostic(
        `${primary} master again in place ${((Date.now() - crashedAt) / 1000).toFixed(1)} s after the crash`,
      );
      const kept = Number(await ask(back.status!.podIP!, ['EXISTS', ...acked], ledgerPassword));
      assert.equal(acked.length - kept, 0, `acknowledged keys missing on ${primary} after its restart`);
    } finally {
      for (const pid of replicaServer) process.kill(pid, 'SIGCONT');
    }
    const after = await eventually(
      `${replica} linked to ${primary} again`,
      async () => {
        const c = await ledger();
        return (
          c.status?.observedGeneration === c.metadata.generation &&
          cond(c, 'Ready')?.status === 'True' &&
          c.status?.instances?.find((i) => i.name === replica)?.state === 'Linked' &&
          c
        );
      },
      // Usually within 30 s; CI once waited past 120 s, with nothing said. The replica resyncs in
      // full from the restarted primary, its transfer bounded by repl-timeout (5 s): under load a
      // try may time out and be retried. The status and the replica's own log say which.
      300_000,
      250,
    ).catch(async (err: Error) => {
      const c = await ledger().catch(() => undefined);
      err.message +=
        `\nstatus: ${JSON.stringify(c?.status?.instances)} ${JSON.stringify(c?.status?.conditions?.map((x) => `${x.type}=${x.status} ${x.reason}: ${x.message}`))}` +
        `\n${replica}'s log: ${(await kubectl(['logs', replica, '-c', 'redis', '--tail=30']).catch((e: Error) => e.message)).slice(-3000)}`;
      throw err;
    });
    assert.equal(after.status?.currentPrimary, primary, 'nothing failed over: the replica was hung');
    const replicaIp = (await pods().get(replica, { namespace: ns })).status!.podIP!;
    const onReplica = Number(await ask(replicaIp, ['EXISTS', ...acked], ledgerPassword));
    assert.equal(acked.length - onReplica, 0, `acknowledged keys missing on ${replica}`);
    await caches().delete(LEDGER, { namespace: ns });
  });
});
