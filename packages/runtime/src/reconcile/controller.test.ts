import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EventHandler, Informer } from '@regulon/cache';
import { Kinds, type KubeObject } from '@regulon/client';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { Controller } from './controller.ts';

test('workers yield to the event loop between reconciles that send no request', async () => {
  const items = 200;
  const workers = 2;
  let reconciles = 0;
  let drained!: () => void;
  const allDone = new Promise<void>((resolve) => (drained = resolve));
  const controller = new Controller({
    name: 'converged',
    // Resolves without I/O, as a reconcile that finds every child converged does.
    reconciler: {
      reconcile: () => {
        if (++reconciles === items) drained();
        return Promise.resolve();
      },
    },
    logger: pino({ level: 'silent' }),
    registry: new Registry(),
    maxConcurrentReconciles: workers,
  });
  for (let i = 0; i < items; i++) controller.queue.add(`bench/db-${i}`);
  const stop = new AbortController();
  const running = controller.start(stop.signal);
  // Stands for an HTTP response or a watch event waiting for the event loop.
  const reconcilesBeforeIo = await new Promise<number>((resolve) => setImmediate(() => resolve(reconciles)));
  await allDone;
  stop.abort();
  await running;
  assert.ok(
    reconcilesBeforeIo <= workers,
    `${reconcilesBeforeIo} of ${items} reconciles ran before a pending I/O callback got its turn`,
  );
  assert.equal(reconciles, items);
});

/** A controller over a queue of `items` keys whose first reconcile stays open until the test lets it go. */
function heldOpen(items: number) {
  const started: string[] = [];
  const finished: string[] = [];
  const aborted: string[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let inFlight!: () => void;
  const firstStarted = new Promise<void>((resolve) => (inFlight = resolve));
  const controller = new Controller({
    name: 'held',
    reconciler: {
      async reconcile(req, ctx) {
        started.push(req.name);
        if (started.length === 1) {
          inFlight();
          const onAbort = new Promise<void>((resolve) =>
            ctx.signal.addEventListener('abort', () => resolve(), { once: true }),
          );
          await Promise.race([released, onAbort]);
          if (ctx.signal.aborted) {
            aborted.push(req.name);
            throw new Error('aborted');
          }
        }
        finished.push(req.name);
      },
    },
    logger: pino({ level: 'silent' }),
    registry: new Registry(),
  });
  for (let i = 0; i < items; i++) controller.queue.add(`ns/item-${i}`);
  return { controller, started, finished, aborted, release, firstStarted };
}

test('after stop no worker takes another item, queued ones included, and the in-flight reconcile finishes', async () => {
  const h = heldOpen(50);
  const stop = new AbortController();
  const running = h.controller.start(stop.signal, new AbortController().signal);
  await h.firstStarted;
  stop.abort();
  h.release();
  await running;
  assert.deepEqual(h.started, ['item-0'], 'reconciles started after the stop');
  assert.deepEqual(h.finished, ['item-0']);
  assert.deepEqual(h.aborted, []);
});

test('when leadership is lost (stop and drain abort together) the in-flight reconcile is aborted and no item is taken', async () => {
  const h = heldOpen(50);
  const leading = new AbortController();
  const running = h.controller.start(leading.signal, leading.signal);
  await h.firstStarted;
  leading.abort();
  await running;
  assert.deepEqual(h.started, ['item-0'], 'reconciles started after the loss');
  assert.deepEqual(h.aborted, ['item-0']);
  assert.deepEqual(h.finished, []);
});

/** An informer that only delivers the events a test hands it. */
function stubInformer() {
  const handlers: Array<EventHandler<KubeObject>> = [];
  const informer = {
    addEventHandler: (h: EventHandler<KubeObject>) => {
      handlers.push(h);
      return () => {};
    },
  } as unknown as Informer<KubeObject>;
  return { informer, deleted: (obj: KubeObject) => handlers.forEach((h) => h.onDelete?.(obj)) };
}

test(
  'waitFor: a change of the named object wakes the request; a wait not declared again is dropped',
  { timeout: 10_000 },
  async () => {
    const taken = { metadata: { namespace: 'ns', name: 'a-config' } };
    const runs: string[] = [];
    let declare = true;
    let ran!: () => void;
    let next = new Promise<void>((resolve) => (ran = resolve));
    const controller = new Controller({
      name: 'waits',
      reconciler: {
        reconcile: (req, ctx) => {
          runs.push(req.name);
          // The conflicting child of `a`, as childProblem declares it.
          if (declare) ctx.waitFor(Kinds.ConfigMap, 'ns', 'a-config');
          ran();
          return Promise.resolve();
        },
      },
      logger: pino({ level: 'silent' }),
      registry: new Registry(),
    });
    const configMaps = stubInformer();
    const services = stubInformer();
    // No map function finds an owner for it: only the wait can wake `a`.
    controller.watch(configMaps.informer, () => [], [], Kinds.ConfigMap);
    controller.watch(services.informer, () => [], [], Kinds.Service);
    const stop = new AbortController();
    const running = controller.start(stop.signal);
    const reconciled = async () => {
      await next;
      next = new Promise<void>((resolve) => (ran = resolve));
      // Let the worker finish the item (settling its waits) before the next event.
      await new Promise((r) => setImmediate(r));
    };

    // A wake adds the key synchronously and an idle worker starts at once: a few turns of the event loop
    // are enough to see a reconcile that an event caused.
    const turns = async () => {
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    };

    controller.queue.add('ns/a');
    await reconciled();
    services.deleted(taken);
    await turns();
    assert.deepEqual(runs, ['a'], 'an object of another kind with that name wakes nothing');
    declare = false;
    configMaps.deleted(taken);
    await reconciled();
    assert.deepEqual(runs, ['a', 'a'], 'woken by the deletion');
    configMaps.deleted(taken);
    await turns();
    assert.deepEqual(runs, ['a', 'a'], 'the wait was not declared again, so it is gone');
    stop.abort();
    await running;
  },
);
