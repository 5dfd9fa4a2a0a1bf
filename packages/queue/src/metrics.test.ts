import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Registry, register as globalRegistry } from 'prom-client';
import { FakeClock } from '@regulon/util';
import { DelayingQueue } from './delaying.ts';
import { WORKQUEUE_DURATION_BUCKETS, WORKQUEUE_METRIC_NAMES as N } from './metrics.ts';
import { LOW_PRIORITY, WorkQueue } from './queue.ts';
import { RateLimitingQueue } from './rate-limiting-queue.ts';

interface Sample {
  value: number;
  labels: Partial<Record<string, string | number>>;
  metricName?: string;
}

async function samples(registry: Registry, name: string): Promise<Sample[]> {
  const metric = registry.getSingleMetric(name);
  assert.ok(metric, `${name} is not registered`);
  return (await metric.get()).values;
}

// The value of the one sample of `name` (or of a histogram's `name_suffix` series) for queue `queue`.
async function valueOf(
  registry: Registry,
  name: string,
  queue: string,
  opts: { suffix?: string; le?: number } = {},
): Promise<number> {
  const matching = (await samples(registry, name)).filter(
    (s) =>
      s.labels.name === queue &&
      (opts.suffix === undefined || s.metricName === `${name}_${opts.suffix}`) &&
      (opts.le === undefined || s.labels.le === opts.le),
  );
  assert.equal(
    matching.length,
    1,
    `expected one ${name} sample for ${queue}, got ${JSON.stringify(matching)}`,
  );
  const [sample] = matching as [Sample];
  assert.equal(sample.labels.controller, queue, 'controller label must equal the queue name');
  return sample.value;
}

// Reads a gauge through the text exposition, i.e. exactly what a scrape sees.
async function scraped(registry: Registry, name: string, queue: string): Promise<number> {
  const text = await registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{name="${queue}",controller="${queue}"} `));
  assert.ok(line, `no ${name} series for ${queue} in:\n${text}`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('workqueue metrics', () => {
  it('records depth, adds, retries and queue/work durations for known operations', async () => {
    const registry = new Registry();
    const clock = new FakeClock();
    const q = new DelayingQueue({ name: 'widgets', clock, registry });

    q.add('a');
    q.add('b');
    q.add('a'); // deduplicated: not an add
    assert.equal(await valueOf(registry, N.adds, 'widgets'), 2);
    assert.equal(await valueOf(registry, N.depth, 'widgets'), 2);

    clock.advance(2000);
    const r = await q.get();
    assert.deepEqual(r, { item: 'a', shutdown: false });
    assert.equal(await valueOf(registry, N.depth, 'widgets'), 1);
    assert.equal(await valueOf(registry, N.queueDuration, 'widgets', { suffix: 'count' }), 1);
    assert.equal(await valueOf(registry, N.queueDuration, 'widgets', { suffix: 'sum' }), 2);
    assert.equal(await valueOf(registry, N.queueDuration, 'widgets', { suffix: 'bucket', le: 1 }), 0);
    assert.equal(await valueOf(registry, N.queueDuration, 'widgets', { suffix: 'bucket', le: 10 }), 1);

    clock.advance(3000);
    q.add('a'); // while processing: counted, re-queued on done
    q.done('a');
    assert.equal(await valueOf(registry, N.workDuration, 'widgets', { suffix: 'count' }), 1);
    assert.equal(await valueOf(registry, N.workDuration, 'widgets', { suffix: 'sum' }), 3);

    q.addAfter('c', 10);
    clock.advance(10);
    assert.equal(await valueOf(registry, N.retries, 'widgets'), 1);
    assert.equal(await valueOf(registry, N.adds, 'widgets'), 4);
    assert.equal(await valueOf(registry, N.depth, 'widgets'), 3);
    assert.equal(q.len(), 3);
  });

  it('counts a raised item once in depth and adds, and measures its wait from its first add', async () => {
    const registry = new Registry();
    const clock = new FakeClock();
    const q = new WorkQueue({ name: 'prio', clock, registry });
    q.add('a', { priority: LOW_PRIORITY });
    q.add('b', { priority: LOW_PRIORITY });
    clock.advance(3000);
    q.add('b'); // raised to the default priority
    assert.equal(await valueOf(registry, N.depth, 'prio'), 2);
    assert.equal(await valueOf(registry, N.adds, 'prio'), 2);

    assert.deepEqual(await q.get(), { item: 'b', shutdown: false });
    assert.equal(await valueOf(registry, N.depth, 'prio'), 1);
    assert.equal(
      await valueOf(registry, N.queueDuration, 'prio', { suffix: 'sum' }),
      3,
      'the raise must not restart the measured wait',
    );
    assert.deepEqual(await q.get(), { item: 'a', shutdown: false });
    assert.equal(await valueOf(registry, N.depth, 'prio'), 0);
  });

  it('counts no add and no retry for an add refused for its priority', async () => {
    const registry = new Registry();
    const q = new RateLimitingQueue({ name: 'bad-priority', clock: new FakeClock(), registry });
    assert.throws(() => q.add('a', { priority: 0.5 }), RangeError);
    assert.throws(() => q.addAfter('a', 10, { priority: 0.5 }), RangeError);
    assert.throws(() => q.addRateLimited('a', { priority: 0.5 }), RangeError);
    assert.equal(await valueOf(registry, N.adds, 'bad-priority'), 0);
    assert.equal(await valueOf(registry, N.retries, 'bad-priority'), 0);
    assert.equal(await valueOf(registry, N.depth, 'bad-priority'), 0);
  });

  it('computes unfinished work and the longest-running processor at scrape time', async () => {
    const registry = new Registry();
    const clock = new FakeClock();
    const q = new WorkQueue({ name: 'slow', clock, registry });
    q.add('a');
    q.add('b');
    await q.get(); // a starts at t=0
    clock.advance(1000);
    await q.get(); // b starts at t=1000
    clock.advance(2000);

    assert.equal(await scraped(registry, N.unfinishedWork, 'slow'), 5);
    assert.equal(await scraped(registry, N.longestRunningProcessor, 'slow'), 3);

    clock.advance(1000);
    assert.equal(await scraped(registry, N.unfinishedWork, 'slow'), 7);
    assert.equal(await valueOf(registry, N.longestRunningProcessor, 'slow'), 4);

    q.done('a');
    assert.equal(await scraped(registry, N.unfinishedWork, 'slow'), 3);
    assert.equal(await scraped(registry, N.longestRunningProcessor, 'slow'), 3);
  });

  it('keeps reporting in-flight work during a drain and reports zero once the queue has stopped', async () => {
    const registry = new Registry();
    const clock = new FakeClock();
    const q = new WorkQueue({ name: 'stopping', clock, registry });
    q.add('a');
    await q.get();
    clock.advance(1000);

    const drained = q.shutDownWithDrain();
    assert.equal(await scraped(registry, N.unfinishedWork, 'stopping'), 1);
    q.done('a');
    assert.equal(await drained, true);
    clock.advance(1000);
    assert.equal(await scraped(registry, N.unfinishedWork, 'stopping'), 0);
    assert.equal(await scraped(registry, N.longestRunningProcessor, 'stopping'), 0);
  });

  it('shares one set of metric objects per registry, labelled per queue', async () => {
    const registry = new Registry();
    const clock = new FakeClock();
    const first = new WorkQueue({ name: 'first', clock, registry });
    const second = new WorkQueue({ name: 'second', clock, registry });
    first.add('x');
    second.add('x');
    second.add('y');

    assert.equal(await valueOf(registry, N.adds, 'first'), 1);
    assert.equal(await valueOf(registry, N.adds, 'second'), 2);
    // Another registry gets its own, independent metrics.
    const other = new Registry();
    new WorkQueue({ name: 'first', clock, registry: other }).add('z');
    assert.equal(await valueOf(other, N.adds, 'first'), 1);
    assert.equal(await valueOf(registry, N.adds, 'first'), 1);
  });

  it('exports every series at zero as soon as the queue exists', async () => {
    const registry = new Registry();
    new WorkQueue({ name: 'idle', clock: new FakeClock(), registry });
    for (const name of [N.depth, N.adds, N.retries, N.unfinishedWork, N.longestRunningProcessor]) {
      assert.equal(await scraped(registry, name, 'idle'), 0, name);
    }
    assert.equal(await valueOf(registry, N.workDuration, 'idle', { suffix: 'count' }), 0);
  });

  it('uses decade buckets from 10ns to 1000s for both duration histograms', async () => {
    const registry = new Registry();
    new WorkQueue({ name: 'b', registry });
    for (const name of [N.queueDuration, N.workDuration]) {
      const les = (await samples(registry, name))
        .filter((s) => s.metricName === `${name}_bucket` && s.labels.le !== '+Inf')
        .map((s) => s.labels.le);
      assert.deepEqual(les, [...WORKQUEUE_DURATION_BUCKETS]);
    }
    assert.deepEqual(
      WORKQUEUE_DURATION_BUCKETS,
      [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000],
    );
  });

  it('records nothing, not even in the global registry, without a registry', () => {
    const q = new WorkQueue({ name: 'quiet' });
    q.add('a');
    assert.equal(globalRegistry.getSingleMetric(N.depth), undefined);
    assert.equal(globalRegistry.getSingleMetric(N.adds), undefined);
  });

  it('requires a name when a registry is given', () => {
    assert.throws(() => new WorkQueue({ registry: new Registry() }), TypeError);
  });
});
