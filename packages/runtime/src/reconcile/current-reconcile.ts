// Which reconcile the code running now belongs to, carried through its awaits by node's
// AsyncLocalStorage. A sharded manager's write guard reads it: a reconcile of a key whose
// bucket this replica no longer owns must not write, and the client's guard is called deep
// inside a request, far from the reconcile that made it.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface ReconcileScope {
  /** The controller's name. */
  readonly controller: string;
  /** The queue key: `namespace/name`, or `name` when cluster-scoped. */
  readonly key: string;
}

const scope = new AsyncLocalStorage<ReconcileScope>();

/**
 * The reconcile whose code (or a promise it started) is running now; undefined outside any
 * reconcile, e.g. in a Lease renewal or an informer's list.
 */
export function currentReconcile(): ReconcileScope | undefined {
  return scope.getStore();
}

/** Runs `fn` as the reconcile of `key` by `controller`: currentReconcile() returns it inside. */
export function runAsReconcile<R>(reconcile: ReconcileScope, fn: () => R): R {
  return scope.run(reconcile, fn);
}
