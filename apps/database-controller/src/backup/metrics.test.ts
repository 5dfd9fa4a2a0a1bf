// The backup metrics the RegulonDatabaseBackupFailing alert reads: the latest
// finished backup of each Database says whether it is failing, whatever order
// the controller sees them in; labels name the Database and nothing else.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import type { DatabaseBackupObject } from './api.ts';
import { backupMetrics, FAILING_METRIC, LAST_SUCCESS_METRIC, TOTAL_METRIC } from './metrics.ts';

const finished = (
  name: string,
  phase: 'Succeeded' | 'Failed',
  stoppedAt: string,
  database = 'orders',
): DatabaseBackupObject => ({
  apiVersion: 'regulon.dev/v1alpha1',
  kind: 'DatabaseBackup',
  metadata: { name, namespace: 'shop', uid: `u-${name}` },
  spec: { database },
  status: { phase, stoppedAt },
});

async function values(registry: Registry, name: string) {
  const metric = registry.getSingleMetric(name);
  return (await metric!.get()).values.map((v) => ({ labels: v.labels, value: v.value }));
}

test('failing follows the latest finished backup; the last success its completion time', async () => {
  const registry = new Registry();
  const m = backupMetrics(registry);
  assert.equal(backupMetrics(registry), m, 'one set per registry');
  // Seen out of order, as a manager's start-up lists them.
  m.observe(finished('b', 'Failed', '2026-11-24T12:02:00Z'));
  m.observe(finished('a', 'Succeeded', '2026-11-24T12:01:00Z'));
  m.observe(finished('x', 'Succeeded', '2026-11-24T12:00:00Z', 'ledger'));
  const labels = { database_namespace: 'shop', database: 'orders' };
  assert.deepEqual(await values(registry, FAILING_METRIC), [
    { labels, value: 1 },
    { labels: { database_namespace: 'shop', database: 'ledger' }, value: 0 },
  ]);
  assert.deepEqual((await values(registry, LAST_SUCCESS_METRIC))[0], {
    labels,
    value: Date.parse('2026-11-24T12:01:00Z') / 1000,
  });

  const next = finished('c', 'Succeeded', '2026-11-24T12:03:00Z');
  m.observe(next);
  m.finished(next, 'succeeded');
  assert.equal((await values(registry, FAILING_METRIC))[0]!.value, 0, 'a success after the failure');
  assert.deepEqual(await values(registry, TOTAL_METRIC), [
    { labels: { ...labels, result: 'succeeded' }, value: 1 },
  ]);
  const text = await registry.metrics();
  assert.doesNotMatch(text, /bucket|endpoint|secret|key/i, 'nothing of the store in a label');
});
