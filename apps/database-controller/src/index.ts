import { Kinds, type KubeObject } from '@regulon/client';
import { MANAGED_BY } from '@regulon/conventions';
import type { ImageCatalog } from '@regulon/image-catalog';
import type { CacheReader, Context, Manager } from '@regulon/runtime';
import { Database } from './api.ts';
import { MAX_NAME_LENGTH } from './names.ts';
import { FIELD_MANAGER, PodMetadata, reconcileDatabase, SecretMetadata } from './reconciler.ts';
import { computeStatus, observedFrom } from './status.ts';
import type { ReplicationView } from './replication/replication.ts';
import { OFFICIAL_IMAGES } from './versions.ts';

export { Database, DatabaseSpec, DatabaseStatus, GROUP, type DatabaseObject } from './api.ts';
export { FIELD_MANAGER, reconcileDatabase } from './reconciler.ts';
export { createdClaimSize, desiredChildren, generatedCredentials, type DesiredChild } from './children.ts';
export { computeStatus, observedFrom, type Observed } from './status.ts';
export { ENGINE_VERSIONS, OFFICIAL_IMAGES, RESERVED_PARAMETERS } from './versions.ts';
export { MAX_NAME_LENGTH, childNames } from './names.ts';
export { DATABASE_RBAC } from './rbac.ts';

export const CONTROLLER_NAME = 'database';
/** Databases filed under the Secret their spec.credentials.secretName names. */
const BY_CREDENTIALS = 'database.spec.credentials.secretName';

export interface DatabaseControllerOptions {
  maxConcurrentReconciles?: number;
  /** Which image runs which version (default: the official images, OFFICIAL_IMAGES). */
  imageCatalog?: ImageCatalog | undefined;
}

/** Registers the Database controller with a manager. */
export function setupDatabaseController(mgr: Manager, options: DatabaseControllerOptions = {}): void {
  const catalog = options.imageCatalog ?? OFFICIAL_IMAGES;
  // What a reconcile saw of the instances, handed to the status it ends with.
  const views = new WeakMap<Context, ReplicationView>();
  mgr
    .controller(CONTROLLER_NAME)
    .for(Database, { nameLimit: { max: MAX_NAME_LENGTH, derived: 'StatefulSet Pods, backup Jobs' } })
    // Children in full (not metadata only): apply compares them with the
    // desired state and sends nothing when they already match.
    .owns(Kinds.StatefulSet)
    .owns(Kinds.Service)
    .owns(Kinds.ConfigMap)
    .owns(Kinds.ServiceAccount)
    .owns(Kinds.PodDisruptionBudget)
    .owns(Kinds.CronJob)
    .owns(SecretMetadata)
    // A referenced Secret that appears heals the Databases waiting for it.
    .watches(SecretMetadata, referencingDatabases)
    .index(Database, BY_CREDENTIALS, (db) =>
      db.spec.credentials?.secretName ? [db.spec.credentials.secretName] : [],
    )
    .watches(PodMetadata, byInstance)
    .watches(Kinds.Job, byInstance)
    .withOptions({
      fieldManager: FIELD_MANAGER,
      maxConcurrentReconciles: options.maxConcurrentReconciles ?? 1,
    })
    .withStatus((db, problem, ctx) =>
      computeStatus(db, { ...observedFrom(db, ctx, catalog), problem, replication: views.get(ctx) }),
    )
    .reconcile(reconcileDatabase(catalog, views));
}

/** Pods and backup Jobs wake the Database they are labelled with. */
function byInstance(obj: KubeObject) {
  const instance = obj.metadata?.labels?.['app.kubernetes.io/instance'];
  const managed = obj.metadata?.labels?.['app.kubernetes.io/managed-by'] === MANAGED_BY;
  return instance && managed && obj.metadata?.namespace
    ? [{ namespace: obj.metadata.namespace, name: instance }]
    : [];
}

/** Databases that name this Secret in spec.credentials.secretName: they wait for it to appear. */
function referencingDatabases(secret: KubeObject, cache: CacheReader) {
  const { name, namespace } = secret.metadata ?? {};
  if (!name || !namespace) return [];
  return cache
    .list(Database, { namespace, index: { name: BY_CREDENTIALS, value: name } })
    .map((db) => ({ namespace, name: db.metadata.name! }));
}
