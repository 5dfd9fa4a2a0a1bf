import type { V1OwnerReference } from '@kubernetes/client-node';
import type { KubeObject, ResourceType } from '@regulon/client';

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
 * Thrown when a child's name is taken by an object this owner does not
 * control: one another controller owns, or one nobody owns (a person's own
 * ConfigMap named like the child). Adopting it would steal or overwrite it,
 * and deleting the owner would then delete it, so nothing is written: the
 * caller reports the conflict (ChildConflict) instead.
 */
export class ChildConflictError extends Error {
  /** The kind of the taken name, so the caller can watch for it to be freed. */
  readonly type: ResourceType;
  readonly namespace: string | undefined;
  readonly childName: string;
  /** The existing object's controller, if it has one; undefined for an object nobody controls. */
  readonly existingOwner: V1OwnerReference | undefined;
  constructor(type: ResourceType, existing: KubeObject, owner: Owner) {
    const ns = existing.metadata?.namespace;
    const name = existing.metadata?.name ?? '';
    const current = controllerOf(existing);
    const held = current ? `is controlled by ${current.kind} ${current.name}` : 'was not created by it';
    super(
      `${type.kind} ${ns ? `${ns}/` : ''}${name} already exists and ${held}, not by ${owner.kind} ${owner.metadata.name}; leaving it untouched. Delete or rename it to let ${owner.kind} ${owner.metadata.name} create its own.`,
    );
    this.name = 'ChildConflictError';
    this.type = type;
    this.namespace = ns;
    this.childName = name;
    this.existingOwner = current;
  }
}

/**
 * Throws ChildConflictError if `existing` (the live object, if any) is not
 * controlled by `owner`: never adopt, never overwrite what this owner did not
 * create.
 */
export function assertCanControl(type: ResourceType, existing: KubeObject | undefined, owner: Owner): void {
  if (existing && !isControlledBy(existing, owner)) throw new ChildConflictError(type, existing, owner);
}
