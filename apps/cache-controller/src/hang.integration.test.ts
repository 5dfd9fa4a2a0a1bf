// Replicated redis on the real node under faults the kubelet does not report:
// the primary's processes stopped (SIGSTOP); the primary isolated from its
// replicas, both managers and the API server while its clients still reach it;
// and the leader manager frozen right after it records a failover while a
// second manager takes over.
// Two manager processes elect a leader over a Lease; a writer in a client Pod
// writes through the client Service; the sampler asks every instance (and every
// other address on the host) for its role every 200 ms. Invariants: never two
// masters; the acknowledged writes the new primary lacks are counted, and may
// only be the last second's before the fault, or, isolated, what the primary
// acknowledged before it refused (replication is asynchronous); one failover
// and one promotion; the resumed manager writes nothing.
//   npx regulon-testenv exec -- node --test apps/cache-controller/src/hang.integration.test.ts
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { EventsV1Event } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import {
  apiServerAddresses,
  PRIMARY_LEASE_SECONDS,
  startManagerProcess,
  stopManagerProcess,
} from '@regulon/conventions';
import {
  containerProcessTrees,
  cutOffFromPod,
  cutPodOffFrom,
  describeSplitBrain,
  eventually,
  occurrencesSince,
  reportedBy,
  resumeUntilExit,
  loadImagesIntoRealNode,
  localImageCatalog,
  podSandboxPid,
  start,
  stopProcess,
  type Partition,
  type RoleSampler,
  type TestEnv,
} from '@regulon/testenv';
import { ensureManagerImage } from '../../../tools/manager-image/image.ts';
import { Cache } from './api.ts';
import { longestGap, redisUnderTest, settled, type RedisUnderTest } from './testing/redis-under-test.ts';

const NAME = 'hot';
/** The managers' Lease. */
const LEADER_LEASE = 'regulon-manager';
/**
 * The group both manager processes run in, which the isolation cuts off from the primary's Pod
 * (see cutOffFromPod); the replicated file, which may run beside this one, has its own.
 */
const MANAGERS_GID = 64_245;
/** Short, so that the takeover is quick; the ratios are client-go's defaults' (15 s, 10 s, 2 s). */
const ELECTION = { leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 1_000 };

describe(
  'replicated redis: a hung primary, an isolated primary, and the leader manager frozen mid-failover',
  { timeout: 12 * 60_000 },
  () => {
    let env: TestEnv;
    let client: KubeClient;
    let ns: string;
    let cache: RedisUnderTest;
    let managers: Array<{ identity: string; child: ChildProcess }> = [];
    /** Stopped processes, resumed whatever happens. */
    const frozen = new Set<ChildProcess>();
    const samplers: RoleSampler[] = [];

    before(async () => {
      env = await start({ realNodes: 1 });
      await env.installCRDs([Cache.crd()]);
      client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 100, burst: 200 });
      const image = await ensureManagerImage();
      loadImagesIntoRealNode(env.controlPlane.state.dir, [image]);
      const catalog = await localImageCatalog();
      ns = await env.newNamespace('redis-hang', { realNode: true });
      managers = ['manager-a', 'manager-b'].map((identity) => ({
        identity,
        child: startManagerProcess(
          new URL('./testing/manager-process.ts', import.meta.url),
          {
            kubeconfigPath: env.kubeconfigPath,
            namespace: ns,
            options: { catalog, instanceAgentImage: image.ref },
            leaderElection: { enabled: true, namespace: ns, name: LEADER_LEASE, identity, ...ELECTION },
          },
          MANAGERS_GID,
        ),
      }));
      cache = redisUnderTest(env, client, ns, NAME);
      await cache.create();
    });
    after(async () => {
      for (const child of frozen) child.kill('SIGCONT');
      for (const sampler of samplers) await sampler.stop();
      for (const m of managers) await stopManagerProcess(m.child);
      client?.close();
      await env?.stop();
    });

    test("the primary's processes hung (SIGSTOP) under a write load: a replica takes over, never two masters; the old primary back as a replica", async (t) => {
      const before = await cache.until('settled', (c) => settled(c));
      const primary = before.status!.currentPrimary!;
      const sampler = await cache.sampler(samplers);
      await sampler.waitForRound('the primary a master', (r) => r.writable.join() === primary, 30_000);
      const writer = cache.startWriter(75, 'hung');
      await writer.waitForAcks(50, 60_000);
      // Every process the Pod's containers started, the agent's included; not the sandbox, nor the
      // kubelet's probes, which fail on the stopped server. The fence's kill ends them.
      const hung = containerProcessTrees(await cache.uidOf(primary));
      assert.ok(hung.length > 0, `the processes of ${primary}`);
      const hungAt = Date.now();
      for (const pid of hung) stopProcess(pid);
      try {
        const takenOver = await sampler
          .waitForRound('a replica a master', (r) => r.writable.some((w) => w !== primary), 90_000)
          .catch(async (err: Error) => {
            const c = await cache.get();
            err.message +=
              `\nlast round: ${JSON.stringify(sampler.rounds().at(-1)?.instances)}` +
              `\nstatus: ${JSON.stringify(c.status?.conditions?.map((x) => `${x.type}=${x.status} ${x.reason}: ${x.message}`))}` +
              `\nevents: ${await cache.timeline(hungAt)}`;
            throw err;
          });
        const newPrimary = takenOver.writable.find((w) => w !== primary)!;
        await writer.waitForAckAfter(takenOver.atMs, 60_000);
        const rejoined = await cache.until(
          `every instance replicating again, ${primary} a replica of ${newPrimary}`,
          (c) => settled(c) && c.status?.currentPrimary === newPrimary,
          180_000,
        );
        const allReplicating = Date.now() - hungAt;
        const writes = await writer.done();
        const summary = await sampler.stop();
        assert.equal(
          summary.maxWritableAtOnce,
          1,
          `never two masters, but: ${describeSplitBrain(summary, hungAt)}`,
        );
        const lost = await cache.lost(writes);
        const acked = writes.filter((w) => w.acked);
        t.diagnostic(
          `primary hung: ${newPrimary} a master +${((takenOver.atMs - hungAt) / 1000).toFixed(1)} s; write outage ${(longestGap(acked) / 1000).toFixed(1)} s; ` +
            `${lost.length} of ${acked.length} acknowledged writes lost; every instance replicating +${(allReplicating / 1000).toFixed(1)} s; ` +
            `Ready: ${rejoined.status?.conditions?.find((c) => c.type === 'Ready')?.message}`,
        );
        if (takenOver.atMs - hungAt > 30_000) t.diagnostic(`primary hung: ${await cache.timeline(hungAt)}`);
        // Replication is asynchronous, but a replica receives each write as it is made: what it
        // lacks can only be what the primary acknowledged in the moment before it stopped.
        assert.deepEqual(
          lost.filter((w) => w.at < hungAt - 1_000).map((w) => w.key),
          [],
          'no write acknowledged more than a second before the hang lost',
        );
      } finally {
        for (const pid of hung)
          try {
            process.kill(pid, 'SIGCONT');
          } catch {
            // Killed by the fence, as it should be.
          }
      }
    });

    test('the primary isolated from its replicas, both managers and the API server, its clients still connected: it refuses writes (NOREPLICAS), its agent stops it before its Lease can expire, a replica takes over; never two masters; what it acknowledged alone is lost, within the Lease', async (t) => {
      const before = await cache.until('settled', (c) => settled(c), 240_000);
      const primary = before.status!.currentPrimary!;
      const sampler = await cache.sampler(samplers);
      await sampler.waitForRound('the primary a master', (r) => r.writable.join() === primary, 30_000);
      const writer = cache.startWriter(90, 'isolated');
      await writer.waitForAcks(50, 60_000);
      const primaryIp = await cache.ipOf(primary);
      const replicaIps = await Promise.all(
        before.status!.instances!.filter((i) => i.name !== primary).map((i) => cache.ipOf(i.name)),
      );
      // Both managers, in their group, lose the primary's Pod alone; inside it every packet to and
      // from the replicas and the API server is dropped. The writer's Pod, and this test's sampler,
      // still reach it.
      const cuts: Partition[] = [
        cutOffFromPod(MANAGERS_GID, primaryIp),
        cutPodOffFrom(podSandboxPid(await cache.uidOf(primary)), [
          ...replicaIps,
          ...(await apiServerAddresses(client)),
        ]),
      ];
      const cutAt = Date.now();
      const heal = () => {
        for (const cut of cuts.splice(0)) cut.heal();
      };
      try {
        const takenOver = await sampler
          .waitForRound('a replica a master', (r) => r.writable.some((w) => w !== primary), 90_000)
          .catch(async (err: Error) => {
            err.message += `\nevents: ${await cache.timeline(cutAt)}`;
            throw err;
          });
        const newPrimary = takenOver.writable.find((w) => w !== primary)!;
        heal();
        const healedAt = Date.now();
        await writer.waitForAckAfter(takenOver.atMs, 60_000);
        const rejoined = await cache.until(
          `every instance replicating again, ${primary} a replica of ${newPrimary}`,
          (c) => settled(c) && c.status?.currentPrimary === newPrimary,
          180_000,
        );
        const writes = await writer.stop();
        const summary = await sampler.stop();
        assert.equal(
          summary.maxWritableAtOnce,
          1,
          `never two masters, but: ${describeSplitBrain(summary, cutAt)}`,
        );
        // The clients on its side were refused, not cut off: redis said why.
        const refused = writes.find((w) => w.at > cutAt && /NOREPLICAS/.test(w.reply));
        assert.ok(
          refused,
          `the isolated primary refused a write with NOREPLICAS; replies after the cut: ${[
            ...new Set(writes.filter((w) => w.at > cutAt).map((w) => w.reply)),
          ].join(' | ')}`,
        );
        const lost = await cache.lost(writes);
        const acked = writes.filter((w) => w.acked);
        const lostBefore = lost.filter((w) => w.at < cutAt - 1_000);
        if (lostBefore.length > 0) {
          const info = async (pod: string) => {
            const ip = await cache.ipOf(pod);
            const answer = await cache.ask(ip, ['INFO', 'server']).catch((e: Error) => e.message);
            const repl = await cache.ask(ip, ['INFO', 'replication']).catch((e: Error) => e.message);
            const uptime = /uptime_in_seconds:\d+/.exec(String(answer))?.[0];
            return `${pod} ${uptime} ${String(repl).replace(/\r?\n/g, ' ')}; holds ${await cache.present(ip, lostBefore)} of the lost`;
          };
          assert.fail(
            `${lostBefore.length} writes acknowledged before the cut lost (the first +${((lostBefore[0]!.at - cutAt) / 1000).toFixed(1)} s, ${lost.length} lost in all)\n` +
              `${(await Promise.all(rejoined.status!.instances!.map((i) => info(i.name)))).join('\n')}\n` +
              `events: ${await cache.timeline(cutAt - 10_000)}`,
          );
        }
        // Asynchronous: what it acknowledged before it refused is lost. All of it came before its
        // Lease could expire (its last renewal came before the cut).
        assert.deepEqual(
          lost.filter((w) => w.at > cutAt + PRIMARY_LEASE_SECONDS * 1000).map((w) => w.key),
          [],
          `writes lost that ${primary} acknowledged after its Lease could expire`,
        );
        const lastLost = Math.max(cutAt, ...lost.map((w) => w.at));
        t.diagnostic(
          `primary isolated: ${primary} refused writes (NOREPLICAS) +${((refused.at - cutAt) / 1000).toFixed(1)} s; ` +
            `${newPrimary} a master +${((takenOver.atMs - cutAt) / 1000).toFixed(1)} s; write outage ${(longestGap(acked) / 1000).toFixed(1)} s; ` +
            `${lost.length} of ${acked.length} acknowledged writes lost, the last acknowledged +${((lastLost - cutAt) / 1000).toFixed(1)} s after the cut; ` +
            `every instance replicating ${((Date.now() - healedAt) / 1000).toFixed(1)} s after healing; Ready: ${rejoined.status?.conditions?.find((c) => c.type === 'Ready')?.message}`,
        );
        if (takenOver.atMs - cutAt > 30_000) t.diagnostic(`primary isolated: ${await cache.timeline(cutAt)}`);
      } finally {
        heal();
        await writer.stop();
      }
    });

    test('the leader frozen right after it records a failover: the other manager takes the Lease and finishes it, one promotion, never two masters, nothing acknowledged lost; resumed, the first exits without writing', async (t) => {
      const before = await cache.until('settled', (c) => settled(c), 240_000);
      const old = before.status!.currentPrimary!;
      const holder = async () =>
        (await client.resource(Kinds.Lease).get(LEADER_LEASE, { namespace: ns })).spec?.holderIdentity;
      const leaderId = await eventually('a leader among the two managers', holder);
      const leader = managers.find((m) => m.identity === leaderId)!;
      const other = managers.find((m) => m !== leader)!;
      const topology = () =>
        client
          .resource(Kinds.ConfigMap)
          .get(`${NAME}-topology`, { namespace: ns })
          .then((cm) => cm.data?.['primary']);
      const sampler = await cache.sampler(samplers);
      await sampler.waitForRound('the primary a master', (r) => r.writable.join() === old, 30_000);
      const writer = cache.startWriter(60, 'takeover');
      await writer.waitForAcks(50, 60_000);

      const deletedAt = Date.now();
      await client.resource(Kinds.Pod).delete(old, { namespace: ns });
      const named = await eventually(
        'the failover recorded',
        async () => {
          const p = await topology();
          return p && p !== old ? p : undefined;
        },
        60_000,
        50,
      );
      leader.child.kill('SIGSTOP');
      frozen.add(leader.child);
      const frozenAt = Date.now();
      const midway = await sampler.waitForRound('a round after the freeze', (r) => r.atMs > frozenAt, 10_000);
      const early = midway.writable.filter((w) => w !== old);
      assert.ok(
        early.every((w) => w === named),
        `only the named instance may be a master: ${JSON.stringify(midway.instances)}`,
      );
      await eventually(
        `${other.identity} leads`,
        async () => (await holder()) === other.identity,
        60_000,
        200,
      );
      const ledAt = Date.now();
      await cache.until(
        'the failover finished by the other manager',
        (c) => settled(c) && c.status?.currentPrimary === named,
        240_000,
      );
      const finishedAt = Date.now();

      // Resumed, the frozen leader's timers and replies all come due at once, its Lease's renew
      // deadline among them: it must stop before it writes anything, and exit.
      const resumedAt = Date.now();
      frozen.delete(leader.child);
      const exitCode = await resumeUntilExit(leader.child);
      assert.notEqual(exitCode, 0, 'it exits because it lost its leadership, not as asked to');
      const events = (await client.resource<EventsV1Event>(Kinds.Event).list({ namespace: ns })).items;
      assert.deepEqual(
        reportedBy(events, leader.identity, resumedAt),
        [],
        'no Event from the resumed manager',
      );
      const occurrences = (reason: string) => occurrencesSince(events, reason, deletedAt);
      // FailoverStarted follows the record, and the leader may be frozen in between: at most one.
      assert.ok(
        occurrences('FailoverStarted') <= 1,
        `at most one FailoverStarted: ${await cache.timeline(deletedAt)}`,
      );
      assert.equal(occurrences('Promoted'), 1, `one promotion: ${await cache.timeline(deletedAt)}`);
      assert.equal(await topology(), named, 'the record kept the choice the frozen leader made');

      const writes = await writer.done();
      const summary = await sampler.stop();
      assert.equal(
        summary.maxWritableAtOnce,
        1,
        `never two masters, but: ${describeSplitBrain(summary, deletedAt)}`,
      );
      const lost = await cache.lost(writes);
      const acked = writes.filter((w) => w.acked);
      assert.deepEqual(
        lost.map((w) => w.key),
        [],
        'a graceful deletion loses no acknowledged write: the primary waits for its replicas on shutdown',
      );
      t.diagnostic(
        `${leader.identity} frozen ${frozenAt - deletedAt} ms after the primary's Pod was deleted, ${early.length ? 'after' : 'before'} its promotion; ` +
          `${other.identity} led ${((ledAt - frozenAt) / 1000).toFixed(1)} s later and finished the failover (${old} -> ${named}) ` +
          `${((finishedAt - frozenAt) / 1000).toFixed(1)} s after the freeze; resumed, it exited (code ${exitCode}), writing no Event; ` +
          `0 of ${acked.length} acknowledged writes lost, write outage ${(longestGap(acked) / 1000).toFixed(1)} s`,
      );
    });
  },
);
