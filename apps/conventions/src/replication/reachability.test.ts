import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import type { Plan } from './plan.ts';
import { reachabilityCondition, reachabilityReporter, UNREACHABLE_METRIC } from './reachability.ts';

const planWith = (unobserved: string[]): Plan => ({
  step: undefined,
  roles: new Map(),
  currentPrimary: undefined,
  servingPrimary: 'db-0',
  unobserved,
  waiting: undefined,
  recheckInMs: undefined,
});

test('the condition names the instances the manager cannot reach, and is True when it reaches all', () => {
  assert.deepEqual(reachabilityCondition(planWith([])), {
    status: 'True',
    reason: 'AllReachable',
    message: 'The manager reaches every ready instance',
  });
  const blind = reachabilityCondition(planWith(['db-0', 'db-2']));
  assert.equal(blind.status, 'False');
  assert.equal(blind.reason, 'InstancesUnreachable');
  assert.match(blind.message, /^The manager cannot reach db-0, db-2; /);
});

test('the reporter sets the gauge each time, and emits an Event only when the condition changes', async () => {
  const registry = new Registry();
  const report = reachabilityReporter(registry, 'Database');
  const events: string[] = [];
  const ctx = {
    event: (type: string, reason: string) => void events.push(`${type} ${reason}`),
    warn: (reason: string) => void events.push(`Warning ${reason}`),
  };
  const db = { metadata: { namespace: 'ns', name: 'db' } };
  const was = (status: 'True' | 'False') => [
    { type: 'InstancesReachable', status, reason: '', message: '', lastTransitionTime: '' },
  ];
  const gauge = async () =>
    (await registry.getSingleMetric(UNREACHABLE_METRIC)!.get()).values.find((v) => v.labels['owner'] === 'db')
      ?.value;

  report(db, undefined, planWith([]), ctx);
  assert.equal(await gauge(), 0);
  report(db, was('True'), planWith(['db-0', 'db-1']), ctx);
  assert.equal(await gauge(), 2);
  report(db, was('False'), planWith(['db-0']), ctx);
  report(db, was('False'), planWith([]), ctx);
  assert.equal(await gauge(), 0);
  report(db, was('True'), planWith([]), ctx);
  assert.deepEqual(events, ['Warning InstancesUnreachable', 'Normal InstancesReachable']);
  // A second kind on the same registry shares the one gauge (prom-client refuses a name twice).
  reachabilityReporter(registry, 'Cache')(
    { metadata: { namespace: 'ns', name: 'rd' } },
    undefined,
    planWith(['rd-1']),
    ctx,
  );
  const values = (await registry.getSingleMetric(UNREACHABLE_METRIC)!.get()).values;
  assert.deepEqual(values.map((v) => `${v.labels['kind']} ${v.labels['owner']} ${v.value}`).sort(), [
    'Cache rd 1',
    'Database db 0',
  ]);
});
