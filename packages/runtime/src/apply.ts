import type { KubeClient, KubeObject, ResourceType } from '@regulon/client';
import { apiVersionOf, isNotFound } from '@regulon/client';
import { isConverged, withAppliedHash } from './converged.ts';
import { assertCanControl, controllerReference, isControlledBy, type Owner } from './ownership.ts';
import { ChildRejectedError, isRejection } from './problems.ts';

export interface ApplyChildOptions {
  /** The controller's field manager: it owns exactly the fields it applies. */
  fieldManager: string;
  owner: Owner;
  /**
   * The live child from the cache, if any: refusing to touch a child that
   * another controller owns needs no extra GET, and when it is a full object
   * (not metadata-only) that already matches, no apply is sent at all.
   */
  existing?: KubeObject | undefined;
  signal?: AbortSignal;
}

/**
 * Server-side applies a desired child with a controller ownerReference to
 * `owner`. With force, fields this manager owns are set back to the desired
 * values (drift is reverted) and fields owned by others are left alone; a
 * deleted child is recreated. Sends nothing when the cached child already
 * matches (see converged.ts): a converged child costs no request, so a
 * restart or a resync rewrites nothing.
 *
 * Throws, for the caller to report through `childProblem`:
 * - ChildConflictError, without writing, when an object of the child's name
 *   exists that `owner` does not control (another controller's, or a
 *   person's): it is never adopted or overwritten;
 * - ChildRejectedError when the API server refuses the apply for good
 *   (invalid, forbidden by a quota or an admission policy: see isRejection).
 * Transient errors (throttling, 5xx, timeouts) are thrown as they are.
 */
export async function applyChild<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  desired: T,
  options: ApplyChildOptions,
): Promise<T> {
  assertCanControl(type, options.existing, options.owner);
  const body = childApplyBody(type, desired, options.owner);
  if (options.existing && isConverged(body, options.existing)) return options.existing as T;
  try {
    return await client.resource<T>(type).apply(body, {
      fieldManager: options.fieldManager,
      force: true,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (err) {
    if (isRejection(err)) throw new ChildRejectedError(type, body.metadata?.name, err);
    throw err;
  }
}

/**
 * The exact body applyChild sends: type, namespace, the controller
 * ownerReference and the applied-hash annotation added to `desired`.
 */
export function childApplyBody<T extends KubeObject>(type: ResourceType, desired: T, owner: Owner): T {
  return withAppliedHash({
    ...desired,
    apiVersion: apiVersionOf(type),
    kind: type.kind,
    metadata: {
      ...desired.metadata,
      ...(type.namespaced ? { namespace: desired.metadata?.namespace ?? owner.metadata.namespace } : {}),
      ownerReferences: [controllerReference(owner)],
    },
  });
}

/**
 * Deletes a child the spec no longer asks for — only if `owner` controls it
 * (a same-named object someone else owns is never touched). `existing` is the
 * cache's view; a child already gone is success. Returns whether it deleted.
 */
export async function deleteChildIfControlled(
  client: KubeClient,
  type: ResourceType,
  existing: KubeObject | undefined,
  owner: Owner,
  opts: { signal?: AbortSignal } = {},
): Promise<boolean> {
  if (!existing?.metadata?.name || !isControlledBy(existing, owner)) return false;
  try {
    await client.resource(type).delete(existing.metadata.name, {
      ...(existing.metadata.namespace ? { namespace: existing.metadata.namespace } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  } catch (err) {
    if (isNotFound(err)) return true;
    if (isRejection(err)) throw new ChildRejectedError(type, existing.metadata.name, err);
    throw err;
  }
  return true;
}
