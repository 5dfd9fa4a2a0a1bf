import { Kinds, type KubeObject } from '@regulon/client';
import type { ImageCatalog } from '@regulon/image-catalog';
import type { Manager } from '@regulon/runtime';
import { Cache, type CacheObject } from './api.ts';
import { CacheReconciler } from './reconciler.ts';

export {
  Cache,
  CacheSpec,
  CacheStatus,
  GROUP,
  MAX_MEMORY,
  MIN_MEMORY,
  PERSISTENCE_OFF_MESSAGE,
  PERSISTENCE_ON_MESSAGE,
  type CacheObject,
} from './api.ts';
export { CacheReconciler, FIELD_MANAGER } from './reconciler.ts';
export { DEFAULT_EVICTION_POLICY, ENGINE_VERSIONS, EVICTION_POLICIES, OFFICIAL_IMAGES } from './versions.ts';
export { MAX_NAME_LENGTH, childNames } from './names.ts';
export { CACHE_RBAC } from './rbac.ts';

export const CONTROLLER_NAME = 'cache';

export interface CacheControllerOptions {
  maxConcurrentReconciles?: number;
  /** Which image runs which version (default: the official images, OFFICIAL_IMAGES). */
  imageCatalog?: ImageCatalog | undefined;
}

/** Registers the Cache controller with a manager. */
export function setupCacheController(mgr: Manager, options: CacheControllerOptions = {}): void {
  const reconciler = new CacheReconciler(mgr, mgr.eventRecorder(CONTROLLER_NAME), options.imageCatalog);
  mgr
    .controller(CONTROLLER_NAME)
    .for(Cache.type)
    // Whole objects: their status is what Ready is computed from.
    .owns(Kinds.Deployment)
    .owns(Kinds.StatefulSet)
    .owns(Kinds.Service)
    .owns(Kinds.ConfigMap)
    .owns(Kinds.PodDisruptionBudget)
    // Secrets only as metadata: the controller never holds a password in memory.
    .owns(Kinds.Secret, { metadataOnly: true })
    .watches(Kinds.Secret, (s) => referencingCaches(mgr, s), { metadataOnly: true })
    .withOptions({ maxConcurrentReconciles: options.maxConcurrentReconciles ?? 1 })
    .complete(reconciler);
}

/** Caches that name this Secret in spec.auth.secretName: they wait for it to appear. */
function referencingCaches(mgr: Manager, secret: KubeObject) {
  const ns = secret.metadata?.namespace;
  if (!ns) return [];
  return mgr
    .informerFor<CacheObject>(Cache.type)
    .list(ns)
    .filter((c) => c.spec.auth?.secretName === secret.metadata?.name)
    .map((c) => ({ namespace: ns, name: c.metadata.name! }));
}
