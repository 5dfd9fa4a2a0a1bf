import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import type { DatabaseObject } from '../api.ts';
import type { ReplicationView } from './replication.ts';
import { SYNCHRONOUS_STANDBYS_METRIC, synchronousStandbysReporter } from './synchronous-metric.ts';

const db = (synchronous: boolean) =>
  ({
    metadata: { namespace: 'shop', name: 'orders' },
    spec: { replication: { synchronous } },
  }) as DatabaseObject;
const view = (confirming: number | undefined, primary = 'orders-0') =>
  ({
    plan: { currentPrimary: primary },
    observations: new Map([
      [
        'orders-0',
        {
          reachable: true,
          server: { writable: true, systemId: '1', timeline: 1, lsn: 1n, replayLsn: 1n, streaming: false },
          position: '0/1',
          confirming,
        },
      ],
    ]),
  }) as unknown as ReplicationView;

test('the gauge says how many standbys confirm a synchronous primary, and has no series otherwise', async () => {
  const registry = new Registry();
  const report = synchronousStandbysReporter(registry);
  const values = async () =>
    (await registry.getSingleMetric(SYNCHRONOUS_STANDBYS_METRIC)!.get()).values.map(
      (v) => `${v.labels['database_namespace']}/${v.labels['database']} ${v.value}`,
    );
  report(db(true), view(2));
  assert.deepEqual(await values(), ['shop/orders 2']);
  report(db(true), view(0));
  assert.deepEqual(await values(), ['shop/orders 0'], 'every commit waits');
  report(db(true), view(1, 'orders-1'));
  assert.deepEqual(await values(), [], 'the primary not observed: no figure');
  report(db(true), view(1));
  report(db(false), view(1));
  assert.deepEqual(await values(), [], 'asynchronous: nothing to say');
});
