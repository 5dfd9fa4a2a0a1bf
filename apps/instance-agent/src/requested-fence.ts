// A fence a person asked for (the manager's FENCED_POD_ANNOTATION on the Pod), unlike the Lease's
// fence (primary-guard.ts): the engine is stopped cleanly and the container keeps running, so that
// the instance can be inspected, until the fence is lifted and the engine starts again.
import { rm, writeFile } from 'node:fs/promises';
import type { Logger } from '@regulon/util';
import type { EngineProcess } from './supervisor.ts';

/**
 * How long the engine may take to stop after SIGINT (postgres: a fast shutdown) before it is sent
 * SIGTERM (mariadb's shutdown signal), and after that before the rest is killed.
 */
export const FENCE_STOP_STEPS_MS = [5_000, 30_000] as const;

export interface RequestedFenceOptions {
  log: Logger;
  /** Written while the engine is stopped on purpose (see ENGINE_STARTING_MARKER); undefined: none. */
  livenessMarker?: string | undefined;
  /** Overridable for tests. */
  stopStepsMs?: readonly [number, number];
}

/**
 * Follows whether the instance is fenced on purpose (`set`, from each read of its Pod) and stops the
 * current engine when it is; `untilUnfenced` tells the agent's loop when to start a new one.
 */
export class RequestedFence {
  readonly #o: RequestedFenceOptions;
  #wanted = false;
  #stopped: EngineProcess | undefined;
  #wake: (() => void) | undefined;
  #closed = false;

  constructor(options: RequestedFenceOptions) {
    this.#o = options;
  }

  /** Whether a fence is asked for now. */
  get wanted(): boolean {
    return this.#wanted;
  }

  /** Whether `engine` was stopped by this fence (its exit is not the agent's end). */
  stopped(engine: EngineProcess): boolean {
    return this.#stopped === engine;
  }

  /** The latest word on the fence, for the engine running now. */
  set(fenced: boolean, engine: EngineProcess): void {
    if (this.#closed) return;
    const was = this.#wanted;
    this.#wanted = fenced;
    if (fenced && !this.#stopped && engine.running) this.#stop(engine);
    if (!fenced && was) {
      this.#o.log.info({}, 'the fence is lifted');
      this.#wake?.();
    }
  }

  /**
   * Resolves true once the fence is lifted (the engine may start again), false when the agent is
   * stopping (`close`). Call it after the fenced engine exited.
   */
  async untilUnfenced(): Promise<boolean> {
    while (this.#wanted && !this.#closed) await new Promise<void>((resolve) => (this.#wake = resolve));
    this.#wake = undefined;
    if (this.#closed) return false;
    this.#stopped = undefined;
    if (this.#o.livenessMarker) await rm(this.#o.livenessMarker, { force: true }).catch(() => undefined);
    return true;
  }

  /** The agent stops (the kubelet's SIGTERM): a waiting untilUnfenced resolves false. */
  close(): void {
    this.#closed = true;
    this.#wake?.();
  }

  #stop(engine: EngineProcess): void {
    const { log, livenessMarker } = this.#o;
    const [interrupt, terminate] = this.#o.stopStepsMs ?? FENCE_STOP_STEPS_MS;
    this.#stopped = engine;
    log.warn({ pid: engine.pid }, 'this instance is fenced: stopping the engine; the container stays');
    if (livenessMarker) void writeFile(livenessMarker, 'fenced\n').catch(() => undefined);
    engine.signal('SIGINT');
    const later = (ms: number, step: () => void) => {
      const t = setTimeout(() => engine.running && step(), ms);
      t.unref();
      void engine.exited.then(() => clearTimeout(t));
    };
    later(interrupt, () => engine.signal('SIGTERM'));
    later(interrupt + terminate, () => engine.killRemaining());
  }
}
