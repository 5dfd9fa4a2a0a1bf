import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { LAGGING_METRIC, laggingReporter } from './lag-report.ts';

test('the lagging gauge counts the instances whose state is Lagging, per owner, and goes back to 0', async () => {
  const registry = new Registry();
  const report = laggingReporter(registry, 'Database');
  const orders = { metadata: { namespace: 'shop', name: 'orders' } };
  const value = async () =>
    (await registry.getSingleMetric(LAGGING_METRIC)!.get()).values.find((v) => v.labels['owner'] === 'orders')
      ?.value;
  report(orders, [{ state: 'Primary' }, { state: 'Lagging' }, { state: 'Streaming' }, { state: 'Lagging' }]);
  assert.equal(await value(), 2);
  report(orders, [{ state: 'Primary' }, { state: 'Streaming' }, { state: 'NotStreaming' }]);
  assert.equal(await value(), 0);
  report(orders, undefined);
  assert.equal(await value(), 0);
  const labels = (await registry.getSingleMetric(LAGGING_METRIC)!.get()).values[0]!.labels;
  assert.deepEqual(labels, { kind: 'Database', owner_namespace: 'shop', owner: 'orders' });
});
