// Time is injected: every time-dependent piece (delays, backoff, token buckets, lease
// expiry, metrics) takes a Clock, so tests drive it with FakeClock instead of waiting.
// Timers rather than a sleep() method are the primitive because a queue needs to cancel
// and reschedule them; sleep() below is built on them for code that just waits.

declare const timerHandleBrand: unique symbol;

/** Opaque handle returned by {@link Clock.setTimeout}; only meaningful to the clock that issued it. */
export interface TimerHandle {
  readonly [timerHandleBrand]: true;
}

export interface Clock {
  /** Current time in milliseconds. Only differences between readings are meaningful. */
  now(): number;
  /** Runs `fn` once, no earlier than `ms` milliseconds from now. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; cancelling a timer that already fired or was cancelled is a no-op. */
  clearTimeout(handle: TimerHandle): void;
}

// performance.now() is monotonic, so durations never go negative when the wall clock is
// stepped by NTP; anchoring it at timeOrigin keeps readings close to epoch milliseconds,
// which makes them readable in logs.
const origin = performance.timeOrigin;

/** The process clock, backed by `performance.now()` and Node timers. */
export const realClock: Clock = {
  now: () => origin + performance.now(),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms) as unknown as TimerHandle,
  clearTimeout: (handle) => globalThis.clearTimeout(handle as unknown as NodeJS.Timeout),
};

interface FakeTimer {
  readonly due: number;
  readonly seq: number;
  readonly fn: () => void;
}

/**
 * A manually driven clock. Time only moves when the test calls {@link advance} or
 * {@link step}; due timers fire synchronously inside those calls, ordered by due time and
 * then by scheduling order.
 */
export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  // Kept sorted by (due, seq). Tests hold few timers, so a sorted array beats a heap on clarity.
  #timers: FakeTimer[] = [];

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    // Mirror Node: negative or NaN delays mean "as soon as possible", never "in the past".
    const delay = ms > 0 ? ms : 0;
    const timer: FakeTimer = { due: this.#now + delay, seq: this.#seq++, fn };
    let lo = 0;
    let hi = this.#timers.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.#timers[mid] as FakeTimer).due <= timer.due) lo = mid + 1;
      else hi = mid;
    }
    this.#timers.splice(lo, 0, timer);
    return timer as unknown as TimerHandle;
  }

  clearTimeout(handle: TimerHandle): void {
    const i = this.#timers.indexOf(handle as unknown as FakeTimer);
    if (i >= 0) this.#timers.splice(i, 1);
  }

  /**
   * Moves time forward by `ms`, firing every timer that becomes due, including timers
   * scheduled by fired callbacks when they fall inside the window. Each callback observes
   * `now()` equal to its own due time.
   */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`FakeClock.advance: ms must be >= 0, got ${ms}`);
    const target = this.#now + ms;
    for (;;) {
      const next = this.#timers[0];
      if (next === undefined || next.due > target) break;
      this.#timers.shift();
      this.#now = next.due;
      next.fn();
    }
    this.#now = target;
  }

  /**
   * Jumps to the earliest pending timer and fires everything due at that instant.
   * Returns false (and leaves time alone) when no timer is pending.
   */
  step(): boolean {
    const next = this.#timers[0];
    if (next === undefined) return false;
    this.advance(next.due - this.#now);
    return true;
  }

  /** Number of timers scheduled and not yet fired or cancelled. */
  pendingTimers(): number {
    return this.#timers.length;
  }
}

/** The value to reject with when `signal` aborts: its reason when that is an Error, else an AbortError. */
export function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error) return reason;
  return new DOMException('This operation was aborted', 'AbortError');
}

/**
 * Resolves after `ms` on `clock`; rejects with the signal's reason as soon as `signal`
 * aborts. A delay of zero or less resolves at once, without a timer.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  if (!(ms > 0)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clock.clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    // An abort while the timer was being set up came before the listener: without this
    // check the promise would stay pending forever.
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * An AbortSignal that aborts with a TimeoutError after `ms` on `clock`, and a `cancel`
 * that stops its timer. AbortSignal.timeout would ignore an injected clock, so a
 * FakeClock could never trip it.
 */
export function timeoutSignal(clock: Clock, ms: number): { signal: AbortSignal; cancel: () => void } {
  const ac = new AbortController();
  const timer = clock.setTimeout(
    () => ac.abort(new DOMException(`timed out after ${ms} ms`, 'TimeoutError')),
    ms,
  );
  return { signal: ac.signal, cancel: () => clock.clearTimeout(timer) };
}
