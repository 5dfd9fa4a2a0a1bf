// A lost node fails over: real PostgreSQL with the instance agent on the
// machine's two real nodes, synchronous replication, the primary alone on the
// second node and its two standbys on the first. The second node is lost the
// way a node is lost (kubelet stopped, every packet to and from it dropped):
// nothing confirms the primary's end, and its Pod object stays. The agent,
// cut off from the API server, fences its engine before its primary Lease can
// expire; the manager promotes a standby once it has seen the Lease expire.
// Invariants: the old primary's server is gone before any other instance
// accepts a write, no acknowledged write is lost, and once the node is back
// the old primary rejoins as a standby by itself.
//   npx regulon-testenv exec -- node --test apps/database-controller/src/node-loss.integration.test.ts
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { EventsV1Event, V1Namespace, V1Pod } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import { ImageCatalog } from '@regulon/image-catalog';
import { type Condition, type Manager, testManager } from '@regulon/runtime';
import {
  eventually,
  loadImagesIntoRealNode,
  localImageCatalog,
  loseSecondRealNode,
  pauseSecondRealNodeKubelet,
  realNodeNamespaceAnnotations,
  SECOND_NODE,
  SECOND_NODE_DIR,
  secondRealNodeNamespaceAnnotations,
  start,
  type TestEnv,
} from '@regulon/testenv';
import { ensureManagerImage } from '../../../tools/manager-image/image.ts';
import { Database, type DatabaseObject } from './api.ts';
import { setupDatabaseController } from './index.ts';
import { SWITCHOVER_ANNOTATION } from './replication/replication.ts';
import { serverPid, statusSummary } from './testing/replication-suite.ts';
import {
  describeSplitBrain,
  lostWrites,
  readReplicaRows,
  startRoleSampler,
  startWriter,
  type Writer,
} from './testing/workload.ts';

const NAME = 'pgnl';
const pod = (ordinal: number) => `${NAME}-${ordinal}`;
/** The postmaster: its children rename themselves "postgres: ...". */
const isPostmaster = (argv: string[]) => argv[0] === 'postgres' && argv[1] === '-D';
const cond = (db: DatabaseObject, type: string): Condition | undefined =>
  db.status?.conditions?.find((c) => c.type === type);

// Under `npm test` the run's shared control plane gets the second node for this file alone
// (another file that wants it waits), and stops it again at the end.
const shared = Boolean(process.env['REGULON_TESTENV_DIR']);

describe('node loss on real PostgreSQL with the instance agent', { timeout: 20 * 60_000 }, () => {
  let env: TestEnv;
  let client: KubeClient;
  let mgr: Manager;
  let running: Promise<void>;
  let ns: string;
  let writer: Writer | undefined;
  let heal: (() => void) | undefined;
  const dbs = () => client.resource(Database);
  const get = () => dbs().get(NAME, { namespace: ns });
  const pods = () => client.resource<V1Pod>(Kinds.Pod);

  before(async () => {
    env = await start({ realNodes: 2 });
    await env.installCRDs([Database.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 100, burst: 200 });
    ns = await env.newNamespace('pg-node-loss', { realNode: true });
    const image = await ensureManagerImage();
    loadImagesIntoRealNode(env.controlPlane.state.dir, [image]);
    const local = await localImageCatalog();
    mgr = testManager(env.kubeConfig, { namespace: ns });
    setupDatabaseController(mgr, {
      imageCatalog: ImageCatalog.fromDocument(local, 'testenv images'),
      instanceAgentImage: image.ref,
    });
    running = mgr.start();
  });
  after(async () => {
    heal?.();
    await writer?.stop().catch(() => {});
    mgr?.stop();
    await running;
    client?.close();
    if (shared) await env?.stopSecondRealNode();
    else await env?.stop();
  });

  /** The Database once its status describes its spec and `check` holds; on a timeout, its status. */
  const until = (what: string, check: (db: DatabaseObject) => boolean, timeoutMs = 180_000) =>
    eventually(
      what,
      async () => {
        const db = await get();
        return db.status?.observedGeneration === db.metadata.generation && check(db) ? db : undefined;
      },
      timeoutMs,
    ).catch(async (err: Error) => {
      err.message += `\nstatus: ${JSON.stringify((await get().catch(() => undefined))?.status)}`;
      throw err;
    });
  const healthy = (db: DatabaseObject) =>
    cond(db, 'Ready')?.status === 'True' &&
    cond(db, 'ReplicationHealthy')?.status === 'True' &&
    db.status?.instances?.filter((i) => i.role === 'replica').length === db.spec.replicas - 1;
  const nodeOf = async (name: string) => (await pods().get(name, { namespace: ns })).spec?.nodeName;
  const setNamespaceAnnotations = (annotations: Record<string, string>) =>
    client.resource<V1Namespace>(Kinds.Namespace).patch(ns, { metadata: { annotations } }, { type: 'merge' });

  /** The last lines of a container's log on the second node, read from its files (no kubelet needed). */
  const secondNodeContainerLog = (name: string, uid: string, container: string, lines = 20): string => {
    const dir = join(
      env.controlPlane.state.dir,
      SECOND_NODE_DIR,
      'pod-logs',
      `${ns}_${name}_${uid}`,
      container,
    );
    try {
      const files = readdirSync(dir)
        .filter((f) => f.endsWith('.log'))
        .sort((a, b) => statSync(join(dir, a)).mtimeMs - statSync(join(dir, b)).mtimeMs);
      const all = files
        .map((f) => readFileSync(join(dir, f), 'utf8'))
        .join('')
        .split('\n');
      // The agent's lines (JSON) wherever they are, then the engine's last ones.
      const agent = all.filter((l) => l.includes('"name":"instance-agent"')).slice(-lines);
      return [...agent, '…', ...all.slice(-lines)].join('\n');
    } catch (err) {
      return `(no log in ${dir}: ${(err as Error).message})`;
    }
  };

  /** The namespace's Events since a moment, as `+seconds object reason: message`: what a slow failover did. */
  const timeline = async (fromMs: number) => {
    const events = (await client.resource<EventsV1Event>(Kinds.Event).list({ namespace: ns })).items;
    const at = (x: EventsV1Event) =>
      new Date(x.eventTime ?? x.deprecatedLastTimestamp ?? x.metadata?.creationTimestamp ?? 0).getTime();
    return events
      .filter((x) => at(x) >= fromMs - 1000)
      .sort((a, b) => at(a) - at(b))
      .map(
        (x) =>
          `+${((at(x) - fromMs) / 1000).toFixed(1)} s ${x.regarding?.name} ${x.reason}: ${(x.note ?? '').slice(0, 160)}`,
      )
      .join('; ');
  };

  /**
   * Waits for a write acknowledged after `sinceMs`, when `newPrimary` took over. Writes go through
   * the client Service and, being synchronous, wait for a standby of the new primary: on a timeout,
   * the status, the writer's errors and the Events since `faultAt` say which was missing.
   */
  const writesResume = (sinceMs: number, newPrimary: string, faultAt: number) =>
    writer!.waitForAckAfter(sinceMs, 90_000).catch(async (err: Error) => {
      const failures = (await writer!.log()).failures.filter((f) => f.atMs >= sinceMs);
      const said = [...new Set(failures.map((f) => `exit ${f.exitCode}${f.message ? ` ${f.message}` : ''}`))];
      err.message +=
        `\n${statusSummary((await get().catch(() => undefined))?.status).join('\n')}` +
        `\nwriter since ${newPrimary} took over: ${failures.length} failed, ${said.slice(-3).join(' | ')}` +
        `\nevents: ${await timeline(faultAt)}`;
      throw err;
    });

  /**
   * Moves instance `name` to the second node, its Pod recreated while the namespace sends new Pods
   * there (the volume is a directory on this host, which both nodes mount), and makes it the
   * primary by a switchover. `newPodsThere`: whether later Pods go there too.
   */
  const primaryOnSecondNode = async (name: string, o: { newPodsThere: boolean }) => {
    await setNamespaceAnnotations(secondRealNodeNamespaceAnnotations());
    const oldUid = (await pods().get(name, { namespace: ns })).metadata!.uid!;
    await pods().delete(name, { namespace: ns });
    await eventually(
      `${name} recreated on ${SECOND_NODE.name}`,
      async () => {
        const p = await pods()
          .get(name, { namespace: ns })
          .catch(() => undefined);
        return p && p.metadata!.uid !== oldUid && p.spec?.nodeName ? p : undefined;
      },
      120_000,
    );
    assert.equal(await nodeOf(name), SECOND_NODE.name);
    if (!o.newPodsThere) await setNamespaceAnnotations(realNodeNamespaceAnnotations());
    await until(`${name} streaming again`, healthy, 180_000);
    await dbs().patch(
      NAME,
      { metadata: { annotations: { [SWITCHOVER_ANNOTATION]: name } } },
      { type: 'merge', namespace: ns },
    );
    return until(`${name} the primary`, (db) => healthy(db) && db.status?.currentPrimary === name, 180_000);
  };

  test('the node of the synchronous primary lost: a standby takes over within 30 s, the old primary fenced first, nothing acknowledged lost; it rejoins once the node is back', async (t) => {
    await dbs().create(
      Database.object({
        metadata: { name: NAME, namespace: ns },
        spec: {
          engine: 'postgres',
          version: (await localImageCatalog())['postgres']![0]!.version,
          replicas: 3,
          storage: { size: '1Gi' },
          backup: { enabled: false, schedule: '0 3 * * *', historyLimit: 1 },
          replication: { synchronous: true, failoverDelaySeconds: 5 },
        },
      }),
    );
    await until('three instances on the first node, replicating', healthy, 300_000);
    // The writer runs on the first node, which stays.
    // Paced as the replication suite's: a session per write, unpaced, takes a core.
    writer = await startWriter({ client, namespace: ns, db: NAME, engine: 'postgres', maxPerSecond: 10 });
    await writer.waitForAcks(100, 120_000);

    // One instance moves to the second node, then becomes the primary by a switchover. The
    // standbys stay on the first node.
    const moved = pod(2);
    const placed = await primaryOnSecondNode(moved, { newPodsThere: false });
    for (const i of placed.status!.instances!.filter((x) => x.name !== moved))
      assert.equal(await nodeOf(i.name), 'real-node-0', `${i.name} stays on the first node`);
    await eventually('the primary Lease names the primary', async () => {
      const lease = await client.resource(Kinds.Lease).get(`${NAME}-primary`, { namespace: ns });
      return lease.spec?.holderIdentity === moved;
    });
    const primaryUid = (await pods().get(moved, { namespace: ns })).metadata!.uid!;

    // Watch, every 200 ms: which instances accept writes (the host reaches only the first node's
    // Pods once the second is lost), and whether the old primary's server still runs (this host
    // sees every process of both nodes).
    const sampler = await startRoleSampler({ client, namespace: ns, db: NAME, engine: 'postgres' });
    let fencedAt: number | undefined;
    let postmaster: number | undefined;
    /** Whether process `pid` has ended (signal 0 only checks that it exists). */
    const ended = (pid: number) => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    };
    const watching = setInterval(() => {
      if (postmaster !== undefined && fencedAt === undefined && ended(postmaster)) fencedAt = Date.now();
    }, 200);
    try {
      await sampler.waitForRound('the primary writable', (r) => r.writable.join() === moved, 30_000);
      await writer.waitForAcks((await writer.acked()).length + 100, 60_000);
      // The postmaster serving at the moment of the loss: the one that must end before a takeover.
      postmaster = await eventually('the primary postmaster', () =>
        Promise.resolve(serverPid(primaryUid, isPostmaster)),
      );
      const lostAt = Date.now();
      const loss = loseSecondRealNode(env.controlPlane.state.dir);
      heal = () => loss.heal();
      const takenOver = await sampler.waitForRound(
        'a standby on the first node accepts writes',
        (r) => r.writable.some((w) => w !== moved),
        120_000,
      );
      const newPrimary = takenOver.writable.find((w) => w !== moved)!;
      await writesResume(takenOver.atMs, newPrimary, lostAt);
      const failoverMs = takenOver.atMs - lostAt;
      assert.ok(
        fencedAt !== undefined,
        'the old primary was fenced (its postmaster ended) before the takeover',
      );
      assert.ok(fencedAt >= lostAt, 'its postmaster ran until the loss');
      assert.ok(
        fencedAt < takenOver.atMs,
        `the old primary's server ended (+${fencedAt - lostAt} ms) before ${newPrimary} accepted writes (+${failoverMs} ms)`,
      );
      const outage = Math.max(
        0,
        ...(await writer.outages())
          .filter((o) => o.toMs >= lostAt && o.fromMs <= takenOver.atMs + 5_000)
          .map((o) => o.durationMs),
      );
      // While the lost instance does not replicate, the Database must not say every instance is ready.
      const degraded = await until(
        'the new primary recorded, the lost instance not counted ready',
        (db) => db.status?.currentPrimary === newPrimary,
        60_000,
      );
      assert.notEqual(cond(degraded, 'ReplicationHealthy')?.status, 'True', 'one instance of three is gone');
      assert.doesNotMatch(cond(degraded, 'Ready')?.message ?? '', /3\/3/);
      t.diagnostic(
        `node lost: old primary fenced +${((fencedAt - lostAt) / 1000).toFixed(1)} s, ${newPrimary} writable +${(failoverMs / 1000).toFixed(1)} s; ` +
          `write outage ${(outage / 1000).toFixed(1)} s; Ready: ${cond(degraded, 'Ready')?.message}`,
      );
      if (failoverMs > 20_000 || outage > 20_000) t.diagnostic(`node lost: ${await timeline(lostAt)}`);
      assert.ok(failoverMs <= 30_000, `failover within 30 s of the node loss, took ${failoverMs} ms`);

      // The node comes back: the old primary's agent starts its engine as a standby of the new primary.
      const healedAt = Date.now();
      heal();
      heal = undefined;
      await until('all three replicating again', healthy, 300_000);
      const rejoinMs = Date.now() - healedAt;
      const summary = await sampler.stop();
      assert.equal(
        summary.maxWritableAtOnce,
        1,
        `never two writable, but: ${describeSplitBrain(summary, lostAt)}`,
      );
      await writer.waitForAcks((await writer.acked()).length + 50, 60_000);
      const acked = await writer.acked();
      await eventually('every acknowledged write on every instance', async () => {
        const rows = await readReplicaRows({ client, namespace: ns, db: NAME, engine: 'postgres' });
        return rows.length === 3 && rows.every((r) => r.ids && lostWrites(acked, r.ids).length === 0);
      });
      t.diagnostic(
        `node back: all instances replicating ${(rejoinMs / 1000).toFixed(1)} s later; 0 of ${acked.length} acknowledged writes lost; ` +
          `sampler rounds ${summary.rounds}, slowest ${summary.maxRoundMs} ms`,
      );
    } finally {
      clearInterval(watching);
      await sampler.stop();
      // A failure before the healing must not leave the node lost for the next scenario.
      heal?.();
      heal = undefined;
    }
  });

  test('a container that outlives its Pod (the primary force-deleted while its kubelet hangs): its agent fences its engine, a standby takes over once the Lease expires, never two writable, nothing acknowledged lost', async (t) => {
    // The primary on the second node again. The Pod made in the deleted one's place goes there
    // too, where nothing starts it while the kubelet hangs: two servers never share the volume.
    const zombie = pod(2);
    await primaryOnSecondNode(zombie, { newPodsThere: true });
    const zombieUid = (await pods().get(zombie, { namespace: ns })).metadata!.uid!;
    // The sampler asks every address a namespace on this host holds in the nodes' Pod subnets:
    // the zombie's too, once no Pod object has it.
    const sampler = await startRoleSampler({ client, namespace: ns, db: NAME, engine: 'postgres' });
    let resume: (() => void) | undefined;
    try {
      await sampler.waitForRound('the primary writable', (r) => r.writable.join() === zombie, 30_000);
      await writer!.waitForAcks((await writer!.acked()).length + 50, 60_000);
      const postmaster = await eventually('the primary postmaster', () =>
        Promise.resolve(serverPid(zombieUid, isPostmaster)),
      );
      const paused = pauseSecondRealNodeKubelet(env.controlPlane.state.dir);
      resume = () => paused.resume();
      const deletedAt = Date.now();
      await pods().delete(zombie, { namespace: ns, gracePeriodSeconds: 0 });
      const fencedAt = await eventually(
        "the zombie's engine fenced by its agent",
        () => {
          try {
            process.kill(postmaster, 0);
            return undefined;
          } catch {
            return Date.now();
          }
        },
        30_000,
        100,
      ).catch((err: Error) => {
        // The node's kubelet hangs, so the API has no log of it: the container's log file, where
        // the agent says what it read of its Pod and the Lease.
        err.message += `\nthe zombie's container log (its agent's lines among the engine's):\n${secondNodeContainerLog(zombie, zombieUid, 'postgres')}`;
        throw err;
      });
      const takenOver = await sampler.waitForRound(
        'a standby on the first node accepts writes',
        (r) => r.writable.some((w) => !w.startsWith(zombie)),
        120_000,
      );
      const newPrimary = takenOver.writable.find((w) => !w.startsWith(zombie))!;
      await writesResume(takenOver.atMs, newPrimary, deletedAt);
      assert.ok(
        fencedAt < takenOver.atMs,
        `the zombie's server ended (+${fencedAt - deletedAt} ms) before ${newPrimary} accepted writes (+${takenOver.atMs - deletedAt} ms)`,
      );
      const before = sampler.rounds().filter((r) => r.atMs < fencedAt && r.atMs > deletedAt);
      const zombieSeen = before.some((r) =>
        r.instances.some((i) => i.name.startsWith(`${zombie} (no current Pod`)),
      );
      t.diagnostic(
        `zombie: fenced by its agent +${((fencedAt - deletedAt) / 1000).toFixed(1)} s after its Pod was force-deleted, ${newPrimary} writable +${((takenOver.atMs - deletedAt) / 1000).toFixed(1)} s; ` +
          `the sampler ${zombieSeen ? 'asked the zombie at its address meanwhile' : 'did not reach the zombie before its fence'}`,
      );
      if (takenOver.atMs - deletedAt > 40_000) t.diagnostic(`zombie: ${await timeline(deletedAt)}`);

      // The kubelet back: it stops what remains of the deleted Pod and starts the one made in its
      // place, which rejoins as a standby.
      resume();
      resume = undefined;
      await setNamespaceAnnotations(realNodeNamespaceAnnotations());
      await until('all three replicating again', healthy, 300_000);
      const summary = await sampler.stop();
      assert.equal(
        summary.maxWritableAtOnce,
        1,
        `never two writable, but: ${describeSplitBrain(summary, deletedAt)}`,
      );
      await writer!.waitForAcks((await writer!.acked()).length + 50, 60_000);
      const acked = await writer!.acked();
      await eventually('every acknowledged write on every instance', async () => {
        const rows = await readReplicaRows({ client, namespace: ns, db: NAME, engine: 'postgres' });
        return rows.length === 3 && rows.every((r) => r.ids && lostWrites(acked, r.ids).length === 0);
      });
    } finally {
      resume?.();
      await sampler.stop();
    }
  });
});
