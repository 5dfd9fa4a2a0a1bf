import { systemClock, type Clock } from './clock.ts';

/**
 * Token bucket: `burst` tokens, refilled at `qps` per second. A caller that
 * finds the bucket empty reserves a future token (the balance goes negative)
 * and sleeps until it is due, so waiters are served in arrival order without
 * a queue. An aborted waiter hands its reservation back.
 */
export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  readonly #clock: Clock;
  #tokens: number;
  #last: number;

  constructor(qps: number, burst: number, clock: Clock = systemClock) {
    if (!(qps > 0)) throw new RangeError(`qps must be > 0, got ${qps}`);
    if (!(burst >= 1)) throw new RangeError(`burst must be >= 1, got ${burst}`);
    this.qps = qps;
    this.burst = burst;
    this.#clock = clock;
    this.#tokens = burst;
    this.#last = clock.now();
  }

  /** Waits for one token. Rejects with the signal's reason if it aborts first. */
  async take(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const wait = this.reserve();
    if (wait <= 0) return;
    try {
      await this.#clock.sleep(wait, signal);
    } catch (err) {
      this.#tokens = Math.min(this.burst, this.#tokens + 1);
      throw err;
    }
  }

  /** Takes a token now and returns how many ms until it is actually due. */
  reserve(): number {
    this.#refill();
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : (-this.#tokens / this.qps) * 1000;
  }

  /** Tokens available right now (negative when waiters hold reservations). */
  available(): number {
    this.#refill();
    return this.#tokens;
  }

  #refill(): void {
    const now = this.#clock.now();
    const elapsed = Math.max(0, now - this.#last);
    this.#last = now;
    this.#tokens = Math.min(this.burst, this.#tokens + (elapsed / 1000) * this.qps);
  }
}

/** Used when rate limiting is switched off (`qps: Infinity`). */
export const unlimited: Pick<TokenBucket, 'take'> = {
  take: (signal?: AbortSignal) => {
    signal?.throwIfAborted();
    return Promise.resolve();
  },
};
