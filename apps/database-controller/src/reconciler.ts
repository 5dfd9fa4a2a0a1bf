import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { Kinds, isNotFound, metadataOnly } from '@regulon/client';
import { ensurePrimaryLease } from '@regulon/conventions';
import type { ImageCatalog } from '@regulon/image-catalog';
import {
  CHILD_CONFLICT,
  ChildConflictError,
  generatePassword,
  ProblemError,
  quantityValue,
  type Context,
  type ReconcileFunc,
} from '@regulon/runtime';
import type { DatabaseObject } from './api.ts';
import {
  createdClaimSize,
  desiredChildren,
  generatedCredentials,
  image,
  NO_BACKUP_DESTINATION,
  NO_BACKUP_DESTINATION_REPORT,
  replicationCredentials,
  runsAgent,
  throwawayBackups,
  topologyCarriesSpec,
  topologyConfigMap,
  type DesiredChild,
} from './children.ts';
import {
  firstTopology,
  instanceCount,
  recordedTopology,
  reconcileReplication,
  ReplicationMemory,
  type ReplicationView,
} from './replication/replication.ts';
import { InvalidParametersError } from './config.ts';
import {
  checkMetricsQueries,
  METRICS_QUERIES_CONDITION,
  METRICS_QUERIES_INVALID_EVENT,
} from './metrics-queries.ts';
import { EngineQueryCheck } from './metrics-queries-engine.ts';
import { childNames, labels } from './names.ts';
import { engineOf } from './engines/index.ts';
import { ensureRecoverySecret, type Stanzas } from './backup/database.ts';
import { DatabaseBackup } from './backup/api.ts';
import { ensureScheduledBackup } from './backup/schedule.ts';
import { BACKUPS_BY_DATABASE } from './status.ts';

export const FIELD_MANAGER = 'regulon-database';
/** Pods are read as metadata only (their role is a label), Secrets too: credentials are never held in memory. */
export const PodMetadata = metadataOnly(Kinds.Pod);
export const SecretMetadata = metadataOnly(Kinds.Secret);

/**
 * What the Database controller does for backups (postgres, spec.backup.objectStore):
 * whether the manager runs the DatabaseBackup controller (so DatabaseBackups
 * can be read), and the stanzas it creates on the primaries.
 */
export interface BackupSupport {
  backupsWatched: boolean;
  stanzas: Stanzas | undefined;
}

/**
 * Reconciles one Database: credentials first (a referenced Secret must exist,
 * a generated one is created once and never rewritten), then the recovery
 * Secret of a restore, the children by server-side apply, the Pods' roles,
 * the archive's stanza and the volumes' size. Whatever stops it is a
 * ProblemError, reported by the runtime in the status.
 */
export function reconcileDatabase(
  catalog: ImageCatalog,
  views: WeakMap<Context, ReplicationView> = new WeakMap(),
  memory: ReplicationMemory = new ReplicationMemory(),
  backup: BackupSupport = { backupsWatched: false, stanzas: undefined },
  agentImage?: string,
  queryCheck: EngineQueryCheck = new EngineQueryCheck(),
): ReconcileFunc<DatabaseObject> {
  return async (db, ctx) => {
    const engine = engineOf(db);
    // First: whatever else stops this reconcile, it is said.
    reportThrowawayBackups(db, ctx);
    reportMetricsQueries(db, ctx);
    await ensureCredentials(db, ctx);
    if (engine.replication) await ensureReplicationCredentials(db, ctx);
    // Before the StatefulSet: the first Pod restores from what it names instead of running initdb.
    if (engine.keepsRecoverySecret) await ensureRecoverySecret(db, ctx, backup.backupsWatched);
    // A version the catalog lacks runs nothing new: the StatefulSet keeps the image it has.
    const imageRef = image(db, catalog);
    if (!imageRef)
      throw new ProblemError({
        reason: 'VersionNotInCatalog',
        message: `${catalog.unsupported(db.spec.engine, db.spec.version)}. Set spec.version to one of those, or add the version to the image catalog.`,
      });
    const { topology: recorded, data: recordedData } = await recordedTopology(db, ctx);
    const topology = recorded ?? firstTopology(db);
    // Read once: the claim size it was created with, and how many Pods it runs.
    const sts = ctx.get(Kinds.StatefulSet, childNames(db).statefulSet);
    const children = renderChildren(
      db,
      createdClaimSize(sts),
      imageRef,
      instanceCount(db, topology),
      agentImage,
    );
    // The Pods read the topology when they start: it exists before they do. Only ever
    // created here; changes are the replication plan's, never a re-render. The recorded one is
    // written again only to carry a new spec.replication.divergedData or instance count (the
    // agents' quorum answer reads it, MARIADB_QUORUM_COMMAND).
    if (!recorded || !topologyCarriesSpec(db, recordedData))
      await ctx.apply([topologyConfigMap(db, topology)]);
    // The primary Lease too: the agents may only read and renew it (see agentRules).
    const lease = runsAgent(db, agentImage)
      ? {
          read: await ensurePrimaryLease(
            ctx.client,
            { apiVersion: db.apiVersion ?? 'regulon.dev/v1beta1', kind: 'Database', metadata: db.metadata },
            {
              name: childNames(db).primaryLease,
              labels: labels(db),
              signal: ctx.signal,
            },
          ),
          failsafe: engine.agent?.quorumCommand !== undefined,
        }
      : undefined;
    await ctx.apply(children.flatMap((c) => (c.object ? [c.object] : [])));
    for (const c of children) if (!c.object) await ctx.delete(c.type, c.name);
    const { view, requeueAfter } = await reconcileReplication(
      db,
      ctx,
      topology,
      memory,
      engine.replication?.driver,
      undefined,
      lease,
    );
    views.set(ctx, view);
    // The user-defined metrics queries put to the primary's engine (when they or it changed).
    await queryCheck.ensure(db, ctx, view, engine.replication?.driver);
    // What only the kubelet and the instance's log know: a restore that cannot find its backup,
    // a server that refuses its configuration. Degraded, not stalled: a fixed spec heals it.
    for (const t of view.troubles)
      ctx.report({ reason: 'InstanceFailing', message: `Instance ${t.pod}: ${t.message}`, stalled: false });
    reportDiscarded(db, view, ctx);
    await growVolumes(db, createdClaimSize(sts), ctx);
    const archiveRetry = await ensureStanza(db, ctx, view, backup.stanzas);
    const nextSlot = await scheduleBackups(db, ctx, backup.backupsWatched);
    const next = [requeueAfter, archiveRetry, nextSlot].filter((t): t is number => t !== undefined);
    return next.length ? { requeueAfter: Math.min(...next) } : undefined;
  };
}

/**
 * A Warning Event for each instance that says it discarded what it held
 * beyond the primary's history when it rejoined (spec.replication.divergedData
 * Discard), once: when the status does not say it yet. The status keeps it in
 * status.instances[].discarded.
 */
function reportDiscarded(db: DatabaseObject, view: ReplicationView, ctx: Context): void {
  for (const [pod, o] of view.observations) {
    if (!o.reachable || !o.discarded) continue;
    const said = db.status?.instances?.find((i) => i.name === pod)?.discarded;
    if (said !== o.discarded)
      ctx.warn('DivergedTransactionsDiscarded', `Instance ${pod}, a former primary: ${o.discarded}`);
  }
}

/**
 * A Warning Event for a Database whose backups go nowhere (stored before the
 * CRD refused that form): once, when its status does not say so yet; from
 * then on BackupSucceeded (NoBackupDestination) says it. Its dump CronJob
 * keeps running: see desiredBackupCronJob.
 */
function reportThrowawayBackups(db: DatabaseObject, ctx: Context): void {
  if (!throwawayBackups(db)) return;
  const said = db.status?.conditions?.some(
    (c) => c.type === 'BackupSucceeded' && c.reason === NO_BACKUP_DESTINATION,
  );
  if (!said) ctx.warn(NO_BACKUP_DESTINATION, NO_BACKUP_DESTINATION_REPORT);
}

/**
 * A Warning Event when the user-defined metrics queries have a problem the status does not state
 * yet (the MetricsQueriesValid condition, set from the same check): once per problem, not at each
 * reconcile, and not again after a manager restart. Nothing else: the reconcile goes on.
 */
function reportMetricsQueries(db: DatabaseObject, ctx: Context): void {
  const check = checkMetricsQueries(db, (name) => ctx.get(Kinds.ConfigMap, name));
  if (!check || check.status === 'True') return;
  const said = db.status?.conditions?.some(
    (c) =>
      c.type === METRICS_QUERIES_CONDITION &&
      c.status === 'False' &&
      c.reason === check.reason &&
      c.message === check.message,
  );
  if (!said) ctx.warn(METRICS_QUERIES_INVALID_EVENT, check.message);
}

/**
 * The archive's stanza, on the primary once it serves (its Pod ready) and, when replicated, is
 * seen to accept writes, then its archiver: when to look again. A standby being promoted is ready
 * before it writes; pgBackRest refuses a stanza there, and a refusal waits a minute to try again.
 */
async function ensureStanza(
  db: DatabaseObject,
  ctx: Context,
  view: ReplicationView,
  stanzas: Stanzas | undefined,
): Promise<number | undefined> {
  if (!stanzas || !engineOf(db).archiveNeedsStanza || !db.spec.backup?.objectStore) return undefined;
  const primary = view.members.find((m) => m.pod === view.plan.currentPrimary);
  if (!primary?.ready) return undefined;
  // Observed only when replicated: a single instance is the primary it started as.
  const seen = view.observations.get(primary.pod);
  if (seen && !(seen.reachable && seen.server.writable)) return undefined;
  return stanzas.ensure(db, ctx, { pod: primary.pod, uid: primary.uid });
}

/**
 * spec.backup.schedule with an object store: a DatabaseBackup per slot (see
 * backup/schedule.ts); returns how long until the next slot.
 */
async function scheduleBackups(
  db: DatabaseObject,
  ctx: Context,
  backupsWatched: boolean,
): Promise<number | undefined> {
  const backup = db.spec.backup;
  if (!backupsWatched || !engineOf(db).backupTool || !backup?.objectStore || !backup.enabled)
    return undefined;
  const existing = ctx.list(DatabaseBackup, {
    namespace: db.metadata.namespace,
    index: { name: BACKUPS_BY_DATABASE, value: db.metadata.name! },
  });
  return ensureScheduledBackup(db, ctx, existing);
}

/** desiredChildren, with parameters the engine can't take reported as a problem: nothing is applied. */
function renderChildren(
  db: DatabaseObject,
  createdSize: string | undefined,
  imageRef: string,
  instances: number,
  agentImage: string | undefined,
): DesiredChild[] {
  try {
    return desiredChildren(db, createdSize, imageRef, instances, agentImage);
  } catch (err) {
    if (err instanceof InvalidParametersError)
      throw new ProblemError({ reason: err.reason, message: err.message });
    throw err;
  }
}

async function ensureCredentials(db: DatabaseObject, ctx: Context): Promise<void> {
  const name = childNames(db).credentials;
  if (db.spec.credentials?.secretName) {
    if (ctx.get(SecretMetadata, name)) return;
    throw new ProblemError({
      reason: 'CredentialsSecretMissing',
      message: `Secret ${name} named in spec.credentials.secretName does not exist in ${db.metadata.namespace}`,
    });
  }
  const outcome = await ctx
    .createOnce(childNames(db).credentials, () => generatedCredentials(db, generatePassword()), {
      inUse: () => hasDataVolume(db, ctx),
    })
    .catch((err: unknown) => {
      if (!(err instanceof ChildConflictError)) throw err;
      // Deleting the foreign Secret is what lets the Database proceed; no owner reference leads back here.
      ctx.waitFor(err.type, err.namespace, err.childName);
      // A Secret a person made for this Database is used once it is named as theirs.
      throw new ProblemError({
        reason: CHILD_CONFLICT,
        message: `${err.message} To use it as this Database's credentials, set spec.credentials.secretName: ${name}.`,
      });
    });
  if (outcome === 'lost')
    throw new ProblemError({
      reason: 'CredentialsSecretLost',
      message: `Secret ${name} with the generated credentials is gone, but the data volume still uses its password: restore the Secret ${name} from a backup. A new password would not open the existing data, so none is generated.`,
    });
}

/**
 * The replication role's password (an engine that replicates), created once: the data
 * directory holds the role with this password, so a lost Secret is reported,
 * never replaced.
 */
async function ensureReplicationCredentials(db: DatabaseObject, ctx: Context): Promise<void> {
  const name = childNames(db).replicationCredentials;
  const outcome = await ctx.createOnce(name, () => replicationCredentials(db, generatePassword()), {
    inUse: () => hasDataVolume(db, ctx),
  });
  if (outcome === 'lost')
    throw new ProblemError({
      reason: 'ReplicationSecretLost',
      message: `Secret ${name} with the replication password is gone, but the data volumes still use it: restore the Secret ${name} from a backup. A new password would not match the role in the data, so none is generated.`,
    });
}

/**
 * Whether a data volume of this Database exists: postgres and mysql write the
 * password into the data directory once, when they initialise it, and ignore
 * it afterwards, so a volume outlives any new password. The PVCs are the
 * truth (they outlive the StatefulSet: retention Retain), read by GET rather
 * than from a cache: this runs only while the credentials Secret is absent
 * (at creation, or once it is lost), and a cache that has not yet seen a
 * claim would answer "no data", which is the one answer that must not be
 * wrong. The StatefulSet creates ordinal 0's claim first and removes it
 * last, so any existing claim among 0..replicas-1 is found.
 */
async function hasDataVolume(db: DatabaseObject, ctx: Context): Promise<boolean> {
  for (let i = 0; i < db.spec.replicas; i++) if (await claim(db, i, ctx)) return true;
  return false;
}

/** The data volume claim of ordinal `i`, from the API server; undefined when it does not exist. */
function claim(db: DatabaseObject, i: number, ctx: Context): Promise<V1PersistentVolumeClaim | undefined> {
  return ctx.client
    .resource(Kinds.PersistentVolumeClaim)
    .get(`data-${childNames(db).statefulSet}-${i}`, { namespace: db.metadata.namespace!, signal: ctx.signal })
    .catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
}

/** Storage grows on the PVCs themselves; the StatefulSet template can't change. */
async function growVolumes(db: DatabaseObject, created: string | undefined, ctx: Context): Promise<void> {
  const want = String(db.spec.storage.size);
  // Volumes start at the template's size: until the spec asks for more, there is nothing to read.
  if (!created || quantityValue(want) <= quantityValue(created)) return;
  for (let i = 0; i < db.spec.replicas; i++) {
    const pvc = await claim(db, i, ctx);
    const name = pvc?.metadata?.name;
    const have = pvc?.spec?.resources?.requests?.['storage'];
    if (!name || !have || have === want || quantityValue(want) <= quantityValue(have)) continue;
    await ctx.client
      .resource(Kinds.PersistentVolumeClaim)
      .patch(
        name,
        { spec: { resources: { requests: { storage: want } } } },
        { type: 'merge', namespace: db.metadata.namespace!, signal: ctx.signal },
      );
    ctx.log.info({ pvc: name, from: have, to: want }, 'growing volume');
  }
}
