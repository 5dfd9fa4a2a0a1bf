import type { V1OwnerReference } from '@kubernetes/client-node';
import type { KubeObject } from '@regulon/client';

/** An object that can own others: it has been read from the API server, so it has a uid. */
export interface Owner extends KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; uid: string; namespace?: string };
}

/** The controller ownerReference to `owner`: garbage collection deletes the child with it, and `owns()` maps the child back. */
export function controllerReference(owner: Owner): V1OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The controller ownerReference of an object, if any. */
export function controllerOf(obj: KubeObject): V1OwnerReference | undefined {
  return obj.metadata?.ownerReferences?.find((r) => r.controller === true);
}

/** Whether `obj` is controlled by `owner` (same uid). */
export function isControlledBy(obj: KubeObject, owner: Owner): boolean {
  return controllerOf(obj)?.uid === owner.metadata.uid;
}

/**
 * Thrown when a child's name is taken by an object that another controller
 * owns: adopting it would steal it, so the caller must report it instead.
 */
export class AlreadyOwnedError extends Error {
  readonly existingOwner: V1OwnerReference;
  constructor(obj: KubeObject, existing: V1OwnerReference) {
    super(
      `${obj.kind ?? 'object'} ${obj.metadata?.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata?.name} is already controlled by ${existing.kind} ${existing.name}`,
    );
    this.name = 'AlreadyOwnedError';
    this.existingOwner = existing;
  }
}

/** Throws AlreadyOwnedError if `existing` (the live object, if any) is controlled by someone other than `owner`. */
export function assertCanControl(existing: KubeObject | undefined, owner: Owner): void {
  if (!existing) return;
  const current = controllerOf(existing);
  if (current && current.uid !== owner.metadata.uid) throw new AlreadyOwnedError(existing, current);
}
