// A binary min-heap whose entries remember their own position, so the delaying queue can
// move an item earlier ("shorter delay wins") in O(log n) instead of searching for it.

export interface HeapEntry {
  /** Maintained by the heap; -1 when the entry is not in a heap. */
  index: number;
}

export class IndexedHeap<E extends HeapEntry> {
  readonly #items: E[] = [];
  readonly #less: (a: E, b: E) => boolean;

  constructor(less: (a: E, b: E) => boolean) {
    this.#less = less;
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): E | undefined {
    return this.#items[0];
  }

  push(entry: E): void {
    entry.index = this.#items.length;
    this.#items.push(entry);
    this.#up(entry.index);
  }

  pop(): E | undefined {
    const items = this.#items;
    const top = items[0];
    if (top === undefined) return undefined;
    const last = items.pop() as E;
    if (last !== top) {
      items[0] = last;
      last.index = 0;
      this.#down(0);
    }
    top.index = -1;
    return top;
  }

  /** Takes `entry` out of the heap, wherever it is: O(log n). */
  remove(entry: E): void {
    const items = this.#items;
    const i = entry.index;
    if (items[i] !== entry) return;
    const last = items.pop() as E;
    entry.index = -1;
    if (last === entry) return;
    items[i] = last;
    last.index = i;
    // The entry moved into the hole may belong above it or below it.
    this.#up(i);
    this.#down(last.index);
  }

  /** Restores heap order after `entry`'s sort key decreased. */
  decreased(entry: E): void {
    this.#up(entry.index);
  }

  clear(): void {
    for (const e of this.#items) e.index = -1;
    this.#items.length = 0;
  }

  #up(i: number): void {
    const items = this.#items;
    const entry = items[i] as E;
    while (i > 0) {
      const parentIndex = (i - 1) >>> 1;
      const parent = items[parentIndex] as E;
      if (!this.#less(entry, parent)) break;
      items[i] = parent;
      parent.index = i;
      i = parentIndex;
    }
    items[i] = entry;
    entry.index = i;
  }

  #down(i: number): void {
    const items = this.#items;
    const n = items.length;
    const entry = items[i] as E;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      let child = left;
      if (right < n && this.#less(items[right] as E, items[left] as E)) child = right;
      const c = items[child] as E;
      if (!this.#less(c, entry)) break;
      items[i] = c;
      c.index = i;
      i = child;
    }
    items[i] = entry;
    entry.index = i;
  }
}
