import type { TimerHandle } from '@regulon/util';
import { IndexedHeap } from './heap.ts';
import type { HeapEntry } from './heap.ts';
import { WorkQueue, priorityOf } from './queue.ts';
import type { AddOptions, QueueKey } from './queue.ts';

interface Waiting<T> extends HeapEntry {
  readonly item: T;
  readyAt: number;
  // What it is queued at once ready.
  priority: number;
  // Tie-breaker so items due at the same instant are added in the order they were scheduled.
  readonly seq: number;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

const earlier = <T>(a: Waiting<T>, b: Waiting<T>): boolean =>
  a.readyAt < b.readyAt || (a.readyAt === b.readyAt && a.seq < b.seq);

/**
 * A {@link WorkQueue} that can also add items after a delay. An item waits at most once: if it
 * is scheduled again while waiting, the earlier of the two ready times and the higher of the
 * two priorities win. When ready it is added with its priority, like any other add.
 */
export class DelayingQueue<T extends QueueKey = string> extends WorkQueue<T> {
  readonly #waiting = new IndexedHeap<Waiting<T>>(earlier);
  readonly #byItem = new Map<T, Waiting<T>>();
  #seq = 0;
  // One clock timer, armed for the earliest ready time, instead of one timer per item.
  #timer: TimerHandle | undefined;
  #timerAt = Infinity;

  /**
   * Adds `item` once `delayMs` has elapsed on the queue's clock (immediately if `delayMs <= 0`),
   * at `options.priority`. Every call counts as a retry in the metrics, as in client-go.
   */
  addAfter(item: T, delayMs: number, options?: AddOptions): void {
    if (this.shuttingDown()) return;
    // Checked first: a bad priority must throw to the caller, before anything is counted, and
    // not later in the timer.
    const priority = priorityOf(options);
    this.recordRetry();
    if (!(delayMs > 0)) {
      this.add(item, options);
      return;
    }
    const readyAt = this.clock.now() + delayMs;
    const existing = this.#byItem.get(item);
    if (existing === undefined) {
      const entry: Waiting<T> = { item, readyAt, priority, seq: this.#seq++, index: -1 };
      this.#byItem.set(item, entry);
      this.#waiting.push(entry);
    } else {
      if (priority > existing.priority) existing.priority = priority;
      if (readyAt < existing.readyAt) {
        existing.readyAt = readyAt;
        this.#waiting.decreased(existing);
      }
    }
    this.#arm();
  }

  /** Number of items waiting for their delay to elapse. */
  waitingLen(): number {
    return this.#waiting.size;
  }

  /**
   * Also drops the matching items still waiting for their delay (or, in a
   * RateLimitingQueue, for their retry); see {@link WorkQueue.removeWhere}.
   */
  override removeWhere(remove: (item: T) => boolean): T[] {
    const removed = super.removeWhere(remove);
    const seen = new Set(removed);
    for (const [item, entry] of this.#byItem) {
      if (!remove(item)) continue;
      this.#waiting.remove(entry);
      this.#byItem.delete(item);
      if (!seen.has(item)) removed.push(item);
    }
    // The timer stays armed for the earliest ready time removed or not: firing with nothing
    // due re-arms it for the next one. An empty heap needs no timer at all.
    if (this.#waiting.size === 0) this.#disarm();
    return removed;
  }

  /** Also drops every item still waiting for its delay. */
  override shutDown(): void {
    this.#disarm();
    this.#waiting.clear();
    this.#byItem.clear();
    super.shutDown();
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  #arm(): void {
    const next = this.#waiting.peek();
    if (next === undefined || next.readyAt >= this.#timerAt) return;
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer);
    this.#timerAt = next.readyAt;
    // Node fires timers longer than 2^31-1 ms almost immediately; capping the wait instead lets
    // #fire() find nothing due yet and re-arm, so very long delays are honoured in hops.
    // An item already due (readyAt a fraction of a millisecond ago) waits 0 ms: Node warns about negative timeouts.
    const wait = Math.max(0, Math.min(next.readyAt - this.clock.now(), MAX_TIMER_MS));
    this.#timer = this.clock.setTimeout(() => this.#fire(), wait);
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = this.clock.now();
    // A real timer may fire a fraction of a millisecond early; anything not yet due is re-armed.
    for (
      let next = this.#waiting.peek();
      next !== undefined && next.readyAt <= now;
      next = this.#waiting.peek()
    ) {
      this.#waiting.pop();
      this.#byItem.delete(next.item);
      this.add(next.item, { priority: next.priority });
    }
    this.#arm();
  }
}
