import { realClock } from '@regulon/util';
import type { Clock } from '@regulon/util';
import { Fifo } from './fifo.ts';
import { QueueMetrics } from './metrics.ts';
import type { MetricsRegistry } from './metrics.ts';
import { PriorityFifo } from './priority-fifo.ts';

/**
 * Item types the queue can deduplicate. Items are compared with SameValueZero (Set
 * semantics), so they must be primitives; objects would never be recognised as "the same key".
 */
export type QueueKey = string | number | bigint | boolean | symbol;

/** The priority of an add that names none: ordinary work. */
export const DEFAULT_PRIORITY = 0;
/**
 * Work that can wait behind ordinary work: @regulon/runtime adds the keys of an informer's
 * initial list with it. The same value as controller-runtime's `handler.LowPriority`.
 */
export const LOW_PRIORITY = -100;

export interface AddOptions {
  /**
   * Higher is handed out first; an integer, {@link DEFAULT_PRIORITY} when absent. An item
   * added again while it waits keeps the higher of its two priorities.
   */
  priority?: number | undefined;
}

/** What {@link WorkQueue.get} resolves to. */
export type GetResult<T> = { readonly item: T; readonly shutdown: false } | { readonly shutdown: true };

export interface WorkQueueOptions {
  /** Queue (controller) name; the `name` and `controller` metric labels. Required with `registry`. */
  name?: string | undefined;
  /** Time source for metrics and delays; defaults to {@link realClock}. */
  clock?: Clock | undefined;
  /** Registry to export metrics to. Without one no metrics are recorded at all. */
  registry?: MetricsRegistry | undefined;
}

const SHUTDOWN: GetResult<never> = Object.freeze({ shutdown: true });

/**
 * A deduplicating queue of keys with client-go workqueue semantics, and priorities:
 *
 * - an item is queued at most once however often it is added before a worker takes it, at
 *   the highest priority it was added with;
 * - an item is never held by two workers: adds while it is being processed are remembered
 *   (it is "dirty") and it is queued again, once, when the worker calls {@link done};
 * - higher priorities are handed out first, each priority first in first out.
 */
export class WorkQueue<T extends QueueKey = string> {
  readonly name: string;
  protected readonly clock: Clock;

  readonly #queue = new PriorityFifo<T>();
  // Items that need processing (queued, or added again while being processed), each with the
  // priority it is, or will be, queued at.
  readonly #dirty = new Map<T, number>();
  // Items handed to a worker and not yet done.
  readonly #processing = new Set<T>();
  readonly #getters = new Fifo<(result: GetResult<T>) => void>();
  readonly #drainWaiters = new Set<() => void>();
  readonly #metrics: QueueMetrics<T> | undefined;
  #shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.name = options.name ?? '';
    this.clock = options.clock ?? realClock;
    if (options.registry !== undefined) {
      if (this.name === '')
        throw new TypeError('WorkQueue: a name is required when a metrics registry is given');
      this.#metrics = new QueueMetrics<T>(options.registry, this.name, this.clock);
    }
  }

  /**
   * Marks `item` as needing processing, at `options.priority` ({@link DEFAULT_PRIORITY} when
   * absent). If it is already waiting it stays queued once, at the higher of the two
   * priorities; a raise moves it to the end of its new priority's line. No-op while the
   * queue is shutting down.
   */
  add(item: T, options?: AddOptions): void {
    if (this.#shuttingDown) return;
    const priority = priorityOf(options);
    const queuedAt = this.#dirty.get(item);
    if (queuedAt !== undefined) {
      if (priority <= queuedAt) return;
      this.#dirty.set(item, priority);
      // An item being processed is not in the line yet: done() queues it at the new priority.
      if (!this.#processing.has(item)) this.#queue.raise(item, queuedAt, priority);
      return;
    }
    this.#metrics?.add(item);
    this.#dirty.set(item, priority);
    // The worker holding it will re-queue it on done(); queuing it now would let a second
    // worker pick it up concurrently.
    if (this.#processing.has(item)) return;
    this.#queue.push(item, priority);
    this.#handOff();
  }

  /**
   * Takes the next item, waiting while the queue is empty. Resolves `{shutdown: true}` once the
   * queue is shutting down and has nothing left to hand out. Every item obtained must be
   * passed to {@link done}.
   */
  get(): Promise<GetResult<T>> {
    if (this.#queue.length > 0) return Promise.resolve(this.#take());
    if (this.#shuttingDown) return Promise.resolve(SHUTDOWN);
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  /** Ends processing of `item`; if it was added meanwhile it is queued again. */
  done(item: T): void {
    // Guarding on membership (unlike client-go) keeps a stray done() from queueing a duplicate.
    if (!this.#processing.delete(item)) return;
    this.#metrics?.done(item);
    const priority = this.#dirty.get(item);
    if (priority !== undefined) {
      this.#queue.push(item, priority);
      this.#handOff();
    }
    if (this.#processing.size === 0 && this.#shuttingDown) this.#stopped();
  }

  /**
   * Takes the items `remove` accepts out of service: each one waiting in the line is
   * dropped, and each one being processed loses the add it received meanwhile (done() will
   * not queue it again). Returns the removed items, each once.
   *
   * An item being processed stays so until its worker calls {@link done}: the queue cannot
   * take work back from a worker, and the caller waits for it (a controller does). The
   * removal is of what is pending now, not a filter on later adds: an item added again
   * afterwards is queued as usual, and if it is still being processed it is dirty again and
   * queued at done(), as client-go and controller-runtime do with any add during
   * processing. A caller that must keep items out stops adding them itself.
   */
  removeWhere(remove: (item: T) => boolean): T[] {
    const removed = this.#queue.removeWhere(remove);
    for (const item of removed) this.#forgetAdd(item);
    for (const item of this.#processing) {
      if (this.#dirty.has(item) && remove(item)) {
        this.#forgetAdd(item);
        removed.push(item);
      }
    }
    return removed;
  }

  /** Number of items waiting to be handed out (not counting items being processed). */
  len(): number {
    return this.#queue.length;
  }

  /**
   * Refuses further adds. Items already queued are still handed out; once the queue is
   * empty, pending and future {@link get} calls resolve `{shutdown: true}`.
   */
  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    // Getters only wait while the queue is empty, so all of them can be released now.
    for (let resolve = this.#getters.shift(); resolve !== undefined; resolve = this.#getters.shift()) {
      resolve(SHUTDOWN);
    }
    if (this.#processing.size === 0) this.#stopped();
  }

  /**
   * Shuts down, then resolves once no item is being processed. Resolves `true` when drained,
   * or `false` if `signal` aborted first (the queue stays shut down either way).
   */
  shutDownWithDrain(signal?: AbortSignal): Promise<boolean> {
    this.shutDown();
    if (this.#processing.size === 0) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = (): void => {
        this.#drainWaiters.delete(onDrained);
        resolve(false);
      };
      const onDrained = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      };
      this.#drainWaiters.add(onDrained);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Counts a retry in the metrics; subclasses call it for every delayed add. */
  protected recordRetry(): void {
    this.#metrics?.retry();
  }

  #take(): GetResult<T> {
    const item = this.#queue.shift() as T;
    this.#processing.add(item);
    this.#dirty.delete(item);
    this.#metrics?.get(item);
    return { item, shutdown: false };
  }

  // Undoes the add that made `item` dirty: in the depth metric too, which counts dirty items.
  #forgetAdd(item: T): void {
    this.#dirty.delete(item);
    this.#metrics?.remove(item);
  }

  // Called right after an item is queued: a waiting getter, if any, gets it immediately, so
  // the item is marked processing before any other get() can observe it.
  #handOff(): void {
    const resolve = this.#getters.shift();
    if (resolve !== undefined) resolve(this.#take());
  }

  // Shut down with nothing in flight: wake drainers and stop reporting time-based gauges.
  #stopped(): void {
    for (const onDrained of this.#drainWaiters) onDrained();
    this.#drainWaiters.clear();
    this.#metrics?.detach();
  }
}

/** The priority `options` ask for; throws on one that is not an integer. */
export function priorityOf(options: AddOptions | undefined): number {
  const priority = options?.priority ?? DEFAULT_PRIORITY;
  // NaN would compare false with everything and scramble the order; integers, as in controller-runtime.
  if (!Number.isSafeInteger(priority)) throw new RangeError(`priority must be an integer, got ${priority}`);
  return priority;
}
