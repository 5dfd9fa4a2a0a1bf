import { CACHE_RBAC, setupCacheController } from '@regulon/cache-controller';
import { DATABASE_RBAC, setupDatabaseController } from '@regulon/database-controller';
import { MYAPP_RBAC, setupMyAppController } from '@regulon/myapp-controller';
import type { ImageCatalog } from '@regulon/image-catalog';
import type { Manager } from '@regulon/runtime';

/**
 * One RBAC rule (rbac.authorization.k8s.io/v1 PolicyRule): the structural
 * subset of @kubernetes/client-node's V1PolicyRule, so a controller can
 * declare its rules with that type and the manager needs no extra dependency.
 */
export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}

export interface ControllerSetupOptions {
  maxConcurrentReconciles: number;
  /** The images of engine versions; undefined: each controller's official images. */
  imageCatalog?: ImageCatalog | undefined;
}

/** Every controller the manager can run, by the name its feature flags use. */
export interface ControllerRegistration {
  name: string;
  description: string;
  setup(mgr: Manager, options: ControllerSetupOptions): void;
  /**
   * What the controller does to the API, cluster-wide: the manager's
   * ClusterRole is generated from these (deploy/rbac, `npm run generate`).
   * Leader election's Lease is the manager's, not a controller's.
   */
  rbac: readonly PolicyRule[];
}

export const CONTROLLERS: readonly ControllerRegistration[] = [
  {
    name: 'database',
    description: 'Database: postgres/mysql StatefulSets',
    setup: setupDatabaseController,
    rbac: DATABASE_RBAC,
  },
  {
    name: 'cache',
    description: 'Cache: redis/memcached Deployments or StatefulSets',
    setup: setupCacheController,
    rbac: CACHE_RBAC,
  },
  {
    name: 'myapp',
    description: 'MyApp: an application with its own Database and Cache',
    setup: setupMyAppController,
    rbac: MYAPP_RBAC,
  },
];
