// A standby's takeover against the real API server: two managers in one
// process over 10,000 objects; the standby's caches sync before it
// campaigns, so when the leader stops as a crash would (no release), the
// standby reconciles from its warm cache and queue the moment it holds the
// Lease, without listing anything anew. A cold standby (warmStandby: false)
// then takes over from it in turn, for comparison: it lists after winning.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KubeClient, Kinds, retyped } from '@regulon/client';
import { defineKind } from '@regulon/crd';
import { start, type TestEnv } from '@regulon/testenv';
import { Type } from 'typebox';
import type { Lease } from '../election/leader-election.ts';
import { createLogger } from '../observability/logging.ts';
import { parsePrometheusText } from '../testing/prometheus.ts';
import { forEachConcurrently, indices } from '../testing/concurrently.ts';
import { eventually } from '../testing/wait.ts';
import type { Manager } from './manager.ts';
import { testManager } from './test-manager.ts';

/**
 * A kind of this test's own: the API server counts LIST requests by resource,
 * not by client or namespace, and no other test (they may share the control
 * plane) lists this one.
 */
const Item = defineKind({
  group: 'warm-takeover.test.regulon.dev',
  version: 'v1',
  kind: 'Item',
  plural: 'items',
  singular: 'item',
  scope: 'Namespaced',
  spec: Type.Object({ i: Type.Integer() }),
  status: Type.Object({}),
});
const OBJECTS = 10_000;
const CREATE_CONCURRENCY = 50;
const LEASE = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 250 };
/**
 * From the standby holding the Lease to its first reconcile. Warm, the keys
 * are already queued and the workers start at once (0-1 ms when measured);
 * the bound leaves a loaded 2-core machine room. What tells warm from cold is
 * that nothing is listed; what a cold standby's list and sync would add is
 * printed beside it.
 */
const FIRST_RECONCILE_WITHIN_MS = 1000;

let env: TestEnv;
let client: KubeClient;
const managers: Manager[] = [];

before(async () => {
  env = await start();
  await env.installCRDs([Item.crd()]);
  client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 1000, burst: 1000 });
});
after(async () => {
  for (const m of managers) m.stop();
  client.close();
  await env.stop();
});

/** The API server's own count of LIST requests for Items, from every client. */
async function itemLists(): Promise<number> {
  const text = await client.request<string>({ method: 'GET', path: '/metrics', accept: 'text/plain' });
  return parsePrometheusText(text)
    .filter(
      (s) =>
        s.name === 'apiserver_request_total' &&
        s.labels['verb'] === 'LIST' &&
        s.labels['group'] === Item.group &&
        s.labels['resource'] === Item.plural,
    )
    .reduce((sum, s) => sum + s.value, 0);
}

/** One replica: a manager whose log lines are kept (with their times) and whose reconciles are recorded. */
function replica(namespace: string, identity: string, { warmStandby = true } = {}) {
  const lines: Array<{ msg: string; at: number }> = [];
  const reconciled = new Set<string>();
  let firstReconcileAt: number | undefined;
  let allReconciledAt: number | undefined;
  const mgr = testManager(env.kubeConfig, {
    logger: createLogger({
      level: 'info',
      destination: {
        write: (line: string) => {
          const { msg, time } = JSON.parse(line) as { msg: string; time: string };
          lines.push({ msg, at: Date.parse(time) });
        },
      },
    }),
    clientOptions: { qps: 1000, burst: 1000 },
    namespace,
    gracefulShutdownTimeoutMs: 5000,
    leaderElection: {
      enabled: true,
      namespace,
      name: 'warm-takeover',
      identity,
      ...LEASE,
      // Stopped, it leaves the Lease held until it expires, as a crashed process does.
      releaseOnStop: false,
      warmStandby,
    },
  });
  managers.push(mgr);
  const controller = mgr
    .controller('warm')
    .for(Item)
    .reconcile((item) => {
      firstReconcileAt ??= Date.now();
      reconciled.add(item.metadata.name);
      if (reconciled.size === OBJECTS) allReconciledAt ??= Date.now();
      return Promise.resolve();
    });
  const loggedAt = (msg: string) => lines.find((l) => l.msg === msg)?.at;
  return {
    mgr,
    controller,
    reconciled,
    firstReconcileAt: () => firstReconcileAt,
    allReconciledAt: () => allReconciledAt,
    loggedAt,
    relists: () => mgr.informers.status().reduce((sum, s) => sum + s.health.relists, 0),
    /** From holding the Lease to the first reconcile, as this replica logged and recorded them. */
    firstReconcileMs: () => firstReconcileAt! - loggedAt('became leader; starting leader-only controllers')!,
    run: mgr.start().catch((err: unknown) => err),
  };
}

test(
  `a warm standby over ${OBJECTS} objects takes over from a crashed leader without a new LIST and reconciles within ${FIRST_RECONCILE_WITHIN_MS} ms of holding the Lease; a cold one lists after it won`,
  { timeout: 180_000 },
  async (t) => {
    const ns = await env.newNamespace('rt-warm-takeover');
    const items = client.resource(Item);
    await forEachConcurrently(indices(OBJECTS), CREATE_CONCURRENCY, (i) =>
      items.create(Item.object({ metadata: { name: `item-${i}`, namespace: ns }, spec: { i } })),
    );

    const leader = replica(ns, 'leader');
    await eventually('the leader reconciled every object', () => leader.reconciled.size === OBJECTS, 90_000);

    const standby = replica(ns, 'standby');
    // Warm: before it could lead, the standby has listed once, holds every
    // object in its cache and every key in its controller's queue.
    await eventually(
      'the standby synced and queued every key',
      () => standby.loggedAt('caches synced') !== undefined && standby.controller.queue.len() === OBJECTS,
      60_000,
    );
    assert.equal(standby.mgr.leading, false);
    assert.equal(standby.reconciled.size, 0);
    const listsBefore = await itemLists();
    // Both replicas' first lists were counted: the count below is not blind to this client's lists.
    assert.ok(listsBefore >= 2, `${listsBefore} LIST requests counted for the two initial lists`);
    const relistsBefore = standby.relists();

    const crashedAt = Date.now();
    leader.mgr.stop();
    assert.equal(await leader.run, undefined);
    await eventually(
      'the standby took over and reconciled every object',
      () => standby.reconciled.size === OBJECTS,
      LEASE.leaseDurationMs + 60_000,
    );

    const acquiredAt = standby.loggedAt('became leader; starting leader-only controllers');
    assert.ok(acquiredAt !== undefined && standby.firstReconcileAt() !== undefined);
    const lease = await client.resource(retyped<Lease>(Kinds.Lease)).get('warm-takeover', { namespace: ns });
    assert.equal(lease.spec?.holderIdentity, 'standby');
    // Nobody listed Items from before the crash until every one was
    // reconciled again (the API server counts every client's requests), and
    // the standby's reflector did not relist.
    assert.equal(await itemLists(), listsBefore, 'a LIST of Items during the takeover');
    assert.equal(standby.relists(), relistsBefore);

    const firstReconcileMs = standby.firstReconcileMs();
    t.diagnostic(
      `warm takeover over ${OBJECTS} objects: crash to Lease held ${acquiredAt - crashedAt} ms ` +
        `(lease ${LEASE.leaseDurationMs} ms); Lease held to first reconcile ${firstReconcileMs} ms; ` +
        `to all ${OBJECTS} reconciled ${standby.allReconciledAt()! - acquiredAt} ms; ` +
        `LIST requests for Items before the crash ${listsBefore}, after it none`,
    );
    assert.ok(
      firstReconcileMs <= FIRST_RECONCILE_WITHIN_MS,
      `first reconcile ${firstReconcileMs} ms after holding the Lease`,
    );

    // For comparison, and to show the LIST count sees a takeover that lists: a
    // cold standby campaigns with nothing listed and takes over from the warm one.
    const cold = replica(ns, 'cold', { warmStandby: false });
    await eventually(
      'the cold standby campaigns',
      () => cold.loggedAt('attempting to acquire leader lease') !== undefined,
      60_000,
    );
    assert.equal(cold.loggedAt('caches synced'), undefined);
    assert.equal(cold.controller.queue.len(), 0);
    const listsBeforeCold = await itemLists();
    standby.mgr.stop();
    assert.equal(await standby.run, undefined);
    await eventually(
      'the cold standby took over and reconciled every object',
      () => cold.reconciled.size === OBJECTS,
      LEASE.leaseDurationMs + 60_000,
    );
    const coldAcquiredAt = cold.loggedAt('became leader; starting leader-only controllers')!;
    const coldSyncedAt = cold.loggedAt('caches synced')!;
    assert.ok(coldSyncedAt >= coldAcquiredAt, 'the cold standby synced only after it won');
    const coldLists = (await itemLists()) - listsBeforeCold;
    assert.ok(coldLists >= 1, 'the cold takeover listed');
    t.diagnostic(
      `cold takeover: Lease held to first reconcile ${cold.firstReconcileMs()} ms ` +
        `(list and sync ${coldSyncedAt - coldAcquiredAt} ms, ${coldLists} LIST requests); ` +
        `to all ${OBJECTS} reconciled ${cold.allReconciledAt()! - coldAcquiredAt} ms`,
    );
  },
);
