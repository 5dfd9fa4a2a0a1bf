import { Fifo } from './fifo.ts';

// One line per priority. A priority change of a queued item is rare (a real change to an
// object already queued from an initial list), adds and takes are the hot path: so a raised
// item is pushed onto its new line and its old copy is left where it is, counted as stale,
// instead of being searched for and removed.
interface Line<T> {
  readonly priority: number;
  readonly items: Fifo<T>;
  // How many copies of an item further up this line were superseded by a raise. A raise
  // always happens after the copy was pushed, and the item can only be pushed onto this line
  // again once it has left the queue, so the stale copies of an item precede its live one.
  stale: Map<T, number> | undefined;
}

// Lines are kept when they empty so that the usual two or three priorities don't reallocate
// their buffers on every drain; past this many lines the empty ones are dropped, so a caller
// that uses many distinct priorities does not accumulate them forever.
const KEPT_EMPTY_LINES = 16;

/**
 * Items by priority, higher first, first in first out within a priority. The caller keeps
 * each item in here at most once and tells {@link raise} the priority it was pushed with.
 */
export class PriorityFifo<T> {
  // Highest priority first.
  #lines: Line<T>[] = [];
  // The line of the last push: nearly every push goes to the same one as the previous.
  #lastPushed: Line<T> | undefined;
  #size = 0;

  /** Live items (stale copies left by raises are not counted). */
  get length(): number {
    return this.#size;
  }

  push(item: T, priority: number): void {
    let line = this.#lastPushed;
    if (line === undefined || line.priority !== priority) this.#lastPushed = line = this.#line(priority);
    line.items.push(item);
    this.#size++;
  }

  /** Moves `item`, queued at `from`, to the end of the line of the higher priority `to`. */
  raise(item: T, from: number, to: number): void {
    const old = this.#line(from);
    old.stale ??= new Map();
    old.stale.set(item, (old.stale.get(item) ?? 0) + 1);
    this.#line(to).items.push(item);
  }

  shift(): T | undefined {
    if (this.#size === 0) return undefined;
    const lines = this.#lines;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] as Line<T>;
      for (let item = line.items.shift(); item !== undefined; item = line.items.shift()) {
        if (line.stale !== undefined && this.#skipStale(line, item)) continue;
        this.#size--;
        return item;
      }
    }
    // Unreachable while #size is right: every live item is on a line.
    throw new Error('PriorityFifo: size says an item is queued, but no line holds one');
  }

  /**
   * Takes every live item `remove` accepts out of the queue and returns them; the rest keep
   * their order. O(queued items): for rare bulk removals (keys leaving a shard), not the hot path.
   */
  removeWhere(remove: (item: T) => boolean): T[] {
    const removed: T[] = [];
    for (const line of this.#lines) {
      // Every copy of this line is visited, so the stale copies are all dropped on the way
      // and the line leaves with none.
      line.items.retain((item) => {
        if (line.stale !== undefined && this.#skipStale(line, item)) return false;
        if (!remove(item)) return true;
        removed.push(item);
        return false;
      });
    }
    this.#size -= removed.length;
    return removed;
  }

  #skipStale(line: Line<T>, item: T): boolean {
    const stale = line.stale as Map<T, number>;
    const count = stale.get(item);
    if (count === undefined) return false;
    if (count > 1) stale.set(item, count - 1);
    else stale.delete(item);
    if (stale.size === 0) line.stale = undefined;
    return true;
  }

  #line(priority: number): Line<T> {
    const lines = this.#lines;
    let i = 0;
    // Linear: there are a handful of lines, and the common one is found first or second.
    while (i < lines.length && (lines[i] as Line<T>).priority > priority) i++;
    const found = lines[i];
    if (found !== undefined && found.priority === priority) return found;
    const line: Line<T> = { priority, items: new Fifo<T>(), stale: undefined };
    lines.splice(i, 0, line);
    if (lines.length > KEPT_EMPTY_LINES) {
      this.#lines = lines.filter((l) => l === line || l.items.length > 0);
      this.#lastPushed = undefined;
    }
    return line;
  }
}
