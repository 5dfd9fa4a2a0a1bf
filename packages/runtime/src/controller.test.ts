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
