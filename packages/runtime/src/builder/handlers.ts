import type { KubeObject, ResourceType } from '@regulon/client';
import type { CacheReader } from '../reconcile/context.ts';
import type { Request } from '../reconcile/reconcile.ts';

/**
 * Maps a watched object to the requests it should wake. `cache` reads the
 * controller's declared kinds, indexes included (e.g. the Databases whose
 * spec names this Secret).
 */
export type MapFunc<T extends KubeObject = KubeObject> = (obj: T, cache: CacheReader) => Request[];

/** The object's own key (`for`). */
export function enqueueObject(obj: KubeObject): Request[] {
  const name = obj.metadata?.name;
  if (!name) return [];
  return [obj.metadata?.namespace ? { namespace: obj.metadata.namespace, name } : { name }];
}

/**
 * The controller owner of the object (`owns`): the ownerReference with
 * controller: true, if it is of the owner kind. Kubernetes forbids
 * cross-namespace owner references, so a namespaced owner lives in the
 * child's namespace.
 */
export function enqueueControllerOwner(owner: ResourceType): MapFunc {
  const apiGroup = owner.group;
  return (obj) => {
    const ref = obj.metadata?.ownerReferences?.find((r) => r.controller === true);
    if (!ref || ref.kind !== owner.kind) return [];
    const refGroup = ref.apiVersion.includes('/') ? ref.apiVersion.split('/')[0] : '';
    if (refGroup !== apiGroup) return [];
    return [
      owner.namespaced && obj.metadata?.namespace
        ? { namespace: obj.metadata.namespace, name: ref.name }
        : { name: ref.name },
    ];
  };
}
