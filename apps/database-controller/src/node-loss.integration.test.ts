// A lost node fails over: real PostgreSQL and real MariaDB with
// the instance agent on the machine's two real nodes, synchronous replication, each
// Database's primary alone on the second node and its two standbys on the
// first. The second node is lost the way a node is lost (kubelet stopped, every
// packet to and from it dropped): nothing confirms the primary's end, and its
// Pod object stays. The agent, cut off from the API server, fences its engine
// before its primary Lease can expire; the manager promotes a standby once it
// has seen the Lease expire. Invariants: the old primary's server is gone
// before any other instance accepts a write, no acknowledged write is lost, and
// once the node is back the old primary rejoins as a standby by itself.
//
// The engines share each fault: the second node is the machine's one, so the
// Databases (each in its own namespace, with a manager of its own) are set up
// side by side, the node is lost once for both, and each is checked on its own;
// a failure names its engine.
//   npx regulon-testenv exec -- node --test apps/database-controller/src/node-loss.integration.test.ts
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { V1Namespace, V1Pod } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import { ImageCatalog } from '@regulon/image-catalog';
import { type Manager, testManager } from '@regulon/runtime';
import {
  eventually,
  isAlive,
  loadImagesIntoRealNode,
  localImageCatalog,
  loseSecondRealNode,
  pauseSecondRealNodeKubelet,
  realNodeNamespaceAnnotations,
  SECOND_NODE,
  secondNodeContainerLog,
  secondRealNodeNamespaceAnnotations,
  start,
  describeSplitBrain,
  type RoleSampler,
  type TestEnv,
} from '@regulon/testenv';
import { ensureManagerImage } from '../../../tools/manager-image/image.ts';
import { Database, type DatabaseObject } from './api.ts';
import { setupDatabaseController } from './index.ts';
import { SWITCHOVER_ANNOTATION } from './replication/replication.ts';
import { cond, databaseUnderTest, ENGINE_CASES, forEachEngine, healthy } from './testing/side-by-side.ts';

/**
 * How soon after the node loss a standby must accept writes. The goal is 30 s with the default
 * settings (the primary Lease's 15 s, then fence and promote): postgres takes about 25 s, MariaDB
 * about 26 s (its replicas notice the lost primary after slave_net_timeout, 5 s, as postgres's
 * after wal_receiver_timeout).
 */
const FAILOVER_BOUND_MS = 30_000;
const ENGINES = [
  { ...ENGINE_CASES.postgres, name: 'pgnl' },
  { ...ENGINE_CASES.mariadb, name: 'mdbnl' },
];

/** What a rejoining instance discarded (commits no standby confirmed, never acknowledged), as the status says it. */
const discardedIn = (db: DatabaseObject) =>
  (db.status?.instances ?? [])
    .filter((i) => i.discarded)
    .map((i) => `; ${i.name} discarded on rejoining: ${i.discarded}`)
    .join('');

// Under `npm test` the run's shared control plane gets the second node for this file alone
// (another file that wants it waits), and stops it again at the end.
const shared = Boolean(process.env['REGULON_TESTENV_DIR']);

describe('node loss on real engines with the instance agent', { timeout: 20 * 60_000 }, () => {
  let env: TestEnv;
  let client: KubeClient;
  let heal: (() => void) | undefined;
  let subjects: Subject[] = [];
  const pods = () => client.resource<V1Pod>(Kinds.Pod);

  before(async () => {
    env = await start({ realNodes: 2 });
    await env.installCRDs([Database.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 100, burst: 200 });
    const image = await ensureManagerImage();
    loadImagesIntoRealNode(env.controlPlane.state.dir, [image]);
    const catalog = ImageCatalog.fromDocument(await localImageCatalog(), 'testenv images');
    for (const e of ENGINES) {
      const ns = await env.newNamespace(`${e.engine}-node-loss`, { realNode: true });
      const mgr = testManager(env.kubeConfig, { namespace: ns });
      setupDatabaseController(mgr, { imageCatalog: catalog, instanceAgentImage: image.ref });
      subjects.push(subject(e, ns, mgr, mgr.start()));
    }
  });
  after(async () => {
    heal?.();
    for (const s of subjects) {
      await s.writer?.stop().catch(() => {});
      s.mgr.stop();
      await s.running;
    }
    subjects = [];
    client?.close();
    if (shared) await env?.stopSecondRealNode();
    else await env?.stop();
  });

  type Subject = ReturnType<typeof subject>;
  /** An engine's Database in its namespace, with its manager and what the node scenarios ask of it. */
  function subject(e: (typeof ENGINES)[number], ns: string, mgr: Manager, running: Promise<void>) {
    const db = databaseUnderTest(client, e, ns, e.name);
    const nodeOf = async (name: string) => (await pods().get(name, { namespace: ns })).spec?.nodeName;
    const setNamespaceAnnotations = (annotations: Record<string, string>) =>
      client
        .resource<V1Namespace>(Kinds.Namespace)
        .patch(ns, { metadata: { annotations } }, { type: 'merge' });
    return Object.assign(db, {
      mgr,
      running,
      nodeOf,
      setNamespaceAnnotations,

      /** The last lines of a container's log on the second node (no kubelet needed). */
      secondNodeContainerLog: (name: string, uid: string) =>
        secondNodeContainerLog(env.controlPlane.state.dir, {
          namespace: ns,
          name,
          uid,
          container: e.container,
        }),

      /**
       * Moves instance `name` to the second node, its Pod recreated while the namespace sends new
       * Pods there (the volume is a directory on this host, which both nodes mount), and makes it
       * the primary by a switchover, every other instance on the first node. `newPodsThere`:
       * whether later Pods go to the second node too (set once all that holds).
       */
      async primaryOnSecondNode(name: string, o: { newPodsThere: boolean }) {
        await setNamespaceAnnotations(secondRealNodeNamespaceAnnotations());
        await recreate(name, SECOND_NODE.name);
        // Back to the first node for any Pod made meanwhile: the switchover may restart the
        // demoted primary, which must not land beside the one to be lost.
        await setNamespaceAnnotations(realNodeNamespaceAnnotations());
        await db.until(`${name} streaming again`, healthy, 180_000);
        await db
          .dbs()
          .patch(
            e.name,
            { metadata: { annotations: { [SWITCHOVER_ANNOTATION]: name } } },
            { type: 'merge', namespace: ns },
          );
        let placed = await db.until(
          `${name} the primary`,
          (x) => healthy(x) && x.status?.currentPrimary === name,
          180_000,
        );
        // An instance left on the second node by an earlier scenario (or restarted there before
        // the namespace sent Pods back) would be lost with the primary: it moves back first.
        for (const i of placed.status!.instances!.filter((x) => x.name !== name))
          if ((await nodeOf(i.name)) !== 'real-node-0') {
            await recreate(i.name, 'real-node-0');
            placed = await db.until(
              `${i.name} streaming again`,
              (x) => healthy(x) && x.status?.currentPrimary === name,
              180_000,
            );
          }
        if (o.newPodsThere) await setNamespaceAnnotations(secondRealNodeNamespaceAnnotations());
        return placed;
      },
    });

    /** Deletes instance `name`'s Pod and waits for its successor, which must be on `node`. */
    async function recreate(name: string, node: string) {
      const oldUid = (await pods().get(name, { namespace: ns })).metadata!.uid!;
      await pods().delete(name, { namespace: ns });
      await eventually(
        `${name} recreated on ${node}`,
        async () => {
          const p = await pods()
            .get(name, { namespace: ns })
            .catch(() => undefined);
          return p && p.metadata!.uid !== oldUid && p.spec?.nodeName ? p : undefined;
        },
        120_000,
      );
      assert.equal(await nodeOf(name), node);
    }
  }

  test('the node of the synchronous primary lost: a standby takes over within 30 s, the old primary fenced first, nothing acknowledged lost; it rejoins once the node is back', async (t) => {
    // One instance of each Database moves to the second node, then becomes its primary by a
    // switchover. The standbys stay on the first node.
    const samplers: RoleSampler[] = [];
    let watching: NodeJS.Timeout | undefined;
    try {
      const armed = await forEachEngine(subjects, async (s) => {
        // The old primary must rejoin by itself: a commit it made that no standby confirmed (never
        // acknowledged) is discarded, as MariaDB's default (Keep) would not, and the status says so.
        await s.create({ divergedData: 'Discard' });
        const moved = s.pod(2);
        const placed = await s.primaryOnSecondNode(moved, { newPodsThere: false });
        for (const i of placed.status!.instances!.filter((x) => x.name !== moved))
          assert.equal(await s.nodeOf(i.name), 'real-node-0', `${i.name} stays on the first node`);
        await eventually('the primary Lease names the primary', async () => {
          const lease = await client.resource(Kinds.Lease).get(`${s.name}-primary`, { namespace: s.ns });
          return lease.spec?.holderIdentity === moved;
        });
        const primaryUid = (await pods().get(moved, { namespace: s.ns })).metadata!.uid!;
        // Every 200 ms: which instances accept writes (the host reaches only the first node's Pods
        // once the second is lost), and whether the old primary's server still runs.
        const sampler = await s.sampler(samplers);
        await sampler.waitForRound('the primary writable', (r) => r.writable.join() === moved, 30_000);
        await s.writer!.waitForAcks((await s.writer!.acked()).length + 100, 60_000);
        // The server serving at the moment of the loss: the one that must end before a takeover.
        const server = await s.server(primaryUid);
        return { ...s, moved, sampler, server, fencedAt: undefined as number | undefined };
      });
      watching = setInterval(() => {
        for (const a of armed) if (a.fencedAt === undefined && !isAlive(a.server)) a.fencedAt = Date.now();
      }, 200);
      const lostAt = Date.now();
      const loss = loseSecondRealNode(env.controlPlane.state.dir);
      heal = () => loss.heal();
      await forEachEngine(armed, async (a) => {
        const takenOver = await a.sampler.waitForRound(
          'a standby on the first node accepts writes',
          (r) => r.writable.some((w) => w !== a.moved),
          120_000,
        );
        const newPrimary = takenOver.writable.find((w) => w !== a.moved)!;
        await a.writesResume(takenOver.atMs, newPrimary, lostAt);
        const failoverMs = takenOver.atMs - lostAt;
        const fencedAt = a.fencedAt;
        assert.ok(
          fencedAt !== undefined,
          'the old primary was fenced (its server ended) before the takeover',
        );
        assert.ok(fencedAt >= lostAt, 'its server ran until the loss');
        assert.ok(
          fencedAt < takenOver.atMs,
          `the old primary's server ended (+${fencedAt - lostAt} ms) before ${newPrimary} accepted writes (+${failoverMs} ms)`,
        );
        const outage = Math.max(
          0,
          ...(await a.writer!.outages())
            .filter((o) => o.toMs >= lostAt && o.fromMs <= takenOver.atMs + 5_000)
            .map((o) => o.durationMs),
        );
        // While the lost instance does not replicate, the Database must not say every instance is ready.
        const degraded = await a.until(
          'the new primary recorded, the lost instance not counted ready',
          (db) => db.status?.currentPrimary === newPrimary,
          60_000,
        );
        assert.notEqual(
          cond(degraded, 'ReplicationHealthy')?.status,
          'True',
          'one instance of three is gone',
        );
        assert.doesNotMatch(cond(degraded, 'Ready')?.message ?? '', /3\/3/);
        t.diagnostic(
          `${a.e.engine} node lost: old primary fenced +${((fencedAt - lostAt) / 1000).toFixed(1)} s, ${newPrimary} writable +${(failoverMs / 1000).toFixed(1)} s; ` +
            `write outage ${(outage / 1000).toFixed(1)} s; Ready: ${cond(degraded, 'Ready')?.message}`,
        );
        if (failoverMs > 20_000 || outage > 20_000)
          t.diagnostic(`${a.e.engine} node lost: ${await a.timeline(lostAt)}`);
        assert.ok(
          failoverMs <= FAILOVER_BOUND_MS,
          `failover within ${FAILOVER_BOUND_MS / 1000} s of the node loss, took ${failoverMs} ms`,
        );
      });

      // The node comes back: each old primary's agent starts its engine as a standby of the new primary.
      const healedAt = Date.now();
      heal();
      heal = undefined;
      await forEachEngine(armed, async (a) => {
        const back = await a.until('all three replicating again', healthy, 300_000);
        const rejoinMs = Date.now() - healedAt;
        const summary = await a.sampler.stop();
        assert.equal(
          summary.maxWritableAtOnce,
          1,
          `never two writable, but: ${describeSplitBrain(summary, lostAt)}`,
        );
        const acked = await a.nothingLost();
        t.diagnostic(
          `${a.e.engine} node back: all instances replicating ${(rejoinMs / 1000).toFixed(1)} s later; 0 of ${acked} acknowledged writes lost; ` +
            `sampler rounds ${summary.rounds}, slowest ${summary.maxRoundMs} ms${discardedIn(back)}`,
        );
      });
    } finally {
      clearInterval(watching);
      for (const sampler of samplers) await sampler.stop();
      // A failure before the healing must not leave the node lost for the next scenario.
      heal?.();
      heal = undefined;
    }
  });

  test('a container that outlives its Pod (the primary force-deleted while its kubelet hangs): its agent fences its engine, a standby takes over once the Lease expires, never two writable, nothing acknowledged lost', async (t) => {
    // Each primary on the second node again. The Pod made in the deleted one's place goes there
    // too, where nothing starts it while the kubelet hangs: two servers never share the volume.
    const samplers: RoleSampler[] = [];
    let resume: (() => void) | undefined;
    try {
      const armed = await forEachEngine(subjects, async (s) => {
        const zombie = s.pod(2);
        await s.primaryOnSecondNode(zombie, { newPodsThere: true });
        const zombieUid = (await pods().get(zombie, { namespace: s.ns })).metadata!.uid!;
        // The sampler asks every address a namespace on this host holds in the nodes' Pod subnets:
        // the zombie's too, once no Pod object has it.
        const sampler = await s.sampler(samplers);
        await sampler.waitForRound('the primary writable', (r) => r.writable.join() === zombie, 30_000);
        await s.writer!.waitForAcks((await s.writer!.acked()).length + 50, 60_000);
        return { ...s, zombie, zombieUid, sampler, server: await s.server(zombieUid) };
      });
      const paused = pauseSecondRealNodeKubelet(env.controlPlane.state.dir);
      resume = () => paused.resume();
      const deletedAt = Date.now();
      await forEachEngine(armed, async (a) => {
        await pods().delete(a.zombie, { namespace: a.ns, gracePeriodSeconds: 0 });
        const fencedAt = await eventually(
          "the zombie's engine fenced by its agent",
          () => (!isAlive(a.server) ? Date.now() : undefined),
          30_000,
          100,
        ).catch((err: Error) => {
          // The node's kubelet hangs, so the API has no log of it: the container's log file, where
          // the agent says what it read of its Pod and the Lease.
          err.message += `\nthe zombie's container log (its agent's lines among the engine's):\n${a.secondNodeContainerLog(a.zombie, a.zombieUid)}`;
          throw err;
        });
        const takenOver = await a.sampler.waitForRound(
          'a standby on the first node accepts writes',
          (r) => r.writable.some((w) => !w.startsWith(a.zombie)),
          120_000,
        );
        const newPrimary = takenOver.writable.find((w) => !w.startsWith(a.zombie))!;
        await a.writesResume(takenOver.atMs, newPrimary, deletedAt);
        assert.ok(
          fencedAt < takenOver.atMs,
          `the zombie's server ended (+${fencedAt - deletedAt} ms) before ${newPrimary} accepted writes (+${takenOver.atMs - deletedAt} ms)`,
        );
        const before = a.sampler.rounds().filter((r) => r.atMs < fencedAt && r.atMs > deletedAt);
        const zombieSeen = before.some((r) =>
          r.instances.some((i) => i.name.startsWith(`${a.zombie} (no current Pod`)),
        );
        t.diagnostic(
          `${a.e.engine} zombie: fenced by its agent +${((fencedAt - deletedAt) / 1000).toFixed(1)} s after its Pod was force-deleted, ${newPrimary} writable +${((takenOver.atMs - deletedAt) / 1000).toFixed(1)} s; ` +
            `the sampler ${zombieSeen ? 'asked the zombie at its address meanwhile' : 'did not reach the zombie before its fence'}`,
        );
        if (takenOver.atMs - deletedAt > 40_000)
          t.diagnostic(`${a.e.engine} zombie: ${await a.timeline(deletedAt)}`);
      });

      // The kubelet back: it stops what remains of each deleted Pod and starts the one made in its
      // place, which rejoins as a standby.
      resume();
      resume = undefined;
      await forEachEngine(armed, async (a) => {
        await a.setNamespaceAnnotations(realNodeNamespaceAnnotations());
        const back = await a.until('all three replicating again', healthy, 300_000);
        const summary = await a.sampler.stop();
        assert.equal(
          summary.maxWritableAtOnce,
          1,
          `never two writable, but: ${describeSplitBrain(summary, deletedAt)}`,
        );
        const acked = await a.nothingLost();
        t.diagnostic(
          `${a.e.engine} zombie: all instances replicating again; 0 of ${acked} acknowledged writes lost${discardedIn(back)}`,
        );
      });
    } finally {
      resume?.();
      for (const sampler of samplers) await sampler.stop();
    }
  });
});
