// PostgreSQL replication on real Pods (the real node, Debian's postgres through
// the image catalog), with the Database controller in a Manager on this host:
// one primary and streaming replicas, Services that select by role, failover
// when the primary is lost, switchover on request, and never two writable
// instances. The figures (failover time, writes lost, outages, catch-up) are
// printed as test diagnostics:
//   npx regulon-testenv exec -- npx node --test apps/database-controller/src/replication.integration.test.ts
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { V1EndpointSlice, V1Pod } from '@kubernetes/client-node';
import { KubeClient, Kinds, type ResourceType } from '@regulon/client';
import { ImageCatalog } from '@regulon/image-catalog';
import { Manager, createLogger, type Condition } from '@regulon/runtime';
import { eventually, localImageCatalog, start, type TestEnv } from '@regulon/testenv';
import { Registry } from 'prom-client';
import pg from 'pg';
import { Database, type DatabaseObject } from './api.ts';
import { setupDatabaseController } from './index.ts';
import { SWITCHOVER_ANNOTATION } from './replication/replication.ts';
import {
  lostWrites,
  readReplicaRows,
  startRoleSampler,
  startWriter,
  type Writer,
} from './testing/workload.ts';

/**
 * The host PID of the postmaster in a Pod's container: the kubelet's cgroups
 * carry the Pod's uid, and the postmaster is the `postgres -D` process (its
 * children rename themselves "postgres: ...").
 */
function postmasterPid(podUid: string): number | undefined {
  const marks = [podUid, podUid.replace(/-/g, '_')];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cgroup = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
      if (!marks.some((m) => cgroup.includes(m))) continue;
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (argv[0] === 'postgres' && argv[1] === '-D') return Number(pid);
    } catch {
      // The process ended while being read.
    }
  }
  return undefined;
}

const cond = (db: DatabaseObject, type: string): Condition | undefined =>
  db.status?.conditions?.find((c) => c.type === type);
const EndpointSlices: ResourceType<V1EndpointSlice> = Object.freeze({
  group: 'discovery.k8s.io',
  version: 'v1',
  kind: 'EndpointSlice',
  plural: 'endpointslices',
  namespaced: true,
});

describe('Database replication on real PostgreSQL', { timeout: 30 * 60_000 }, () => {
  let env: TestEnv;
  let client: KubeClient;
  let mgr: Manager;
  let running: Promise<void>;
  let ns: string;
  let version: string;
  let nextVersion: string;
  let catalog: ImageCatalog;
  let writer: Writer | undefined;
  const NAME = 'pg';
  const dbs = () => client.resource(Database);
  const get = () => dbs().get(NAME, { namespace: ns });

  before(async () => {
    env = await start({ realNodes: 1 });
    await env.installCRDs([Database.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 100, burst: 200 });
    ns = await env.newNamespace('repl', { realNode: true });
    const local = await localImageCatalog();
    const built = local['postgres']![0]!;
    version = built.version;
    // Debian ships one postgres 15 at a time: the minor upgrade test rolls to a next patch
    // version that this catalog maps, openly, to the same image. What it tests is the roll
    // (every Pod replaced under load, the primary handed over), not a new binary.
    nextVersion = version.replace(/\d+$/, (p) => String(Number(p) + 1));
    catalog = ImageCatalog.fromDocument(
      { ...local, postgres: [built, { version: nextVersion, image: built.image }] },
      'testenv images',
    );
    startManager();
  });
  /** A manager on this host, as a fresh process would start one: empty caches, no memory. */
  const startManager = () => {
    const registry = new Registry();
    mgr = new Manager({
      client: KubeClient.fromKubeConfig(env.kubeConfig, { registry }),
      registry,
      logger: createLogger({ level: process.env['LOG_LEVEL'] ?? 'warn' }),
      metricsBindAddress: '0',
      healthBindAddress: '0',
      namespace: ns,
    });
    setupDatabaseController(mgr, { imageCatalog: catalog });
    running = mgr.start();
  };
  after(async () => {
    await writer?.stop().catch(() => {});
    mgr?.stop();
    await running;
    client?.close();
    await env?.stop();
  });

  /** The Database once its status describes its spec and `check` holds. */
  const until = (what: string, check: (db: DatabaseObject) => boolean, timeoutMs = 180_000) =>
    eventually(
      what,
      async () => {
        const db = await get();
        return db.status?.observedGeneration === db.metadata.generation && check(db) ? db : undefined;
      },
      timeoutMs,
    );
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
      .filter((e) => e.conditions?.ready !== false)
      .map((e) => e.targetRef?.name ?? '')
      .sort();
  };

  test('three instances: one primary, two streaming replicas; 1000 rows written through the client Service are on every replica', async (t) => {
    await dbs().create(
      Database.object({
        metadata: { name: NAME, namespace: ns },
        spec: {
          engine: 'postgres',
          version,
          replicas: 3,
          storage: { size: '1Gi' },
          backup: { enabled: false, schedule: '0 3 * * *', historyLimit: 1 },
          replication: { failoverDelaySeconds: 5 },
        },
      }),
    );
    const started = Date.now();
    const db = await until('three instances, replicating', healthy, 300_000);
    t.diagnostic(
      `created to Ready with two streaming replicas: ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    assert.equal(db.status?.currentPrimary, 'pg-0');
    assert.match(db.status?.systemIdentifier ?? '', /^\d+$/);
    assert.deepEqual(
      db.status?.instances?.map((i) => `${i.name}:${i.role}:${i.state}`),
      ['pg-0:primary:Primary', 'pg-1:replica:Streaming', 'pg-2:replica:Streaming'],
    );
    // The Services select by role: the client Service the primary alone, -ro the replicas.
    await eventually('Services follow the roles', async () => {
      const [rw, ro] = [await endpointsOf('pg'), await endpointsOf('pg-ro')];
      return rw.join() === 'pg-0' && ro.join() === 'pg-1,pg-2';
    });

    writer = await startWriter({ client, namespace: ns, db: NAME });
    await writer.waitForAcks(1000, 300_000);
    const acked = await writer.acked();
    const rows = await eventually('every acknowledged row on every replica', async () => {
      const all = await readReplicaRows({ client, namespace: ns, db: NAME });
      const replicas = all.filter((r) => r.pod !== 'pg-0');
      return replicas.length === 2 && replicas.every((r) => r.ids && lostWrites(acked, r.ids).length === 0)
        ? all
        : undefined;
    });
    t.diagnostic(`rows per instance: ${rows.map((r) => `${r.pod}=${r.count}`).join(' ')}`);
  });

  /**
   * Loses the primary by `lose` under the running write load, and checks what
   * matters: writes resume on a primary, a sampler asking every instance its
   * role every 200 ms never sees two writable, the old primary rejoins as a
   * streaming replica and holds every row. Returns the acknowledged writes lost.
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
    const sampler = await startRoleSampler({ client, namespace: ns, db: NAME });
    try {
      await sampler.waitForRound('one writable instance', (r) => r.writable.length === 1, 30_000);
      await writer.waitForAcks((await writer.acked()).length + 50, 60_000);
      const lostAt = Date.now();
      await lose(old);
      const resumed = await writer.waitForAckAfter(lostAt, 180_000);
      const after = await until(
        `${what}: a primary again, every instance streaming`,
        (db) => healthy(db) && (!expectNewPrimary || db.status?.currentPrimary !== old),
        300_000,
      );
      const rejoined = Date.now();
      await writer.waitForAcks((await writer.acked()).length + 50, 60_000);
      const summary = await sampler.stop();
      assert.equal(
        summary.maxWritableAtOnce,
        1,
        `never two writable: ${JSON.stringify(summary.splitBrainRounds)}`,
      );
      if (expectNewPrimary)
        assert.deepEqual(summary.writableSequence.slice(-2), [old, after.status!.currentPrimary!]);
      // Every write acknowledged so far is on the primary, and every replica caught up with it.
      const acked = await writer.acked();
      const rows = await readReplicaRows({ client, namespace: ns, db: NAME });
      const primaryRows = rows.find((r) => r.pod === after.status!.currentPrimary);
      assert.ok(primaryRows?.ids, `read the primary: ${primaryRows?.error}`);
      const lost = lostWrites(acked, primaryRows.ids);
      await eventually(`${what}: every instance holds the primary's rows`, async () => {
        const now = await readReplicaRows({ client, namespace: ns, db: NAME });
        return (
          now.length === 3 &&
          now.every((r) => r.ids && acked.every((id) => r.ids!.has(id) || lost.includes(id)))
        );
      });
      // The longest stretch without an acknowledged write from the loss until all is healthy again
      // (in a switchover the old primary takes writes until it stops, so the first write after the
      // request is not the end of the outage).
      const outage = (await writer.outages())
        .filter((o) => o.toMs >= lostAt && o.fromMs <= rejoined)
        .reduce((a, o) => Math.max(a, o.durationMs), 0);
      t.diagnostic(
        `${what}: primary ${old} -> ${after.status!.currentPrimary}; first accepted write ${((resumed.atMs - lostAt) / 1000).toFixed(1)} s after the loss; ` +
          `write outage ${(outage / 1000).toFixed(1)} s; acknowledged writes lost ${lost.length} of ${acked.length}; ` +
          `all instances streaming again ${((rejoined - lostAt) / 1000).toFixed(1)} s after the loss; sampler rounds ${summary.rounds}, slowest ${summary.maxRoundMs} ms`,
      );
      return { lost, old, primary: after.status!.currentPrimary!, outageMs: outage };
    } finally {
      await sampler.stop().catch(() => {});
    }
  };

  test('the primary Pod deleted under write load: a standby takes over, never two writable, the old primary rejoins', async (t) => {
    await underLoad(
      t,
      'Pod deleted',
      (primary) =>
        client
          .resource(Kinds.Pod)
          .delete(primary, { namespace: ns })
          .then(() => {}),
      true,
    );
    const db = await get();
    const events = await client.resource(Kinds.Event).list({ namespace: ns });
    const reasons = events.items.filter((e) => e.regarding?.name === NAME).map((e) => e.reason);
    assert.ok(
      reasons.includes('FailoverStarted') && reasons.includes('Promoted'),
      `Events: ${reasons.join(', ')}`,
    );
    assert.notEqual(db.status?.currentPrimary, 'pg-0');
  });

  const killPostmaster = async (primary: string) => {
    const pod = await client.resource<V1Pod>(Kinds.Pod).get(primary, { namespace: ns });
    const pid = await eventually('the postmaster process', () =>
      Promise.resolve(postmasterPid(pod.metadata!.uid!)),
    );
    process.kill(pid, 'SIGKILL');
  };
  /** An abrupt loss: the server dies with no clean shutdown, and its Pod goes (no restart in place). */
  const crash = async (primary: string) => {
    await killPostmaster(primary);
    await client.resource(Kinds.Pod).delete(primary, { namespace: ns });
  };

  test("the primary's postgres process killed under write load: it restarts in place, writes resume, never two writable", async (t) => {
    await underLoad(
      t,
      'postmaster killed',
      async (primary) => {
        await killPostmaster(primary);
        await eventually('the container restarted', async () => {
          const p = await client.resource<V1Pod>(Kinds.Pod).get(primary, { namespace: ns });
          return (p.status?.containerStatuses?.[0]?.restartCount ?? 0) > 0;
        });
      },
      false,
    );
  });

  test('asynchronous replication, the primary crashed (process killed, Pod deleted) under write load: a standby takes over; the writes lost are counted', async (t) => {
    const { lost } = await underLoad(t, 'async crash', crash, true);
    t.diagnostic(`asynchronous replication: ${lost.length} acknowledged writes lost in a crash failover`);
  });

  test('switchover under write load: the named standby becomes the primary, no acknowledged write lost', async (t) => {
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
    assert.deepEqual(lost, [], 'a clean shutdown hands every acknowledged write to the new primary');
    const after = await get();
    assert.equal(
      after.metadata.annotations?.[SWITCHOVER_ANNOTATION],
      undefined,
      'the request is removed once carried out',
    );
  });

  /** How often each Event reason about the Database occurred so far (a repeated Event is a series). */
  const eventCounts = async () => {
    const events = await client.resource(Kinds.Event).list({ namespace: ns });
    const counts = new Map<string, number>();
    for (const e of events.items.filter((x) => x.regarding?.name === NAME))
      counts.set(e.reason ?? '', (counts.get(e.reason ?? '') ?? 0) + (e.series?.count ?? 1));
    return counts;
  };
  /** The primary's replication slots, read as the replication role. */
  const slots = async (primary: string) => {
    const secret = await client.resource(Kinds.Secret).get(`${NAME}-replication`, { namespace: ns });
    const pod = await client.resource<V1Pod>(Kinds.Pod).get(primary, { namespace: ns });
    const conn = new pg.Client({
      host: pod.status!.podIP!,
      user: 'regulon_replication',
      password: Buffer.from(secret.data!['password']!, 'base64').toString(),
      database: 'postgres',
      connectionTimeoutMillis: 3000,
    });
    conn.on('error', () => {});
    await conn.connect();
    try {
      const r = await conn.query<{ slot_name: string }>(
        'select slot_name from pg_replication_slots order by 1',
      );
      return r.rows.map((x) => x.slot_name);
    } finally {
      await conn.end();
    }
  };

  test('the manager stopped in the middle of a failover: the next one finishes it, with no second promotion', async (t) => {
    const before = await until('healthy', healthy);
    const old = before.status!.currentPrimary!;
    const countsBefore = await eventCounts();
    const topology = () =>
      client
        .resource(Kinds.ConfigMap)
        .get(`${NAME}-topology`, { namespace: ns })
        .then((cm) => cm.data?.['primary']);
    await client.resource(Kinds.Pod).delete(old, { namespace: ns });
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
    const sampler = await startRoleSampler({ client, namespace: ns, db: NAME });
    try {
      const stopped = Date.now();
      const midway = await sampler.waitForRound('a round after the stop', () => true, 10_000);
      assert.deepEqual(
        midway.writable,
        [],
        `stopped before the promotion: ${JSON.stringify(midway.instances)}`,
      );
      startManager();
      const after = await until(
        'the failover finished by the new manager',
        (db) => healthy(db) && db.status?.currentPrimary === named,
        300_000,
      );
      const summary = await sampler.stop();
      assert.equal(
        summary.maxWritableAtOnce,
        1,
        `never two writable: ${JSON.stringify(summary.splitBrainRounds)}`,
      );
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
    }
  });

  test("the primary's volume deleted under write load: a standby takes over, the instance comes back as a clone", async (t) => {
    await underLoad(
      t,
      'volume deleted',
      async (primary) => {
        // The claim goes once its Pod does (kubernetes.io/pvc-protection); the StatefulSet makes a new, empty one.
        await client.resource(Kinds.PersistentVolumeClaim).delete(`data-${primary}`, { namespace: ns });
        await client.resource(Kinds.Pod).delete(primary, { namespace: ns });
      },
      true,
    );
  });

  test('scale 3 -> 1 -> 3: the primary moves to ordinal 0 first, slots follow the instances, -ro follows the replicas', async () => {
    await until('healthy', healthy);
    await dbs().patch(NAME, { spec: { replicas: 1 } }, { type: 'merge', namespace: ns });
    const single = await until(
      'one instance, the primary',
      (db) => cond(db, 'Ready')?.status === 'True' && db.status?.replicas === 1,
      300_000,
    );
    assert.equal(single.status?.currentPrimary, 'pg-0', 'the primary moved off the ordinals scaled away');
    assert.deepEqual(await endpointsOf('pg'), ['pg-0']);
    await eventually(
      'the slots of the removed instances dropped',
      async () => (await slots('pg-0')).length === 0,
    );
    assert.ok(writer);
    const acked = await writer.acked();
    await dbs().patch(NAME, { spec: { replicas: 3 } }, { type: 'merge', namespace: ns });
    await until('three again, replicating', healthy, 300_000);
    assert.deepEqual(await slots('pg-0'), ['regulon_pg_1', 'regulon_pg_2']);
    await eventually(
      '-ro follows the replicas',
      async () => (await endpointsOf('pg-ro')).join() === 'pg-1,pg-2',
    );
    await eventually('the returning replicas caught up', async () => {
      const rows = await readReplicaRows({ client, namespace: ns, db: NAME });
      return rows.length === 3 && rows.every((r) => r.ids && lostWrites(acked, r.ids).length === 0);
    });
  });

  test('synchronous replication: the primary crashed under write load, no acknowledged write lost', async (t) => {
    await dbs().patch(
      NAME,
      { spec: { replication: { synchronous: true, failoverDelaySeconds: 5 } } },
      { type: 'merge', namespace: ns },
    );
    // A configuration change rolls every Pod; then it is as healthy as before.
    await until(
      'rolled out with synchronous replication',
      (db) => healthy(db) && db.status?.phase === 'Ready',
      300_000,
    );
    const { lost } = await underLoad(t, 'sync crash', crash, true);
    assert.deepEqual(lost, [], 'with synchronous replication every acknowledged write is on a standby');
  });

  test('minor upgrade under write load: every Pod replaced, the primary handed over, no acknowledged write lost', async (t) => {
    const before = await until('healthy', healthy);
    assert.equal(before.status?.currentVersion, version);
    const { lost, outageMs } = await underLoad(
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
      // The roll replaces the primary's Pod once or twice: where the role ends up is not fixed.
      false,
    );
    assert.deepEqual(lost, [], 'the primary hands over with a clean shutdown');
    t.diagnostic(
      `minor upgrade ${version} -> ${nextVersion}: longest write outage ${(outageMs / 1000).toFixed(1)} s`,
    );
  });
});
