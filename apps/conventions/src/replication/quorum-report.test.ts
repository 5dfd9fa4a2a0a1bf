import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import type { Plan } from './plan.ts';
import { failoverQuorumReporter, QUORUM_METRIC, QUORUM_REASON } from './quorum-report.ts';
import { replicationUnsettled } from './reachability.ts';

const planWith = (quorum: Plan['quorum']): Plan => ({
  step: undefined,
  roles: new Map(),
  currentPrimary: undefined,
  servingPrimary: undefined,
  unobserved: [],
  waiting: quorum ? `synchronous: waiting for ${quorum.silent.join(', ')}` : 'primary db-0 lost',
  recheckInMs: undefined,
  quorum,
});
const waitingForDb1 = { silent: ['db-1'], answered: ['db-2'], needed: 2 };

test('ReplicationHealthy names the quorum wait apart from any other lack of a primary', () => {
  assert.deepEqual(replicationUnsettled(planWith(waitingForDb1)), {
    status: 'False',
    reason: QUORUM_REASON,
    message: 'synchronous: waiting for db-1',
  });
  assert.equal(replicationUnsettled(planWith(undefined))?.reason, 'NoPrimary');
});

test('the reporter counts the standbys waited for, and warns once when the wait starts', async () => {
  const registry = new Registry();
  const report = failoverQuorumReporter(registry, 'Database');
  const events: string[] = [];
  const ctx = { warn: (reason: string, message: string) => void events.push(`${reason}: ${message}`) };
  const db = { metadata: { namespace: 'ns', name: 'db' } };
  const was = (reason: string) => [
    { type: 'ReplicationHealthy', status: 'False' as const, reason, message: '', lastTransitionTime: '' },
  ];
  const gauge = async () =>
    (await registry.getSingleMetric(QUORUM_METRIC)!.get()).values.find((v) => v.labels['owner'] === 'db')
      ?.value;

  report(db, was('Streaming'), planWith(undefined), ctx);
  assert.equal(await gauge(), 0);
  report(db, was('NoPrimary'), planWith(waitingForDb1), ctx);
  assert.equal(await gauge(), 1);
  report(db, was(QUORUM_REASON), planWith(waitingForDb1), ctx);
  report(db, was(QUORUM_REASON), planWith(undefined), ctx);
  assert.equal(await gauge(), 0);
  assert.deepEqual(events, [`${QUORUM_REASON}: synchronous: waiting for db-1`]);
});
