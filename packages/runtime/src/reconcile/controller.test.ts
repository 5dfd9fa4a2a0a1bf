import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bucketOf, type EventHandler, type Informer } from '@regulon/cache';
import { Kinds, type KubeObject } from '@regulon/client';
import { FakeClock, ItemExponentialFailureRateLimiter } from '@regulon/queue';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { enqueueControllerOwner, enqueueObject } from '../builder/handlers.ts';
import type { CacheReader } from './context.ts';
import { Controller } from './controller.ts';
import { UNOWNED_KEYS_DROPPED_METRIC_NAME, bucketOfKey } from './owned-keys.ts';
import { requestKey, type Request, type Result } from './reconcile.ts';

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

/** An informer that only delivers the events a test hands it, and lists `stored`. */
function stubInformer(stored: KubeObject[] = []) {
  const handlers: Array<EventHandler<KubeObject>> = [];
  const informer = {
    addEventHandler: (h: EventHandler<KubeObject>) => {
      handlers.push(h);
      return () => {};
    },
    list: () => stored,
  } as unknown as Informer<KubeObject>;
  return {
    informer,
    added: (obj: KubeObject, initialList: boolean) => handlers.forEach((h) => h.onAdd?.(obj, initialList)),
    updated: (old: KubeObject, obj: KubeObject) => handlers.forEach((h) => h.onUpdate?.(old, obj)),
    deleted: (obj: KubeObject) => handlers.forEach((h) => h.onDelete?.(obj)),
  };
}

const configMap = (name: string, resourceVersion = '1'): KubeObject => ({
  metadata: { namespace: 'ns', name, resourceVersion },
});
/** A Secret that the ConfigMap `owner` controls. */
const secretOf = (owner: string, name = `${owner}-secret`): KubeObject => ({
  metadata: {
    namespace: 'ns',
    name,
    ownerReferences: [
      { apiVersion: 'v1', kind: 'ConfigMap', name: owner, uid: `uid-${owner}`, controller: true },
    ],
  },
});

/** Takes and finishes every key queued so far, in hand-out order, without running a reconcile. */
async function queuedOrder(controller: Controller): Promise<string[]> {
  const keys: string[] = [];
  while (controller.queue.len() > 0) {
    const next = await controller.queue.get();
    if (next.shutdown) break;
    keys.push(next.item);
    controller.queue.done(next.item);
  }
  return keys;
}

test("keys of an initial list, an owned child's included, wait behind the keys of watch events", async () => {
  const controller = new Controller({
    name: 'priorities',
    reconciler: { reconcile: () => Promise.resolve() },
    logger: pino({ level: 'silent' }),
    registry: new Registry(),
  });
  const owners = stubInformer();
  const children = stubInformer();
  controller.watch(owners.informer, enqueueObject);
  const ownerOf = enqueueControllerOwner(Kinds.ConfigMap);
  // The owner is found from the child's ownerReferences alone: no cache is read.
  controller.watch(children.informer, (obj) => ownerOf(obj, {} as CacheReader));

  for (const name of ['a', 'b', 'c', 'd']) owners.added(configMap(name), true);
  children.added(secretOf('e'), true);
  children.added(secretOf('f'), true);
  // Watch events: a change to c, a new child of f, a deletion of d, and a new object g.
  owners.updated(configMap('c'), configMap('c', '2'));
  children.added(secretOf('f', 'f-other'), false);
  owners.deleted(configMap('d'));
  owners.added(configMap('g'), false);

  assert.deepEqual(await queuedOrder(controller), ['ns/c', 'ns/f', 'ns/d', 'ns/g', 'ns/a', 'ns/b', 'ns/e']);
});

test('a requeue or a retry asked for by a reconcile goes ahead of an initial list once due', async () => {
  const clock = new FakeClock();
  const reconciled: string[] = [];
  let failA = true;
  let requeueB = true;
  // Each gate holds a reconcile open until the test has moved the clock.
  const gate = () => {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    let enter!: () => void;
    const entered = new Promise<void>((resolve) => (enter = resolve));
    return { open, opened, enter, entered };
  };
  const holdB = gate();
  const holdC = gate();
  let seventh!: () => void;
  const sevenReconciles = new Promise<void>((resolve) => (seventh = resolve));
  const controller = new Controller({
    name: 'requeues',
    reconciler: {
      async reconcile(req) {
        if (reconciled.push(req.name) === 7) seventh();
        if (req.name === 'a' && failA) {
          failA = false;
          throw new Error('transient');
        }
        if (req.name === 'b' && requeueB) {
          requeueB = false;
          holdB.enter();
          await holdB.opened;
          return { requeueAfter: 100 };
        }
        if (req.name === 'c') {
          holdC.enter();
          await holdC.opened;
        }
        return undefined;
      },
    },
    logger: pino({ level: 'silent' }),
    registry: new Registry(),
    clock,
    rateLimiter: new ItemExponentialFailureRateLimiter<string>(5, 1000),
  });
  const owners = stubInformer();
  controller.watch(owners.informer, enqueueObject);
  for (const name of ['a', 'b', 'c', 'd', 'e']) owners.added(configMap(name), true);

  const stop = new AbortController();
  const running = controller.start(stop.signal);
  await holdB.entered;
  clock.advance(5); // a's retry is due
  holdB.open();
  await holdC.entered;
  clock.advance(100); // b's requeue is due
  holdC.open();
  await sevenReconciles;
  assert.equal(controller.queue.len() + controller.queue.waitingLen(), 0, 'nothing left to reconcile');
  stop.abort();
  await running;
  assert.deepEqual(reconciled, ['a', 'b', 'a', 'c', 'b', 'd', 'e']);
});

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

/** A reconciler whose reconciles of the `held` keys stay open until the test opens them; it records every start in order. */
function gatedReconciler(held: string[], result: Result = {}) {
  const starts: string[] = [];
  const gates = new Map(
    held.map((key) => {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      let enter!: () => void;
      const entered = new Promise<void>((resolve) => (enter = resolve));
      return [key, { open, opened, enter, entered }] as const;
    }),
  );
  const waiters: Array<{ key: string; times: number; resolve: () => void }> = [];
  const count = (key: string) => starts.filter((k) => k === key).length;
  const reconciler = {
    async reconcile(req: Request): Promise<Result> {
      const key = requestKey(req);
      starts.push(key);
      for (const w of waiters.filter((w) => w.key === key && count(key) >= w.times)) w.resolve();
      const gate = gates.get(key);
      if (gate !== undefined) {
        gate.enter();
        await gate.opened;
        return result;
      }
      return {};
    },
  };
  /** Resolves once `key` has started `times` reconciles in all. */
  const started = (key: string, times = 1) =>
    new Promise<void>((resolve) => {
      if (count(key) >= times) resolve();
      else waiters.push({ key, times, resolve });
    });
  return { reconciler, starts, gate: (key: string) => gates.get(key)!, started };
}

/** Whether `promise` has settled once every reaction already due has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  return done;
}

const inNamespace = (namespace: string, name: string): KubeObject => ({
  metadata: { namespace, name, resourceVersion: '1' },
});

async function droppedCounts(registry: Registry, controller: string): Promise<Record<string, number>> {
  const metric = registry.getSingleMetric(UNOWNED_KEYS_DROPPED_METRIC_NAME);
  const counts: Record<string, number> = {};
  for (const { labels, value } of (await metric?.get())?.values ?? [])
    if (labels['controller'] === controller) counts[String(labels['at'])] = value;
  return counts;
}

test('enqueueCached queues the cached keys it is asked for that the controller owns, as an initial list would: predicates applied, behind watch events', async () => {
  const controller = new Controller({
    name: 'enqueue-cached',
    reconciler: { reconcile: () => Promise.resolve() },
    logger: pino({ level: 'silent' }),
    registry: new Registry(),
  });
  const owners = stubInformer([
    inNamespace('a', '1'),
    inNamespace('a', 'skipped'),
    inNamespace('b', '1'),
    inNamespace('c', '1'),
  ]);
  const children = stubInformer([
    { ...secretOf('owner'), metadata: { ...secretOf('owner').metadata, namespace: 'a' } },
  ]);
  controller.watch(owners.informer, enqueueObject, [{ create: (obj) => obj.metadata?.name !== 'skipped' }]);
  const ownerOf = enqueueControllerOwner(Kinds.ConfigMap);
  controller.watch(children.informer, (obj) => ownerOf(obj, {} as CacheReader));
  void controller.setOwnedKeys((key) => !key.startsWith('c/'));

  owners.updated(inNamespace('b', '2'), inNamespace('b', '2'));
  // Asked for a/ and c/: c/ is not owned, b/ not asked for.
  controller.enqueueCached((key) => key.startsWith('a/') || key.startsWith('c/'));
  owners.updated(inNamespace('b', '3'), inNamespace('b', '3'));

  assert.deepEqual(await queuedOrder(controller), ['b/2', 'b/3', 'a/1', 'a/owner']);
});

test(
  'setOwnedKeys waits for the running reconcile of a key it takes away and for no other; such keys are dropped during and after, and come back when owned again',
  { timeout: 10_000 },
  async () => {
    const clock = new FakeClock();
    const registry = new Registry();
    const r = gatedReconciler(['a/slow', 'b/slow'], { requeueAfter: 10 });
    const controller = new Controller({
      name: 'owned-keys',
      reconciler: r.reconciler,
      logger: pino({ level: 'silent' }),
      registry,
      clock,
      maxConcurrentReconciles: 2,
    });
    const source = stubInformer();
    controller.watch(source.informer, enqueueObject);
    for (const [ns, name] of [
      ['a', 'slow'],
      ['b', 'slow'],
      ['a', '1'],
      ['a', '2'],
      ['b', '1'],
    ] as const)
      source.added(inNamespace(ns, name), true);
    const stop = new AbortController();
    const running = controller.start(stop.signal);
    await r.gate('a/slow').entered;
    await r.gate('b/slow').entered;

    const release = controller.setOwnedKeys((key) => !key.startsWith('a/'));
    const startsAtRelease = r.starts.length;
    // Adds during the release: a new object, a change to the one in flight (its dirty re-add).
    source.added(inNamespace('a', '3'), false);
    source.updated(inNamespace('a', 'slow'), inNamespace('a', 'slow'));
    assert.equal(await settled(release), false, 'a/slow is still running');

    r.gate('a/slow').open();
    await release;
    assert.equal(await settled(r.gate('b/slow').opened), false, 'the release did not wait for b/slow');
    clock.advance(100); // a/slow's requeueAfter would be due now

    // Other keys flow on: b/slow finishes (its requeue stays), b/1 runs, a new b/2 runs.
    r.gate('b/slow').open();
    await r.started('b/1');
    source.added(inNamespace('b', '2'), false);
    await r.started('b/2');
    // Adds after the release: an event, and a direct queue add the workers meet.
    source.added(inNamespace('a', '4'), false);
    controller.queue.add('a/direct');
    source.updated(inNamespace('b', '1'), inNamespace('b', '1'));
    await r.started('b/1', 2);

    assert.deepEqual(r.starts.slice(0, startsAtRelease).sort(), ['a/slow', 'b/slow']);
    assert.deepEqual(
      r.starts.slice(startsAtRelease).filter((key) => key.startsWith('a/')),
      [],
      `keys of a reconciled after the release: ${r.starts.slice(startsAtRelease).join(', ')}`,
    );
    assert.deepEqual(await droppedCounts(registry, 'owned-keys'), {
      // a/3, a/slow's update, a/4
      event: 3,
      // a/slow's requeueAfter
      requeue: 1,
      // a/1 and a/2 taken out of the queue, a/direct found by a worker
      queue: 3,
    });

    // Owned again: nothing is queued by that alone, the next list brings the keys back.
    await controller.setOwnedKeys(() => true);
    source.added(inNamespace('a', '1'), true);
    await r.started('a/1');
    assert.equal(r.starts.filter((key) => key === 'a/1').length, 1);
    stop.abort();
    await running;
  },
);

test('bucketOfKey hashes the namespace of a key as the server does, and "" for a cluster-scoped key', () => {
  for (const count of [1, 16, 64]) {
    assert.equal(bucketOfKey('team-a/db-0', count), bucketOf(inNamespace('team-a', 'x'), 'namespace', count));
    assert.equal(bucketOfKey('team-a/other', count), bucketOfKey('team-a/db-0', count));
    assert.equal(
      bucketOfKey('node-1', count),
      bucketOf({ metadata: { name: 'node-1' } }, 'namespace', count),
    );
  }
  // FNV-1a's offset basis 0xcbf29ce484222325 lies in the fourth quarter of the hash space.
  assert.equal(bucketOfKey('cluster-scoped', 4), 3);
});
