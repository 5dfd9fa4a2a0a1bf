import { realClock, sleep, type Clock } from './clock.ts';

/**
 * A token bucket: holds up to `burst` tokens and gains one every `msPerToken`, on an
 * injected clock. Three ways to spend a token, for the three kinds of caller:
 *
 * - {@link take} waits for one (the API client's QPS/burst limit). A caller that finds
 *   the bucket empty reserves a future token and sleeps until it is due, so waiters are
 *   served in arrival order without a queue; an aborted waiter hands its token back.
 * - {@link reserve} takes one now and returns how long until it is due, for a caller
 *   that schedules the wait itself (the work queue's overall retry limit).
 * - {@link tryTake} takes one only if one is there, for a caller that drops what
 *   exceeds the limit (the event recorder's per-object spam filter).
 */
export class TokenBucket {
  /** Tokens the bucket holds when full. */
  readonly burst: number;
  /** Time to gain one token; 0 means the bucket is always full. */
  readonly msPerToken: number;
  readonly #clock: Clock;
  // Negative while waiters hold reservations.
  #tokens: number;
  #last: number;

  /** A bucket that gains `qps` tokens per second; `Infinity` never limits. */
  static perSecond(qps: number, burst: number, clock: Clock = realClock): TokenBucket {
    if (!(qps > 0)) throw new RangeError(`qps must be > 0, got ${qps}`);
    return new TokenBucket(1000 / qps, burst, clock);
  }

  constructor(msPerToken: number, burst: number, clock: Clock = realClock) {
    if (!(msPerToken >= 0) || msPerToken === Infinity)
      throw new RangeError(`msPerToken must be a finite number >= 0, got ${msPerToken}`);
    if (!(burst >= 1)) throw new RangeError(`burst must be >= 1, got ${burst}`);
    this.msPerToken = msPerToken;
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
      await sleep(this.#clock, wait, signal);
    } catch (err) {
      this.#tokens = Math.min(this.burst, this.#tokens + 1);
      throw err;
    }
  }

  /** Takes a token now, even one not yet gained, and returns how many ms until it is due. */
  reserve(): number {
    this.#refill();
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : -this.#tokens * this.msPerToken;
  }

  /** Takes a token if one is available now; otherwise takes nothing and returns false. */
  tryTake(): boolean {
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** Tokens available right now (negative when waiters hold reservations). */
  available(): number {
    this.#refill();
    return this.#tokens;
  }

  #refill(): void {
    const now = this.#clock.now();
    // A clock that steps backwards must not mint or destroy tokens.
    const elapsed = now > this.#last ? now - this.#last : 0;
    this.#last = now;
    const gained = this.msPerToken === 0 ? Infinity : elapsed / this.msPerToken;
    const tokens = this.#tokens + gained;
    this.#tokens = tokens > this.burst ? this.burst : tokens;
  }
}
