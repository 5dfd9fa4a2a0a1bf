// The replication scenarios every replicating engine must pass on real Pods
// (the real node, the engine's Debian image through the image catalog), with
// the Database controller in a Manager on this host: one primary and
// replicas, Services that select by role, failover when the primary is lost
// (Pod, process, volume, a hang, an isolation from everything but its
// clients), switchover on request, a manager stopped half-way
// through a failover, scaling with a clone, synchronous replication losing
// nothing, a minor upgrade that moves the primary once, and never two
// writable instances. Each engine's test file describes what differs (its
// process, its identity and position formats, what the primary keeps for its
// replicas) and calls describeReplication(). The figures (time to Ready,
// failover time, writes lost, outages, catch-up) are test diagnostics.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as cadence } from 'node:timers/promises';
import type { EventsV1Event, V1Pod } from '@kubernetes/client-node';
import { isNotFound, KubeClient, Kinds } from '@regulon/client';
import { ImageCatalog } from '@regulon/image-catalog';
import { type Manager, type Condition, testManager } from '@regulon/runtime';
import {
  apiServerAddresses,
  EndpointSlices,
  PRIMARY_LEASE_SECONDS,
  startManagerProcess,
  stopManagerProcess,
} from '@regulon/conventions';
import {
  cutOffFromApiServer,
  cutOffFromPod,
  cutOffFromPods,
  cutPodOffFrom,
  eventually,
  containerProcessTrees,
  stopProcess,
  type Partition,
  type PodPartition,
  loadImagesIntoRealNode,
  localImageCatalog,
  podPids,
  podServerPid,
  podSandboxPid,
  start,
  describeSplitBrain,
  lastOccurred,
  type SamplerSummary,
  type TestEnv,
} from '@regulon/testenv';
import { ensureManagerImage } from '../../../../tools/manager-image/image.ts';
import type { DashboardSpec } from '../../../../tools/scripts/dashboards.ts';
import {
  assertNoneFiring,
  checkEngineDashboard,
  describeCost,
  scrapeCost,
  untilFiring,
  untilNoneFiring,
  watchInstances,
} from '../../../../tools/monitoring/instances.ts';
import { Database, type DatabaseObject } from '../api.ts';
import { setupDatabaseController } from '../index.ts';
import { FORCE_PROMOTE_ANNOTATION, SWITCHOVER_ANNOTATION } from '../replication/replication.ts';
import { FENCED_CONDITION, FENCED_INSTANCES_ANNOTATION } from '../fencing.ts';
import {
  lostWrites,
  mariadbStatement,
  readCredentials,
  readReplicaRows,
  startDatabaseSampler,
  startWriter,
  STATEMENT_TIMEOUT_SECONDS,
  type Outage,
  type WorkloadEngine,
  type Writer,
} from './workload.ts';
import { parsePrometheusText, sampleValue } from '../../../../packages/runtime/src/testing/prometheus.ts';

/** What a scenario may ask of the Database under test beyond the Kubernetes API. */
export interface SuiteContext {
  client: KubeClient;
  namespace: string;
  name: string;
}

export interface EngineUnderTest {
  title: string;
  engine: WorkloadEngine;
  /** The Database's name: its Pods are `<name>-<ordinal>`. */
  name: string;
  container: string;
  /** Whether a process of the instance's container is its serving server (see podServerPid). */
  isServer: (argv: string[]) => boolean;
  /** status.systemIdentifier, once known. */
  identity: RegExp;
  /** status.instances[].lsn, once written to. */
  position: RegExp;
  /** How the credentials Secret's `uri` starts. */
  uriScheme: string;
  /** What the primary keeps for each other instance (postgres: replication slots), read from it. */
  keptForReplicas?: {
    read: (ctx: SuiteContext, primary: string) => Promise<string[]>;
    expected: (others: string[]) => string[];
  };
  /**
   * One new connection to `host` (a Service's address) with the application's
   * credentials: the load table's ids, and which instance answered (its Pod IP).
   */
  readThrough: (ctx: SuiteContext, host: string) => Promise<{ answeredBy: string; ids: Set<number> }>;
  /** The primary really waits for a replica's acknowledgement (synchronous mode is not only configured). */
  waitsForReplicas?: (ctx: SuiteContext, primary: string) => Promise<boolean>;
  /**
   * The Pods run under the instance agent, copied from the manager image (built from
   * apps/manager/Dockerfile and loaded into the real node): every scenario then also checks
   * that the primary Lease names the primary.
   */
  instanceAgent?: boolean;
  /** Where the agent publishes the engine's metrics, and what each role's scrape must show. */
  metrics?: {
    port: number;
    /** The series prefix: `<prefix>_up`. */
    prefix: string;
    /** Asserts what a primary's exposition says of its `replicas` replicas, all streaming. */
    primary: (text: string, replicas: number) => void;
    /** Asserts what a streaming replica's exposition says of its link to the primary. */
    replica: (text: string) => void;
    /**
     * Opens `count` connections to `host` (an instance's address) with the application's
     * credentials and holds them until closed: a client pool grown to the engine's limit.
     * Undefined: the alert test does not drive this engine to its limit (a postgres backend is a
     * process, and 80 of them outgrow the instance's memory limit here).
     */
    holdConnections?: (ctx: SuiteContext, host: string, count: number) => Promise<{ close(): Promise<void> }>;
    /** The series that says how many connections the engine accepts. */
    connectionLimit?: string;
    /** The engine's dashboard (tools/scripts/engine-dashboards.ts), every panel of which must have data. */
    dashboard: DashboardSpec;
  };
}

/** The ConfigMap of the suite's user-defined metrics queries. */
const CUSTOM_QUERIES = 'metrics-queries';
const cond = (db: DatabaseObject, type: string): Condition | undefined =>
  db.status?.conditions?.find((c) => c.type === type);
/** The status of each condition once all is well. */
const SETTLED: Record<string, string> = {
  Ready: 'True',
  ReplicationHealthy: 'True',
  Degraded: 'False',
  InstancesReachable: 'True',
};
/**
 * A Database's status in a few short lines for a failure's message (CI keeps a failure's first
 * lines only, each cut short): the primary with each instance's role and state, then every
 * condition not in its settled state, with its reason and message.
 */
export function statusSummary(status: DatabaseObject['status']): string[] {
  if (!status) return ['no status'];
  const settled = (c: Condition) =>
    c.type === 'BackupSucceeded' ||
    SETTLED[c.type] === c.status ||
    (c.type === 'Progressing' && c.reason === 'Stable');
  const instances = (status.instances ?? []).map((i) => {
    const lag = i.lagBytes ?? i.lagTransactions;
    return `${i.name} ${i.role}/${i.state}${lag ? ` lag ${lag}` : ''}`;
  });
  return [
    `primary ${status.currentPrimary ?? '-'}: ${instances.join(', ') || 'no instances'}`,
    ...(status.conditions ?? [])
      .filter((c) => !settled(c))
      .map((c) => `${c.type}=${c.status} ${c.reason}: ${c.message}`),
  ];
}

const gone = (read: () => Promise<unknown>) => () =>
  read().then(
    () => false,
    (err: unknown) => {
      if (isNotFound(err)) return true;
      throw err;
    },
  );

/**
 * The group a manager process runs in when a test cuts it off from the Pods (see cutOffFromPods):
 * one per engine, since the test files may run at once (--concurrency) and each partition's
 * iptables rule is removed when its own scenario heals. The Cache suite has its own.
 */
const CUT_OFF_GIDS: Record<WorkloadEngine, number> = { postgres: 64_242, mariadb: 64_243 };
/** How long the API server is out of everyone's reach (the issue's 60 s: six renew deadlines). */
const API_OUTAGE_MS = 60_000;
/** The Database under test fails over after this long (spec.replication.failoverDelaySeconds). */
const FAILOVER_DELAY_S = 5;
/** The load writer's pace: a write every 100 ms or more, each a fresh session (see startWriter). */
const WRITES_PER_SECOND = 10;

/**
 * Asserts that between `fromMs` and `toMs` (`during`: what happened meanwhile) the primary served the
 * writer undisturbed: no error answer or refused session, and no stretch without an acknowledgement
 * longer than one statement timeout and its retry. A lone timeout (exit 124: no session or no answer
 * in time) is the client on a loaded 2-core machine (one MariaDB insert, in CI, while the API server
 * was away: its server never restarted, nothing failed over, the next attempt succeeded at once); a
 * primary that stops serving times out again and again, and a read-only one answers with an error.
 * Returns the longest gap, for the diagnostic.
 */
async function assertWritesUndisturbed(writer: Writer, fromMs: number, toMs: number, during: string) {
  const outages = (await writer.outages()).filter((o) => o.toMs >= fromMs && o.fromMs <= toMs);
  const longest = Math.max(0, ...outages.map((o) => o.durationMs));
  const failures = (await writer.log()).failures.filter((f) => f.atMs >= fromMs && f.atMs <= toMs);
  const said = (f: { exitCode: number; message?: string }) =>
    `exit ${f.exitCode}${f.message ? ` ${f.message}` : ''}`;
  assert.deepEqual(
    failures.filter((f) => f.exitCode !== 124).map(said),
    [],
    `no write refused ${during} (longest gap between acknowledgements ${longest} ms)`,
  );
  const bound = (2 * STATEMENT_TIMEOUT_SECONDS + 1) * 1000;
  assert.ok(
    longest <= bound,
    `no stretch without an acknowledged write longer than ${bound} ms ${during}: the longest ${longest} ms, ` +
      `${failures.length} attempts timed out (${failures.map(said).join('; ')})`,
  );
  return longest;
}

/** What the quorum scenarios' fault did, to undo it and to report (see hangWithConfirmingStandby). */
interface QuorumFault {
  lagging: string;
  confirming: string;
  cuts: Partition[];
  /** The primary's processes, stopped. */
  hung: number[];
  /** The confirming standby's processes, stopped until the scenario lets them run. */
  confirmingHung: number[];
  waitedMs: number;
  /** Acknowledged writes the lagging standby lacked while the failover waited. */
  lackedAtWait: number;
}
const quorumFault = (): QuorumFault => ({
  lagging: '',
  confirming: '',
  cuts: [],
  hung: [],
  confirmingHung: [],
  waitedMs: 0,
  lackedAtWait: 0,
});

export function describeReplication(e: EngineUnderTest): void {
  const { engine, name: NAME, container } = e;
  const pod = (ordinal: number) => `${NAME}-${ordinal}`;

  describe(e.title, { timeout: 30 * 60_000 }, () => {
    let env: TestEnv;
    let client: KubeClient;
    let mgr: Manager;
    let running: Promise<void>;
    let ns: string;
    let version: string;
    let nextVersion: string;
    let catalog: ImageCatalog;
    let catalogDocument: unknown;
    let agentImage: string | undefined;
    let writer: Writer | undefined;
    const dbs = () => client.resource(Database);
    const get = () => dbs().get(NAME, { namespace: ns });
    const pods = () => client.resource<V1Pod>(Kinds.Pod);
    const ctx = (): SuiteContext => ({ client, namespace: ns, name: NAME });

    before(async () => {
      env = await start({ realNodes: 1 });
      await env.installCRDs([Database.crd()]);
      client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 100, burst: 200 });
      ns = await env.newNamespace(`${engine}-repl`, { realNode: true });
      const local = await localImageCatalog();
      const built = local[engine]![0]!;
      version = built.version;
      // Debian ships one version of each engine at a time: the minor upgrade rolls to a next
      // patch version that this catalog maps, openly, to the same image. What it tests is the
      // roll (every Pod replaced under load, the primary handed over once), not a new binary.
      nextVersion = version.replace(/\d+$/, (p) => String(Number(p) + 1));
      catalogDocument = { ...local, [engine]: [built, { version: nextVersion, image: built.image }] };
      catalog = ImageCatalog.fromDocument(catalogDocument, 'testenv images');
      if (e.instanceAgent) {
        const image = await ensureManagerImage();
        loadImagesIntoRealNode(env.controlPlane.state.dir, [image]);
        agentImage = image.ref;
      }
      startManager();
    });
    /** A manager on this host, as a fresh process would start one: empty caches, no memory. */
    const startManager = () => {
      // Every scenario's incidents land on the one Database, within minutes: client-go's spam
      // filter (25 Events, then one per 5 min) would drop the later scenarios' Events, which they
      // assert. A production manager keeps the default.
      mgr = testManager(env.kubeConfig, { namespace: ns, events: { burst: 1000 } });
      setupDatabaseController(mgr, { imageCatalog: catalog, instanceAgentImage: agentImage });
      running = mgr.start();
    };
    /**
     * The manager moved into a process of its own, in the group a partition cuts off (see
     * CUT_OFF_GIDS): it starts with no memory, as a new manager does. startManager() brings it back.
     */
    const managerInItsOwnProcess = async () => {
      mgr.stop();
      await running;
      return startManagerProcess(
        new URL('./manager-process.ts', import.meta.url),
        {
          kubeconfigPath: env.kubeconfigPath,
          namespace: ns,
          options: { catalog: catalogDocument, instanceAgentImage: agentImage },
        },
        CUT_OFF_GIDS[engine],
      );
    };
    /** Who the primary Lease names (the agents hold it), or undefined when it names nobody. */
    const leaseHolder = async () =>
      (await client.resource(Kinds.Lease).get(`${NAME}-primary`, { namespace: ns })).spec?.holderIdentity ||
      undefined;
    /** With the agent: the primary Lease comes to name `primary` (its agent renews it). */
    const leaseFollows = async (primary: string) => {
      if (!e.instanceAgent) return;
      await explained(
        eventually(`the primary Lease names ${primary}`, async () => (await leaseHolder()) === primary),
      );
    };
    after(async () => {
      await writer?.stop().catch(() => {});
      mgr?.stop();
      await running;
      client?.close();
      await env?.stop();
    });

    /** The last lines an instance's container logged (the start script's `regulon:` lines, the server's). */
    const containerLog = async (p: string, lines = 15, previous = false): Promise<string> => {
      try {
        const text = await client.request<string>({
          method: 'GET',
          path: `/api/v1/namespaces/${ns}/pods/${p}/log`,
          query: { container, tailLines: String(lines), ...(previous ? { previous: 'true' } : {}) },
        });
        return typeof text === 'string' ? text : '';
      } catch (err) {
        return `(no log: ${(err as Error).message})`;
      }
    };
    /**
     * What the Database and its Pods look like now, for a failure's message: a
     * timeout alone says nothing about why. No Secret, no environment: no password.
     */
    const explain = async (): Promise<string> => {
      const parts: string[] = [];
      try {
        const status = (await get()).status;
        // First, in a line, what says most: CI keeps a failure's first lines only.
        parts.push(...statusSummary(status), `status: ${JSON.stringify(status)}`);
      } catch (err) {
        parts.push(`status unreadable: ${(err as Error).message}`);
      }
      const list = await pods()
        .list({ namespace: ns, labelSelector: `app.kubernetes.io/instance=${NAME}` })
        .catch(() => ({ items: [] as V1Pod[] }));
      for (const p of list.items) {
        const name = p.metadata!.name!;
        const c = p.status?.containerStatuses?.find((s) => s.name === container);
        const state =
          c?.state?.waiting?.reason ??
          (c?.state?.running ? 'running' : (c?.state?.terminated?.reason ?? '?'));
        parts.push(
          `--- ${name}: phase ${p.status?.phase}, ready ${c?.ready}, ${state}, restarts ${c?.restartCount ?? 0}, ` +
            `role label ${p.metadata?.labels?.['regulon.dev/role'] ?? '-'}\n${await containerLog(name)}`,
        );
        if (c?.restartCount)
          parts.push(`--- ${name}, the run before:\n${await containerLog(name, 10, true)}`);
      }
      return parts.join('\n');
    };
    /** The work, and on a failure the state of things in its message. */
    const explained = async <T>(work: Promise<T>): Promise<T> => {
      try {
        return await work;
      } catch (err) {
        (err as Error).message += `\n${await explain()}`;
        throw err;
      }
    };

    /**
     * What a wait that timed out was for, until a later wait succeeds: the scenarios share one
     * Database, so one that leaves it broken would make every later one wait its whole timeout
     * (minutes each) for the same reason. Those wait briefly, and fail saying which wait broke it.
     */
    let brokenBy: string | undefined;
    /** The Database once its status describes its spec and `check` holds. */
    const until = async (what: string, check: (db: DatabaseObject) => boolean, timeoutMs = 180_000) => {
      const broken = brokenBy;
      try {
        const db = await explained(
          eventually(
            broken ? `${what} (the Database has not recovered since: ${broken})` : what,
            async () => {
              const now = await get();
              return now.status?.observedGeneration === now.metadata.generation && check(now)
                ? now
                : undefined;
            },
            broken ? Math.min(timeoutMs, 30_000) : timeoutMs,
          ),
        );
        brokenBy = undefined;
        return db;
      } catch (err) {
        brokenBy ??= what;
        throw err;
      }
    };
    const healthy = (db: DatabaseObject) =>
      cond(db, 'Ready')?.status === 'True' &&
      cond(db, 'ReplicationHealthy')?.status === 'True' &&
      db.status?.instances?.filter((i) => i.role === 'replica').length === db.spec.replicas - 1;
    const endpointsOf = async (service: string) => {
      const slices = await client
        .resource(EndpointSlices)
        .list({ namespace: ns, labelSelector: `kubernetes.io/service-name=${service}` });
      return slices.items
        .flatMap((s) => s.endpoints ?? [])
        .filter((x) => x.conditions?.ready !== false)
        .map((x) => x.targetRef?.name ?? '')
        .sort();
    };
    const rowsEverywhere = () => readReplicaRows({ client, namespace: ns, db: NAME, engine });
    /** The Database's fenced-instances annotation set to `value` (null: removed). */
    const fenceInstances = (value: string | null) =>
      dbs().patch(
        NAME,
        { metadata: { annotations: { [FENCED_INSTANCES_ANNOTATION]: value } } },
        { type: 'merge', namespace: ns },
      );

    test('three instances: one primary, two replicas; 300 rows written through the client Service are on every replica', async (t) => {
      // User-defined metrics queries (issue 38), read by the metrics scenario: one that answers on
      // both engines, one that fails in the engine (a table that does not exist).
      if (e.metrics)
        await client.resource(Kinds.ConfigMap).create({
          metadata: { name: CUSTOM_QUERIES, namespace: ns },
          data: {
            'queries.yaml': [
              'regulon_probe:',
              "  query: select 'regulon' as tag, 42 as answer",
              '  metrics:',
              '    - tag: { usage: LABEL, description: A fixed label }',
              '    - answer: { usage: GAUGE, description: A fixed number }',
              'broken:',
              '  query: select count(*) as n from information_schema.regulon_no_such_table',
              '  metrics:',
              '    - n: { usage: GAUGE, description: Never read }',
              '',
            ].join('\n'),
          },
        });
      await dbs().create(
        Database.object({
          metadata: { name: NAME, namespace: ns },
          spec: {
            engine,
            version,
            replicas: 3,
            storage: { size: '1Gi' },
            backup: { enabled: false, schedule: '0 3 * * *', historyLimit: 1 },
            // divergedData Discard in both engines (mariadb's default is Keep): a former primary
            // holding a commit no client saw acknowledged (one that hung waiting for its
            // semi-synchronous ACK) rejoins in the scenarios that want every instance back; what
            // Keep does is a scenario of its own.
            replication: { failoverDelaySeconds: FAILOVER_DELAY_S, divergedData: 'Discard' },
            ...(e.metrics
              ? { monitoring: { customQueriesConfigMap: [{ name: CUSTOM_QUERIES, key: 'queries.yaml' }] } }
              : {}),
          },
        }),
      );
      const started = Date.now();
      const db = await until('three instances, replicating', healthy, 300_000);
      t.diagnostic(`created to Ready with two replicas: ${((Date.now() - started) / 1000).toFixed(1)} s`);
      assert.equal(db.status?.currentPrimary, pod(0));
      await leaseFollows(pod(0));
      assert.match(db.status?.systemIdentifier ?? '', e.identity);
      assert.deepEqual(
        db.status?.instances?.map((i) => `${i.name}:${i.role}:${i.state}`),
        [`${pod(0)}:primary:Primary`, `${pod(1)}:replica:Streaming`, `${pod(2)}:replica:Streaming`],
      );
      // The Secret's values are checked, never printed.
      const creds = await readCredentials(client, ns, NAME);
      assert.equal(creds.host, `${NAME}.${ns}.svc`);
      const secret = await client.resource(Kinds.Secret).get(`${NAME}-credentials`, { namespace: ns });
      assert.ok(
        Buffer.from(secret.data?.['uri'] ?? '', 'base64')
          .toString()
          .startsWith(e.uriScheme),
        `the uri key is a ${e.uriScheme} URI`,
      );
      // The Services select by role: the client Service the primary alone, -ro the replicas.
      await explained(
        eventually('Services follow the roles', async () => {
          const [rw, ro] = [await endpointsOf(NAME), await endpointsOf(`${NAME}-ro`)];
          return rw.join() === pod(0) && ro.join() === `${pod(1)},${pod(2)}`;
        }),
      );

      // Paced: a client process and a session per write, unpaced, took a core from the scenarios
      // running beside this suite (a quarter of one, measured), for no more that a fault can show.
      writer = await startWriter({
        client,
        namespace: ns,
        db: NAME,
        engine,
        maxPerSecond: WRITES_PER_SECOND,
      });
      const writing = Date.now();
      await explained(writer.waitForAcks(300, 300_000));
      const acked = await writer.acked();
      t.diagnostic(`300 acknowledged writes in ${((Date.now() - writing) / 1000).toFixed(1)} s`);
      const rows = await explained(
        eventually('every acknowledged row on every replica', async () => {
          const all = await rowsEverywhere();
          const replicas = all.filter((r) => r.pod !== pod(0));
          return replicas.length === 2 &&
            replicas.every((r) => r.ids && lostWrites(acked, r.ids).length === 0)
            ? all
            : undefined;
        }),
      );
      t.diagnostic(`rows per instance: ${rows.map((r) => `${r.pod}=${r.count}`).join(' ')}`);
      // Read back through the read-only Service, a new connection each time, until every replica
      // has answered with every row (the Service spreads connections; it never reaches the primary).
      const ro = (await client.resource(Kinds.Service).get(`${NAME}-ro`, { namespace: ns })).spec!.clusterIP!;
      const ipOf = new Map(
        (await pods().list({ namespace: ns, labelSelector: `app.kubernetes.io/instance=${NAME}` })).items.map(
          (p) => [p.status?.podIP ?? '', p.metadata!.name!],
        ),
      );
      const complete = new Set<string>();
      let reads = 0;
      await explained(
        eventually(
          'every replica answered through the -ro Service with every row',
          async () => {
            const { answeredBy, ids } = await e.readThrough(ctx(), ro);
            reads++;
            const from = ipOf.get(answeredBy) ?? answeredBy;
            assert.notEqual(from, pod(0), 'the read-only Service never reaches the primary');
            if (lostWrites(acked, ids).length === 0) complete.add(from);
            return complete.size === 2;
          },
          60_000,
          50,
        ),
      );
      t.diagnostic(
        `read through ${NAME}-ro: ${[...complete].sort().join(' and ')} answered with every row in ${reads} reads`,
      );
      const positioned = await until(
        'every instance reports its position',
        (d) => (d.status?.instances ?? []).every((i) => e.position.test(i.lsn ?? '')),
        60_000,
      );
      t.diagnostic(`positions: ${positioned.status!.instances!.map((i) => `${i.name}=${i.lsn}`).join(' ')}`);
    });

    test(
      'a replica fenced: out of the read-only Service, its engine stopped (no client connects), its Pod and container kept; unfenced, it streams every row again',
      { skip: engine !== 'postgres' && 'the agent and the plan are shared: shown on postgres alone' },
      async (t) => {
        assert.ok(writer, 'the first test started the writer');
        const before = await until('healthy', healthy);
        const target = before.status!.instances!.find((i) => i.role === 'replica')!.name;
        const other = before.status!.instances!.find((i) => i.role === 'replica' && i.name !== target)!.name;
        const containerOf = async () => {
          const p = await pods().get(target, { namespace: ns });
          const c = p.status?.containerStatuses?.find((s) => s.name === container);
          return {
            uid: p.metadata!.uid!,
            restarts: c?.restartCount ?? 0,
            running: !!c?.state?.running,
            ip: p.status?.podIP,
          };
        };
        const was = await containerOf();
        const fencing = Date.now();
        await fenceInstances(JSON.stringify([target]));
        await explained(
          eventually(
            `${NAME}-ro without ${target}`,
            async () => (await endpointsOf(`${NAME}-ro`)).join() === other,
          ),
        );
        t.diagnostic(`out of ${NAME}-ro in ${((Date.now() - fencing) / 1000).toFixed(1)} s`);
        const fenced = await until(
          `${target} Fenced, its engine stopped`,
          (d) =>
            d.status?.instances?.find((i) => i.name === target)?.state === 'Fenced' &&
            cond(d, FENCED_CONDITION)?.reason === 'EnginesStopped',
          120_000,
        );
        t.diagnostic(`status Fenced in ${((Date.now() - fencing) / 1000).toFixed(1)} s`);
        assert.equal(cond(fenced, FENCED_CONDITION)?.status, 'True');
        assert.match(cond(fenced, FENCED_CONDITION)?.message ?? '', new RegExp(`Fenced: ${target};`));
        assert.equal(fenced.status?.currentPrimary, pod(0), 'the primary serves on');
        // No client connects: nothing listens at its address any more.
        const direct = (await rowsEverywhere()).find((r) => r.pod === target);
        assert.match(
          direct?.error ?? '',
          /ECONNREFUSED/,
          `a connection to ${target}: ${JSON.stringify(direct)}`,
        );
        // The same Pod and container, still running (not Ready): there to inspect.
        const kept = await containerOf();
        assert.deepEqual(
          [kept.uid, kept.restarts, kept.running],
          [was.uid, was.restarts, true],
          'the Pod and its container stay',
        );

        const unfencing = Date.now();
        await fenceInstances(null);
        const back = await until(
          `${target} streaming again`,
          (d) =>
            healthy(d) &&
            d.status?.instances?.find((i) => i.name === target)?.state === 'Streaming' &&
            cond(d, FENCED_CONDITION)?.status === 'False',
          120_000,
        );
        t.diagnostic(`streaming again in ${((Date.now() - unfencing) / 1000).toFixed(1)} s`);
        assert.equal(back.status?.currentPrimary, pod(0));
        const acked = await writer.acked();
        await explained(
          eventually(`every acknowledged row on ${target}`, async () => {
            const rows = (await rowsEverywhere()).find((r) => r.pod === target);
            return rows?.ids && lostWrites(acked, rows.ids).length === 0 ? rows : undefined;
          }),
        );
        await explained(
          eventually(`${NAME}-ro with ${target} again`, async () =>
            (await endpointsOf(`${NAME}-ro`)).includes(target),
          ),
        );
        const after = await containerOf();
        assert.deepEqual(
          [after.uid, after.restarts],
          [was.uid, was.restarts],
          'never restarted: the agent ran the engine again',
        );
      },
    );

    test(
      'the primary fenced: no failover, no instance accepts writes; unfenced, it resumes as the primary',
      { skip: engine !== 'postgres' && 'the agent and the plan are shared: shown on postgres alone' },
      async (t) => {
        const before = await until('healthy', healthy);
        const primary = before.status!.currentPrimary!;
        const fencing = Date.now();
        await fenceInstances(JSON.stringify([primary]));
        const stopped = await until(
          `${primary} Fenced, no primary`,
          (d) =>
            d.status?.instances?.find((i) => i.name === primary)?.state === 'Fenced' &&
            cond(d, 'ReplicationHealthy')?.reason === 'NoPrimary',
          120_000,
        );
        t.diagnostic(`the primary's engine stopped in ${((Date.now() - fencing) / 1000).toFixed(1)} s`);
        assert.match(cond(stopped, 'ReplicationHealthy')?.message ?? '', new RegExp(`${primary} is fenced`));
        // Past the failover delay, twice over: nothing took over, every other instance still a standby.
        await cadence(2 * FAILOVER_DELAY_S * 1000 + 2_000);
        const still = await get();
        assert.deepEqual(
          still.status?.instances?.filter((i) => i.state === 'Primary' || i.state === 'Writable'),
          [],
          'no instance accepts writes while the primary is fenced',
        );
        assert.equal(await endpointsOf(NAME).then((x) => x.join()), '', 'the client Service has no endpoint');
        if (e.instanceAgent) assert.equal(await leaseHolder(), primary, 'its agent keeps the primary Lease');

        const unfencing = Date.now();
        await fenceInstances(null);
        const back = await until(`${primary} the primary again`, healthy, 120_000);
        t.diagnostic(`serving again in ${((Date.now() - unfencing) / 1000).toFixed(1)} s`);
        assert.equal(back.status?.currentPrimary, primary);
        await explained(
          eventually(
            'the client Service selects it again',
            async () => (await endpointsOf(NAME)).join() === primary,
          ),
        );
      },
    );

    test("each instance's agent publishes the engine's metrics on the metrics port: the exporter's series with the instance's role, the primary's replicas streaming, each replica's link, the user-defined queries' series (one the engine refuses down); every scrape answers, its cost reported", async (t) => {
      const m = e.metrics;
      if (!m) return t.skip('this engine publishes no metrics');
      assert.ok(writer, 'the first test started the writer');
      const db = await until('three instances, replicating', healthy, 120_000);
      const primary = db.status!.currentPrimary!;
      const list = (await pods().list({ namespace: ns, labelSelector: `app.kubernetes.io/instance=${NAME}` }))
        .items;
      assert.equal(list.length, 3);
      const scrape = async (ip: string) => {
        const res = await fetch(`http://${ip}:${m.port}/metrics`, { signal: AbortSignal.timeout(5_000) });
        assert.equal(res.status, 200);
        return res.text();
      };
      const durations: number[] = [];
      for (const p of list) {
        const name = p.metadata!.name!;
        const role = name === primary ? 'primary' : 'replica';
        assert.ok(
          p.spec!.containers[0]!.ports!.some((x) => x.name === 'metrics' && x.containerPort === m.port),
          `${name} names its metrics port`,
        );
        // A replica that has just (re)connected may not be listed yet: asked until it is.
        const text = await explained(
          eventually(
            `${name}'s metrics show it ${role === 'primary' ? 'with its replicas' : 'streaming'}`,
            async () => {
              const text = await scrape(p.status!.podIP!);
              try {
                assert.equal(
                  sampleValue(parsePrometheusText(text), `${m.prefix}_up`, { role }),
                  1,
                  `${name}: ${m.prefix}_up`,
                );
                if (role === 'primary') m.primary(text, list.length - 1);
                else m.replica(text);
                return text;
              } catch (err) {
                t.diagnostic(`${name}: ${(err as Error).message.split('\n')[0]}`);
                return undefined;
              }
            },
            30_000,
            1_000,
          ),
        );
        assert.match(
          text,
          new RegExp(`^regulon_instance_primary_lease_held ${role === 'primary' ? 1 : 0}$`, 'm'),
        );
        durations.push(
          sampleValue(parsePrometheusText(text), 'regulon_instance_scrape_duration_seconds') * 1000,
        );
        // The user-defined queries, from the ConfigMap the spec names: the one that answers as its
        // series, the one the engine refuses as a query down, the engine's own series untouched.
        const series = parsePrometheusText(text);
        assert.equal(sampleValue(series, `${m.prefix}_regulon_probe_answer`, { tag: 'regulon', role }), 42);
        assert.equal(sampleValue(series, 'regulon_instance_custom_query_up', { query: 'regulon_probe' }), 1);
        assert.equal(sampleValue(series, 'regulon_instance_custom_query_up', { query: 'broken' }), 0);
      }
      // And on the Database: the manager asked the primary to plan each query, and names the one
      // refused, not the one that runs.
      const refused = cond(
        await until(
          'MetricsQueriesValid=False QueryRefused',
          (d) => cond(d, 'MetricsQueriesValid')?.reason === 'QueryRefused',
          60_000,
        ),
        'MetricsQueriesValid',
      )!;
      assert.equal(refused.status, 'False');
      assert.match(refused.message, /refuses 1 of 2 user-defined queries: broken: .*regulon_no_such_table/);
      assert.doesNotMatch(refused.message, /regulon_probe:/);
      // What a scrape costs: the engine read it reports, and the agent's memory before and after.
      const primaryPod = list.find((p) => p.metadata!.name === primary)!;
      const cost = await scrapeCost(
        primaryPod.metadata!.uid!,
        `http://${primaryPod.status!.podIP!}:${m.port}/metrics`,
        30,
      );
      // Every scrape answered: its read of the engine finished within the agent's limit. How long
      // the reads took is reported, not bounded here: under CI's load (three engine suites at
      // once) a client's run took up to 1.9 s, on a quiet machine 70-130 ms.
      assert.equal(cost.unanswered, 0, `every scrape answered: ${cost.readsMs.join(', ')} ms`);
      t.diagnostic(
        `metrics: ${list.length} instances scraped, engine reads ${durations.map((d) => d.toFixed(1)).join(', ')} ms; of ${primary}, ${describeCost(cost)}`,
      );
    });

    test("a real Prometheus with deploy/'s scrape job and the shipped instance alerts: none fires on the healthy Database; a replica whose receive from the primary is blocked fires RegulonReplicaNotStreaming; healed, it resolves; a client pool near the limit fires RegulonInstanceConnectionsNearLimit", async (t) => {
      if (!e.metrics) return t.skip('this engine publishes no metrics');
      const m = e.metrics;
      assert.ok(writer, 'the first test started the writer');
      const db = await until('three instances, replicating', healthy, 120_000);
      const primary = db.status!.currentPrimary!;
      const prometheus = await watchInstances(env.kubeconfigPath, ns);
      let cut: PodPartition | undefined;
      try {
        const started = Date.now();
        await eventually(
          'every instance scraped, its engine answering',
          async () => (await prometheus.query(`${m.prefix}_up == 1`)).length === 3,
          60_000,
          500,
        );
        // Healthy: no alert fires for 20 evaluations.
        await assertNoneFiring(prometheus, 20);
        // The engine's dashboard, as shipped, 20 scrapes in: every panel query has data (those that may not say why).
        const panels = await checkEngineDashboard(prometheus, m.dashboard);
        assert.deepEqual(panels.empty, [], 'every panel query returns series');
        assert.deepEqual(panels.notFinite, [], 'every panel query returns a number');
        assert.deepEqual(
          panels.options['role'],
          ['primary', 'replica'],
          'the role variable offers both roles',
        );
        const list = (
          await pods().list({ namespace: ns, labelSelector: `app.kubernetes.io/instance=${NAME}` })
        ).items;
        const primaryIp = list.find((p) => p.metadata!.name === primary)!.status!.podIP!;
        const standby = list.find((p) => p.metadata!.name !== primary)!;
        const standbyName = standby.metadata!.name!;
        // Inside the standby's network namespace: nothing to or from the primary, nor to the client
        // Service it replicates through (its ClusterIP is translated on the node, after this rule).
        const rw = (await client.resource(Kinds.Service).get(NAME, { namespace: ns })).spec!.clusterIP!;
        cut = cutPodOffFrom(podSandboxPid(standby.metadata!.uid!), [primaryIp, rw]);
        const blocked = Date.now();
        const fired = await explained(untilFiring(prometheus, 'RegulonReplicaNotStreaming', standbyName));
        const firedAfter = (Date.now() - blocked) / 1000;
        assert.ok(
          fired.every((a) => a['alertname'] === 'RegulonReplicaNotStreaming'),
          `only the replica's alert fires: ${JSON.stringify(fired)}`,
        );
        cut.heal();
        cut = undefined;
        const healed = Date.now();
        await explained(untilNoneFiring(prometheus));
        const resolvedAfter = (Date.now() - healed) / 1000;
        // A client pool grown to 85% of what the primary accepts.
        let nearLimit = '';
        if (m.holdConnections && m.connectionLimit) {
          const [limit] = await prometheus.query(`${m.connectionLimit}{pod="${primary}"}`);
          const count = Math.ceil(Number(limit!.value[1]) * 0.85);
          const primaryIp = list.find((p) => p.metadata!.name === primary)!.status!.podIP!;
          const pool = await m.holdConnections(ctx(), primaryIp, count);
          const holding = Date.now();
          try {
            const alerts = await explained(
              untilFiring(prometheus, 'RegulonInstanceConnectionsNearLimit', primary, 60_000),
            );
            assert.ok(
              alerts.every((a) => a['alertname'] === 'RegulonInstanceConnectionsNearLimit'),
              JSON.stringify(alerts),
            );
            nearLimit = `; ${count} of ${limit!.value[1]} connections held: RegulonInstanceConnectionsNearLimit firing +${((Date.now() - holding) / 1000).toFixed(1)} s`;
          } finally {
            await pool.close();
          }
          await explained(untilNoneFiring(prometheus, 60_000));
        }
        t.diagnostic(
          `dashboard ${m.dashboard.uid}: ${panels.queries} panel queries run, each with data but those whose panel says why it may have none`,
        );
        t.diagnostic(
          `alerts: none firing over 20 evaluations on the healthy Database (Prometheus watched for ${((Date.now() - started) / 1000).toFixed(0)} s in all); ` +
            `the replica's receive blocked: RegulonReplicaNotStreaming firing +${firedAfter.toFixed(1)} s (its for set to 5 s) for ${fired
              .map((a) => a['pod'] + (a['slot_name'] ? `/${a['slot_name']}` : ''))
              .join(', ')}; resolved +${resolvedAfter.toFixed(1)} s after the heal${nearLimit}`,
        );
      } finally {
        cut?.heal();
        await prometheus.stop();
      }
      await until('three instances, replicating again', healthy, 120_000);
    });

    test('the manager cut off from the Pods under write load: the Services keep every endpoint, nothing fails over, the Database says why; all as before once healed', async (t) => {
      assert.ok(writer, 'the first test started the writer');
      const before = await until('healthy before the partition', healthy);
      const primary = before.status!.currentPrimary!;
      const replicas = before
        .status!.instances!.filter((i) => i.role === 'replica')
        .map((i) => i.name)
        .sort();
      // The manager moves into a process of its own, in the group the partition cuts off; it starts
      // with no memory, so it is also a new manager's first look. The API server stays reachable.
      const child = await managerInItsOwnProcess();
      const partition = cutOffFromPods(CUT_OFF_GIDS[engine]);
      const cutAt = Date.now();
      const sampler = await startDatabaseSampler({ client, namespace: ns, db: NAME, engine });
      // Both Services' endpoints every 200 ms for the whole partition: any change is a finding.
      const changes: string[] = [];
      let sampling = true;
      const watching = (async () => {
        while (sampling) {
          const [rw, ro] = await Promise.all([endpointsOf(NAME), endpointsOf(`${NAME}-ro`)]);
          const at = `+${((Date.now() - cutAt) / 1000).toFixed(1)} s`;
          if (rw.join() !== primary) changes.push(`${at} ${NAME} -> [${rw.join()}]`);
          if (ro.join() !== replicas.join()) changes.push(`${at} ${NAME}-ro -> [${ro.join()}]`);
          await cadence(200);
        }
      })();
      let healedAt = 0;
      try {
        const blind = await until(
          'the Database says the manager cannot reach its instances',
          (db) => cond(db, 'InstancesReachable')?.status === 'False',
          60_000,
        );
        const noticed = Date.now() - cutAt;
        assert.equal(cond(blind, 'Ready')?.status, 'True', 'the instances serve: the kubelet says so');
        assert.equal(blind.status?.currentPrimary, primary);
        assert.deepEqual(
          blind.status?.instances?.map((i) => `${i.name}:${i.role}:${i.state}`),
          before.status!.instances!.map((i) => `${i.name}:${i.role}:Unreachable`),
          'roles kept, states unknown',
        );
        assert.match(cond(blind, 'InstancesReachable')?.message ?? '', /cannot reach/);
        // Writes acknowledged through the client Service four failover delays into the partition:
        // a manager that judged by its own probes would have emptied the Services or failed over.
        await explained(writer.waitForAckAfter(cutAt + 4 * FAILOVER_DELAY_S * 1000, 120_000));
        partition.heal();
        healedAt = Date.now();
        await until(
          'reachable again, every instance replicating',
          (db) => cond(db, 'InstancesReachable')?.status === 'True' && healthy(db),
          120_000,
        );
        const recovered = Date.now() - healedAt;
        sampling = false;
        await watching;
        const summary = await sampler.stop();
        assert.deepEqual(changes, [], 'the Services never changed');
        await neverTwoWritable(summary, cutAt);
        assert.deepEqual(summary.writableSequence, [primary], 'the primary never moved');
        const reasons = await reasonsSince(cutAt);
        assert.ok(
          reasons.includes('InstancesUnreachable') && reasons.includes('InstancesReachable'),
          `Events: ${reasons.join(', ')}`,
        );
        for (const moved of ['FailoverStarted', 'Fencing', 'Promoted'])
          assert.ok(!reasons.includes(moved), `no ${moved}: ${reasons.join(', ')}`);
        const longest = await assertWritesUndisturbed(
          writer,
          cutAt,
          healedAt,
          'while the manager was cut off',
        );
        const acked = await writer.acked();
        const primaryRows = (await rowsEverywhere()).find((r) => r.pod === primary);
        assert.ok(primaryRows?.ids, `read the primary: ${primaryRows?.error}`);
        assert.deepEqual(newlyLost(acked, primaryRows.ids), [], 'no acknowledged write lost');
        const during = (await writer.log()).acks.filter((a) => a.atMs >= cutAt && a.atMs <= healedAt).length;
        t.diagnostic(
          `manager cut off for ${((healedAt - cutAt) / 1000).toFixed(1)} s: InstancesReachable=False after ${(noticed / 1000).toFixed(1)} s; ` +
            `${during} writes acknowledged meanwhile, longest gap ${longest} ms; Service endpoint changes ${changes.length}; ` +
            `two-writable samples ${summary.splitBrainRounds.length} of ${summary.rounds}; reachable and healthy ${(recovered / 1000).toFixed(1)} s after healing`,
        );
      } finally {
        sampling = false;
        await watching;
        partition.heal();
        await sampler.stop().catch(() => {});
        await stopManagerProcess(child);
        startManager();
      }
    });

    test('the API server unreachable for 60 s from the manager and every instance: nothing fails over or stops, writes go on, the primary Lease comes back to the primary', async (t) => {
      // Without the agent nothing in the Pods talks to the API server: the manager-cut-off scenario covers it.
      if (!e.instanceAgent)
        return t.skip('no instance agent: the instances never ask the API server anything');
      const before = await until('healthy before the outage', healthy);
      const primary = before.status!.currentPrimary!;
      const apiAddresses = await apiServerAddresses(client);
      const child = await managerInItsOwnProcess();
      const cuts: Partition[] = [];
      const sampler = await startDatabaseSampler({ client, namespace: ns, db: NAME, engine });
      let cutAt = 0;
      let healedAt = 0;
      let server: number | undefined;
      try {
        await sampler.waitForRound('one writable instance', (r) => r.writable.join() === primary, 30_000);
        const primaryUid = (await pods().get(primary, { namespace: ns })).metadata!.uid!;
        server = podServerPid(primaryUid, e.isServer);
        assert.ok(server, `the server process of ${primary}`);
        cuts.push(cutOffFromApiServer(CUT_OFF_GIDS[engine], env.server));
        for (const p of before.status!.instances!) {
          const uid = (await pods().get(p.name, { namespace: ns })).metadata!.uid!;
          const sandbox = podSandboxPid(uid);
          cuts.push(cutPodOffFrom(sandbox, apiAddresses));
        }
        cutAt = Date.now();
        // Past the renew deadline the primary's agent has lost its Lease: it serves on, in touch with
        // both standbys. Acknowledgements 60 s into the outage are the proof.
        await explained(writer!.waitForAckAfter(cutAt + API_OUTAGE_MS, API_OUTAGE_MS + 30_000));
        for (const cut of cuts) cut.heal();
        healedAt = Date.now();
        // The holder's name outlives an expired Lease: what shows the agent holds it again is a renewal
        // stamped after the healing (its clock is this machine's).
        await explained(
          eventually(`${primary} renews the primary Lease again`, async () => {
            const lease = await client.resource(Kinds.Lease).get(`${NAME}-primary`, { namespace: ns });
            const renewed = new Date(lease.spec?.renewTime ?? 0).getTime();
            return lease.spec?.holderIdentity === primary && renewed >= healedAt;
          }),
        );
        const regained = Date.now() - healedAt;
        await until(
          'healthy, the same primary',
          (db) => healthy(db) && db.status?.currentPrimary === primary,
        );
        const summary = await sampler.stop();
        assert.deepEqual(summary.writableSequence, [primary], 'the primary never moved or stopped');
        assert.equal(summary.maxWritableAtOnce, 1);
        const uid = (await pods().get(primary, { namespace: ns })).metadata!.uid!;
        const now = podServerPid(uid, e.isServer);
        // A restart is the agent's fence or the kubelet's: the run before says which, and why.
        if (now !== server)
          assert.fail(
            `${primary}'s server ran throughout, never restarted: pid ${server}, now ${now}, container restarts ${await restarts(primary)}; the run before:\n` +
              (await containerLog(primary, 40, true)) +
              `\nthis run (the agent's lines say whether it fenced, and why):\n${await containerLog(primary, 60)}`,
          );
        const longest = await assertWritesUndisturbed(
          writer!,
          cutAt,
          healedAt,
          'while the API server was away',
        );
        const reasons = await reasonsSince(cutAt);
        for (const moved of ['FailoverStarted', 'Fencing', 'Promoted'])
          assert.ok(!reasons.includes(moved), `no ${moved}: ${reasons.join(', ')}`);
        const during = (await writer!.log()).acks.filter((a) => a.atMs >= cutAt && a.atMs <= healedAt).length;
        t.diagnostic(
          `API server unreachable for ${((healedAt - cutAt) / 1000).toFixed(1)} s: ${during} writes acknowledged meanwhile, longest gap ${longest} ms; ` +
            `the Lease named ${primary} again ${(regained / 1000).toFixed(1)} s after; two-writable samples ${summary.splitBrainRounds.length} of ${summary.rounds}`,
        );
      } finally {
        for (const cut of cuts) cut.heal();
        await sampler.stop().catch(() => {});
        await stopManagerProcess(child);
        startManager();
      }
    });

    /**
     * Each change of the Database's ReplicationHealthy condition from `fromMs` until stop(), as
     * `+seconds status reason: message`: what status told a person while a scenario ran.
     */
    const recordReplicationStatus = (fromMs: number) => {
      const said: string[] = [];
      let last = '';
      const polling = new AbortController();
      const done = (async () => {
        while (!polling.signal.aborted) {
          const c = await get().then(
            (db) => cond(db, 'ReplicationHealthy'),
            () => undefined,
          );
          const now = c ? `${c.status} ${c.reason}: ${c.message}` : '';
          if (now && now !== last) said.push(`+${((Date.now() - fromMs) / 1000).toFixed(1)} s ${now}`);
          last = now || last;
          await cadence(500, undefined, { signal: polling.signal }).catch(() => {});
        }
      })();
      return {
        stop: async () => {
          polling.abort();
          await done;
          return said;
        },
      };
    };

    /** The namespace's Events between two moments, as `+seconds object reason: message`. */
    const timeline = async (fromMs: number, toMs: number) => {
      const events = (await client.resource<EventsV1Event>(Kinds.Event).list({ namespace: ns })).items;
      const at = (e: EventsV1Event) =>
        new Date(e.eventTime ?? e.deprecatedLastTimestamp ?? e.metadata?.creationTimestamp ?? 0).getTime();
      return events
        .filter((e) => at(e) >= fromMs - 1000 && at(e) <= toMs)
        .sort((a, b) => at(a) - at(b))
        .map(
          (e) =>
            `+${((at(e) - fromMs) / 1000).toFixed(1)} s ${e.regarding?.name} ${e.reason}: ${(e.note ?? '').slice(0, 160)}`,
        )
        .join('; ');
    };

    /**
     * At most one instance was ever writable. A failure says, first, which instances were writable
     * together and when (with their Pod IPs: an old Pod and its successor share a name), then what
     * happened around it: the namespace's Events (Pods' and the Database's) and the Pods now.
     */
    const neverTwoWritable = async (summary: SamplerSummary, fromMs: number) => {
      if (summary.maxWritableAtOnce <= 1) return;
      assert.fail(
        `never two writable, but: ${describeSplitBrain(summary, fromMs)}\n` +
          `events: ${await timeline(fromMs, summary.lastAtMs ?? Date.now())}\n${await explain()}`,
      );
    };

    /** The reasons of the Events about the Database since a moment, oldest first. */
    const reasonsSince = async (fromMs: number) => {
      const events = (await client.resource<EventsV1Event>(Kinds.Event).list({ namespace: ns })).items;
      return events
        .filter((x) => x.regarding?.name === NAME && lastOccurred(x) >= fromMs - 1000)
        .sort((a, b) => lastOccurred(a) - lastOccurred(b))
        .map((x) => x.reason ?? '');
    };

    /**
     * Acknowledged writes a scenario lost and counted (an asynchronous failover may lose a few):
     * they stay absent for good, so each later scenario counts only the writes it lost itself.
     */
    const counted = new Set<number>();
    const newlyLost = (acked: Iterable<number>, present: ReadonlySet<number>) =>
      lostWrites(acked, present).filter((id) => !counted.has(id));

    /**
     * Loses the primary by `lose` under the running write load, and checks what
     * matters: writes resume on a primary, a sampler asking every instance its
     * role every 200 ms never sees two writable, the old primary rejoins as a
     * replica and holds every row the primary has. Returns the acknowledged
     * writes lost (the caller decides whether the semantics allow any) and how
     * often the primary role moved.
     */
    const underLoad = async (
      t: { diagnostic: (s: string) => void },
      what: string,
      lose: (primary: string) => Promise<void>,
      expectNewPrimary: boolean,
    ) => {
      assert.ok(writer, 'the first test started the writer');
      const before = await until(`${what}: healthy before`, healthy);
      const old = before.status!.currentPrimary!;
      const sampler = await startDatabaseSampler({ client, namespace: ns, db: NAME, engine });
      let said: ReturnType<typeof recordReplicationStatus> | undefined;
      try {
        await sampler.waitForRound('one writable instance', (r) => r.writable.length === 1, 30_000);
        await explained(writer.waitForAcks((await writer.acked()).length + 50, 60_000));
        const lostAt = Date.now();
        said = recordReplicationStatus(lostAt);
        await lose(old);
        const resumed = await explained(writer.waitForAckAfter(lostAt, 180_000));
        const after = await until(
          `${what}: a primary again, every instance replicating`,
          (db) => healthy(db) && (!expectNewPrimary || db.status?.currentPrimary !== old),
          300_000,
        );
        const rejoined = Date.now();
        const statusSaid = await said.stop();
        await leaseFollows(after.status!.currentPrimary!);
        await explained(writer.waitForAcks((await writer.acked()).length + 50, 60_000));
        const summary = await sampler.stop();
        await neverTwoWritable(summary, lostAt);
        // An instance that accepts writes while it replicates is one the controller would not call writable.
        const odd = sampler
          .rounds()
          .flatMap((r) => r.instances.filter((i) => i.role === 'writable' && i.reason))
          .map((i) => `${i.name}: ${i.reason}`);
        assert.deepEqual([...new Set(odd)], [], 'no instance accepts writes while it replicates');
        if (expectNewPrimary)
          assert.deepEqual(summary.writableSequence.slice(-2), [old, after.status!.currentPrimary!]);
        // Every write acknowledged so far is on the primary, and every replica caught up with it.
        const acked = await writer.acked();
        const rows = await rowsEverywhere();
        const primaryRows = rows.find((r) => r.pod === after.status!.currentPrimary);
        assert.ok(primaryRows?.ids, `read the primary: ${primaryRows?.error}`);
        const lost = newlyLost(acked, primaryRows.ids);
        for (const id of lost) counted.add(id);
        await explained(
          eventually(`${what}: every instance holds the primary's rows`, async () => {
            const now = await rowsEverywhere();
            return (
              now.length === before.spec.replicas &&
              now.every((r) => r.ids && acked.every((id) => r.ids!.has(id) || counted.has(id)))
            );
          }),
        );
        const caughtUp = Date.now();
        // The longest stretch without an acknowledged write from the loss until all is healthy again
        // (in a switchover the old primary takes writes until it stops, so the first write after the
        // request is not the end of the outage).
        const longest = (await writer.outages())
          .filter((o) => o.toMs >= lostAt && o.fromMs <= rejoined)
          .reduce<Outage | undefined>((a, o) => (a && a.durationMs >= o.durationMs ? a : o), undefined);
        const outage = longest?.durationMs ?? 0;
        // A long outage: what the client was told meanwhile (exit 124: the statement timeout).
        if (longest && outage > 10_000) {
          const failures = (await writer.log()).failures.filter(
            (f) => f.atMs >= longest.fromMs && f.atMs <= longest.toMs,
          );
          t.diagnostic(
            `${what}: during the ${(outage / 1000).toFixed(1)} s outage ${failures.length} attempts failed: ` +
              failures
                .map(
                  (f) =>
                    `+${((f.atMs - longest.fromMs) / 1000).toFixed(1)} s exit ${f.exitCode}${f.message ? ` ${f.message}` : ''}`,
                )
                .join('; '),
          );
          t.diagnostic(`${what}: what ReplicationHealthy said meanwhile: ${statusSaid.join('; ')}`);
        }
        t.diagnostic(
          // Writes resumed: the end of the longest gap (the first ack after the loss may still be the
          // old primary's, accepted before the loss took effect).
          `${what}: primary ${old} -> ${after.status!.currentPrimary}; writes resumed ${(((longest?.toMs ?? resumed.atMs) - lostAt) / 1000).toFixed(1)} s after the loss; ` +
            `write outage ${(outage / 1000).toFixed(1)} s; acknowledged writes lost ${lost.length} of ${acked.length}; ` +
            `all instances replicating again ${((rejoined - lostAt) / 1000).toFixed(1)} s after the loss, every row on every instance after ${((caughtUp - lostAt) / 1000).toFixed(1)} s; ` +
            `sampler rounds ${summary.rounds}, slowest ${summary.maxRoundMs} ms`,
        );
        // A slow rejoin: what the cluster said meanwhile, to tell a slow fence, a slow Pod start
        // and a slow rewind or clone apart.
        if (rejoined - lostAt > 20_000) t.diagnostic(`${what}: ${await timeline(lostAt, rejoined)}`);
        const moves = summary.writableSequence.length - 1;
        return { lost, old, primary: after.status!.currentPrimary!, outageMs: outage, moves };
      } finally {
        await said?.stop();
        await sampler.stop().catch(() => {});
      }
    };

    const killServer = async (primary: string) => {
      const p = await pods().get(primary, { namespace: ns });
      const pid = await eventually('the serving server process', () =>
        Promise.resolve(podServerPid(p.metadata!.uid!, e.isServer)),
      );
      process.kill(pid, 'SIGKILL');
    };
    const restarts = async (p: string) =>
      (await pods().get(p, { namespace: ns })).status?.containerStatuses?.find((c) => c.name === container)
        ?.restartCount ?? 0;
    /** An abrupt loss: the server dies with no clean shutdown, and its Pod goes (no restart in place). */
    const crash = async (primary: string) => {
      await killServer(primary);
      await pods().delete(primary, { namespace: ns });
    };
    /** How often each Event reason about the Database occurred so far (a repeated Event is a series). */
    const eventCounts = async () => {
      const events = await client.resource(Kinds.Event).list({ namespace: ns });
      const counts = new Map<string, number>();
      for (const x of events.items.filter((y) => y.regarding?.name === NAME))
        counts.set(x.reason ?? '', (counts.get(x.reason ?? '') ?? 0) + (x.series?.count ?? 1));
      return counts;
    };

    test('the primary Pod deleted under write load: a replica takes over, never two writable, the old primary rejoins', async (t) => {
      const { lost } = await underLoad(
        t,
        'Pod deleted',
        (primary) =>
          pods()
            .delete(primary, { namespace: ns })
            .then(() => {}),
        true,
      );
      // A Pod deleted shuts its server down cleanly: the reported figure, not a promise of asynchronous mode.
      t.diagnostic(`Pod deleted: ${lost.length} acknowledged writes lost`);
      const reasons = [...(await eventCounts()).keys()];
      assert.ok(
        reasons.includes('FailoverStarted') && reasons.includes('Promoted'),
        `Events: ${reasons.join(', ')}`,
      );
      assert.notEqual((await get()).status?.currentPrimary, pod(0));
    });

    test("the primary's server process killed (kill -9) under write load: the container restarts in place, writes resume, never two writable", async (t) => {
      await underLoad(
        t,
        'server killed',
        async (primary) => {
          const before = await restarts(primary);
          await killServer(primary);
          await explained(
            eventually('the container restarted', async () => (await restarts(primary)) > before),
          );
        },
        // The restarted server may be back before the failover delay ends, or a replica promoted: either is right.
        false,
      );
    });

    test("the primary's processes hung (SIGSTOP) under write load: its readiness fails, a replica takes over, never two writable", async (t) => {
      // A hang the kubelet does not report as a crash: the container runs, the server answers no one.
      // Every process the Pod's containers started is stopped (not the sandbox, not the kubelet's
      // probes); the fence's kill ends them.
      let hung: number[] = [];
      try {
        const { lost } = await underLoad(
          t,
          'primary hung',
          async (primary) => {
            const p = await pods().get(primary, { namespace: ns });
            hung = containerProcessTrees(p.metadata!.uid!);
            assert.ok(hung.length > 0, `the processes of ${primary}`);
            for (const pid of hung) stopProcess(pid);
          },
          true,
        );
        t.diagnostic(`primary hung (asynchronous): ${lost.length} acknowledged writes lost`);
      } finally {
        for (const pid of hung)
          try {
            process.kill(pid, 'SIGCONT');
          } catch {
            // Killed by the fence, as it should be.
          }
      }
    });

    test('asynchronous replication, the primary isolated from its standbys, the manager and the API server, its clients still connected: its agent stops it before its Lease can expire, a standby takes over, never two writable; what it acknowledged alone is lost, counted and within the Lease', async (t) => {
      // The manager moves into a process of its own, cut off from the primary's Pod alone; inside that
      // Pod every packet to and from the standbys and the API server is dropped. The writer's Pod, and
      // the test's sampler, still reach it: the clients are on the primary's side of the partition.
      if (!e.instanceAgent) return t.skip('no instance agent: nothing in the Pod stops an isolated primary');
      const discardedBefore = new Map(
        (await get()).status?.instances?.map((i) => [i.name, i.discarded]) ?? [],
      );
      const child = await managerInItsOwnProcess();
      const cuts: Partition[] = [];
      let cutAt = 0;
      let old = '';
      const heal = () => {
        for (const cut of cuts.splice(0)) cut.heal();
      };
      try {
        const apiAddresses = await apiServerAddresses(client);
        const { lost, primary } = await underLoad(
          t,
          'primary isolated',
          async (primary) => {
            old = primary;
            const instances = await Promise.all(
              (await get()).status!.instances!.map((i) => pods().get(i.name, { namespace: ns })),
            );
            const primaryPod = instances.find((p) => p.metadata!.name === primary)!;
            const standbyIps = instances.filter((p) => p !== primaryPod).map((p) => p.status!.podIP!);
            cuts.push(cutOffFromPod(CUT_OFF_GIDS[engine], primaryPod.status!.podIP!));
            cuts.push(
              cutPodOffFrom(podSandboxPid(primaryPod.metadata!.uid!), [...standbyIps, ...apiAddresses]),
            );
            cutAt = Date.now();
            // Healed once a standby is the primary: the isolated one was stopped by then (its agent,
            // or the manager's fence through the kubelet, which still reaches it). Healed sooner, the
            // fenced primary would restart in place and serve again, with nothing to fail over.
            await until(
              'a standby promoted while the primary is isolated',
              (db) => !!db.status?.currentPrimary && db.status.currentPrimary !== primary,
              120_000,
            );
            heal();
          },
          true,
        );
        // Asynchronous: what the isolated primary acknowledged that no standby received is lost. Its
        // agent cannot renew the Lease, and stops it before the Lease can expire: every lost write
        // was acknowledged before then (the last renewal came before the cut).
        // The writer, on the primary's side, was acknowledged by it after the cut (the premise).
        assert.ok(lost.length > 0, `no write lost: did the writer reach the isolated ${old}?`);
        const acks = new Map((await writer!.log()).acks.map((a) => [a.id, a.atMs]));
        const bound = cutAt + PRIMARY_LEASE_SECONDS * 1000;
        const late = lost.filter((id) => (acks.get(id) ?? 0) > bound);
        assert.deepEqual(late, [], `writes lost that ${old} acknowledged after its Lease could expire`);
        const lastLost = Math.max(cutAt, ...lost.map((id) => acks.get(id) ?? cutAt));
        const reported = (await get()).status?.instances?.find((i) => i.name === old)?.discarded;
        if (lost.length > 0)
          assert.ok(
            reported && reported !== discardedBefore.get(old),
            `${old} rejoined: its status says what it discarded (${reported})`,
          );
        t.diagnostic(
          `primary isolated (asynchronous): ${old} -> ${primary}; ${lost.length} acknowledged writes lost, the last acknowledged ` +
            `+${((lastLost - cutAt) / 1000).toFixed(1)} s after the cut (bound ${PRIMARY_LEASE_SECONDS} s); discarded: ${reported ?? 'nothing'}`,
        );
      } finally {
        heal();
        await stopManagerProcess(child);
        startManager();
      }
    });

    test('asynchronous replication, the primary crashed (process killed, Pod deleted) under write load: a replica takes over; the writes lost are counted', async (t) => {
      // The Pod of a killed server goes within a second: a manager that did not see it being
      // deleted sees a primary not ready, and its new Pod may be back, as the primary the topology
      // names, within the failover delay. Either is right; what is checked is what was lost.
      // The status may still say what it said before the crash: until the new Pod serves, "healthy"
      // would be the old status's word (CI twice read a primary that was not there yet).
      const crashAndReplace = async (primary: string) => {
        const before = (await pods().get(primary, { namespace: ns })).metadata!.uid;
        await crash(primary);
        await explained(
          eventually(
            `${primary} replaced and Ready`,
            async () => {
              const p = await pods().get(primary, { namespace: ns });
              return (
                p.metadata?.uid !== before &&
                !p.metadata?.deletionTimestamp &&
                p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
              );
            },
            180_000,
          ),
        );
      };
      const { lost } = await underLoad(t, 'async crash', crashAndReplace, false);
      t.diagnostic(`asynchronous replication: ${lost.length} acknowledged writes lost in a crash failover`);
    });

    test('asynchronous replication, a former primary returning with transactions the new primary never had: counted and named first; with divergedData Keep it stays out, its data as it was; with Discard it rejoins and the status and an Event say what went', async (t) => {
      // The primary is cut off from its replicas (every packet between them dropped: their
      // replication connections look alive) while it acknowledges writes, then it crashes: the
      // promoted replica lacks those writes, and the former primary comes back holding them.
      const setDiverged = (divergedData: string | null) =>
        dbs().patch(NAME, { spec: { replication: { divergedData } } }, { type: 'merge', namespace: ns });
      const before = await until('healthy before', healthy);
      const old = before.status!.currentPrimary!;
      await setDiverged('Keep');
      await explained(
        eventually('the topology says Keep', async () => {
          const cm = await client.resource(Kinds.ConfigMap).get(`${NAME}-topology`, { namespace: ns });
          return cm.data?.['divergedData'] === 'Keep';
        }),
      );
      let lost: number[];
      let kept: RegExpExecArray;
      let cut: PodPartition | undefined;
      let cutAt: number | undefined;
      let crashedAt: number | undefined;
      try {
        const replicaIps = await Promise.all(
          before
            .status!.instances!.filter((i) => i.name !== old)
            .map(async (i) => (await pods().get(i.name, { namespace: ns })).status!.podIP!),
        );
        cut = cutPodOffFrom(
          podSandboxPid((await pods().get(old, { namespace: ns })).metadata!.uid!),
          replicaIps,
        );
        cutAt = Date.now();
        // A write acknowledged this long after the cut was committed after it: no replica has it.
        // (One acknowledged sooner may have been committed, and shipped, before the cut.)
        const surelyCut = cutAt + 2_000;
        // The crash comes within the senders' 5 s timeout: the primary still counts its standbys as
        // followers, so its Pod's deletion hands over to one (a later crash, with no follower left,
        // leaves the old primary to come back as the primary).
        await explained(writer!.waitForAckAfter(surelyCut + 2_000, 60_000));
        const unreplicated = (await writer!.log()).acks.filter((a) => a.atMs >= surelyCut).map((a) => a.id);
        t.diagnostic(
          `the primary acknowledged ${unreplicated.length} writes no replica can have received, from 2 s after the cut`,
        );
        await crash(old);
        crashedAt = Date.now();
        // Healed only once the old Pod's network namespace is gone: until then its kernel still
        // holds the writes the cut stalled, and would retransmit them to a standby not promoted
        // yet, which would then lack nothing.
        await explained(
          eventually(`${old}'s old network namespace gone`, () => cut!.namespaceGone(), 120_000, 200),
        );
        cut.heal();
        const degraded = await until(
          `${old} kept out, saying why`,
          (db) =>
            db.status?.currentPrimary !== old &&
            cond(db, 'Degraded')?.reason === 'InstanceFailing' &&
            /kept out with its data as it is/.test(cond(db, 'Degraded')?.message ?? ''),
          300_000,
        );
        const message = cond(degraded, 'Degraded')!.message;
        t.diagnostic(`kept out: ${message}`);
        // What each engine counts by: postgres's WAL after the fork (pg_waldump), MariaDB's GTIDs.
        const report =
          engine === 'postgres'
            ? `(\\d+) transaction\\(s\\) committed on timeline \\d+ after [0-9A-F]+/[0-9A-F]+, where the primary's history leaves it \\(WAL to [0-9A-F]+/[0-9A-F]+, the last commit at [^)]+\\)`
            : `(\\d+) transaction\\(s\\) the primary never had \\(GTID \\d+-\\d+-\\d+ to \\d+-\\d+-\\d+; the primary is at [0-9,-]+\\)`;
        kept = new RegExp(
          `^Instance ${old}: container ${container} exits with code 1: regulon: error: kept out with its data as it is \\(spec.replication.divergedData: Keep\\): (${report})\\. Set divergedData to Discard, or delete its PersistentVolumeClaim, to rejoin it$`,
        ).exec(message)!;
        assert.ok(kept, `${message}\n${old}'s last run:\n${await containerLog(old, 40, true)}`);
        // The new primary takes writes meanwhile (Ready is False: an instance fails).
        await explained(writer!.waitForAckAfter(Date.now(), 30_000));
        // Every acknowledged write the new primary lacks is among the transactions counted. The
        // acknowledgements are read before the rows: one acknowledged in between is on the primary.
        const acked = await writer!.acked();
        const rows = await rowsEverywhere();
        const primaryRows = rows.find((r) => r.pod === degraded.status!.currentPrimary);
        assert.ok(primaryRows?.ids, `read the primary: ${primaryRows?.error}`);
        lost = newlyLost(acked, primaryRows.ids);
        for (const id of lost) counted.add(id);
        assert.ok(unreplicated.length > 0, 'writes acknowledged while the primary was cut off');
        assert.deepEqual(
          unreplicated.filter((id) => !lost.includes(id)),
          [],
          `every write acknowledged after the cut is lost (${lost.length} lost)`,
        );
        assert.ok(Number(kept[2]) >= lost.length, `${kept[2]} transactions counted, ${lost.length} lost`);
        t.diagnostic(
          `acknowledged writes lost: ${lost.length}; transactions the kept instance holds: ${kept[2]}`,
        );
        const p = await pods().get(old, { namespace: ns });
        assert.ok(
          !p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
          `${old} is not Ready`,
        );
      } catch (err) {
        // The later scenarios need every instance back: let this one rejoin before failing.
        cut?.heal();
        await setDiverged('Discard');
        await pods()
          .delete(old, { namespace: ns })
          .catch(() => {});
        await until('healthy again after a failed scenario', healthy).catch(() => {});
        // What the cut primary acknowledged is this scenario's loss by design (asynchronous
        // replication), whatever failed: a later scenario must not count it as its own.
        if (cutAt !== undefined) {
          const end = crashedAt ?? Date.now();
          for (const a of (await writer!.log()).acks) if (a.atMs >= cutAt && a.atMs <= end) counted.add(a.id);
        }
        throw err;
      } finally {
        cut?.heal();
      }

      // A person lets it go: Discard, and the Pod deleted so that it starts now, not after its back-off.
      const released = Date.now();
      await setDiverged('Discard');
      await explained(
        eventually('the topology says Discard', async () => {
          const cm = await client.resource(Kinds.ConfigMap).get(`${NAME}-topology`, { namespace: ns });
          return cm.data?.['divergedData'] === 'Discard';
        }),
      );
      await pods().delete(old, { namespace: ns });
      const rejoined = await until(
        `${old} rejoined, what it discarded in its status`,
        (db) => healthy(db) && db.status?.instances?.find((i) => i.name === old)?.discarded !== undefined,
        300_000,
      );
      const discarded = rejoined.status!.instances!.find((i) => i.name === old)!.discarded!;
      t.diagnostic(`rejoined ${((Date.now() - released) / 1000).toFixed(1)} s after Discard: ${discarded}`);
      // The same transactions as while it was kept: nothing of it had gone (MariaDB's report also
      // says where the primary is, which moved on meanwhile).
      const same = (report: string) => report.replace(/; the primary is at [0-9,-]+\)/, ')');
      assert.equal(
        same(discarded.replace(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: /, '')),
        `${same(kept[1]!)}, discarded`,
      );
      await explained(
        eventually('a DivergedTransactionsDiscarded Event', async () =>
          (await client.resource<EventsV1Event>(Kinds.Event).list({ namespace: ns })).items.some(
            (x) =>
              x.regarding?.name === NAME &&
              x.reason === 'DivergedTransactionsDiscarded' &&
              x.note === `Instance ${old}, a former primary: ${discarded}`,
          ),
        ),
      );
      // Discard stays, as the Database was created.
      await until('healthy again', healthy);
    });

    test('switchover under write load: the named replica becomes the primary, no acknowledged write lost', async (t) => {
      const before = await until('healthy', healthy);
      const target = before.status!.instances!.find((i) => i.role === 'replica')!.name;
      const { lost, primary } = await underLoad(
        t,
        'switchover',
        async () => {
          await dbs().patch(
            NAME,
            { metadata: { annotations: { [SWITCHOVER_ANNOTATION]: target } } },
            { type: 'merge', namespace: ns },
          );
        },
        true,
      );
      assert.equal(primary, target);
      assert.deepEqual(
        lost,
        [],
        'the old primary stops cleanly and the target has everything before it is promoted',
      );
      assert.equal(
        (await get()).metadata.annotations?.[SWITCHOVER_ANNOTATION],
        undefined,
        'the request is removed once carried out',
      );
    });

    test(
      "a replica whose replication stopped for good on an error: the status gives its server's words; it is restarted, found beyond the primary's history, and cloned afresh",
      {
        skip:
          engine !== 'mariadb' &&
          "a standby's error is read from MariaDB's SHOW SLAVE STATUS; a postgres standby retries by itself and reports none",
      },
      async () => {
        const before = await until('healthy', healthy);
        const replica = before.status!.instances!.find((i) => i.role === 'replica')!.name;
        const uid = (await pods().get(replica, { namespace: ns })).metadata!.uid!;
        // A position the primary's binlog never held: the IO thread stops on error 1236, as it does
        // for a replica that received from a former primary what the new one never had. Set as the
        // replication account, as the manager would: read_only binds the application's.
        const asked = Date.now();
        const secret = await client.resource(Kinds.Secret).get(`${NAME}-replication`, { namespace: ns });
        const field = (k: string) => Buffer.from(secret.data![k]!, 'base64').toString('utf8');
        const replication = {
          ...(await readCredentials(client, ns, NAME)),
          username: field('username'),
          password: field('password'),
        };
        const ip = (await pods().get(replica, { namespace: ns })).status!.podIP!;
        await mariadbStatement(replication, ip, 'STOP SLAVE');
        try {
          await mariadbStatement(replication, ip, "SET GLOBAL gtid_slave_pos = '0-4000000000-1000000000'");
        } finally {
          // Started again whatever happened: a replica left stopped would fail every later scenario.
          await mariadbStatement(replication, ip, 'START SLAVE');
        }
        const stopped = await until(
          `${replica}'s error in the status`,
          (db) =>
            /^IO thread stopped \(error 1236\)/.test(
              db.status?.instances?.find((i) => i.name === replica)?.replicationError ?? '',
            ),
          60_000,
        );
        assert.match(
          cond(stopped, 'ReplicationHealthy')?.message ?? '',
          new RegExp(`${replica}: IO thread stopped \\(error 1236\\): .*0-4000000000-1000000000`),
        );
        await until(
          `${replica} restarted and streaming again`,
          (db) =>
            healthy(db) && db.status!.instances!.some((i) => i.name === replica && i.role === 'replica'),
        );
        assert.notEqual((await pods().get(replica, { namespace: ns })).metadata!.uid, uid, 'a new Pod');
        // Its position was beyond anything the primary wrote: its start took it for diverged data,
        // and divergedData (Discard) had it cloned afresh, which its status reports.
        assert.match(
          (await get()).status!.instances!.find((i) => i.name === replica)?.discarded ?? '',
          /transaction\(s\) the primary never had \(GTID up to 0-4000000000-1000000000;/,
        );
        const reasons = await reasonsSince(asked);
        assert.deepEqual(
          reasons.filter((r) => r === 'ReplicaRestarted'),
          ['ReplicaRestarted'],
          `one restart (Events: ${reasons.join(', ')})`,
        );
        assert.ok(
          !reasons.some((r) => r === 'FailoverStarted' || r === 'SwitchoverStarted'),
          'the primary stays',
        );
      },
    );

    test('switchover to a standby that trails beyond maxLag: the primary serves while it catches up, then hands over; one that does not catch up in time is refused; no acknowledged write lost', async (t) => {
      // The lag is made by stopping what receives on the standby. postgres: its walreceiver
      // (SIGSTOP), so its server still answers, pg_stat_wal_receiver still says streaming, and what
      // it received stays where it was while the primary writes on. MariaDB: its IO thread (STOP
      // SLAVE IO_THREAD, the receiving side being a thread of its server), which the manager then
      // sees as not streaming: the switchover waits for it all the same.
      // A small lag bound, so that seconds of the writer's load put the standby beyond it: the paced
      // writer makes about 1 KiB of WAL a second (64 KiB took more than a minute).
      const MAX_LAG = engine === 'postgres' ? 8 * 1024 : 20;
      const setReplication = (replication: Record<string, unknown>) =>
        dbs().patch(NAME, { spec: { replication } }, { type: 'merge', namespace: ns });
      await setReplication({
        maxLag: engine === 'postgres' ? { bytes: MAX_LAG } : { transactions: MAX_LAG },
        switchoverCatchUpSeconds: 60,
      });
      const lagOf = (db: DatabaseObject, standby: string) => {
        const i = db.status?.instances?.find((x) => x.name === standby);
        return (engine === 'postgres' ? i?.lagBytes : i?.lagTransactions) ?? 0;
      };
      const stopped: number[] = [];
      const stoppedThreads: string[] = [];
      const onInstance = async (standby: string, sql: string) =>
        mariadbStatement(
          await readCredentials(client, ns, NAME),
          (await pods().get(standby, { namespace: ns })).status!.podIP!,
          sql,
        );
      const stopReceiver = async (standby: string) => {
        if (engine === 'postgres') {
          const p = await pods().get(standby, { namespace: ns });
          const pids = podPids(p.metadata!.uid!, (argv) => /walreceiver/.test(argv[0] ?? ''));
          assert.equal(pids.length, 1, `${standby}'s walreceiver`);
          stopProcess(pids[0]!);
          stopped.push(pids[0]!);
        } else {
          await onInstance(standby, 'STOP SLAVE IO_THREAD');
          stoppedThreads.push(standby);
        }
        await until(`${standby} beyond the lag bound`, (db) => lagOf(db, standby) > MAX_LAG, 60_000);
      };
      const resumeReceivers = async () => {
        for (const pid of stopped.splice(0))
          try {
            process.kill(pid, 'SIGCONT');
          } catch {
            // Ended meanwhile.
          }
        for (const standby of stoppedThreads.splice(0)) await onInstance(standby, 'START SLAVE IO_THREAD');
      };
      const request = (target: string) =>
        dbs().patch(
          NAME,
          { metadata: { annotations: { [SWITCHOVER_ANNOTATION]: target } } },
          { type: 'merge', namespace: ns },
        );
      try {
        let waitedMs = 0;
        let target = '';
        const { lost, primary } = await underLoad(
          t,
          'lagging switchover',
          async (old) => {
            target = [pod(0), pod(1), pod(2)].find((p) => p !== old)!;
            await stopReceiver(target);
            const asked = Date.now();
            await request(target);
            const waiting = await until(
              'the switchover waits for its target',
              (db) => db.status?.switchover?.target === target && db.status.switchover.state === 'Waiting',
              30_000,
            );
            assert.equal(waiting.status?.currentPrimary, old, 'the primary keeps serving');
            assert.match(
              waiting.status.switchover!.message,
              new RegExp(`^switchover to ${target} waits for it to catch up`),
            );
            await explained(
              eventually('a SwitchoverWaiting Event', async () =>
                (await reasonsSince(asked)).includes('SwitchoverWaiting'),
              ),
            );
            // The primary still takes writes while it waits.
            await explained(writer!.waitForAckAfter(Date.now(), 30_000));
            await resumeReceivers();
            await until(
              `${target} promoted once caught up`,
              (db) => db.status?.currentPrimary === target,
              120_000,
            );
            waitedMs = Date.now() - asked;
          },
          true,
        );
        assert.equal(primary, target);
        assert.deepEqual(lost, [], 'the target received everything before it was promoted');
        assert.equal((await get()).status?.switchover?.state, 'Started');
        t.diagnostic(
          `lagging switchover: waited for the target, then handed over ${(waitedMs / 1000).toFixed(1)} s after the request; ${lost.length} lost`,
        );

        // One that does not catch up within switchoverCatchUpSeconds: refused, and nothing moves.
        await setReplication({ switchoverCatchUpSeconds: 5 });
        const before = await until('healthy before the refused switchover', healthy);
        const current = before.status!.currentPrimary!;
        const laggard = [pod(0), pod(1), pod(2)].find((p) => p !== current)!;
        await stopReceiver(laggard);
        const asked = Date.now();
        await request(laggard);
        const refused = await until(
          'the switchover refused after its catch-up time',
          (db) => db.status?.switchover?.target === laggard && db.status.switchover.state === 'Refused',
          60_000,
        );
        assert.equal(refused.status?.currentPrimary, current, 'the primary keeps serving');
        assert.match(
          refused.status.switchover!.message,
          engine === 'postgres'
            ? new RegExp(`beyond the lag bound \\(${MAX_LAG}\\), after \\d+ s to catch up`)
            : /it is not a ready, streaming standby, after \d+ s to catch up/,
        );
        assert.equal(
          refused.metadata.annotations?.[SWITCHOVER_ANNOTATION],
          undefined,
          'the request is removed',
        );
        // Events are written in the background, after the status may already say Refused.
        await explained(
          eventually('a SwitchoverRefused Warning Event', async () =>
            (await reasonsSince(asked)).includes('SwitchoverRefused'),
          ),
        );
        await explained(writer!.waitForAckAfter(Date.now(), 30_000));
        t.diagnostic(
          `refused after ${((Date.now() - asked) / 1000).toFixed(1)} s: ${refused.status.switchover!.message}`,
        );
      } finally {
        await resumeReceivers();
        await setReplication({ maxLag: null, switchoverCatchUpSeconds: null });
      }
      await until('healthy again', healthy);
    });

    test('the manager stopped in the middle of a failover: the next one finishes it, with no second promotion', async (t) => {
      const before = await until('healthy', healthy);
      const old = before.status!.currentPrimary!;
      const countsBefore = await eventCounts();
      const topology = () =>
        client
          .resource(Kinds.ConfigMap)
          .get(`${NAME}-topology`, { namespace: ns })
          .then((cm) => cm.data?.['primary']);
      await pods().delete(old, { namespace: ns });
      // The moment the failover is recorded, the manager stops: before it fenced and promoted.
      const named = await eventually(
        'the failover recorded',
        async () => {
          const p = await topology();
          return p !== old ? p : undefined;
        },
        60_000,
        50,
      );
      mgr.stop();
      await running;
      let restarted = false;
      const sampler = await startDatabaseSampler({ client, namespace: ns, db: NAME, engine });
      try {
        const stopped = Date.now();
        const midway = await sampler.waitForRound('a round after the stop', () => true, 10_000);
        // The old primary may still be writable while it shuts down (MariaDB first sends its
        // replicas every transaction); the one named is not yet, unless the promotion was already
        // under way: with the primary Lease released by the old primary's agent, the reconcile
        // after the topology's may promote within milliseconds, and a stop does not cut a
        // reconcile short. Then the next manager has only to keep that choice: no second promotion.
        const early = midway.writable.filter((w) => w !== old);
        if (early.length)
          t.diagnostic(
            `the first manager had promoted ${early.join()} before it stopped: checking that the next one does not promote again`,
          );
        assert.ok(
          early.every((w) => w === named),
          `only the named instance may be writable: ${JSON.stringify(midway.instances)}`,
        );
        startManager();
        restarted = true;
        const after = await until(
          'the failover finished by the new manager',
          (db) => healthy(db) && db.status?.currentPrimary === named,
          300_000,
        );
        const summary = await sampler.stop();
        await neverTwoWritable(summary, stopped);
        let countsAfter = await eventCounts();
        const since = (reason: string) => (countsAfter.get(reason) ?? 0) - (countsBefore.get(reason) ?? 0);
        // Events are written in the background: wait until both are in, then check there is one of each.
        await eventually('the Events of the failover', async () => {
          countsAfter = await eventCounts();
          return since('FailoverStarted') >= 1 && since('Promoted') >= 1;
        });
        const seen = JSON.stringify(Object.fromEntries(countsAfter));
        assert.equal(since('FailoverStarted'), 1, `one failover: ${seen}`);
        assert.equal(since('Promoted'), 1, `one promotion: ${seen}`);
        assert.equal(await topology(), named, 'the next manager kept the choice made');
        t.diagnostic(
          `failover finished by the next manager: ${old} -> ${after.status!.currentPrimary}, ${((Date.now() - stopped) / 1000).toFixed(1)} s after the first stopped`,
        );
      } finally {
        await sampler.stop().catch(() => {});
        // The later scenarios need a manager, whatever happened here.
        if (!restarted) startManager();
      }
    });

    test("the primary's volume deleted under write load: a replica takes over, the instance comes back as a clone", async (t) => {
      const { old } = await underLoad(
        t,
        'volume deleted',
        async (primary) => {
          // The claim goes once its Pod does (kubernetes.io/pvc-protection); the StatefulSet makes a new, empty one.
          await client.resource(Kinds.PersistentVolumeClaim).delete(`data-${primary}`, { namespace: ns });
          await pods().delete(primary, { namespace: ns });
        },
        true,
      );
      assert.match(
        await containerLog(old, 200),
        /cloning the primary/,
        `${old} (an empty volume) was cloned`,
      );
    });

    test('scale 3 -> 1 -> 3: the primary moves to ordinal 0, a replica with an empty volume is cloned and joins, -ro follows', async (t) => {
      await until('healthy', healthy);
      await dbs().patch(NAME, { spec: { replicas: 1 } }, { type: 'merge', namespace: ns });
      const single = await until(
        'one instance, the primary',
        (db) => cond(db, 'Ready')?.status === 'True' && db.status?.replicas === 1,
        300_000,
      );
      assert.equal(single.status?.currentPrimary, pod(0), 'the primary moved off the ordinals scaled away');
      await explained(
        eventually(
          'the client Service selects the one instance',
          async () => (await endpointsOf(NAME)).join() === pod(0),
        ),
      );
      const kept = e.keptForReplicas;
      if (kept)
        await explained(
          eventually(
            'what the primary kept for the removed instances dropped',
            async () => (await kept.read(ctx(), pod(0))).length === 0,
          ),
        );
      // Ordinal 1 comes back with its data (it rejoins); ordinal 2 with a new, empty volume (it is cloned).
      await explained(
        eventually(
          `${pod(2)}'s Pod gone`,
          gone(() => pods().get(pod(2), { namespace: ns })),
        ),
      );
      const claims = client.resource(Kinds.PersistentVolumeClaim);
      await claims.delete(`data-${pod(2)}`, { namespace: ns });
      await explained(
        eventually(
          `the claim data-${pod(2)} gone`,
          gone(() => claims.get(`data-${pod(2)}`, { namespace: ns })),
        ),
      );
      assert.ok(writer);
      const acked = await writer.acked();
      const scaled = Date.now();
      await dbs().patch(NAME, { spec: { replicas: 3 } }, { type: 'merge', namespace: ns });
      await until('three again, replicating', healthy, 300_000);
      if (kept) assert.deepEqual(await kept.read(ctx(), pod(0)), kept.expected([pod(1), pod(2)]));
      await explained(
        eventually(
          '-ro follows the replicas',
          async () => (await endpointsOf(`${NAME}-ro`)).join() === `${pod(1)},${pod(2)}`,
        ),
      );
      await explained(
        eventually('the returning replicas caught up', async () => {
          const rows = await rowsEverywhere();
          return rows.length === 3 && rows.every((r) => r.ids && newlyLost(acked, r.ids).length === 0);
        }),
      );
      t.diagnostic(
        `scaled 1 -> 3, every replica holding every row: ${((Date.now() - scaled) / 1000).toFixed(1)} s`,
      );
      assert.match(
        await containerLog(pod(2), 200),
        /cloning the primary/,
        `${pod(2)} (an empty volume) was cloned`,
      );
    });

    test('synchronous replication: the primary crashed under write load, no acknowledged write lost', async (t) => {
      await dbs().patch(
        NAME,
        { spec: { replication: { synchronous: true, failoverDelaySeconds: 5 } } },
        { type: 'merge', namespace: ns },
      );
      const patched = Date.now();
      // A configuration change rolls every Pod; then it is as healthy as before.
      const rolled = await until(
        'rolled out with synchronous replication',
        (db) => healthy(db) && db.status?.phase === 'Ready',
        300_000,
      );
      t.diagnostic(
        `rolled out with synchronous replication in ${((Date.now() - patched) / 1000).toFixed(1)} s`,
      );
      // The primary really waits for a replica: without this the test would prove nothing.
      const waits = e.waitsForReplicas;
      const waiting = (p: string) =>
        waits
          ? explained(eventually(`${p} waits for a replica's acknowledgement`, () => waits(ctx(), p)))
          : Promise.resolve(true);
      await waiting(rolled.status!.currentPrimary!);
      const { lost, primary } = await underLoad(t, 'sync crash', crash, true);
      assert.deepEqual(lost, [], 'with synchronous replication every acknowledged write is on a replica');
      await waiting(primary);
    });

    /**
     * The quorum scenarios' fault, on the primary `old` under the write load. The standby left
     * (`lagging`) is cut off from the primary (dropped packets, at its Pod IP and at the client
     * Service's, which standbys replicate through): a buffered retransmission would otherwise bring
     * it what it missed. It misses two seconds of acknowledged commits, short of the senders' 5 s
     * timeout, so it may still count as streaming. Then the primary and the other standby
     * (`confirming`, which acknowledged those commits) hang together. Promoting the lagging one
     * would lose them: the quorum rule waits, and says for whom. Resolves once it does, with what
     * `lagging` lacks; `fault` keeps what to undo.
     */
    const hangWithConfirmingStandby = async (old: string, fault: QuorumFault) => {
      const standbys = [pod(0), pod(1), pod(2)].filter((p) => p !== old);
      fault.lagging = standbys[0]!;
      fault.confirming = standbys[1]!;
      const [oldPod, laggingPod, confirmingPod] = (await Promise.all(
        [old, fault.lagging, fault.confirming].map((p) => pods().get(p, { namespace: ns })),
      )) as [V1Pod, V1Pod, V1Pod];
      const sandbox = podSandboxPid(laggingPod.metadata!.uid!);
      const cutAt = Date.now();
      const service = await client.resource(Kinds.Service).get(NAME, { namespace: ns });
      fault.cuts.push(cutPodOffFrom(sandbox, [oldPod.status!.podIP!, service.spec!.clusterIP!]));
      // Commits acknowledged after the cut: the lagging standby lacks them.
      await explained(writer!.waitForAckAfter(cutAt + 2_000, 30_000));
      fault.hung = containerProcessTrees(oldPod.metadata!.uid!);
      fault.confirmingHung = containerProcessTrees(confirmingPod.metadata!.uid!);
      assert.ok(
        fault.hung.length > 0 && fault.confirmingHung.length > 0,
        `the processes of ${old} and ${fault.confirming}`,
      );
      for (const pid of [...fault.hung, ...fault.confirmingHung]) stopProcess(pid);
      const hungAt = Date.now();
      const acked = new Set(await writer!.acked());
      const waiting = await until(
        `the failover waits for ${fault.confirming}, and says so`,
        (db) =>
          cond(db, 'ReplicationHealthy')?.reason === 'FailoverQuorumNotReached' &&
          (cond(db, 'ReplicationHealthy')?.message ?? '').includes(`waiting for ${fault.confirming}`),
        90_000,
      );
      fault.waitedMs = Date.now() - hungAt;
      assert.equal(cond(waiting, 'Ready')?.reason, 'NoPrimary', 'Ready says no instance accepts writes');
      assert.notEqual(waiting.status?.currentPrimary, fault.lagging, 'the lagging standby is not promoted');
      const reasons = await reasonsSince(hungAt);
      assert.ok(reasons.includes('FailoverQuorumNotReached'), `a Warning Event: ${reasons.join(', ')}`);
      assert.ok(!reasons.includes('FailoverStarted'), `nothing promoted: ${reasons.join(', ')}`);
      // The proof that the wait matters: promoting the standby that answers would have lost writes.
      const rows = (await rowsEverywhere()).find((r) => r.pod === fault.lagging);
      assert.ok(rows?.ids, `read ${fault.lagging}: ${rows?.error}`);
      // Not counting what an earlier scenario lost and counted: it is absent everywhere.
      fault.lackedAtWait = newlyLost(acked, rows.ids).length;
      assert.ok(fault.lackedAtWait > 0, `${fault.lagging} lacks acknowledged commits`);
    };
    /** Lets every process the quorum fault stopped run again, and heals its cut. Idempotent. */
    const undoQuorumFault = (fault: QuorumFault) => {
      for (const pid of [...fault.hung, ...fault.confirmingHung])
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          // Killed by the fence, as it should be.
        }
      fault.hung = [];
      fault.confirmingHung = [];
      for (const cut of fault.cuts) cut.heal();
    };

    test('synchronous replication: the primary and its confirming standby hung together, a lagging standby left: nothing is promoted until a quorum answers; no acknowledged write lost', async (t) => {
      // Once `confirming` answers again it is promoted, holding every commit.
      const fault = quorumFault();
      try {
        const { lost, primary } = await underLoad(
          t,
          'sync quorum',
          async (old) => {
            await hangWithConfirmingStandby(old, fault);
            for (const pid of fault.confirmingHung) process.kill(pid, 'SIGCONT');
            fault.confirmingHung = [];
            // The lagging standby follows the new primary through the Service once it serves.
            await until(
              `${fault.confirming} promoted`,
              (db) => db.status?.currentPrimary === fault.confirming,
              120_000,
            );
            for (const cut of fault.cuts) cut.heal();
          },
          true,
        );
        assert.deepEqual(lost, [], 'the standby that held every acknowledged commit took over');
        assert.equal(primary, fault.confirming);
        t.diagnostic(
          `sync quorum: the failover waited ${(fault.waitedMs / 1000).toFixed(1)} s for ${fault.confirming} (status said FailoverQuorumNotReached); ` +
            `the lagging standby lacked ${fault.lackedAtWait} acknowledged writes; ${lost.length} lost`,
        );
      } finally {
        undoQuorumFault(fault);
      }
    });

    test(
      'synchronous replication, the quorum waiting: a person forces the lagging standby (regulon.dev/force-promote); the old primary, which may serve in failsafe, is stopped first; the ForcedFailover Event says what may be lost, what the standby lacked is lost, the order is removed once it serves, every instance rejoins',
      // The order is the plan's, shared by both engines (unit-tested in @regulon/conventions);
      // one engine shows it end to end on real Pods, within the test-time budget.
      { skip: engine !== 'postgres' && 'the plan is shared: shown on postgres alone' },
      async (t) => {
        const fault = quorumFault();
        let orderedAt = 0;
        try {
          const { lost, primary, old } = await underLoad(
            t,
            'forced promotion',
            async (old) => {
              await hangWithConfirmingStandby(old, fault);
              orderedAt = Date.now();
              await dbs().patch(
                NAME,
                { metadata: { annotations: { [FORCE_PROMOTE_ANNOTATION]: fault.lagging } } },
                { type: 'merge', namespace: ns },
              );
              await until(
                `${fault.lagging} promoted by the order`,
                (db) => db.status?.currentPrimary === fault.lagging,
                120_000,
              );
              // Neither the old primary nor `confirming` answered: both were fenced before the
              // promotion, their containers killed. Their new Pods hold commits the new primary
              // lacks, and rejoin (divergedData Discard).
              undoQuorumFault(fault);
            },
            true,
          );
          assert.equal(primary, fault.lagging);
          const events = (await client.resource<EventsV1Event>(Kinds.Event).list({ namespace: ns })).items;
          const fencedByOrder = events.filter(
            (x) =>
              x.regarding?.name === NAME &&
              x.reason === 'Fencing' &&
              (x.note ?? '').startsWith(`by a person's order to promote ${fault.lagging}: stopping ${old}`),
          );
          assert.equal(
            fencedByOrder.length,
            1,
            'the old primary, which may serve in failsafe, is stopped by the order',
          );
          const forced = events.filter((x) => x.regarding?.name === NAME && x.reason === 'ForcedFailover');
          assert.equal(forced.length, 1, 'one ForcedFailover Event');
          assert.equal(forced[0]!.type, 'Warning');
          assert.match(
            forced[0]!.note ?? '',
            new RegExp(
              `^${fault.lagging} takes over by a person's order, at position \\S+, without proof that it holds every acknowledged write: ${fault.confirming} did not answer and may hold acknowledged commits it lacks; any such write is lost$`,
            ),
          );
          // What the order cost: the commits the lagging standby lacked, and only writes acknowledged
          // after it was cut off (an acknowledgement read from the client's log just after the hang
          // may add one or two to what was counted then).
          assert.ok(
            lost.length >= fault.lackedAtWait,
            `${lost.length} acknowledged writes lost, ${fault.lackedAtWait} lacked`,
          );
          assert.equal(
            (await dbs().get(NAME, { namespace: ns })).metadata.annotations?.[FORCE_PROMOTE_ANNOTATION],
            undefined,
            'the order is removed once carried out',
          );
          t.diagnostic(
            `forced promotion: ${fault.lagging} promoted ${((Date.now() - orderedAt) / 1000).toFixed(1)} s after the order, having waited ${(fault.waitedMs / 1000).toFixed(1)} s for the quorum; ` +
              `acknowledged writes lost ${lost.length} (it lacked ${fault.lackedAtWait}); the Event: ${forced[0]!.note}`,
          );
        } finally {
          undoQuorumFault(fault);
        }
      },
    );

    test('minor upgrade under write load: the replicas first, then one switchover, then the old primary; no acknowledged write lost', async (t) => {
      const before = await until('healthy', healthy);
      assert.equal(before.status?.currentVersion, version);
      // Whole seconds: an Event's time may be truncated to them (eventTime is MicroTime, a series' last time too).
      const upgradeStarted = Math.floor(Date.now() / 1000) * 1000;
      const { lost, outageMs, moves, old } = await underLoad(
        t,
        'minor upgrade',
        async () => {
          await dbs().patch(NAME, { spec: { version: nextVersion } }, { type: 'merge', namespace: ns });
          await until(
            'every Pod runs the new version',
            (db) => db.status?.currentVersion === nextVersion,
            300_000,
          );
        },
        true,
      );
      assert.deepEqual(lost, [], 'the primary hands over with a clean shutdown');
      assert.equal(moves, 1, 'the primary role moves once');
      // The manager replaced the replicas itself; the old primary's Pod went through the switchover's fencing.
      // Only this upgrade's replacements count: the configuration change of the test before rolled the
      // Pods too, and its Events are still there (an Event repeated since then is one object whose
      // series.lastObservedTime moved, counted once per occurrence in this window).
      const events = await client.resource<EventsV1Event>(Kinds.Event).list({ namespace: ns });
      const replaced = events.items
        .filter((x) => x.regarding?.name === NAME && x.reason === 'RollingUpdate')
        .flatMap((x) => {
          const pod = /replacing replica (\S+)/.exec(x.note ?? '')?.[1];
          const first = new Date(x.eventTime ?? 0).getTime();
          const last = new Date(x.series?.lastObservedTime ?? x.eventTime ?? 0).getTime();
          if (!pod || !(last >= upgradeStarted)) return [];
          // A series that began in this window counts every occurrence; one that began before, the one we know of.
          return Array<string>(first >= upgradeStarted ? (x.series?.count ?? 1) : 1).fill(pod);
        })
        .sort();
      assert.deepEqual(
        replaced,
        [pod(0), pod(1), pod(2)].filter((p) => p !== old),
        'each replica replaced once, the old primary not among them',
      );
      t.diagnostic(
        `minor upgrade ${version} -> ${nextVersion}: longest write outage ${(outageMs / 1000).toFixed(1)} s`,
      );
    });
  });
}
