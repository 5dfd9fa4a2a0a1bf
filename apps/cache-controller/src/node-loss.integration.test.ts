// A lost node fails over: replicated redis with the instance agent on the
// machine's two real nodes, each Cache's primary alone on the second node and
// its two replicas on the first, with a writer in a client Pod on the first.
// Two faults, each on a Cache of its own (in its own namespace, with its own
// manager), both set up at once:
// - a container that outlives its Pod: the second node's kubelet hangs and the
//   primary's Pod is force-deleted; its agent fences its server, and a replica
//   takes over once the primary Lease expires;
// - the node lost the way a node is lost (kubelet stopped, every packet to and
//   from it dropped): nothing confirms the primary's end and its Pod object
//   stays; its agent, cut off from the API server, fences its server before its
//   Lease can expire, and the manager promotes a replica once it has seen the
//   Lease expire. Once the node is back the old primary rejoins as a replica.
// Invariants: the old primary's server ends before any other instance is a
// master, never two masters (the sampler asks every address on the host, the
// zombie's too), and the writes lost are only the last second's before the fault.
//   npx regulon-testenv exec -- node --test apps/cache-controller/src/node-loss.integration.test.ts
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { V1Namespace } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import { ImageCatalog } from '@regulon/image-catalog';
import { type Manager, testManager } from '@regulon/runtime';
import {
  describeSplitBrain,
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
  type RoleSampler,
  type TestEnv,
} from '@regulon/testenv';
import { ensureManagerImage } from '../../../tools/manager-image/image.ts';
import { Cache } from './api.ts';
import { setupCacheController } from './index.ts';
import { cond } from './testing/real-node.ts';
import { longestGap, redisUnderTest, settled, type RedisUnderTest } from './testing/redis-under-test.ts';

/** How soon after the node loss a replica must accept writes, with the default settings. */
const FAILOVER_BOUND_MS = 30_000;

// Under `npm test` the run's shared control plane gets the second node for this file alone
// (another file that wants it waits), and stops it again at the end.
const shared = Boolean(process.env['REGULON_TESTENV_DIR']);

describe('node loss on replicated redis with the instance agent', { timeout: 15 * 60_000 }, () => {
  let env: TestEnv;
  let client: KubeClient;
  let heal: (() => void) | undefined;
  const managers: Array<{ mgr: Manager; running: Promise<void> }> = [];
  const samplers: RoleSampler[] = [];
  /** Each Cache's primary on the second node, its replicas and client on the first. */
  let zombieCase: Placed;
  let lossCase: Placed;

  type Placed = Awaited<ReturnType<typeof placed>>;
  /**
   * A Cache whose primary runs on the second node and its replicas on the first: all three start
   * there, then the replicas' Pods are made again on the first node (no volume: they resync).
   * `newPodsThere`: whether later Pods go to the second node.
   */
  async function placed(name: string, o: { newPodsThere: boolean }) {
    const ns = await env.newNamespace(`redis-${name}`, { realNode: true });
    const mgr = testManager(env.kubeConfig, { namespace: ns });
    setupCacheController(mgr, {
      imageCatalog: ImageCatalog.fromDocument(await localImageCatalog(), 'testenv images'),
      instanceAgentImage: (await ensureManagerImage()).ref,
    });
    managers.push({ mgr, running: mgr.start() });
    const setNamespaceAnnotations = (annotations: Record<string, string>) =>
      client
        .resource<V1Namespace>(Kinds.Namespace)
        .patch(ns, { metadata: { annotations } }, { type: 'merge' });
    const cache = redisUnderTest(env, client, ns, name);
    await setNamespaceAnnotations(secondRealNodeNamespaceAnnotations());
    const created = await cache.createCache();
    const primary = created.status!.currentPrimary!;
    await setNamespaceAnnotations(realNodeNamespaceAnnotations());
    const replicas = created.status!.instances!.map((i) => i.name).filter((n) => n !== primary);
    const oldUids = await Promise.all(replicas.map((r) => cache.uidOf(r)));
    for (const r of replicas) await client.resource(Kinds.Pod).delete(r, { namespace: ns });
    for (const [i, r] of replicas.entries())
      await eventually(
        `${r} made again, on the first node`,
        async () => {
          const p = await client
            .resource(Kinds.Pod)
            .get(r, { namespace: ns })
            .catch(() => undefined);
          return p?.metadata?.uid !== oldUids[i] && p?.spec?.nodeName === 'real-node-0';
        },
        120_000,
        250,
      );
    // Each new replica linked to the primary, asked directly (the status may still describe the
    // Pods before the deletions), then the status settled.
    for (const r of replicas)
      await eventually(
        `${r} linked to ${primary}`,
        async () => {
          const role = (await cache.ask(await cache.ipOf(r), ['ROLE'])) as unknown[];
          return role[0] === 'slave' && role[3] === 'connected';
        },
        180_000,
        500,
      );
    await cache.until(
      'every instance replicating',
      (c) => settled(c) && c.status?.currentPrimary === primary,
      120_000,
    );
    assert.equal(await cache.nodeOf(primary), SECOND_NODE.name, `${primary} on the second node`);
    await cache.startClient();
    if (o.newPodsThere) await setNamespaceAnnotations(secondRealNodeNamespaceAnnotations());
    await eventually(
      'the primary Lease names the primary',
      async () =>
        (await client.resource(Kinds.Lease).get(`${name}-primary`, { namespace: ns })).spec
          ?.holderIdentity === primary,
      30_000,
      200,
    );
    return { cache, primary, setNamespaceAnnotations };
  }

  /** Samples the roles and starts a writer: armed once the primary is a master and writes are acknowledged. */
  async function armed(c: RedisUnderTest, primary: string, prefix: string) {
    const sampler = await c.sampler(samplers);
    await sampler.waitForRound('the primary a master', (r) => r.writable.join() === primary, 30_000);
    const writer = c.startWriter(120, prefix);
    await writer.waitForAcks(50, 60_000);
    const uid = await c.uidOf(primary);
    return { sampler, writer, uid, server: await c.server(uid) };
  }

  before(async () => {
    env = await start({ realNodes: 2 });
    await env.installCRDs([Cache.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 100, burst: 200 });
    loadImagesIntoRealNode(env.controlPlane.state.dir, [await ensureManagerImage()]);
    [zombieCase, lossCase] = await Promise.all([
      // The Pod made in the force-deleted one's place goes to the second node too, where nothing
      // starts it while the kubelet hangs.
      placed('zombie', { newPodsThere: true }),
      placed('lost', { newPodsThere: false }),
    ]);
  });
  after(async () => {
    heal?.();
    for (const sampler of samplers) await sampler.stop();
    for (const m of managers) {
      m.mgr.stop();
      await m.running;
    }
    client?.close();
    if (shared) await env?.stopSecondRealNode();
    else await env?.stop();
  });

  test('a container that outlives its Pod (the primary force-deleted while its kubelet hangs): its agent fences its server, a replica takes over once the Lease expires, never two masters', async (t) => {
    const { cache, primary: zombie, setNamespaceAnnotations } = zombieCase;
    const a = await armed(cache, zombie, 'zombie');
    const paused = pauseSecondRealNodeKubelet(env.controlPlane.state.dir);
    let resumed = false;
    try {
      const deletedAt = Date.now();
      await client.resource(Kinds.Pod).delete(zombie, { namespace: cache.ns, gracePeriodSeconds: 0 });
      const fencedAt = await eventually(
        "the zombie's server fenced by its agent",
        () => Promise.resolve(!isAlive(a.server) ? Date.now() : undefined),
        30_000,
        100,
      ).catch((err: Error) => {
        err.message += `\nthe zombie's container log:\n${secondNodeContainerLog(env.controlPlane.state.dir, { namespace: cache.ns, name: zombie, uid: a.uid, container: 'redis' })}`;
        throw err;
      });
      const takenOver = await a.sampler.waitForRound(
        'a replica on the first node a master',
        (r) => r.writable.some((w) => !w.startsWith(zombie)),
        120_000,
      );
      const newPrimary = takenOver.writable.find((w) => !w.startsWith(zombie))!;
      await a.writer.waitForAckAfter(takenOver.atMs, 60_000);
      assert.ok(
        fencedAt < takenOver.atMs,
        `the zombie's server ended (+${fencedAt - deletedAt} ms) before ${newPrimary} was a master (+${takenOver.atMs - deletedAt} ms)`,
      );
      const zombieSeen = a.sampler
        .rounds()
        .some(
          (r) =>
            r.atMs > deletedAt &&
            r.atMs < fencedAt &&
            r.instances.some((i) => i.name.startsWith(`${zombie} (no current Pod`)),
        );
      t.diagnostic(
        `redis zombie: fenced by its agent +${((fencedAt - deletedAt) / 1000).toFixed(1)} s after its Pod was force-deleted, ${newPrimary} a master +${((takenOver.atMs - deletedAt) / 1000).toFixed(1)} s; ` +
          `the sampler ${zombieSeen ? 'asked the zombie at its address meanwhile' : 'did not reach the zombie before its fence'}`,
      );
      if (takenOver.atMs - deletedAt > 40_000)
        t.diagnostic(`redis zombie: ${await cache.timeline(deletedAt)}`);

      // The kubelet back: it stops what remains of the deleted Pod and starts the one made in its
      // place, which joins as a replica.
      paused.resume();
      resumed = true;
      await setNamespaceAnnotations(realNodeNamespaceAnnotations());
      await cache.until(
        'every instance replicating again',
        (c) => settled(c) && c.status?.currentPrimary === newPrimary,
        240_000,
      );
      const writes = await a.writer.stop();
      const summary = await a.sampler.stop();
      assert.equal(
        summary.maxWritableAtOnce,
        1,
        `never two masters, but: ${describeSplitBrain(summary, deletedAt)}`,
      );
      const lost = await cache.lost(writes);
      t.diagnostic(
        `redis zombie: ${lost.length} of ${writes.filter((w) => w.acked).length} acknowledged writes lost`,
      );
      assert.deepEqual(
        lost.filter((w) => w.at < deletedAt - 1_000).map((w) => w.key),
        [],
        'no write acknowledged more than a second before the fault lost',
      );
      // Gone before the node loss, which would take one of its replicas for nothing.
      await client.resource(Cache.type).delete(cache.name, { namespace: cache.ns });
    } finally {
      if (!resumed) paused.resume();
    }
  });

  test('the node of the primary lost: a replica takes over within 30 s, the old primary fenced first, never two masters; it rejoins once the node is back', async (t) => {
    const { cache, primary: moved } = lossCase;
    const a = await armed(cache, moved, 'loss');
    let fencedAt: number | undefined;
    const watching = setInterval(() => {
      if (fencedAt === undefined && !isAlive(a.server)) fencedAt = Date.now();
    }, 200);
    try {
      const lostAt = Date.now();
      const loss = loseSecondRealNode(env.controlPlane.state.dir);
      heal = () => loss.heal();
      const takenOver = await a.sampler.waitForRound(
        'a replica on the first node a master',
        (r) => r.writable.some((w) => w !== moved),
        120_000,
      );
      const newPrimary = takenOver.writable.find((w) => w !== moved)!;
      await a.writer.waitForAckAfter(takenOver.atMs, 60_000);
      const failoverMs = takenOver.atMs - lostAt;
      assert.ok(fencedAt !== undefined, 'the old primary was fenced (its server ended) before the takeover');
      assert.ok(fencedAt >= lostAt, 'its server ran until the loss');
      assert.ok(
        fencedAt < takenOver.atMs,
        `the old primary's server ended (+${fencedAt - lostAt} ms) before ${newPrimary} was a master (+${failoverMs} ms)`,
      );
      // While the lost instance does not replicate, the Cache must not say every instance is.
      const degraded = await cache.until(
        'the new primary recorded, the lost instance not counted replicating',
        (c) => c.status?.currentPrimary === newPrimary,
        60_000,
      );
      assert.notEqual(cond(degraded, 'ReplicationHealthy')?.status, 'True', 'one instance of three is gone');
      assert.doesNotMatch(
        cond(degraded, 'Ready')?.message ?? '',
        /3\/3/,
        'Ready counts the lost instance out',
      );
      const outage = longestGap(a.writer.writes().filter((w) => w.acked));
      t.diagnostic(
        `redis node lost: old primary fenced +${((fencedAt - lostAt) / 1000).toFixed(1)} s, ${newPrimary} a master +${(failoverMs / 1000).toFixed(1)} s; ` +
          `write outage ${(outage / 1000).toFixed(1)} s; Ready: ${cond(degraded, 'Ready')?.message}`,
      );
      if (failoverMs > 20_000) t.diagnostic(`redis node lost: ${await cache.timeline(lostAt)}`);
      assert.ok(
        failoverMs <= FAILOVER_BOUND_MS,
        `failover within ${FAILOVER_BOUND_MS / 1000} s of the node loss, took ${failoverMs} ms`,
      );

      // The node comes back: the old primary's agent starts its server as a replica of the new one.
      const healedAt = Date.now();
      loss.heal();
      heal = undefined;
      const back = await cache.until(
        `${moved} replicating from ${newPrimary}`,
        (c) => settled(c) && c.status?.currentPrimary === newPrimary,
        240_000,
      );
      assert.equal(back.status!.instances!.find((i) => i.name === moved)?.role, 'replica');
      t.diagnostic(
        `redis node back: ${moved} a replica again ${((Date.now() - healedAt) / 1000).toFixed(1)} s after`,
      );
      const writes = await a.writer.stop();
      const summary = await a.sampler.stop();
      assert.equal(
        summary.maxWritableAtOnce,
        1,
        `never two masters, but: ${describeSplitBrain(summary, lostAt)}`,
      );
      const lost = await cache.lost(writes);
      t.diagnostic(
        `redis node lost: ${lost.length} of ${writes.filter((w) => w.acked).length} acknowledged writes lost`,
      );
      assert.deepEqual(
        lost.filter((w) => w.at < lostAt - 1_000).map((w) => w.key),
        [],
        'no write acknowledged more than a second before the loss lost',
      );
    } finally {
      clearInterval(watching);
    }
  });
});
