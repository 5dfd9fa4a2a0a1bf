import { isNotFound, type KubeClient, type KubeObject, type ResourceType } from '@regulon/client';
import { BoundContext, type Context, type DeclaredKinds } from './context.ts';
import type { CacheSource } from './cache-source.ts';
import type { EventRecorder } from '../events/events.ts';
import { addFinalizer, hasFinalizer, removeFinalizer } from '../apply/finalizers.ts';
import type { Owner } from '../apply/ownership.ts';
import {
  announceProblems,
  combineProblems,
  problemOf,
  problemResult,
  type Problem,
} from '../status/problems.ts';
import type { ReconcileContext, Reconciler, Request, Result } from './reconcile.ts';
import { applyStatusIfChanged, WrittenStatus } from '../status/status.ts';

/** The reconciled object as the runtime hands it over: read from the API server, so named and with a uid. */
export type Live<T extends KubeObject> = T & Owner;

/** The type of an object's `.status`. */
export type StatusOf<T> = T extends { status?: infer S } ? NonNullable<S> : never;

export type ReconcileFunc<T extends KubeObject> = (obj: Live<T>, ctx: Context) => Promise<Result | void>;

/**
 * The status of `obj`, computed from the object, what the context's cached
 * reads show, and the problem that stopped the reconcile, if any (all the
 * problems found, combined; `problems` has each one). Written only when it
 * differs from what the object reports.
 */
export type StatusFunc<T extends KubeObject> = (
  obj: Live<T>,
  problem: Problem | undefined,
  ctx: Context,
  problems: readonly Problem[],
) => StatusOf<T>;

export interface Finalizer<T extends KubeObject> {
  /** A qualified name, e.g. `example.com/cleanup`. */
  name: string;
  /**
   * Runs once the object is being deleted and before it goes: cleans up what
   * garbage collection can't (outside the cluster, other namespaces). Must be
   * idempotent: if removing the finalizer fails after it returns, it runs again.
   */
  finalize: (obj: Live<T>, ctx: Context) => Promise<void>;
}

/** Names longer than `max` can't name the children derived from them: reported as NameTooLong, nothing is created. */
export interface NameLimit {
  max: number;
  /** What the derived names are, for the message (e.g. "StatefulSet Pods, backup Jobs"). */
  derived?: string | undefined;
}

export interface ObjectReconcilerOptions<T extends KubeObject> {
  kind: ResourceType<T>;
  informer: CacheSource<T>;
  client: KubeClient;
  fieldManager: string;
  events: EventRecorder;
  kinds: DeclaredKinds;
  reconcile: ReconcileFunc<T>;
  status?: StatusFunc<T> | undefined;
  finalizer?: Finalizer<T> | undefined;
  nameLimit?: NameLimit | undefined;
}

/**
 * The reconcile skeleton every controller of an object shares, so that each
 * one only says what is particular to its kind:
 * - reads the object from the cache; a deleted one never reaches `reconcile`,
 *   one being deleted goes to the finalizer, if any, which is removed after;
 * - hands `reconcile` the object with the status this controller last wrote
 *   (WrittenStatus), and a context bound to it;
 * - turns what stops it (a foreign or refused child, a ProblemError, a name
 *   too long) into one Problem; transient errors are thrown to the work
 *   queue, which retries with backoff;
 * - announces a new problem once as a Warning Event, computes the status and
 *   writes it only when it changed; retries with backoff a problem no watch
 *   will announce the end of.
 */
export class ObjectReconciler<T extends KubeObject> implements Reconciler {
  readonly #o: ObjectReconcilerOptions<T>;
  readonly #written = new WrittenStatus<StatusOf<T>>();

  constructor(options: ObjectReconcilerOptions<T>) {
    this.#o = options;
  }

  async reconcile(req: Request, base: ReconcileContext): Promise<Result | void> {
    const o = this.#o;
    const cached = o.informer.get(req.name, req.namespace);
    if (!cached?.metadata?.uid) return;
    if (cached.metadata.deletionTimestamp) return this.#finalize(cached as Live<T>, base);
    let current = cached as Live<T>;
    if (o.finalizer && !hasFinalizer(current, o.finalizer.name))
      current = (await addFinalizer(o.client, o.kind, current, o.finalizer.name, {
        signal: base.signal,
      })) as Live<T>;
    const obj: Live<T> = this.#written.current(current);
    const ctx = this.#context(obj, base);

    let result: Result | void = undefined;
    const tooLong = this.#nameTooLong(obj);
    if (tooLong) ctx.report(tooLong);
    else {
      try {
        result = await o.reconcile(obj, ctx);
      } catch (err) {
        ctx.report(problemOf(err, ctx));
      }
    }

    const problem = combineProblems(ctx.problems);
    if (o.status) {
      announceProblems(o.events, obj, ctx.problems);
      const status = o.status(obj, problem, ctx, ctx.problems);
      const wrote = await applyStatusIfChanged(o.client, o.kind, obj, status, {
        fieldManager: o.fieldManager,
        signal: base.signal,
        written: this.#written,
      }).catch((err: unknown) => {
        // Deleted while being reconciled: there is no status left to write, and nothing to retry.
        if (isNotFound(err)) return false;
        throw err;
      });
      if (wrote) base.log.debug('status updated');
    } else {
      // Without a status to remember them in, each problem is announced every time; the recorder aggregates repeats.
      for (const p of ctx.problems) ctx.warn(p.reason, p.message);
    }
    // A problem a watched object will clear waits for it; one nothing announces is retried with backoff.
    return problemResult(problem) ?? result;
  }

  async #finalize(obj: Live<T>, base: ReconcileContext): Promise<void> {
    const f = this.#o.finalizer;
    if (!f || !hasFinalizer(obj, f.name)) return; // garbage collection removes the children
    await f.finalize(obj, this.#context(obj, base));
    await removeFinalizer(this.#o.client, this.#o.kind, obj, f.name, { signal: base.signal });
    base.log.info({ finalizer: f.name }, 'finalized');
  }

  #context(obj: Live<T>, base: ReconcileContext): BoundContext {
    return new BoundContext(base, obj, {
      client: this.#o.client,
      fieldManager: this.#o.fieldManager,
      kinds: this.#o.kinds,
      events: this.#o.events,
    });
  }

  #nameTooLong(obj: Live<T>): Problem | undefined {
    const limit = this.#o.nameLimit;
    const length = obj.metadata.name.length;
    if (!limit || length <= limit.max) return undefined;
    const derived = limit.derived ? ` (${limit.derived})` : '';
    return {
      reason: 'NameTooLong',
      message: `name is ${length} characters; at most ${limit.max} fit the names derived from it${derived}. Recreate the ${this.#o.kind.kind} with a shorter name.`,
    };
  }
}
