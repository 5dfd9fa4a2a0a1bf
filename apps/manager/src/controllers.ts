import {
  Cache,
  CACHE_INSTANCE_AGENT_RBAC,
  CACHE_RBAC,
  setupCacheController,
} from '@regulon/cache-controller';
import {
  Database,
  DatabaseBackup,
  DATABASE_BACKUP_RBAC,
  DATABASE_RBAC,
  databaseCRD,
  INSTANCE_AGENT_RBAC,
  setupDatabaseController,
  setupDatabaseWebhooks,
} from '@regulon/database-controller';
import type { KubeConfigSource } from '@regulon/client';
import { MyApp, MYAPP_RBAC, setupMyAppController, setupMyAppWebhooks } from '@regulon/myapp-controller';
import type { ImageCatalog } from '@regulon/image-catalog';
import type { Manager, WebhookServer } from '@regulon/runtime';
import type { CrdConversion, CustomResourceDefinition, Kind } from '@regulon/crd';
// regulon:scaffold:controller-imports

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
  /** The manager's own kubeconfig (--kubeconfig), for what goes beyond its client: exec into Pods. */
  kubeConfig?: KubeConfigSource | undefined;
  /** The image the instance agent is copied from (--instance-agent-image); undefined: no agent. */
  instanceAgentImage?: string | undefined;
}

/** Every controller the manager can run, by the name its feature flags use. */
export interface ControllerRegistration {
  name: string;
  description: string;
  /** The kinds it serves: deploy/crds holds a CRD for each (`npm run generate`). */
  kinds: ReadonlyArray<Pick<Kind, 'crdName' | 'crd' | 'kind' | 'apiVersion'>>;
  setup(mgr: Manager, options: ControllerSetupOptions): void;
  /**
   * What the controller does to the API, cluster-wide: the manager's
   * ClusterRole is generated from these (deploy/rbac, `npm run generate`).
   * Leader election's Lease is the manager's, not a controller's.
   */
  rbac: readonly PolicyRule[];
  /**
   * Its kinds that have several versions: each a CRD serving them all,
   * converted by the manager's webhook server at `conversion`. It replaces the
   * kind's one-version CRD in deploy/crds.
   */
  versionedCRDs?: ReadonlyArray<(conversion: CrdConversion) => CustomResourceDefinition>;
  /**
   * Its webhooks, registered on the manager's webhook server when one runs
   * (--webhook-bind-address): conversions, and admission webhooks that the
   * configurations of deploy/webhook turn on.
   */
  webhooks?: (server: WebhookServer) => void;
}

export const CONTROLLERS: readonly ControllerRegistration[] = [
  {
    name: 'database',
    description: 'Database: postgres/mariadb/mysql StatefulSets, and their DatabaseBackups',
    // DatabaseBackups (and backups to an object store) come with it: a Database's status follows them.
    kinds: [Database, DatabaseBackup],
    setup: (mgr, options) => setupDatabaseController(mgr, { ...options, backups: true }),
    // deploy/ runs the engines under the instance agent (--instance-agent-image=self): its rules too.
    rbac: [...DATABASE_RBAC, ...DATABASE_BACKUP_RBAC, ...INSTANCE_AGENT_RBAC],
    versionedCRDs: [databaseCRD],
    webhooks: setupDatabaseWebhooks,
  },
  {
    name: 'cache',
    description: 'Cache: redis/memcached Deployments or StatefulSets',
    kinds: [Cache],
    setup: setupCacheController,
    rbac: [...CACHE_RBAC, ...CACHE_INSTANCE_AGENT_RBAC],
  },
  {
    name: 'myapp',
    description: 'MyApp: an application with its own Database and Cache',
    kinds: [MyApp],
    setup: setupMyAppController,
    rbac: MYAPP_RBAC,
    webhooks: setupMyAppWebhooks,
  },
  // regulon:scaffold:controllers (nx g @regulon/create:controller adds entries above this line)
];
