// What stops an object from progressing, and the one way every controller
// reports it, so that `kubectl get`, `kubectl wait`, kstatus (Flux, kpt) and
// the Events all tell the same story:
// - Degraded=True, reason and message of the problem;
// - Stalled=True when progress waits for a person (kstatus: Failed, so GitOps
//   tools stop waiting instead of running out their timeout);
// - Ready=False naming the same cause, not a generic "not ready yet";
// - one Warning Event when that changes, not on every reconcile;
// - a retry with the per-item backoff only for what no watch will announce.
import { ApiError, TimeoutError, type KubeObject, type ResourceType } from '@regulon/client';
import { conditionMatches, setCondition, type Condition } from './conditions.ts';
import type { EventRecorder } from '../events/events.ts';
import { ChildConflictError } from '../apply/ownership.ts';
import type { ReconcileContext, Result } from '../reconcile/reconcile.ts';

/** A problem only reconcile can find. */
export interface Problem {
  /** CamelCase: the reason of Degraded, Stalled, Ready and the Warning Event. */
  reason: string;
  /** What happened and what to do about it: the message of the same. */
  message: string;
  /**
   * Progress waits for a person (the default): Stalled=True. `false` for a
   * problem the cluster may still get over by itself.
   */
  stalled?: boolean | undefined;
  /**
   * Nothing the controller watches will announce the fix (a quota raised, an
   * admission policy changed), so the reconcile is retried with the per-item
   * backoff (5 ms doubling to 1000 s). Problems that a watched object clears
   * (a Secret created, a conflicting object deleted) wait for that event.
   */
  retry?: boolean | undefined;
}

/** A child's name is taken by an object its owner does not control (ChildConflictError). */
export const CHILD_CONFLICT = 'ChildConflict';
/** The API server refused to create or update a child (ChildRejectedError). */
export const CHILD_REJECTED = 'ChildRejected';

/**
 * A write of a child that the API server refused for a reason that sending it
 * again cannot fix (see isRejection). The message is the server's, prefixed
 * with the child it is about.
 */
export class ChildRejectedError extends Error {
  readonly type: ResourceType;
  readonly childName: string;
  override readonly cause: ApiError;
  constructor(type: ResourceType, name: string | undefined, cause: ApiError) {
    super(`${type.kind} ${name ?? ''} was rejected by the API server: ${cause.message}`, { cause });
    this.name = 'ChildRejectedError';
    this.type = type;
    this.childName = name ?? '';
    this.cause = cause;
  }
}

/**
 * True when the API server refused a write for a reason in the request or in
 * the cluster's policy, which retrying the same request cannot fix: a 4xx
 * answer (Invalid, BadRequest, Forbidden by a quota, an admission policy or
 * RBAC, NotFound for an unknown resource). Throttling (429), conflicts (409),
 * timeouts, expired resource versions, the client's own credentials (401),
 * server errors and network errors are transient: the work queue retries them.
 */
export function isRejection(err: unknown): err is ApiError {
  if (!(err instanceof ApiError) || err instanceof TimeoutError) return false;
  return err.code >= 400 && err.code < 500 && !TRANSIENT_4XX.has(err.code);
}

/** 401 the client's own credentials, 408 request timeout, 409 conflict or already exists, 410 expired, 429 throttled. */
const TRANSIENT_4XX: ReadonlySet<number> = new Set([401, 408, 409, 410, 429]);

/**
 * The Problem a failed child write stands for, or rethrows `err`:
 * - ChildConflictError → ChildConflict, and the request waits for the
 *   conflicting object to change (`ctx.waitFor`): no owner reference maps
 *   its deletion back to this owner, and nothing else would wake it;
 * - ChildRejectedError → ChildRejected, retried with backoff;
 * - anything else is transient (or a bug) and is rethrown, so the work queue
 *   retries it with backoff instead of it being reported as the user's fault.
 */
export function childProblem(err: unknown, ctx: Pick<ReconcileContext, 'waitFor'>): Problem {
  if (err instanceof ChildConflictError) {
    ctx.waitFor(err.type, err.namespace, err.childName);
    return { reason: CHILD_CONFLICT, message: err.message };
  }
  if (err instanceof ChildRejectedError) return { reason: CHILD_REJECTED, message: err.message, retry: true };
  throw err;
}

/** Several problems as one: the first one's reason, every message; stalled or retried if any one is. */
export function combineProblems(problems: readonly Problem[]): Problem | undefined {
  const [first] = problems;
  if (!first) return undefined;
  return {
    reason: first.reason,
    message: problems.map((p) => p.message).join('; '),
    stalled: problems.some((p) => p.stalled !== false),
    retry: problems.some((p) => p.retry === true),
  };
}

export interface ProblemConditionOptions {
  observedGeneration?: number | undefined;
  now?: Date | undefined;
}

/**
 * Returns `conditions` with Degraded and Stalled set from `problem` (or its
 * absence), and, when there is a problem, Ready=False naming it: `kubectl
 * wait --for=condition=Ready` and kstatus read Ready, not Degraded. Without a
 * problem the caller sets Ready from what it observes.
 */
export function setProblemConditions(
  conditions: readonly Condition[] | undefined,
  problem: Problem | undefined,
  opts: ProblemConditionOptions = {},
): Condition[] {
  const gen = opts.observedGeneration !== undefined ? { observedGeneration: opts.observedGeneration } : {};
  const set = (c: Condition[], type: string, status: 'True' | 'False', reason: string, message: string) =>
    setCondition(c, { type, status, reason, message, ...gen }, opts.now);
  let c = [...(conditions ?? [])];
  if (!problem) {
    c = set(c, 'Degraded', 'False', 'AsExpected', 'No problems found');
    return set(c, 'Stalled', 'False', 'AsExpected', 'Nothing waits for a person');
  }
  c = set(c, 'Degraded', 'True', problem.reason, problem.message);
  c =
    problem.stalled === false
      ? set(
          c,
          'Stalled',
          'False',
          problem.reason,
          `Not stalled: the cluster may still resolve this by itself`,
        )
      : set(c, 'Stalled', 'True', problem.reason, problem.message);
  return set(c, 'Ready', 'False', problem.reason, problem.message);
}

/**
 * Emits one Warning Event per problem, only when the object's Degraded
 * condition does not already state them (conditionMatches): an event recorder
 * aggregates repeats only in memory, so a restarted manager, or a new leader,
 * would otherwise announce again a state its status already reports.
 */
export function announceProblems(
  events: EventRecorder,
  obj: KubeObject & { status?: { conditions?: Condition[] } },
  problems: readonly Problem[],
): void {
  const problem = combineProblems(problems);
  if (!problem) return;
  if (conditionMatches(obj.status?.conditions, { type: 'Degraded', status: 'True', ...problem })) return;
  for (const p of problems) events.event(obj, 'Warning', p.reason, 'Reconcile', p.message);
}

/** What a reconcile that found `problem` returns: a retry with backoff when no watch announces the fix. */
export function problemResult(problem: Problem | undefined): Result | undefined {
  return problem?.retry ? { requeue: true } : undefined;
}

/**
 * Thrown by a reconcile to stop at a problem it found (a missing Secret the
 * spec names, a version no image exists for): the runtime reports it like
 * any other (conditions, one Warning Event, retry only when asked).
 */
export class ProblemError extends Error {
  readonly problem: Problem;
  constructor(problem: Problem) {
    super(problem.message);
    this.name = 'ProblemError';
    this.problem = problem;
  }
}

/** childProblem, plus a ProblemError's own problem; anything else is rethrown. */
export function problemOf(err: unknown, ctx: Pick<ReconcileContext, 'waitFor'>): Problem {
  if (err instanceof ProblemError) return err.problem;
  return childProblem(err, ctx);
}
