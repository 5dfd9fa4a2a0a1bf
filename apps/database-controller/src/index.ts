import { Kinds, type KubeObject } from '@regulon/client';
import type { ImageCatalog } from '@regulon/image-catalog';
import type { Manager } from '@regulon/runtime';
import { Database, type DatabaseObject } from './api.ts';
import { DatabaseReconciler } from './reconciler.ts';

export { Database, DatabaseSpec, DatabaseStatus, GROUP, type DatabaseObject } from './api.ts';
export { DatabaseReconciler, FIELD_MANAGER } from './reconciler.ts';
export { createdClaimSize, desiredChildren, generatedCredentials, type DesiredChild } from './children.ts';
export { computeStatus, type Observed } from './status.ts';
export { ENGINE_VERSIONS, OFFICIAL_IMAGES, RESERVED_PARAMETERS } from './versions.ts';
export { MAX_NAME_LENGTH, childNames } from './names.ts';
export { DATABASE_RBAC } from './rbac.ts';

export const CONTROLLER_NAME = 'database';

export interface DatabaseControllerOptions {
  maxConcurrentReconciles?: number;
  /** Which image runs which version (default: the official images, OFFICIAL_IMAGES). */
  imageCatalog?: ImageCatalog | undefined;
}

/** Registers the Database controller with a manager. */
export function setupDatabaseController(mgr: Manager, options: DatabaseControllerOptions = {}): void {
  const reconciler = new DatabaseReconciler(mgr, mgr.eventRecorder(CONTROLLER_NAME), options.imageCatalog);
  const byInstance = (obj: KubeObject) => {
    const instance = obj.metadata?.labels?.['app.kubernetes.io/instance'];
    const managed = obj.metadata?.labels?.['app.kubernetes.io/managed-by'] === 'regulon';
    return instance && managed && obj.metadata?.namespace
      ? [{ namespace: obj.metadata.namespace, name: instance }]
      : [];
  };
  mgr
    .controller(CONTROLLER_NAME)
    .for(Database.type)
    // Children in full (not metadata only): applyChild compares them with the
    // desired state and sends nothing when they already match.
    .owns(Kinds.StatefulSet)
    .owns(Kinds.Service)
    .owns(Kinds.ConfigMap)
    .owns(Kinds.ServiceAccount)
    .owns(Kinds.PodDisruptionBudget)
    .owns(Kinds.CronJob)
    // Secrets only as metadata: the controller never holds credentials in memory.
    .owns(Kinds.Secret, { metadataOnly: true })
    .watches(Kinds.Secret, (s) => referencingDatabases(mgr, s), { metadataOnly: true })
    .watches(Kinds.Pod, byInstance, { metadataOnly: true })
    .watches(Kinds.Job, byInstance)
    .withOptions({ maxConcurrentReconciles: options.maxConcurrentReconciles ?? 1 })
    .complete(reconciler);
}

/** Databases that name this Secret in spec.credentials.secretName: they wait for it to appear. */
function referencingDatabases(mgr: Manager, secret: KubeObject) {
  const ns = secret.metadata?.namespace;
  if (!ns) return [];
  return mgr
    .informerFor<DatabaseObject>(Database.type)
    .list(ns)
    .filter((db) => db.spec.credentials?.secretName === secret.metadata?.name)
    .map((db) => ({ namespace: ns, name: db.metadata.name! }));
}
