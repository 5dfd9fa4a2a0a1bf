import { randomUUID } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import { SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { KubeObject, ResourceType } from '@regulon/client';
import {
  LOW_PRIORITY,
  RateLimitingQueue,
  defaultControllerRateLimiter,
  realClock,
  type AddOptions,
  type Clock,
  type RateLimiter,
} from '@regulon/queue';
import type { Logger } from 'pino';
import type { Counter, Registry } from 'prom-client';
import { lazyChild } from '../observability/logging.ts';
import {
  controllerMetrics,
  type ControllerMetrics,
  type ReconcileResultLabel,
} from '../observability/metrics.ts';
import type { CacheSource } from './cache-source.ts';
import { runAsReconcile } from './current-reconcile.ts';
import { ALL_KEYS, unownedKeysDropped, type DroppedAt, type OwnedKeys } from './owned-keys.ts';
import type { Predicate } from './predicates.ts';
import {
  isTerminalError,
  requestFromKey,
  requestKey,
  type Reconciler,
  type Request,
  type Result,
} from './reconcile.ts';
import { NameWaits } from './waits.ts';

/** Defaults, named where they are defined. */
export const DEFAULT_MAX_CONCURRENT_RECONCILES = 1;
/** A reconcile that runs longer than this has its signal aborted. */
export const DEFAULT_RECONCILE_TIMEOUT_MS = 5 * 60_000;

export interface ControllerOptions {
  name: string;
  reconciler: Reconciler;
  logger: Logger;
  registry: Registry;
  tracer?: Tracer | undefined;
  maxConcurrentReconciles?: number | undefined;
  reconcileTimeoutMs?: number | undefined;
  /** Leader-only (default) or on every replica. */
  needLeaderElection?: boolean | undefined;
  rateLimiter?: RateLimiter<string> | undefined;
  clock?: Clock | undefined;
}

/** Something the manager starts: a controller, or any leader-only or everywhere task. */
export interface Runnable {
  readonly name: string;
  readonly needLeaderElection: boolean;
  /**
   * Runs until `signal` aborts, from when it starts no new work; resolves
   * after in-flight work has finished, or has been aborted because
   * `drainSignal` aborted.
   */
  start(signal: AbortSignal, drainSignal?: AbortSignal): Promise<void>;
}

/**
 * How the keys of an informer's initial list are queued: behind every key a
 * watch event or a requeue adds (those take the queue's default priority).
 * An initial list restates objects that may well be converged; after a
 * restart with thousands of them, a real change to one object is reconciled
 * ahead of that backlog, as with controller-runtime's priority queue.
 */
export const INITIAL_LIST_PRIORITY = LOW_PRIORITY;
const INITIAL_LIST: AddOptions = Object.freeze({ priority: INITIAL_LIST_PRIORITY });

/** A programming error in a reconciler: the JavaScript analogue of a recovered Go panic. */
function isPanic(err: unknown): boolean {
  return (
    err instanceof TypeError ||
    err instanceof RangeError ||
    err instanceof ReferenceError ||
    !(err instanceof Error)
  );
}

/**
 * A work queue of requests, fed by event sources, drained by up to
 * maxConcurrentReconciles workers that call the reconciler.
 */
export class Controller implements Runnable {
  readonly name: string;
  readonly needLeaderElection: boolean;
  readonly queue: RateLimitingQueue<string>;
  readonly #o: ControllerOptions;
  readonly #metrics: ControllerMetrics;
  readonly #tracer: Tracer;
  readonly #log: Logger;
  readonly #workers: number;
  readonly #unsubscribe: Array<() => void> = [];
  /** What watch() wired, walked again by enqueueCached. */
  readonly #sources: Array<(which: OwnedKeys) => void> = [];
  /** Objects that requests wait for by name (ReconcileContext.waitFor). */
  readonly #waits = new NameWaits();
  /** The keys this controller works on: see setOwnedKeys. */
  #owns: OwnedKeys = ALL_KEYS;
  /** The reconciles running now, by key (one per key at most), each settled once its key is done. */
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #dropped: Counter<'controller' | 'at'>;
  #started = false;
  /** Aborted to cancel in-flight reconciles (forced stop, lost leadership). */
  #hardStop = new AbortController();

  constructor(options: ControllerOptions) {
    this.#o = options;
    this.name = options.name;
    this.needLeaderElection = options.needLeaderElection ?? true;
    this.#workers = options.maxConcurrentReconciles ?? DEFAULT_MAX_CONCURRENT_RECONCILES;
    if (!Number.isInteger(this.#workers) || this.#workers < 1) {
      throw new Error(
        `controller ${options.name}: maxConcurrentReconciles must be a positive integer, got ${this.#workers}`,
      );
    }
    const clock = options.clock ?? realClock;
    this.queue = new RateLimitingQueue<string>({
      name: options.name,
      registry: options.registry,
      clock,
      rateLimiter: options.rateLimiter ?? defaultControllerRateLimiter<string>(clock),
    });
    this.#metrics = controllerMetrics(options.registry);
    this.#tracer = options.tracer ?? trace.getTracer('@regulon/runtime');
    this.#log = options.logger.child({ controller: options.name });
    this.#metrics.maxConcurrent.set({ controller: this.name }, this.#workers);
    this.#metrics.activeWorkers.set({ controller: this.name }, 0);
    for (const result of ['success', 'error', 'requeue', 'requeue_after'] as const) {
      this.#metrics.reconcileTotal.inc({ controller: this.name, result }, 0);
    }
    this.#metrics.reconcileErrors.inc({ controller: this.name }, 0);
    this.#metrics.terminalErrors.inc({ controller: this.name }, 0);
    this.#metrics.panics.inc({ controller: this.name }, 0);
    this.#dropped = unownedKeysDropped(options.registry);
    for (const at of ['event', 'requeue', 'queue'] as const)
      this.#dropped.inc({ controller: this.name, at }, 0);
  }

  /**
   * Sets which keys this controller works on: all of them until this is called. A key it
   * does not own is neither added nor dequeued from then on (each add is dropped, counted in
   * `regulon_controller_unowned_keys_dropped_total` and logged at debug), its queued,
   * delayed and rate-limited adds are removed, and the requeue a running reconcile of it
   * asks for is dropped. Resolves once every reconcile of such a key that was running has
   * finished; none starts after that (and none of them is aborted: a caller that cannot wait
   * aborts them by stopping the controller). A sharded manager calls this when it hands a
   * bucket over, and the bucket's Lease is released after the promise resolves.
   *
   * Keys it owns again are not queued by this call: the queue no longer holds them, and the
   * informer's next list (a relist, or the fresh list a new owner starts from) adds them.
   *
   * One predicate, replaced as a whole, rather than a release(scope)/accept(scope) pair:
   * the owner of the buckets holds the set of buckets it owns and passes
   * `key => owned.has(bucketOfKey(key, count))`, which costs one hash and one lookup per
   * add; a pair would have to stack scopes (release A, accept part of A, release B…)
   * whose order decides each key, growing with every hand-over for the process's life.
   * `owns` may read state that changes (that set): it is consulted on every add and
   * dequeue, and changes take effect on them at once; call this again after a change that
   * takes keys away, to clear the queue and wait for their reconciles.
   */
  setOwnedKeys(owns: OwnedKeys): Promise<void> {
    this.#owns = owns;
    const removed = this.queue.removeWhere((key) => !owns(key));
    if (removed.length > 0) {
      this.#dropped.inc({ controller: this.name, at: 'queue' }, removed.length);
      this.#log.debug({ keys: removed.length }, 'removed queued keys this controller no longer owns');
    }
    const leaving = [...this.#inFlight].filter(([key]) => !owns(key)).map(([, settled]) => settled);
    return Promise.all(leaving).then(() => undefined);
  }

  /**
   * Queues, at {@link INITIAL_LIST_PRIORITY}, the keys that the objects now in the watched
   * informers' stores map to and that `which` accepts (and this controller owns), as their
   * initial list did: the create predicates apply. A sharded manager calls this when it
   * acquires a bucket, whose keys the warm caches hold but the queue dropped while another
   * replica owned them. Walks every watched store once: one map and one hash per object.
   */
  enqueueCached(which: OwnedKeys): void {
    for (const enqueueCached of this.#sources) enqueueCached(which);
  }

  /** Whether the controller owns `key`; if not, counts and logs the drop at `at`. */
  #owned(key: string, at: DroppedAt): boolean {
    if (this.#owns(key)) return true;
    this.#dropped.inc({ controller: this.name, at });
    this.#log.debug({ key, at }, 'dropped a key this controller does not own');
    return false;
  }

  #add(key: string, options?: AddOptions): void {
    if (this.#owned(key, 'event')) this.queue.add(key, options);
  }

  /**
   * Feeds the queue from an informer's events, mapped to requests and
   * filtered by predicates. One event adds each key it maps to once: a second
   * add of a key that an idle worker already took would run a second reconcile.
   * With `type`, an event also wakes the requests that wait for that object
   * by name (ReconcileContext.waitFor), whatever the predicates say.
   * Adds from the informer's initial list are queued at
   * {@link INITIAL_LIST_PRIORITY}, every other event at the default priority.
   */
  watch<T extends KubeObject>(
    informer: CacheSource<T>,
    map: (obj: T) => Request[],
    predicates: Predicate<T>[] = [],
    type?: ResourceType,
  ): void {
    const enqueue = (objs: T[], options?: AddOptions) => {
      const keys = new Set(objs.flatMap((obj) => map(obj).map(requestKey)));
      for (const key of keys) this.#add(key, options);
    };
    const wake = (obj: T, options?: AddOptions) => {
      if (type) for (const key of this.#waits.waiters(type, obj)) this.#add(key, options);
    };
    this.#sources.push((which) => {
      for (const obj of informer.list()) {
        if (!predicates.every((p) => p.create?.(obj) ?? true)) continue;
        for (const key of new Set(map(obj).map(requestKey)))
          if (which(key) && this.#owns(key)) this.queue.add(key, INITIAL_LIST);
      }
    });
    this.#unsubscribe.push(
      informer.addEventHandler({
        onAdd: (obj, initialList) => {
          const options = initialList ? INITIAL_LIST : undefined;
          wake(obj, options);
          if (predicates.every((p) => p.create?.(obj) ?? true)) enqueue([obj], options);
        },
        onUpdate: (old, obj) => {
          wake(obj);
          // An update can move the object to another owner or mapping: wake the old one too.
          if (predicates.every((p) => p.update?.(old, obj) ?? true)) enqueue([obj, old]);
        },
        onDelete: (obj) => {
          wake(obj);
          if (predicates.every((p) => p.delete?.(obj) ?? true)) enqueue([obj]);
        },
      }),
    );
  }

  /**
   * Runs the workers until `signal` aborts; from then on no worker takes an
   * item, queued ones included, and in-flight reconciles finish unless
   * `drainSignal` aborts first, which aborts their signals.
   */
  async start(signal: AbortSignal, drainSignal?: AbortSignal): Promise<void> {
    if (this.#started) throw new Error(`controller ${this.name} already started`);
    this.#started = true;
    this.#log.info({ workers: this.#workers }, 'starting workers');
    const workers = Array.from({ length: this.#workers }, () => this.#worker(signal));
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    for (const u of this.#unsubscribe) u();
    const drainAbort = () => this.#hardStop.abort(drainSignal?.reason);
    if (drainSignal?.aborted) drainAbort();
    else drainSignal?.addEventListener('abort', drainAbort, { once: true });
    await this.queue.shutDownWithDrain(drainSignal);
    await Promise.all(workers);
    this.#log.info('stopped');
  }

  async #worker(stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      const next = await this.queue.get();
      if (next.shutdown) return;
      // The queue hands out what it holds until it is empty, also after
      // shutDown (client-go's semantics), and a stop can land while this
      // worker waited: what was taken but not started is dropped.
      if (stop.aborted) {
        this.queue.done(next.item);
        return;
      }
      const key = next.item;
      // Checked after the take, with no await before the reconcile is registered as in
      // flight: a setOwnedKeys() in between either sees it running or stops it here.
      if (this.#owned(key, 'queue')) await this.#processInFlight(key);
      else this.queue.done(key);
      // A reconcile that finds everything converged sends no request and so
      // finishes within microtasks; workers chaining such reconciles would
      // keep the microtask queue busy and starve I/O. Other workers' write
      // responses and the informers' watch events then wait (stalls of 0.6 s
      // at 2,000 Databases, while a Go worker pool runs in parallel threads).
      // Yielding to the event loop after each item lets them in.
      await setImmediate();
    }
  }

  /** Processes `key`, registered as in flight until the queue is done with it. */
  async #processInFlight(key: string): Promise<void> {
    let settle!: () => void;
    this.#inFlight.set(key, new Promise<void>((resolve) => (settle = resolve)));
    try {
      await this.#process(key);
    } finally {
      // Done before settled: whoever waits for the key finds it out of the queue's hands.
      this.queue.done(key);
      this.#inFlight.delete(key);
      settle();
    }
  }

  async #process(key: string): Promise<void> {
    const request = requestFromKey(key);
    const reconcileID = randomUUID();
    const log = lazyChild(this.#log, { namespace: request.namespace, name: request.name, reconcileID });
    const labels = { controller: this.name };
    const timeoutMs = this.#o.reconcileTimeoutMs ?? DEFAULT_RECONCILE_TIMEOUT_MS;
    const signal = AbortSignal.any([this.#hardStop.signal, AbortSignal.timeout(timeoutMs)]);
    this.#metrics.activeWorkers.inc(labels);
    const endTimer = this.#metrics.reconcileTime.startTimer(labels);
    await this.#tracer.startActiveSpan(
      'reconcile',
      {
        attributes: {
          'regulon.controller': this.name,
          'k8s.namespace.name': request.namespace ?? '',
          'regulon.object.name': request.name,
          'regulon.reconcile_id': reconcileID,
        },
      },
      async (span) => {
        let outcome: ReconcileResultLabel;
        const waits = new Set<string>();
        try {
          // Scoped, so that a write guard deep in the client knows whose write it is.
          const result: Result =
            (await runAsReconcile({ controller: this.name, key }, () =>
              this.#o.reconciler.reconcile(request, {
                signal,
                log,
                span,
                reconcileID,
                controller: this.name,
                waitFor: (type, namespace, name) => waits.add(this.#waits.add(key, type, namespace, name)),
              }),
            )) ?? {};
          if (result.requeueAfter !== undefined && result.requeueAfter > 0) {
            this.queue.forget(key);
            if (this.#owned(key, 'requeue')) this.queue.addAfter(key, result.requeueAfter);
            outcome = 'requeue_after';
            span.setAttribute('regulon.requeue_after_ms', result.requeueAfter);
          } else if (result.requeue) {
            this.#retry(key);
            outcome = 'requeue';
          } else {
            this.queue.forget(key);
            outcome = 'success';
          }
          span.setStatus({ code: SpanStatusCode.OK });
        } catch (err) {
          outcome = 'error';
          this.#metrics.reconcileErrors.inc(labels);
          const error = err instanceof Error ? err : new Error(String(err));
          span.recordException(error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
          if (isTerminalError(err)) {
            this.#metrics.terminalErrors.inc(labels);
            this.queue.forget(key);
            log.error({ err: error }, 'reconcile failed with a terminal error; not retrying');
          } else {
            if (isPanic(err)) this.#metrics.panics.inc(labels);
            this.#retry(key);
            log.error(
              { err: error, retries: this.queue.numRequeues(key) },
              'reconcile failed; retrying with backoff',
            );
          }
        } finally {
          this.#waits.settle(key, waits);
          endTimer();
          this.#metrics.activeWorkers.dec(labels);
        }
        this.#metrics.reconcileTotal.inc({ ...labels, result: outcome });
        log.debug({ result: outcome }, 'reconciled');
        span.setAttribute('regulon.result', outcome);
        span.end();
      },
    );
  }

  /** Retries `key` with backoff; a key no longer owned instead forgets its failures. */
  #retry(key: string): void {
    if (this.#owned(key, 'requeue')) this.queue.addRateLimited(key);
    else this.queue.forget(key);
  }
}
