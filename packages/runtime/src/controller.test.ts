import assert from 'node:assert/strict';
import { test } from 'node:test';
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
