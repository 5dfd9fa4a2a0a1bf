import { Kinds, type KubeObject } from '@regulon/client';
import {
  failoverQuorumReporter,
  MANAGED_BY,
  laggingReporter,
  reachabilityReporter,
} from '@regulon/conventions';
import type { ImageCatalog } from '@regulon/image-catalog';
import type { CacheReader, Context, Manager } from '@regulon/runtime';
import { Database } from './api.ts';
import { metricsQueriesConfigMaps } from './metrics-queries.ts';
import { EngineQueryCheck } from './metrics-queries-engine.ts';
import { MAX_NAME_LENGTH } from './names.ts';
import { FIELD_MANAGER, PodMetadata, reconcileDatabase, SecretMetadata } from './reconciler.ts';
import { BACKUPS_BY_DATABASE, computeStatus, observedFrom } from './status.ts';
import type { KubeConfigSource } from '@regulon/client';
import { DatabaseBackup } from './backup/api.ts';
import { archiverReporter } from './backup/archiver-metrics.ts';
import { Stanzas } from './backup/database.ts';
import { PodExec, type Executor } from './backup/exec.ts';
import { setupDatabaseBackupController } from './backup/controller.ts';
import type { ReplicationView } from './replication/replication.ts';
import { OFFICIAL_IMAGES } from './versions.ts';
import { synchronousStandbysReporter } from './replication/synchronous-metric.ts';

export {
  Database,
  DatabaseSpec,
  DatabaseSpecV1alpha1,
  DatabaseStatus,
  DatabaseV1alpha1,
  GROUP,
  type DatabaseObject,
  type DatabaseV1alpha1Object,
} from './api.ts';
export {
  DATABASE_V1ALPHA1_CONVERSION,
  databaseCRD,
  setupDatabaseConversion,
  specToHub as databaseSpecToHub,
} from './conversion.ts';
export { FIELD_MANAGER, reconcileDatabase } from './reconciler.ts';
export { createdClaimSize, desiredChildren, generatedCredentials, type DesiredChild } from './children.ts';
export { computeStatus, observedFrom, type Observed } from './status.ts';
export { ENGINE_VERSIONS, OFFICIAL_IMAGES, RESERVED_PARAMETERS } from './versions.ts';
export { MAX_NAME_LENGTH, childNames } from './names.ts';
export { DATABASE_RBAC, DATABASE_BACKUP_RBAC, INSTANCE_AGENT_RBAC } from './rbac.ts';
export { setupDatabaseWebhooks } from './webhook.ts';
export { DatabaseBackup, type DatabaseBackupObject } from './backup/api.ts';
export { setupDatabaseBackupController, BACKUP_CONTROLLER_NAME } from './backup/controller.ts';
export { FORCE_PROMOTE_ANNOTATION, SWITCHOVER_ANNOTATION } from './replication/replication.ts';
export {
  FENCED_CONDITION,
  FENCED_INSTANCES_ANNOTATION,
  FENCED_POD_ANNOTATION,
  formatFencedInstances,
  INVALID_FENCING,
  parseFencedInstances,
  type FenceRequest,
} from './fencing.ts';

export const CONTROLLER_NAME = 'database';
/** Databases filed under the Secret their spec.credentials.secretName names. */
const BY_CREDENTIALS = 'database.spec.credentials.secretName';
/** Databases filed under the ConfigMaps their spec.monitoring.customQueriesConfigMap names. */
const BY_METRICS_QUERIES = 'database.spec.monitoring.customQueriesConfigMap';

export interface DatabaseControllerOptions {
  maxConcurrentReconciles?: number;
  /** Which image runs which version (default: the official images, OFFICIAL_IMAGES). */
  imageCatalog?: ImageCatalog | undefined;
  /**
   * Also run the DatabaseBackup controller, and let the Databases' status
   * follow their DatabaseBackups (BackupSucceeded, lastBackup) and restore
   * from them (spec.bootstrap.recovery.backup). Needs the DatabaseBackup CRD
   * installed: its informer would never sync without it.
   */
  backups?: boolean | undefined;
  /** The manager's kubeconfig, for exec into the instances (pgBackRest); default: as KubeClient.load finds it. */
  kubeConfig?: KubeConfigSource | undefined;
  /** Runs commands in the instances (tests); default PodExec over kubeConfig. */
  executor?: Executor | undefined;
  /**
   * The image the instance agent is copied from (the manager's own): with it, the Pods of an
   * engine that has an agent (postgres) run under it, and a primary is promoted only through
   * the primary Lease the agents hold. Without it they run as before.
   */
  instanceAgentImage?: string | undefined;
}

/** Registers the Database controller with a manager. */
export function setupDatabaseController(mgr: Manager, options: DatabaseControllerOptions = {}): void {
  const catalog = options.imageCatalog ?? OFFICIAL_IMAGES;
  // What a reconcile saw of the instances, handed to the status it ends with.
  const views = new WeakMap<Context, ReplicationView>();
  // What the primaries' engines said of the user-defined metrics queries, for the status.
  const queryCheck = new EngineQueryCheck();
  const backupsWatched = options.backups === true;
  const executor = options.executor ?? new PodExec(options.kubeConfig);
  const stanzas = new Stanzas(executor);
  const reportReachability = reachabilityReporter(mgr.registry, 'Database');
  const reportLagging = laggingReporter(mgr.registry, 'Database');
  const reportQuorum = failoverQuorumReporter(mgr.registry, 'Database');
  const reportSynchronous = synchronousStandbysReporter(mgr.registry);
  const reportArchiver = archiverReporter(mgr.registry);
  const builder = mgr
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
    // A queries ConfigMap that appears or changes moves MetricsQueriesValid.
    .watches(Kinds.ConfigMap, (cm, cache) => byIndex(cm, cache, BY_METRICS_QUERIES))
    .index(Database, BY_METRICS_QUERIES, metricsQueriesConfigMaps)
    .watches(PodMetadata, byInstance)
    .watches(Kinds.Job, byInstance);
  // The agents' Role and RoleBinding, only where the agent runs: an installation without it may not
  // grant their RBAC (INSTANCE_AGENT_RBAC), and an informer without it would never sync.
  if (options.instanceAgentImage) builder.owns(Kinds.Role).owns(Kinds.RoleBinding);
  if (backupsWatched)
    builder
      // A DatabaseBackup that finishes moves BackupSucceeded; one that succeeds lets a restore from it start.
      .watches(DatabaseBackup, (b, cache) => [
        { namespace: b.metadata.namespace!, name: b.spec.database },
        ...restoringFrom(b, cache),
      ])
      .index(DatabaseBackup, BACKUPS_BY_DATABASE, (b) => [b.spec.database])
      .index(Database, BY_RECOVERY_BACKUP, (db) =>
        db.spec.bootstrap?.recovery?.backup ? [db.spec.bootstrap.recovery.backup] : [],
      );
  builder
    .withOptions({
      fieldManager: FIELD_MANAGER,
      maxConcurrentReconciles: options.maxConcurrentReconciles ?? 1,
    })
    .withStatus((db, problem, ctx) => {
      const replication = views.get(ctx);
      if (replication?.replicated) {
        reportReachability(db, db.status?.conditions, replication.plan, ctx);
        reportQuorum(db, db.status?.conditions, replication.plan, ctx);
      }
      reportSynchronous(db, replication);
      reportArchiver(db, stanzas.archiver(db));
      const status = computeStatus(db, {
        ...observedFrom(db, ctx, catalog, backupsWatched),
        agentImage: options.instanceAgentImage,
        problem,
        replication,
        archiving: stanzas.archiving(db),
        engineAnswer: queryCheck.answer(db, ctx, replication),
      });
      if (replication?.replicated) reportLagging(db, status.instances);
      return status;
    })
    .reconcile(
      reconcileDatabase(
        catalog,
        views,
        undefined,
        { backupsWatched, stanzas },
        options.instanceAgentImage,
        queryCheck,
      ),
    );
  if (backupsWatched)
    setupDatabaseBackupController(mgr, {
      executor,
      ...(options.maxConcurrentReconciles
        ? { maxConcurrentReconciles: options.maxConcurrentReconciles }
        : {}),
    });
}

/** Databases filed under the DatabaseBackup their spec.bootstrap.recovery.backup names. */
const BY_RECOVERY_BACKUP = 'database.spec.bootstrap.recovery.backup';

/** The Databases that restore from this DatabaseBackup: they wait for it to succeed. */
function restoringFrom(
  b: KubeObject & { metadata: { name?: string; namespace?: string } },
  cache: CacheReader,
) {
  const { name, namespace } = b.metadata;
  if (!name || !namespace) return [];
  return cache
    .list(Database, { namespace, index: { name: BY_RECOVERY_BACKUP, value: name } })
    .map((db) => ({ namespace, name: db.metadata.name! }));
}

/** Pods and backup Jobs wake the Database they are labelled with. */
function byInstance(obj: KubeObject) {
  const instance = obj.metadata?.labels?.['app.kubernetes.io/instance'];
  const managed = obj.metadata?.labels?.['app.kubernetes.io/managed-by'] === MANAGED_BY;
  return instance && managed && obj.metadata?.namespace
    ? [{ namespace: obj.metadata.namespace, name: instance }]
    : [];
}

/** Databases filed under this object's name in `index`. */
function byIndex(obj: KubeObject, cache: CacheReader, index: string) {
  const { name, namespace } = obj.metadata ?? {};
  if (!name || !namespace) return [];
  return cache
    .list(Database, { namespace, index: { name: index, value: name } })
    .map((db) => ({ namespace, name: db.metadata.name! }));
}

/** Databases that name this Secret in spec.credentials.secretName: they wait for it to appear. */
function referencingDatabases(secret: KubeObject, cache: CacheReader) {
  const { name, namespace } = secret.metadata ?? {};
  if (!name || !namespace) return [];
  return cache
    .list(Database, { namespace, index: { name: BY_CREDENTIALS, value: name } })
    .map((db) => ({ namespace, name: db.metadata.name! }));
}
