import type { Logger } from 'pino';
import type { Runnable } from '../reconcile/controller.ts';

/**
 * Runnables that the manager starts together and stops together (its
 * `others`, on every replica, and its `leader-only`, after the election), as
 * controller-runtime's runnable groups. A member that fails is logged and
 * leaves the rest of its group running.
 */
export class RunnableGroup {
  readonly name: string;
  readonly #members: Runnable[] = [];
  readonly #running: Array<Promise<void>> = [];
  readonly #stop = new AbortController();
  readonly #log: Logger;

  constructor(name: string, logger: Logger) {
    this.name = name;
    this.#log = logger;
  }

  get members(): readonly Runnable[] {
    return this.#members;
  }

  add(runnable: Runnable): void {
    this.#members.push(runnable);
  }

  /**
   * Starts every member. `drain` aborts their in-flight work (a shutdown that
   * timed out, a lost Lease). `scope` is what the group's work hangs on
   * (leadership): its end stops the members' work and aborts what is in
   * flight at once, without waiting for stop().
   */
  start(drain: AbortSignal, scope?: AbortSignal): void {
    const run = scope ? AbortSignal.any([this.#stop.signal, scope]) : this.#stop.signal;
    const drainOrScope = scope ? AbortSignal.any([drain, scope]) : drain;
    for (const runnable of this.#members) {
      this.#running.push(
        runnable.start(run, drainOrScope).catch((err: unknown) => {
          this.#log.error({ err, runnable: runnable.name, group: this.name }, 'runnable failed');
        }),
      );
    }
  }

  /** Takes no new work; resolves once every started member has returned. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await Promise.all(this.#running);
  }
}
