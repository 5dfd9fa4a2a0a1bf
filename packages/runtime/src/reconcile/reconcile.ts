import type { Span } from '@opentelemetry/api';
import type { ResourceType } from '@regulon/client';
import type { Logger } from 'pino';

/** Identifies the object to reconcile. `namespace` is absent for cluster-scoped kinds. */
export interface Request {
  namespace?: string | undefined;
  name: string;
}

/** What a reconcile asks of the controller when it returns normally. */
export interface Result {
  /**
   * Reconcile this request again after this many milliseconds, even if
   * nothing changes (e.g. to poll an external system or a pending backup).
   * The per-item failure backoff is reset.
   */
  requeueAfter?: number | undefined;
  /** Reconcile again soon, with per-item rate-limited backoff, without it counting as an error. */
  requeue?: boolean | undefined;
}

export interface ReconcileContext {
  /** Aborted when the reconcile times out, or when the manager loses leadership or is force-stopped. */
  signal: AbortSignal;
  /** Carries controller, namespace, name and reconcileID on every line. */
  log: Logger;
  /** The reconcile's span; API calls made inside become its children. */
  span: Span;
  /** Unique per reconcile; correlates log lines, spans and events. */
  reconcileID: string;
  controller: string;
  /**
   * Wakes this request when the named object is added, changed or deleted,
   * for an object no owner reference maps back to it (a child's name taken by
   * someone else's object). Each reconcile declares its waits anew: one not
   * declared again by the next reconcile of the request is dropped. Only
   * kinds the controller watches (`for`, `owns`, `watches`) can wake it.
   * Declare it right after reading the object from the cache, with no await
   * in between, so that no event can slip between the read and the wait.
   */
  waitFor(type: ResourceType, namespace: string | undefined, name: string): void;
}

/**
 * The one method a controller implements.
 *
 * The contract (controller-runtime's):
 * - **Level-based.** `reconcile` is told *which* object to look at, never *what
 *   happened*. It reads the current desired state (the object, possibly gone)
 *   and the actual state, and converges them. It must be idempotent: running
 *   it twice in a row without changes in between does nothing the second time.
 * - **One at a time per key.** The controller never runs two reconciles of the
 *   same request at once; requests for other objects may run concurrently
 *   (up to maxConcurrentReconciles).
 * - **Returning** `{}` (or nothing) means done until the next change;
 *   `{ requeueAfter }` schedules another pass; `{ requeue: true }` retries with
 *   backoff.
 * - **Throwing** any error means "retry": the request is requeued with
 *   per-item exponential backoff (5 ms doubling up to 1000 s) and counted in
 *   controller_runtime_reconcile_errors_total. Throw a {@link TerminalError}
 *   for errors that retrying cannot fix (bad user input): it is counted and
 *   logged, and not retried until the object changes again.
 * - **Cancellation.** Honour `ctx.signal`: it aborts on the reconcile timeout
 *   and on shutdown. A reconcile that ignores it keeps its worker (and its key)
 *   busy until it settles.
 * - Exceptions and rejections never crash the process; they are caught,
 *   counted and logged.
 */
export interface Reconciler {
  reconcile(request: Request, ctx: ReconcileContext): Promise<Result | void>;
}

/** An error that retrying cannot fix: counted and logged, never requeued. */
export class TerminalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

export function isTerminalError(err: unknown): err is TerminalError {
  return err instanceof TerminalError;
}

/** The queue key of a request: `namespace/name`, or `name` when cluster-scoped. */
export function requestKey(req: Request): string {
  return req.namespace ? `${req.namespace}/${req.name}` : req.name;
}

export function requestFromKey(key: string): Request {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
