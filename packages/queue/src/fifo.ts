// Array.prototype.shift is O(n) on large arrays, which would make draining a queue of
// hundreds of thousands of keys quadratic; a power-of-two ring buffer keeps push and
// shift O(1) and reuses its slots instead of allocating.

const INITIAL_CAPACITY = 16;

export class Fifo<T> {
  #buf: (T | undefined)[] = new Array<T | undefined>(INITIAL_CAPACITY);
  #mask = INITIAL_CAPACITY - 1;
  #head = 0;
  #size = 0;

  get length(): number {
    return this.#size;
  }

  push(value: T): void {
    if (this.#size === this.#buf.length) this.#grow();
    this.#buf[(this.#head + this.#size) & this.#mask] = value;
    this.#size++;
  }

  shift(): T | undefined {
    if (this.#size === 0) return undefined;
    const value = this.#buf[this.#head];
    // Drop the reference so a drained queue does not pin old items in memory.
    this.#buf[this.#head] = undefined;
    this.#head = (this.#head + 1) & this.#mask;
    this.#size--;
    return value;
  }

  /** Keeps, in order, only the values `keep` accepts; called once per value, front to back. */
  retain(keep: (value: T) => boolean): void {
    // Shifting every value once and pushing back the kept ones compacts in place: the
    // buffer never grows, since each push follows the shift that made room for it.
    for (let n = this.#size; n > 0; n--) {
      const value = this.shift() as T;
      if (keep(value)) this.push(value);
    }
  }

  #grow(): void {
    const old = this.#buf;
    const next = new Array<T | undefined>(old.length * 2);
    for (let i = 0; i < this.#size; i++) next[i] = old[(this.#head + i) & this.#mask];
    this.#buf = next;
    this.#mask = next.length - 1;
    this.#head = 0;
  }
}
