import { Kinds, metadataOnly, type KubeObject } from '@regulon/client';
import { MANAGED_BY, laggingReporter, reachabilityReporter } from '@regulon/conventions';
import type { ImageCatalog } from '@regulon/image-catalog';
import type { CacheReader, Context, Manager, Request } from '@regulon/runtime';
import { Cache } from './api.ts';
import { MAX_NAME_LENGTH, replicated } from './names.ts';
import { FIELD_MANAGER, reconcileCache, SECRETS } from './reconciler.ts';
import { computeStatus, observedFrom } from './status.ts';
import type { ReplicationView } from './replication/replication.ts';
import { OFFICIAL_IMAGES } from './versions.ts';

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
export { FIELD_MANAGER, reconcileCache } from './reconciler.ts';
export { DEFAULT_EVICTION_POLICY, ENGINE_VERSIONS, EVICTION_POLICIES, OFFICIAL_IMAGES } from './versions.ts';
export { MAX_NAME_LENGTH, childNames } from './names.ts';
export { CACHE_INSTANCE_AGENT_RBAC, CACHE_RBAC } from './rbac.ts';

export const CONTROLLER_NAME = 'cache';

export interface CacheControllerOptions {
  maxConcurrentReconciles?: number;
  /** Which image runs which version (default: the official images, OFFICIAL_IMAGES). */
  imageCatalog?: ImageCatalog | undefined;
  /**
   * The image the instance agent is copied from (the manager's); undefined: no agent. With it, a
   * replicated redis runs under the agent, which holds its primary Lease (CACHE_INSTANCE_AGENT_RBAC).
   */
  instanceAgentImage?: string | undefined;
}

/** The index of Caches by the Secret they name in spec.auth.secretName (`<namespace>/<name>`). */
const AUTH_SECRET_INDEX = 'spec.auth.secretName';

/** Registers the Cache controller with a manager. */
/** Pods as metadata: a replicated redis's Pod that starts, stops or changes readiness wakes its Cache. */
const PodMetadata = metadataOnly(Kinds.Pod);

export function setupCacheController(mgr: Manager, options: CacheControllerOptions = {}): void {
  const catalog = options.imageCatalog ?? OFFICIAL_IMAGES;
  const views = new WeakMap<Context, ReplicationView>();
  const reportReachability = reachabilityReporter(mgr.registry, 'Cache');
  const reportLagging = laggingReporter(mgr.registry, 'Cache');
  const builder = mgr
    .controller(CONTROLLER_NAME)
    .for(Cache, { nameLimit: { max: MAX_NAME_LENGTH, derived: 'Pod labels, the headless Service' } })
    // Whole objects: their status is what Ready is computed from, and a child that matches costs no apply.
    .owns(Kinds.Deployment)
    .owns(Kinds.StatefulSet)
    .owns(Kinds.Service)
    .owns(Kinds.ConfigMap)
    .owns(Kinds.PodDisruptionBudget)
    .owns(SECRETS)
    // A referenced Secret that appears (or goes) wakes the Caches that wait for it.
    .index(Cache, AUTH_SECRET_INDEX, (c) =>
      c.spec.auth?.secretName ? [`${c.metadata.namespace}/${c.spec.auth.secretName}`] : [],
    )
    .watches(SECRETS, referencingCaches)
    .watches(PodMetadata, cacheOfPod);
  // The agents' account, Role and RoleBinding, only where the agent runs: an installation without it
  // may not grant their RBAC (CACHE_INSTANCE_AGENT_RBAC), and an informer without it would never sync.
  if (options.instanceAgentImage) builder.owns(Kinds.ServiceAccount).owns(Kinds.Role).owns(Kinds.RoleBinding);
  builder
    .withOptions({
      fieldManager: FIELD_MANAGER,
      maxConcurrentReconciles: options.maxConcurrentReconciles ?? 1,
    })
    .withStatus((cache, problem, ctx) => {
      const replication = views.get(ctx);
      if (replication && replicated(cache))
        reportReachability(cache, cache.status?.conditions, replication.plan, ctx);
      const status = computeStatus(
        cache,
        { ...observedFrom(cache, ctx, catalog, options.instanceAgentImage), replication },
        problem,
      );
      if (replication && replicated(cache)) reportLagging(cache, status.instances);
      return status;
    })
    .reconcile(reconcileCache(catalog, views, undefined, options.instanceAgentImage));
}

/** Caches that name this Secret in spec.auth.secretName: they wait for it to appear. */
function referencingCaches(secret: KubeObject, cache: CacheReader): Request[] {
  const ns = secret.metadata?.namespace;
  const name = secret.metadata?.name;
  if (!ns || !name) return [];
  return cache
    .list(Cache, { namespace: ns, index: { name: AUTH_SECRET_INDEX, value: `${ns}/${name}` } })
    .map((c) => ({ namespace: ns, name: c.metadata.name! }));
}

/** The Cache a Pod belongs to, by its labels (a Cache's Pods carry its name as the instance). */
function cacheOfPod(pod: KubeObject): Request[] {
  const l = pod.metadata?.labels;
  const ns = pod.metadata?.namespace;
  if (
    !ns ||
    l?.['app.kubernetes.io/component'] !== 'cache' ||
    l['app.kubernetes.io/managed-by'] !== MANAGED_BY
  )
    return [];
  const name = l['app.kubernetes.io/instance'];
  return name ? [{ namespace: ns, name }] : [];
}
