import type { KubeClient, KubeObject, ResourceType } from '@regulon/client';
import { apiVersionOf, isNotFound, metadataOnly, type PartialObjectMetadata } from '@regulon/client';
import { isConverged, withAppliedHash } from './converged.ts';
import { assertCanControl, controllerReference, isControlledBy, type Owner } from './ownership.ts';
import { ChildRejectedError, isRejection } from '../status/problems.ts';

export interface ApplyChildOptions {
  /** The controller's field manager: it owns exactly the fields it applies. */
  fieldManager: string;
  owner: Owner;
  /**
   * The live child from the cache, if any: refusing to touch a child that
   * another controller owns needs no extra GET, and when it is a full object
   * (not metadata-only) that already matches, no apply is sent at all.
   * Without it, the child's metadata is read from the API server first (one list by name).
   */
  existing?: KubeObject | undefined;
  signal?: AbortSignal | undefined;
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
  type: ResourceType<T>,
  desired: T,
  options: ApplyChildOptions,
): Promise<T> {
  return (await applyOwned(client, type, desired, options)).object;
}

/** What applying a child did: `unchanged` sent no request. */
export type ApplyOutcome = 'created' | 'updated' | 'unchanged';

/** applyChild, also saying whether it created, updated or left the child alone. */
export async function applyOwned<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType<T>,
  desired: T,
  options: ApplyChildOptions,
): Promise<{ object: T; outcome: ApplyOutcome }> {
  const body = childApplyBody(type, desired, options.owner);
  // The cache not showing the child is not proof it does not exist: a forced
  // apply onto an object someone else created a moment ago would take it over.
  const existing =
    options.existing ??
    (await liveMetadata(client, type, body.metadata?.name, body.metadata?.namespace, options.signal));
  assertCanControl(type, existing, options.owner);
  if (existing && isConverged(body, existing)) return { object: existing as T, outcome: 'unchanged' };
  try {
    const object = await client.resource(type).apply(body, {
      fieldManager: options.fieldManager,
      force: true,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return { object, outcome: existing ? 'updated' : 'created' };
  } catch (err) {
    if (isRejection(err)) throw new ChildRejectedError(type, body.metadata?.name, err);
    throw err;
  }
}

/**
 * The metadata of the object named like the child, or undefined, as the API
 * server has it now. Read with a metadata-only list by name rather than a GET:
 * controllers hold `list` on their children already (their informers), so
 * this needs no `get`, which a least-privilege role leaves out (for Secrets
 * on purpose: a GET would return the password). Made only when the cache has
 * no copy, so a converged reconcile never sends it.
 */
export async function liveMetadata(
  client: KubeClient,
  type: ResourceType,
  name: string | undefined,
  namespace: string | undefined,
  signal: AbortSignal | undefined,
): Promise<PartialObjectMetadata | undefined> {
  const found = await client.resource(metadataOnly(type)).list({
    ...(type.namespaced && namespace ? { namespace } : {}),
    fieldSelector: `metadata.name=${name ?? ''}`,
    ...(signal ? { signal } : {}),
  });
  return found.items[0];
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
