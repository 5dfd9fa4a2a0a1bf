// Adding and removing finalizers without losing anyone else's.
//
// metadata.finalizers is a plain list, and a merge patch replaces lists whole:
// a patch computed from a stale read would silently drop a finalizer another
// controller added in the meantime. Every patch therefore carries the
// resourceVersion it was computed from, which the API server checks like an
// update's precondition (409 Conflict when stale); on conflict the object is
// read again and the change recomputed. (A JSON patch `test` op on
// /metadata/resourceVersion would also guard the write, but the API server
// answers a failed test with 422 Invalid, indistinguishable from a bad patch.)
import { setTimeout as delay } from 'node:timers/promises';
import { isConflict, type KubeClient, type KubeObject, type ResourceType } from '@regulon/client';
import { isQualifiedName } from '../support.ts';

/** Attempts (the first included) before a conflict is given up on; client-go's retry.DefaultRetry. */
export const DEFAULT_FINALIZER_MAX_ATTEMPTS = 5;
/** Pause before re-reading after a conflict, scaled by the attempt number and jittered by up to 10%. */
export const FINALIZER_RETRY_DELAY_MS = 10;

export interface FinalizerOptions {
  signal?: AbortSignal | undefined;
  fieldManager?: string | undefined;
  /** Default {@link DEFAULT_FINALIZER_MAX_ATTEMPTS}. */
  maxAttempts?: number | undefined;
}

/** Anything that hands out typed resource clients; a KubeClient does. */
export type ResourceClientSource = Pick<KubeClient, 'resource'>;

export function hasFinalizer(obj: KubeObject, finalizer: string): boolean {
  return obj.metadata?.finalizers?.includes(finalizer) ?? false;
}

/**
 * Ensures `finalizer` is on the object and returns the object as the server
 * now has it. No request is made when `obj` already carries it. Throws the
 * client's ConflictError after `maxAttempts` lost races, NotFoundError when
 * the object is gone.
 */
export async function addFinalizer<T extends KubeObject>(
  client: ResourceClientSource,
  type: ResourceType<T>,
  obj: T,
  finalizer: string,
  opts: FinalizerOptions = {},
): Promise<T> {
  checkFinalizer(finalizer);
  return mutateFinalizers(client, type, obj, opts, (list) =>
    list.includes(finalizer) ? undefined : [...list, finalizer],
  );
}

/**
 * Ensures `finalizer` is not on the object and returns the object as the
 * server now has it (which, once the last finalizer of a deleted object is
 * gone, may be its final state). No request is made when `obj` lacks it.
 */
export async function removeFinalizer<T extends KubeObject>(
  client: ResourceClientSource,
  type: ResourceType<T>,
  obj: T,
  finalizer: string,
  opts: FinalizerOptions = {},
): Promise<T> {
  checkFinalizer(finalizer);
  return mutateFinalizers(client, type, obj, opts, (list) =>
    list.includes(finalizer) ? list.filter((f) => f !== finalizer) : undefined,
  );
}

/** `change` returns the new list, or undefined when the list is already as wanted. */
async function mutateFinalizers<T extends KubeObject>(
  client: ResourceClientSource,
  type: ResourceType<T>,
  obj: T,
  opts: FinalizerOptions,
  change: (current: readonly string[]) => string[] | undefined,
): Promise<T> {
  const name = obj.metadata?.name;
  if (!name) throw new TypeError(`${type.kind}: metadata.name is required`);
  const namespace = type.namespaced ? obj.metadata?.namespace : undefined;
  if (type.namespaced && !namespace)
    throw new TypeError(`${type.kind} ${name}: metadata.namespace is required`);
  const resources = client.resource<T>(type);
  const maxAttempts = Math.max(1, opts.maxAttempts ?? DEFAULT_FINALIZER_MAX_ATTEMPTS);
  const callOpts = {
    ...(namespace ? { namespace } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  };

  let current = obj;
  // Without a resourceVersion the patch would be unguarded: read first.
  if (!current.metadata?.resourceVersion) current = await resources.get(name, callOpts);
  for (let attempt = 1; ; attempt++) {
    const wanted = change(current.metadata?.finalizers ?? []);
    if (wanted === undefined) return current;
    const patch = {
      metadata: {
        resourceVersion: current.metadata?.resourceVersion,
        // null deletes the field rather than leaving an empty list behind.
        finalizers: wanted.length > 0 ? wanted : null,
      },
    };
    try {
      return await resources.patch(name, patch, {
        type: 'merge',
        ...callOpts,
        ...(opts.fieldManager ? { fieldManager: opts.fieldManager } : {}),
      });
    } catch (err) {
      if (!isConflict(err) || attempt >= maxAttempts) throw err;
    }
    const jitter = 1 + Math.random() * 0.1;
    await delay(
      FINALIZER_RETRY_DELAY_MS * attempt * jitter,
      undefined,
      opts.signal ? { signal: opts.signal } : {},
    );
    current = await resources.get(name, callOpts);
  }
}

function checkFinalizer(finalizer: string): void {
  // The API server rejects anything else, and a typo here is a bug, not a cluster condition.
  if (!isQualifiedName(finalizer)) {
    throw new TypeError(
      `invalid finalizer ${JSON.stringify(finalizer)}: expected a qualified name such as example.com/cleanup`,
    );
  }
}
