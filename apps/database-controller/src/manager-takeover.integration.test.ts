// The leader stopped dead right after it starts a failover, while a second manager takes over:
// two manager processes elect a leader over a Lease; the primary's Pod is deleted under a
// synchronous write load; the moment the leader records the failover (the topology names another
// instance) its process is frozen (SIGSTOP: no shutdown, no release, its Lease simply goes
// unrenewed). The other process wins the Lease once it expires and finishes the failover. Then the
// first is resumed with everything it was doing still in flight: it must find its Lease lost
// before it acts on any of it, and exit. Invariants: one failover and one promotion, never two
// instances writable, no acknowledged write lost, nothing written by the resumed manager.
// PostgreSQL and MariaDB side by side, each in its own namespace with its own two managers.
//   npx regulon-testenv exec -- node --test apps/database-controller/src/manager-takeover.integration.test.ts
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { EventsV1Event, V1Pod } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import { startManagerProcess, stopManagerProcess } from '@regulon/conventions';
import {
  describeSplitBrain,
  eventually,
  occurrencesSince,
  reportedBy,
  resumeUntilExit,
  loadImagesIntoRealNode,
  localImageCatalog,
  start,
  type RoleSampler,
  type TestEnv,
} from '@regulon/testenv';
import { ensureManagerImage } from '../../../tools/manager-image/image.ts';
import { Database } from './api.ts';
import {
  databaseUnderTest,
  type DatabaseUnderTest,
  ENGINE_CASES,
  forEachEngine,
  healthy,
} from './testing/side-by-side.ts';

/** The managers' Lease, in each engine's namespace. */
const LEADER_LEASE = 'regulon-manager';
/** Short, so that the takeover is quick; the ratios are client-go's defaults' (15 s, 10 s, 2 s). */
const ELECTION = { leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 1_000 };

interface ManagerUnderTest {
  identity: string;
  child: ChildProcess;
}

describe(
  'the leader manager frozen mid-failover on real PostgreSQL and MariaDB',
  { timeout: 15 * 60_000 },
  () => {
    let env: TestEnv;
    let client: KubeClient;
    const subjects: Array<DatabaseUnderTest & { managers: ManagerUnderTest[] }> = [];
    /** Frozen processes, resumed whatever happens: a stopped process never handles SIGTERM. */
    const frozen = new Set<ChildProcess>();
    const pods = () => client.resource<V1Pod>(Kinds.Pod);

    before(async () => {
      env = await start({ realNodes: 1 });
      await env.installCRDs([Database.crd()]);
      client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 100, burst: 200 });
      const image = await ensureManagerImage();
      loadImagesIntoRealNode(env.controlPlane.state.dir, [image]);
      const catalog = await localImageCatalog();
      for (const [e, name] of [
        [ENGINE_CASES.postgres, 'pgto'],
        [ENGINE_CASES.mariadb, 'mdbto'],
      ] as const) {
        const ns = await env.newNamespace(`${e.engine}-takeover`, { realNode: true });
        const managers = ['manager-a', 'manager-b'].map((identity) => ({
          identity,
          child: startManagerProcess(
            new URL('./testing/manager-process.ts', import.meta.url),
            {
              kubeconfigPath: env.kubeconfigPath,
              namespace: ns,
              options: { catalog, instanceAgentImage: image.ref },
              leaderElection: { enabled: true, namespace: ns, name: LEADER_LEASE, identity, ...ELECTION },
            },
            process.getgid!(),
          ),
        }));
        subjects.push(Object.assign(databaseUnderTest(client, e, ns, name), { managers }));
      }
    });
    after(async () => {
      for (const child of frozen) child.kill('SIGCONT');
      for (const s of subjects) {
        await s.writer?.stop().catch(() => {});
        for (const m of s.managers) await stopManagerProcess(m.child);
      }
      client?.close();
      await env?.stop();
    });

    test('the leader frozen right after it records a failover: the other manager takes the Lease and finishes it, one promotion, never two writable, nothing acknowledged lost; resumed, the first exits without writing', async (t) => {
      const samplers: RoleSampler[] = [];
      try {
        await forEachEngine(subjects, async (s) => {
          const { ns } = s;
          await s.create();
          const healthyBefore = await s.until('healthy', healthy);
          const old = healthyBefore.status!.currentPrimary!;
          const holder = async () =>
            (await client.resource(Kinds.Lease).get(LEADER_LEASE, { namespace: ns })).spec?.holderIdentity;
          const leaderId = await eventually('a leader among the two managers', holder);
          const leader = s.managers.find((m) => m.identity === leaderId)!;
          const other = s.managers.find((m) => m !== leader)!;
          const topology = () =>
            client
              .resource(Kinds.ConfigMap)
              .get(`${s.name}-topology`, { namespace: ns })
              .then((cm) => cm.data?.['primary']);
          const sampler = await s.sampler(samplers);
          await sampler.waitForRound('the primary writable', (r) => r.writable.join() === old, 30_000);

          const deletedAt = Date.now();
          await pods().delete(old, { namespace: ns });
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
          const midway = await sampler.waitForRound(
            'a round after the freeze',
            (r) => r.atMs > frozenAt,
            10_000,
          );
          // The old primary may still be writable while it shuts down; the one named is not yet, unless
          // the leader had promoted it already (a promotion follows the record within milliseconds
          // when the old primary's agent released the primary Lease). Either way the other manager
          // has only to finish that choice.
          const early = midway.writable.filter((w) => w !== old);
          assert.ok(
            early.every((w) => w === named),
            `only the named instance may be writable: ${JSON.stringify(midway.instances)}`,
          );
          await eventually(
            `${other.identity} leads`,
            async () => (await holder()) === other.identity,
            60_000,
            200,
          );
          const ledAt = Date.now();
          await s.until(
            'the failover finished by the other manager',
            (db) => healthy(db) && db.status?.currentPrimary === named,
            300_000,
          );
          const finishedAt = Date.now();

          // Resumed, the frozen leader's timers and replies all come due at once: its Lease's renew
          // deadline among them. It must stop before it writes anything, and exit.
          const resumedAt = Date.now();
          frozen.delete(leader.child);
          const exitCode = await resumeUntilExit(leader.child);
          const exitedAt = Date.now();
          assert.notEqual(exitCode, 0, 'it exits because it lost its leadership, not as asked to');

          const events = (await client.resource<EventsV1Event>(Kinds.Event).list({ namespace: ns })).items;
          assert.deepEqual(
            reportedBy(events, leader.identity, resumedAt),
            [],
            'no Event from the resumed manager',
          );
          const occurrences = (reason: string) => occurrencesSince(events, reason, deletedAt);
          // The leader reports FailoverStarted right after it records the failover, and may be
          // frozen in between (Events are best effort, and a resumed leader writes none): at most
          // one. Two failovers would promote twice.
          assert.ok(
            occurrences('FailoverStarted') <= 1,
            `at most one FailoverStarted: ${await s.timeline(deletedAt)}`,
          );
          assert.equal(occurrences('Promoted'), 1, `one promotion: ${await s.timeline(deletedAt)}`);
          assert.equal(await topology(), named, 'the record kept the choice the frozen leader made');

          const acked = await s.nothingLost();
          const summary = await sampler.stop();
          assert.equal(
            summary.maxWritableAtOnce,
            1,
            `never two writable, but: ${describeSplitBrain(summary, deletedAt)}`,
          );
          t.diagnostic(
            `${s.e.engine}: ${leader.identity} frozen ${frozenAt - deletedAt} ms after the primary's Pod was deleted, ` +
              `${early.length ? 'after' : 'before'} its promotion; ${other.identity} led ${((ledAt - frozenAt) / 1000).toFixed(1)} s later ` +
              `and finished the failover (${old} -> ${named}) ${((finishedAt - frozenAt) / 1000).toFixed(1)} s after the freeze; ` +
              `resumed, ${leader.identity} exited (code ${exitCode}) in ${exitedAt - resumedAt} ms, writing no Event; 0 of ${acked} acknowledged writes lost`,
          );
        });
      } finally {
        for (const sampler of samplers) await sampler.stop();
      }
    });
  },
);
