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

  #grow(): void {
    const old = this.#buf;
    const next = new Array<T | undefined>(old.length * 2);
    for (let i = 0; i < this.#size; i++) next[i] = old[(this.#head + i) & this.#mask];
    this.#buf = next;
    this.#mask = next.length - 1;
    this.#head = 0;
  }
}
