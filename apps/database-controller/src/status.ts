import type { V1Job, V1StatefulSet } from '@kubernetes/client-node';
import { Kinds } from '@regulon/client';
import {
  derivePhase,
  notReplicating,
  reachabilityCondition,
  replicationUnsettled,
  REACHABLE_CONDITION,
  rolledOut,
} from '@regulon/conventions';
import type { ImageCatalog } from '@regulon/image-catalog';
import {
  isControlledBy,
  setCondition,
  setProblemConditions,
  type Condition,
  type Context,
  type Live,
  type Problem,
} from '@regulon/runtime';
import type { DatabaseObject } from './api.ts';
import type { ReplicationView } from './replication/replication.ts';
import {
  desiredStatefulSet,
  image,
  NO_BACKUP_DESTINATION,
  NO_BACKUP_DESTINATION_REPORT,
  throwawayBackups,
} from './children.ts';
import { InvalidParametersError } from './config.ts';
import {
  checkMetricsQueries,
  METRICS_QUERIES_CONDITION,
  withEngineAnswer,
  type EngineAnswer,
  type MetricsQueriesCheck,
} from './metrics-queries.ts';
import { childNames, selector } from './names.ts';
import { FENCED_CONDITION, fencedCondition } from './fencing.ts';
import { ENGINE_DEFAULTS } from './versions.ts';
import { DatabaseBackup, type DatabaseBackupObject } from './backup/api.ts';
import { ownRepository } from './backup/repository.ts';

export type DatabaseStatus = NonNullable<DatabaseObject['status']>;

export interface Observed {
  statefulSet: V1StatefulSet | undefined;
  backupJobs: V1Job[];
  problem: Problem | undefined;
  credentialsSecret: string;
  /** The image the catalog gives spec.version (default: the official one); undefined when it has none. */
  image?: string | undefined;
  /** What this reconcile saw of the instances; undefined when it stopped before looking. */
  replication?: ReplicationView | undefined;
  /**
   * The DatabaseBackups of this Database (spec.backup.objectStore); undefined
   * when the manager does not run the DatabaseBackup controller.
   */
  backups?: DatabaseBackupObject[] | undefined;
  /** Whether WAL archiving into the object store is set up (the stanza exists); undefined while unknown. */
  archiving?: { ok: boolean; message: string } | undefined;
  /** The instance agent's image, as the controller runs it (see DatabaseControllerOptions). */
  agentImage?: string | undefined;
  /** What the agents make of spec.monitoring.customQueriesConfigMap; undefined when it names none. */
  metricsQueries?: MetricsQueriesCheck | undefined;
  /**
   * What the primary's engine said of those queries as they are now (metrics-queries-engine.ts);
   * undefined while it has not.
   */
  engineAnswer?: EngineAnswer | undefined;
}

/** DatabaseBackups filed under the Database they back up (the Database controller's index). */
export const BACKUPS_BY_DATABASE = 'database.backups.spec.database';

/** What the status is computed from, as the controller's cache shows it (the problem comes from the reconcile). */
export function observedFrom(
  db: Live<DatabaseObject>,
  ctx: Context,
  catalog: ImageCatalog,
  backupsWatched = false,
): Omit<Observed, 'problem'> {
  const names = childNames(db);
  const sts = ctx.get(Kinds.StatefulSet, names.statefulSet);
  return {
    // A same-named StatefulSet someone else controls says nothing about this Database.
    statefulSet: sts && isControlledBy(sts, db) ? sts : undefined,
    backupJobs: ctx.list(Kinds.Job, {
      labels: { 'app.kubernetes.io/instance': db.metadata.name, 'app.kubernetes.io/component': 'database' },
    }),
    credentialsSecret: names.credentials,
    image: image(db, catalog),
    metricsQueries: checkMetricsQueries(db, (name) => ctx.get(Kinds.ConfigMap, name)),
    ...(backupsWatched
      ? {
          backups: ctx.list(DatabaseBackup, {
            namespace: db.metadata.namespace,
            index: { name: BACKUPS_BY_DATABASE, value: db.metadata.name },
          }),
        }
      : {}),
  };
}

/**
 * The StatefulSet the controller wants now, for the rollout check; undefined
 * when none can be rendered (no image for the version, parameters the engine
 * can't take): then nothing counts as rolled out.
 */
function wantedStatefulSet(db: DatabaseObject, o: Observed): V1StatefulSet | undefined {
  const wanted = 'image' in o ? o.image : image(db);
  if (wanted === undefined) return undefined;
  try {
    return desiredStatefulSet(db, o.credentialsSecret, wanted, undefined, o.agentImage);
  } catch (err) {
    if (err instanceof InvalidParametersError) return undefined;
    throw err;
  }
}

/** Everything the status says, computed from what was observed; written only when it changed. */
export function computeStatus(db: DatabaseObject, o: Observed, now: Date = new Date()): DatabaseStatus {
  const gen = db.metadata.generation ?? 0;
  const prev = db.status ?? {};
  const sts = o.statefulSet;
  const ready = sts?.status?.readyReplicas ?? 0;
  const wanted = wantedStatefulSet(db, o);
  // The desired template (its image included) runs on every replica, and they are ready.
  const done = wanted !== undefined && rolledOut(sts, wanted);
  // currentVersion moves only once every Pod runs the new version.
  const currentVersion = done ? db.spec.version : prev.currentVersion;
  let c: Condition[] = prev.conditions ?? [];
  const set = (type: string, status: 'True' | 'False' | 'Unknown', reason: string, message: string) => {
    c = setCondition(c, { type, status, reason, message, observedGeneration: gen }, now);
  };

  // Degraded and Stalled; a problem is also what Ready names (`kubectl wait` and kstatus read Ready).
  c = setProblemConditions(c, o.problem, { observedGeneration: gen, now });
  const r = o.replication;
  // The primary by its server's answer or, while the manager cannot reach it, by the kubelet's.
  const primary = r ? r.plan.servingPrimary : prev.currentPrimary;
  // Instances that serve their role; one that does not replicate is not counted as ready.
  const serving = r?.replicated ? [...r.plan.roles.values()].filter(Boolean).length : ready;
  const behind =
    r?.replicated && primary ? notReplicating(r.members, r.plan.roles, primary, db.spec.replicas) : [];
  if (!o.problem) {
    if (!sts) set('Ready', 'Unknown', 'StatefulSetMissing', 'The StatefulSet does not exist yet');
    else if (r && !primary)
      set(
        'Ready',
        'False',
        'NoPrimary',
        `No instance accepts writes: ${r.plan.waiting ?? 'waiting for the primary'}`,
      );
    else if (done && behind.length)
      // It serves, and says what it lacks: never "all ready" while an instance does not replicate.
      set(
        'Ready',
        'True',
        'ReplicasNotStreaming',
        `${serving}/${db.spec.replicas} replicas ready, running ${db.spec.version}: ${behind.join(', ')} not replicating from ${primary}`,
      );
    else if (done)
      set(
        'Ready',
        'True',
        'AllReplicasReady',
        `${serving}/${db.spec.replicas} replicas ready, running ${db.spec.version}${r?.plan.unobserved.length ? " (the kubelet's word: the manager cannot reach them)" : ''}`,
      );
    else
      set(
        'Ready',
        'False',
        'ReplicasNotReady',
        // Replicated: the instances that serve their role, not the Pods the kubelet calls ready (a
        // lost node's Pods read Ready until the node controller notices, and replicate nothing).
        `${serving}/${db.spec.replicas} replicas ready${behind.length ? `: ${behind.join(', ')} not replicating from ${primary}` : ''}`,
      );
  }
  if (r?.replicated) {
    const reach = reachabilityCondition(r.plan);
    set(REACHABLE_CONDITION, reach.status, reach.reason, reach.message);
  }

  // Nothing rolls out while a problem blocks the reconcile: saying "Creating" would claim what isn't happening.
  if (o.problem && o.problem.stalled !== false)
    set('Progressing', 'False', o.problem.reason, `Blocked: ${o.problem.message}`);
  else if (!sts) set('Progressing', 'Unknown', 'Creating', 'Creating the StatefulSet');
  else if (done) set('Progressing', 'False', 'Stable', 'Nothing to roll out');
  else if (currentVersion && currentVersion !== db.spec.version)
    set('Progressing', 'True', 'Upgrading', `Rolling ${currentVersion} to ${db.spec.version}`);
  else if ((sts.status?.replicas ?? 0) !== db.spec.replicas)
    set(
      'Progressing',
      'True',
      'Scaling',
      `Scaling from ${sts.status?.replicas ?? 0} to ${db.spec.replicas} replicas`,
    );
  else
    set(
      'Progressing',
      'True',
      'RollingOut',
      `${sts.status?.updatedReplicas ?? 0}/${db.spec.replicas} replicas updated`,
    );

  const store = ownRepository(db);
  const fromBackups = store ? backupCondition(db, o) : undefined;
  if (fromBackups) set('BackupSucceeded', fromBackups.status, fromBackups.reason, fromBackups.message);
  const latestDump = o.backupJobs
    .filter(
      (j) =>
        j.status?.completionTime ||
        j.status?.conditions?.some((x) => x.type === 'Failed' && x.status === 'True'),
    )
    .sort((a, b) => finishTime(b) - finishTime(a))[0];
  if (fromBackups) {
    // Set above, from the DatabaseBackups.
  } else if (!db.spec.backup)
    set(
      'BackupSucceeded',
      'Unknown',
      'BackupsDisabled',
      'No spec.backup: nothing backs this Database up. Set spec.backup.objectStore (postgres, mariadb) to take backups',
    );
  else if (!throwawayBackups(db))
    set('BackupSucceeded', 'Unknown', 'BackupsDisabled', 'Backups are disabled');
  else
    // Whatever its Jobs did: a dump onto a scratch volume is no backup. What the latest did
    // is still said, as the dump reads every row.
    set(
      'BackupSucceeded',
      'False',
      NO_BACKUP_DESTINATION,
      `${NO_BACKUP_DESTINATION_REPORT}${latestDump ? ` (the latest dump, Job ${latestDump.metadata?.name}, ${(latestDump.status?.succeeded ?? 0) > 0 ? 'completed' : 'failed'})` : ''}`,
    );

  if (r) {
    const h = replicationHealth(db, r);
    set('ReplicationHealthy', h.status, h.reason, h.message);
  } else if (!c.some((x) => x.type === 'ReplicationHealthy'))
    set('ReplicationHealthy', 'Unknown', 'NotObserved', 'The instances have not been observed yet');

  // Beside Ready, never in it: the database serves without its user-defined series.
  const queries = withEngineAnswer(
    o.metricsQueries,
    o.engineAnswer,
    db.spec.engine,
    prev.conditions?.find((x) => x.type === METRICS_QUERIES_CONDITION),
  );
  if (queries) set(METRICS_QUERIES_CONDITION, queries.status, queries.reason, queries.message);
  else c = c.filter((x) => x.type !== METRICS_QUERIES_CONDITION);

  // Beside Ready: a fenced instance is a person's choice; Ready and ReplicationHealthy say what it costs.
  // Only once a Database was ever fenced (or its annotation named anything): other Databases say nothing.
  const fencing = r?.fencing;
  if (
    r &&
    (fencing?.fenced.size ||
      fencing?.invalid ||
      fencing?.unknown.length ||
      c.some((x) => x.type === FENCED_CONDITION))
  ) {
    const f = fencedCondition(fencing, (pod) => fencedEngineStopped(r, pod));
    set(FENCED_CONDITION, f.status, f.reason, f.message);
  }

  const instances = r ? instancesOf(db, r) : prev.instances;
  const systemIdentifier = (r && primary && systemIdOf(r, primary)) || prev.systemIdentifier;
  const port = ENGINE_DEFAULTS[db.spec.engine].port;
  // Only a backup that can be restored counts: a dump onto a scratch volume never sets it.
  const lastBackup = fromBackups?.lastBackup;
  return {
    observedGeneration: gen,
    conditions: c,
    phase: derivePhase(c, currentVersion !== undefined),
    replicas: sts?.status?.replicas ?? 0,
    readyReplicas: serving,
    selector: Object.entries(selector(db))
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
    ...(currentVersion ? { currentVersion } : {}),
    ...(lastBackup
      ? { lastBackup: new Date(lastBackup).toISOString().replace(/\.\d{3}Z$/, 'Z') }
      : prev.lastBackup
        ? { lastBackup: prev.lastBackup }
        : {}),
    binding: { name: o.credentialsSecret },
    ...(primary ? { currentPrimary: primary } : {}),
    ...switchoverStatus(prev.switchover, r?.plan.switchover, now),
    ...(systemIdentifier ? { systemIdentifier } : {}),
    ...(instances ? { instances } : {}),
    endpoint: `${childNames(db).clientService}.${db.metadata.namespace}.svc:${port}`,
  };
}

/**
 * BackupSucceeded of a Database with an object store: WAL archiving must be
 * set up, and then the latest finished DatabaseBackup says. lastBackup is the
 * newest succeeded one's end.
 */
function backupCondition(
  db: DatabaseObject,
  o: Observed,
): { status: 'True' | 'False' | 'Unknown'; reason: string; message: string; lastBackup?: string } {
  const finished = (o.backups ?? [])
    .filter((b) => b.spec.database === db.metadata.name)
    .filter((b) => b.status?.phase === 'Succeeded' || b.status?.phase === 'Failed')
    .sort((a, b) => backupTime(b) - backupTime(a));
  const lastSucceeded = finished.find((b) => b.status?.phase === 'Succeeded');
  const lastBackup = lastSucceeded?.status?.stoppedAt;
  const at = lastBackup ? { lastBackup } : {};
  if (o.archiving && !o.archiving.ok)
    return { status: 'False', reason: 'ArchivingFailed', message: o.archiving.message, ...at };
  if (o.backups === undefined)
    return {
      status: 'Unknown',
      reason: 'BackupControllerDisabled',
      message: 'This manager does not run the DatabaseBackup controller: no backup can be taken',
      ...at,
    };
  const latest = finished[0];
  if (!latest)
    return {
      status: 'Unknown',
      reason: 'NoBackupYet',
      message: `No DatabaseBackup of this Database has finished yet${db.spec.backup?.enabled === false ? '' : ` (scheduled: ${db.spec.backup?.schedule ?? '0 3 * * *'})`}`,
    };
  const succeeded = latest.status?.conditions?.find((c) => c.type === 'Succeeded');
  if (latest === lastSucceeded)
    return {
      status: 'True',
      reason: 'BackupCompleted',
      message: `DatabaseBackup ${latest.metadata.name} completed (${latest.status?.label ?? 'in the repository'})`,
      ...at,
    };
  return {
    status: 'False',
    reason: 'BackupFailed',
    message: `DatabaseBackup ${latest.metadata.name} failed: ${succeeded?.message ?? 'see its status'}`,
    ...at,
  };
}

/** When a DatabaseBackup finished (or started, or was made): the latest is the one that says. */
function backupTime(b: DatabaseBackupObject): number {
  const t = b.status?.stoppedAt ?? b.status?.startedAt ?? b.metadata.creationTimestamp;
  return t ? new Date(t).getTime() : 0;
}

function finishTime(job: V1Job): number {
  const t =
    job.status?.completionTime ??
    job.status?.conditions?.find((x) => x.type === 'Failed')?.lastTransitionTime;
  return t ? new Date(t).getTime() : 0;
}

type Instance = NonNullable<DatabaseStatus['instances']>[number];

function systemIdOf(r: ReplicationView, pod: string): string | undefined {
  const o = r.observations.get(pod);
  return o?.reachable ? o.server.systemId : undefined;
}

/**
 * Whether a fenced instance's engine has stopped (its agent stopped it): its server no longer
 * answers; a single instance, whose server the manager does not read, once its Pod is not ready.
 * The Fenced condition and the instance's state (Fencing, then Fenced) both go by it.
 */
function fencedEngineStopped(r: ReplicationView, pod: string): boolean {
  if (r.observations.get(pod)?.reachable) return false;
  return r.replicated || !r.members.find((m) => m.pod === pod)?.ready;
}

/** Each instance's role and replication state, as the reconcile saw it. */
function instancesOf(db: DatabaseObject, r: ReplicationView): Instance[] {
  const primary = r.plan.servingPrimary;
  const atPrimary = primary ? r.observations.get(primary) : undefined;
  const primaryServer = atPrimary?.reachable && atPrimary.server.writable ? atPrimary.server : undefined;
  const lagField = r.lagUnit === 'bytes' ? 'lagBytes' : 'lagTransactions';
  return r.members.map((m): Instance => {
    const role = r.plan.roles.get(m.pod) ?? 'standby';
    const o = r.observations.get(m.pod);
    // What it discarded is said by its server; while it does not answer, the status keeps what it said.
    const before = db.status?.instances?.find((i) => i.name === m.pod)?.discarded;
    const base = { name: m.pod, role, ...(before && !o?.reachable ? { discarded: before } : {}) };
    if (!m.uid) return { ...base, state: 'Missing' };
    if (r.fencing?.fenced.has(m.pod))
      return { ...base, state: fencedEngineStopped(r, m.pod) ? 'Fenced' : 'Fencing' };
    if (!r.replicated) return { ...base, state: m.ready ? 'Primary' : 'Starting' };
    if (!o?.reachable) return { ...base, state: 'Unreachable' };
    const s = o.server;
    const facts = {
      timeline: s.timeline,
      lsn: o.position,
      ...(o.discarded ? { discarded: o.discarded } : {}),
    };
    if (s.writable) return { ...base, ...facts, state: m.pod === primary ? 'Primary' : 'Writable' };
    const lag = primaryServer ? primaryServer.lsn - s.replayLsn : undefined;
    const lagFact = lag === undefined ? {} : { [lagField]: Number(lag > 0n ? lag : 0n) };
    const state = !s.streaming ? 'NotStreaming' : role === 'replica' ? 'Streaming' : 'Lagging';
    const why = s.replicationError ? { replicationError: brief(s.replicationError.message) } : {};
    return { ...base, ...facts, ...lagFact, ...why, state };
  });
}

/** A server's error message as the status carries it: bounded, as one line. */
function brief(message: string): string {
  const line = message.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

/** ReplicationHealthy's reason while a synchronous primary has no standby confirming its commits. */
export const NO_SYNCHRONOUS_STANDBY = 'NoSynchronousStandby';

function replicationHealth(
  db: DatabaseObject,
  r: ReplicationView,
): { status: 'True' | 'False' | 'Unknown'; reason: string; message: string } {
  if (!r.replicated)
    return { status: 'True', reason: 'SingleInstance', message: 'One instance: nothing to replicate' };
  const unsettled = replicationUnsettled(r.plan);
  if (unsettled) return unsettled;
  const primary = r.plan.servingPrimary!;
  const behind = notReplicating(r.members, r.plan.roles, primary, db.spec.replicas);
  // Each one's own words on why, where its server says: what a person needs to act on.
  const why = behind.flatMap((pod) => {
    const o = r.observations.get(pod);
    const error = o?.reachable ? o.server.replicationError : undefined;
    return error ? [`; ${pod}: ${brief(error.message)}`] : [];
  });
  const seen = r.observations.get(primary);
  if (db.spec.replication?.synchronous && seen?.reachable && seen.confirming === 0)
    return {
      status: 'False',
      reason: NO_SYNCHRONOUS_STANDBY,
      message: `Writes wait: no standby confirms ${primary}'s commits (synchronous replication)${behind.length ? `; ${behind.join(', ')} not streaming within the lag bound` : ''}${why.join('')}`,
    };
  if (behind.length)
    return {
      status: 'False',
      reason: 'ReplicasNotStreaming',
      message: `${behind.join(', ')} not streaming from ${primary} within the lag bound${why.join('')}${r.plan.waiting ? `; ${r.plan.waiting}` : ''}`,
    };
  return {
    status: 'True',
    reason: 'Streaming',
    message: `${db.spec.replicas - 1} replica(s) streaming from ${primary}`,
  };
}

/**
 * status.switchover: what became of the last requested switchover, kept once it was refused or
 * started (the annotation is gone by then) until the next request; a wait that ends without
 * either (the annotation removed) leaves nothing.
 */
function switchoverStatus(
  prev: DatabaseStatus['switchover'],
  planned: { target: string; state: string; message: string } | undefined,
  now: Date,
): Pick<DatabaseStatus, 'switchover'> {
  if (planned) {
    const same = prev?.target === planned.target && prev.state === planned.state;
    return {
      switchover: { ...planned, since: same ? prev.since : now.toISOString().replace(/\.\d{3}Z$/, 'Z') },
    };
  }
  return prev && prev.state !== 'Waiting' ? { switchover: prev } : {};
}
