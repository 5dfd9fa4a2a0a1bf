// EventRecorder against a real API server: repeats become a series on one
// Event, a flood from one object is cut at the burst, objects are limited
// independently, and nothing ever throws into the caller.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KubeClient, Kinds, retyped, type KubeObject } from '@regulon/client';
import { FakeClock } from '@regulon/queue';
import { start, type TestEnv } from '@regulon/testenv';
import { Registry, type Counter } from 'prom-client';
import {
  DEFAULT_EVENT_AGGREGATION_WINDOW_MS,
  DEFAULT_EVENT_BURST,
  DEFAULT_EVENT_REFILL_INTERVAL_MS,
  EVENTS_DROPPED_METRIC_NAME,
  EVENT_NOTE_MAX_BYTES,
  EventRecorder,
  type EventRecorderOptions,
  type KubeEvent,
} from './events.ts';
import type { Logger } from '@regulon/util';
import { eventually } from '../testing/wait.ts';

const CONTROLLER = 'regulon.dev/test-controller';

interface LogLine {
  level: string;
  obj: object;
  msg: string | undefined;
}

function capturingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: string) =>
    (obj: object, msg?: string): void => {
      lines.push({ level, obj, msg });
    };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

describe('EventRecorder (real API server)', () => {
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

  function recorder(opts: Partial<EventRecorderOptions> = {}): EventRecorder {
    return new EventRecorder({
      client,
      reportingController: CONTROLLER,
      reportingInstance: 'pod-0_abc',
      ...opts,
    });
  }

  async function configMap(ns: string, name: string): Promise<KubeObject> {
    return client
      .resource(Kinds.ConfigMap)
      .create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns } });
  }

  async function eventsAbout(ns: string, name?: string): Promise<KubeEvent[]> {
    const list = await client.resource(retyped<KubeEvent>(Kinds.Event)).list({
      namespace: ns,
      ...(name ? { fieldSelector: `regarding.name=${name}` } : {}),
    });
    return list.items;
  }

  test('10 identical events: one Event object whose series counts all 10', async () => {
    const ns = await env.newNamespace('ev-series');
    const cm = await configMap(ns, 'repeated');
    const rec = recorder();
    for (let i = 0; i < 10; i++)
      rec.event(cm, 'Warning', 'SyncFailed', 'Sync', 'could not reach the backend');
    const [event] = await eventually('one Event with series.count 10', async () => {
      const items = await eventsAbout(ns);
      return items.length === 1 && items[0]?.series?.count === 10 ? items : undefined;
    });
    assert.ok(event);
    assert.equal(event.type, 'Warning');
    assert.equal(event.reason, 'SyncFailed');
    assert.equal(event.action, 'Sync');
    assert.equal(event.note, 'could not reach the backend');
    assert.equal(event.reportingController, CONTROLLER);
    assert.equal(event.reportingInstance, 'pod-0_abc');
    assert.equal(event.regarding.uid, cm.metadata?.uid);
    assert.equal(event.regarding.kind, 'ConfigMap');
    assert.equal(event.regarding.name, 'repeated');
    assert.equal(event.regarding.namespace, ns);
    assert.match(event.eventTime, /\.\d{6}Z$/);
    assert.ok(Date.parse(event.series!.lastObservedTime) >= Date.parse(event.eventTime));

    // Once the series is written, one more occurrence is one more patch on the same object.
    await rec.flush();
    rec.event(cm, 'Warning', 'SyncFailed', 'Sync', 'could not reach the backend');
    await eventually('series.count 11', async () => {
      const items = await eventsAbout(ns);
      return items.length === 1 && items[0]?.series?.count === 11;
    });
    assert.equal(rec.dropped, 0);
  });

  test('30 distinct events for one object: the burst of 25 is written, the rest dropped and counted', async () => {
    const ns = await env.newNamespace('ev-burst');
    const cm = await configMap(ns, 'noisy');
    const registry = new Registry();
    const logger = capturingLogger();
    const rec = recorder({ registry, logger });
    for (let i = 0; i < 30; i++) rec.event(cm, 'Normal', 'Step', 'Reconcile', `step ${i}`);
    assert.equal(rec.dropped, 30 - DEFAULT_EVENT_BURST);
    const metric = registry.getSingleMetric(EVENTS_DROPPED_METRIC_NAME) as Counter;
    assert.equal((await metric.get()).values.find((v) => v.labels['controller'] === CONTROLLER)?.value, 5);
    await eventually(
      'the burst is written',
      async () => (await eventsAbout(ns)).length === DEFAULT_EVENT_BURST,
    );
    await rec.flush();
    const items = await eventsAbout(ns);
    assert.equal(items.length, DEFAULT_EVENT_BURST, 'nothing beyond the burst');
    assert.deepEqual(
      items.map((e) => e.note).sort(),
      Array.from({ length: 25 }, (_, i) => `step ${i}`).sort(),
      'the first 25 made it',
    );
    assert.equal(logger.lines.filter((l) => l.level === 'error').length, 0);
  });

  test('objects are rate limited independently', async () => {
    const ns = await env.newNamespace('ev-independent');
    const a = await configMap(ns, 'a');
    const b = await configMap(ns, 'b');
    const rec = recorder();
    for (let i = 0; i < 30; i++) rec.event(a, 'Normal', 'Step', 'Reconcile', `a ${i}`);
    for (let i = 0; i < 3; i++) rec.event(b, 'Normal', 'Step', 'Reconcile', `b ${i}`);
    rec.event(a, 'Normal', 'Step', 'Reconcile', 'a once more');
    assert.equal(rec.dropped, 6, "b's events are unaffected by a's flood");
    await eventually('a: 25, b: 3', async () => {
      const [ea, eb] = await Promise.all([eventsAbout(ns, 'a'), eventsAbout(ns, 'b')]);
      return ea.length === 25 && eb.length === 3;
    });
  });

  test('a long note is cut to the API limit; cluster-scoped objects get their Events in default', async () => {
    const nsName = await env.newNamespace('ev-long');
    const namespace = await client.resource(Kinds.Namespace).get(nsName);
    const rec = recorder();
    const marker = `marker-${nsName}`;
    rec.event(namespace, 'Normal', 'Checked', 'Check', `${marker} ${'ü'.repeat(3000)}`);
    const event = await eventually('the Event in default', async () =>
      (await eventsAbout('default', nsName)).find((e) => e.note?.startsWith(marker)),
    );
    assert.ok(Buffer.byteLength(event.note ?? '') <= EVENT_NOTE_MAX_BYTES);
    assert.ok(event.note?.endsWith('...'));
    assert.equal(event.regarding.kind, 'Namespace');
    assert.equal(event.regarding.namespace, undefined);
  });

  test('the aggregation window and the refill are timed on the injected clock', async () => {
    const ns = await env.newNamespace('ev-clock');
    const cm = await configMap(ns, 'timed');
    const clock = new FakeClock(1_000_000);
    const rec = recorder({ clock });
    rec.event(cm, 'Normal', 'Tick', 'Reconcile', 'same');
    rec.event(cm, 'Normal', 'Tick', 'Reconcile', 'same');
    await rec.flush();
    clock.advance(DEFAULT_EVENT_AGGREGATION_WINDOW_MS + 1);
    rec.event(cm, 'Normal', 'Tick', 'Reconcile', 'same');
    await rec.flush();
    const items = await eventually('two Events', async () => {
      const list = await eventsAbout(ns);
      return list.length === 2 ? list : undefined;
    });
    assert.deepEqual(
      items.map((e) => e.series?.count ?? 1).sort(),
      [1, 2],
      'a repeat after the window starts a new Event',
    );

    // The window's wait refilled the bucket (capped at the burst) and the third
    // event spent one token: of the next burst-many events, the last is dropped.
    for (let i = 0; i < DEFAULT_EVENT_BURST; i++) rec.event(cm, 'Normal', 'Tick', 'Reconcile', `n${i}`);
    const droppedBefore = rec.dropped;
    assert.equal(droppedBefore, 1);
    // Empty now; one token comes back per refill interval.
    clock.advance(DEFAULT_EVENT_REFILL_INTERVAL_MS);
    rec.event(cm, 'Normal', 'Tick', 'Reconcile', 'after refill');
    rec.event(cm, 'Normal', 'Tick', 'Reconcile', 'one too many');
    assert.equal(rec.dropped, droppedBefore + 1);
    await rec.flush();
    const notes = (await eventsAbout(ns)).map((e) => e.note);
    assert.ok(notes.includes('after refill'));
    assert.ok(!notes.includes('one too many'));
  });

  test('never throws into the caller: bad input and API failures are logged', async () => {
    const logger = capturingLogger();
    const rec = recorder({ logger });
    assert.doesNotThrow(() => rec.event({}, 'Normal', 'Reason', 'Action', 'no name'));
    assert.doesNotThrow(() =>
      rec.event(
        { metadata: { name: 'x', namespace: 'default' } },
        'Bogus' as 'Normal',
        'Reason',
        'Action',
        '',
      ),
    );
    assert.doesNotThrow(() => rec.event(null as unknown as KubeObject, 'Normal', 'Reason', 'Action', ''));
    // A namespace that does not exist: the create fails in the background.
    rec.event(
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ghost', namespace: 'no-such-namespace-x' } },
      'Normal',
      'Reason',
      'Action',
      '',
    );
    await rec.flush();
    const errors = logger.lines.filter((l) => l.level === 'error');
    assert.equal(errors.length, 4, JSON.stringify(errors.map((e) => e.msg)));
    assert.equal(errors.at(-1)?.msg, 'failed to write event');
  });

  test('rejects a reportingController that the API server would refuse', () => {
    assert.throws(() => recorder({ reportingController: 'not a name' }), TypeError);
    assert.throws(() => recorder({ reportingInstance: '' }), TypeError);
    assert.equal(recorder({ reportingInstance: 'x'.repeat(300) }).reportingInstance.length, 128);
  });
});
