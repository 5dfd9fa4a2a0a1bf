// ShardedControllers against the real API server: a sharded cache whose swap to the owned
// buckets fails (its new informer did not sync in time) is swapped again after a backoff until
// it serves the owned set, without waiting for the next hand-over, which may never come.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KubeClient, type KubeObject } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import { eventually } from '../testing/wait.ts';
import { RESHARD_RETRY, ShardedControllers } from './sharded-controllers.ts';
import { ownedKey, type ShardedSource } from './sharded-source.ts';

const BUCKETS = 4;

let env: TestEnv;
let client: KubeClient;

before(async () => {
  env = await start();
  client = KubeClient.fromKubeConfig(env.kubeConfig);
});
after(async () => {
  client.close();
  await env.stop();
});

test('a swap that failed is tried again, backing off, until the cache serves the owned buckets', async () => {
  const namespace = await env.newNamespace('rt-reshard');
  const controllers = new ShardedControllers({
    client,
    namespace,
    name: 'reshard',
    identity: 'only-member',
    buckets: BUCKETS,
    leaseDurationMs: 3000,
    renewDeadlineMs: 2000,
    retryPeriodMs: 500,
    cacheSyncTimeoutMs: 1000,
  });
  // The one thing ShardedControllers asks of a source; its first two swaps fail as a sync
  // timeout would, the third succeeds.
  const calls: Array<{ owned: string; at: number }> = [];
  let serving = '';
  const source = {
    reshard(owned: ReadonlySet<number>): Promise<void> {
      const key = ownedKey(owned);
      if (key === serving) return Promise.resolve();
      calls.push({ owned: key, at: performance.now() });
      if (calls.filter((c) => c.owned === key).length <= 2)
        return Promise.reject(new Error('informer did not sync in time'));
      serving = key;
      return Promise.resolve();
    },
  } as unknown as ShardedSource<KubeObject>;
  controllers.addSource(source);

  const stop = new AbortController();
  const running = controllers.ownership.start(stop.signal);
  try {
    const all = ownedKey(new Set(Array(BUCKETS).keys()));
    await eventually(
      'the source serves every bucket',
      () => {
        if (serving === all) return true;
        throw new Error(`owned ${[...controllers.owned()].join()}; swaps ${JSON.stringify(calls)}`);
      },
      20_000,
    );
    // Each owned set the swaps were asked for on the way (one bucket acquired after another)
    // failed; the last one, all buckets, failed twice and succeeded on its third try.
    const last = calls.filter((c) => c.owned === all);
    assert.equal(last.length, 3, JSON.stringify(calls));
    // Backing off, not hot-looping: 1 s, then 2 s (a new owned set's retries start again
    // from 1 s).
    const gaps = [last[1]!.at - last[0]!.at, last[2]!.at - last[1]!.at];
    assert.ok(gaps[0]! >= RESHARD_RETRY.initialMs - 50, `first retry after ${gaps[0]} ms`);
    assert.ok(gaps[1]! >= 2 * RESHARD_RETRY.initialMs - 50, `second retry after ${gaps[1]} ms`);
  } finally {
    controllers.stop();
    stop.abort();
    await running;
  }
});
