/**
 * The DatabaseBackup controller: one on-demand physical backup of a postgres
 * Database, taken by pgBackRest in the primary's container (started there
 * by exec, in the background, so a reconcile never waits for minutes), and
 * Succeeded only once the repository lists it complete with this backup's
 * uid among its annotations: the repository is the truth, never an exit
 * code alone.
 */
import { isNotFound, type KubeConfigSource } from '@regulon/client';
import {
  setCondition,
  type Condition,
  type Context,
  type Live,
  type Manager,
  type Problem,
  type ReconcileFunc,
} from '@regulon/runtime';
import { Database, type DatabaseObject } from '../api.ts';
import {
  DatabaseBackup,
  type BackupPhase,
  type DatabaseBackupObject,
  type DatabaseBackupStatusType,
} from './api.ts';
import { ExecError, PodExec, type Executor } from './exec.ts';
import { backupMetrics, type BackupMetrics } from './metrics.ts';
import {
  backupByUid,
  CHECK_BACKUP_SCRIPT,
  EXPIRE_SCRIPT,
  parseCheck,
  parseInfo,
  START_BACKUP_SCRIPT,
  summarizeError,
  type Repository,
  type RepositoryBackup,
  type BackupCheck,
} from './pgbackrest.ts';
import { ownRepository } from './repository.ts';
import {
  fromStore,
  listedLabels,
  MARIABACKUP_CHECK_SCRIPT,
  MARIABACKUP_EXPIRE_SCRIPT,
  MARIABACKUP_START_SCRIPT,
  parseMariabackupCheck,
  summarizeRcloneError,
} from './mariabackup.ts';
import { retentionPlan } from './retention.ts';
import type { BackupToolName } from '../engine.ts';
import { engineOf, engines } from '../engines/index.ts';

export const BACKUP_CONTROLLER_NAME = 'databasebackup';
export const BACKUP_FIELD_MANAGER = 'regulon-databasebackup';
/** DatabaseBackups filed under the Database they back up. */
export const BY_DATABASE = 'databasebackup.spec.database';
/**
 * What takes a backup, by engine: the tool, the container and shell its
 * scripts run in, and how the repository's answer is read.
 */
interface BackupTool {
  name: string;
  container: string;
  shell: string;
  start: string;
  check: string;
  parseCheck: (out: string) => BackupCheck;
  fromStore: (b: DatabaseBackupObject, info: string) => BackupOutcome;
  /** Retention: the script deleting the labels it is given, and the labels the repository still lists after it. */
  expire: string;
  listed: (info: string) => Set<string>;
  summarize: (errors: string) => string;
}
const PGBACKREST: BackupTool = {
  name: 'pgBackRest' satisfies BackupToolName,
  container: 'postgres',
  shell: 'sh',
  start: START_BACKUP_SCRIPT,
  check: CHECK_BACKUP_SCRIPT,
  parseCheck,
  fromStore: (b, info) => fromRepository(b, info),
  expire: EXPIRE_SCRIPT,
  listed: (info) => new Set(parseInfo(info).backups.map((k) => k.label)),
  summarize: summarizeError,
};
const MARIABACKUP: BackupTool = {
  name: 'mariabackup' satisfies BackupToolName,
  container: 'mariadb',
  shell: 'bash',
  start: MARIABACKUP_START_SCRIPT,
  check: MARIABACKUP_CHECK_SCRIPT,
  parseCheck: parseMariabackupCheck,
  fromStore,
  expire: MARIABACKUP_EXPIRE_SCRIPT,
  listed: listedLabels,
  summarize: summarizeRcloneError,
};
const TOOLS: Record<BackupToolName, BackupTool> = { pgBackRest: PGBACKREST, mariabackup: MARIABACKUP };
/**
 * The tool the Database's engine names (pgBackRest when the Database is gone:
 * its backups' scripts are the older; and for an engine with none, whose
 * backups whyNotStart fails before any script runs).
 */
const toolFor = (db: DatabaseObject | undefined): BackupTool =>
  TOOLS[(db && engineOf(db).backupTool) ?? 'pgBackRest'];
/** The engines a DatabaseBackup can back up, for the message that refuses the others. */
const BACKED_UP = Object.values(engines)
  .filter((e) => e.backupTool)
  .map((e) => e.name)
  .join(' and ');
/** How often a running backup is looked at. */
const POLL_MS = 5_000;
/** How long a backup whose instance went away may take to show up in the repository before it is called lost. */
const LOST_AFTER_MS = 120_000;
/** How long a retention that could not expire (the store away, a lock held) waits before the next try. */
const RETENTION_RETRY_MS = 60_000;

/** What one reconcile decided about the backup; the status is computed from it. */
export type BackupOutcome =
  | { state: 'Pending'; reason: string; message: string }
  | { state: 'Running'; instance: string; startedAt: string; repository: Repository; tool?: string }
  | { state: 'Succeeded'; backup: RepositoryBackup }
  | { state: 'Failed'; reason: string; message: string };

export interface BackupControllerOptions {
  maxConcurrentReconciles?: number;
  /** The manager's kubeconfig, for exec (default: found as KubeClient.load finds it). */
  kubeConfig?: KubeConfigSource | undefined;
  /** Runs the commands; default PodExec over the kubeconfig. */
  executor?: Executor | undefined;
}

export function setupDatabaseBackupController(mgr: Manager, options: BackupControllerOptions = {}): void {
  const executor = options.executor ?? new PodExec(options.kubeConfig);
  const outcomes = new WeakMap<Context, BackupOutcome>();
  mgr
    .controller(BACKUP_CONTROLLER_NAME)
    .for(DatabaseBackup)
    // A Database that gets a primary, or an object store, wakes the backups waiting for it.
    .watches(Database, (db, cache) =>
      cache
        .list(DatabaseBackup, {
          namespace: db.metadata.namespace,
          index: { name: BY_DATABASE, value: db.metadata.name! },
        })
        .map((b) => ({ namespace: b.metadata.namespace!, name: b.metadata.name! })),
    )
    .index(DatabaseBackup, BY_DATABASE, (b) => [b.spec.database])
    .withOptions({
      fieldManager: BACKUP_FIELD_MANAGER,
      maxConcurrentReconciles: options.maxConcurrentReconciles ?? 2,
    })
    .withStatus((b, problem, ctx) => computeBackupStatus(b, outcomes.get(ctx), problem))
    .reconcile(reconcileBackup(executor, outcomes, backupMetrics(mgr.registry)));
}

export function reconcileBackup(
  executor: Executor,
  outcomes: WeakMap<Context, BackupOutcome>,
  metrics?: BackupMetrics,
  now: () => Date = () => new Date(),
): ReconcileFunc<DatabaseBackupObject> {
  const retentionFailures = new Map<string, number>();
  return async (b, ctx) => {
    const prev = b.status ?? {};
    if (prev.phase === 'Succeeded' || prev.phase === 'Failed') metrics?.observe(b);
    if (prev.phase === 'Failed') return undefined;
    if (prev.phase === 'Succeeded') return applyRetention(executor, b, ctx, now(), retentionFailures);
    const decide = (o: BackupOutcome) => {
      outcomes.set(ctx, o);
      if (o.state === 'Failed') {
        ctx.warn(o.reason, `Backup of Database ${b.spec.database} failed: ${o.message}`);
        metrics?.finished(b, 'failed');
      }
      if (o.state === 'Succeeded') {
        ctx.event(
          'Normal',
          'Completed',
          `Backup ${o.backup.label} of Database ${b.spec.database} is complete in the repository`,
        );
        metrics?.finished(b, 'succeeded');
      }
      return o.state === 'Pending' || o.state === 'Running' ? { requeueAfter: POLL_MS } : undefined;
    };
    const db = ctx.get(Database, b.spec.database);
    const tool = toolFor(db);
    if (!prev.startedAt) {
      const pending = whyNotStart(b, db, ctx);
      if (pending) return decide(pending);
      const instance = db!.status!.currentPrimary!;
      const repository = ownRepository(db!)!;
      const started = await run(executor, ctx, b, instance, tool.start, undefined, tool);
      if (started.error !== undefined)
        return decide({
          state: 'Pending',
          reason: 'CannotStart',
          message: `Could not start the backup on ${instance}: ${started.error}`,
        });
      return decide({
        state: 'Running',
        instance,
        startedAt: now()
          .toISOString()
          .replace(/\.\d{3}Z$/, 'Z'),
        repository,
        tool: tool.name,
      });
    }
    const instance = prev.instance!;
    const checked = await run(executor, ctx, b, instance, tool.check, undefined, tool);
    if (checked.error === undefined) {
      const check = tool.parseCheck(checked.stdout);
      if (check.started && check.exitCode === undefined && !check.gone) return { requeueAfter: POLL_MS };
      if (check.gone) {
        const found = tool.fromStore(b, check.info);
        return decide(
          found.state === 'Succeeded'
            ? found
            : {
                state: 'Failed',
                reason: 'InstanceLost',
                message: `${tool.name} on ${instance} ended before the backup was complete (the container restarted, or the Pod was replaced: a failover, say). Create a new DatabaseBackup: it runs on the current primary.`,
              },
        );
      }
      if (check.exitCode !== undefined && check.exitCode !== 0)
        return decide({
          state: 'Failed',
          reason: 'BackupFailed',
          message: check.error ?? `${tool.name} exited with ${check.exitCode}`,
        });
      if (check.exitCode === 0) return decide(tool.fromStore(b, check.info));
    }
    // The instance that ran it is gone or restarted with new data: the repository may still list it complete.
    const primary = db?.status?.currentPrimary;
    if (primary && primary !== instance) {
      const elsewhere = await run(executor, ctx, b, primary, tool.check, undefined, tool);
      if (elsewhere.error === undefined) {
        const found = tool.fromStore(b, tool.parseCheck(elsewhere.stdout).info);
        if (found.state === 'Succeeded') return decide(found);
      }
    }
    const since = Date.parse(prev.startedAt);
    if (now().getTime() - since < LOST_AFTER_MS) return { requeueAfter: POLL_MS };
    return decide({
      state: 'Failed',
      reason: 'InstanceLost',
      message: `The instance ${instance} running the backup went away before the repository listed it complete${checked.error ? ` (${checked.error})` : ''}. Create a new DatabaseBackup.`,
    });
  };
}

/**
 * spec.backup.retention, carried out by the Database's newest succeeded
 * backup (one reconcile per Database does it, so two never expire at once):
 * pgBackRest expires the backups the policy no longer keeps, and each
 * DatabaseBackup whose backup the repository no longer lists is deleted,
 * with a Normal Event on this one naming it. Then it looks again when the
 * next kept backup grows older than maxAge.
 */
async function applyRetention(
  executor: Executor,
  b: DatabaseBackupObject,
  ctx: Context,
  now: Date,
  failures: Map<string, number>,
): Promise<{ requeueAfter: number } | undefined> {
  const db = ctx.get(Database, b.spec.database);
  if (!db) return undefined;
  const tool = toolFor(db);
  const siblings = ctx.list(DatabaseBackup, {
    namespace: b.metadata.namespace,
    index: { name: BY_DATABASE, value: b.spec.database },
  });
  const plan = retentionPlan(db, siblings, now);
  if (plan.newest?.metadata.uid !== b.metadata.uid) return undefined;
  const later = plan.nextExpiryAt
    ? { requeueAfter: Math.max(1_000, plan.nextExpiryAt.getTime() - now.getTime()) }
    : undefined;
  // A backup a new Database is being restored from stays until that Database is Ready.
  const restoring = new Set(
    ctx
      .list(Database, { namespace: b.metadata.namespace })
      .filter((d) => d.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True')
      .map((d) => d.spec.bootstrap?.recovery?.backup)
      .filter((name): name is string => name !== undefined),
  );
  const held = plan.expire.length;
  plan.expire = plan.expire.filter((e) => !restoring.has(e.backup.metadata.name!));
  if (!plan.expire.length) return held ? { requeueAfter: RETENTION_RETRY_MS } : later;
  // pgBackRest's lock: an expire waits for a running backup of the same repository.
  const primary = db.status?.currentPrimary;
  if (!primary || siblings.some((o) => o.status?.phase === 'Running')) return { requeueAfter: POLL_MS };
  // After a failure, the Database's status changes (which wake this reconcile) do not make it try sooner.
  const failedAt = failures.get(b.metadata.uid!);
  if (failedAt !== undefined && now.getTime() - failedAt < RETENTION_RETRY_MS)
    return { requeueAfter: RETENTION_RETRY_MS - (now.getTime() - failedAt) };
  failures.delete(b.metadata.uid!);
  const repo = b.status!.repository!;
  const result = await run(
    executor,
    ctx,
    b,
    primary,
    tool.expire,
    plan.expire.map((e) => e.label),
    tool,
  );
  let listed: Set<string>;
  let failure: string | undefined;
  try {
    if (result.error !== undefined) throw new Error(result.error);
    const [errors = '', infoText = ''] = splitInfo(result.stdout);
    listed = tool.listed(infoText);
    failure = tool.summarize(errors) || undefined;
  } catch (err) {
    ctx.warn(
      'RetentionFailed',
      `Could not expire ${plan.expire.map((e) => e.label).join(', ')} from ${repo.bucket}/${repo.path}: ${(err as Error).message}`,
    );
    failures.set(b.metadata.uid!, now.getTime());
    return { requeueAfter: RETENTION_RETRY_MS };
  }
  const kept: string[] = [];
  for (const e of plan.expire) {
    if (listed.has(e.label)) {
      kept.push(e.label);
      continue;
    }
    try {
      await ctx.client
        .resource(DatabaseBackup)
        .delete(e.backup.metadata.name!, { namespace: e.backup.metadata.namespace!, signal: ctx.signal });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    ctx.event(
      'Normal',
      'BackupExpired',
      `Retention expired backup ${e.label} (DatabaseBackup ${e.backup.metadata.name}, completed ${e.backup.status?.stoppedAt ?? 'at an unknown time'}) from ${repo.bucket}/${repo.path}, with the archived WAL only it needed: ${e.why}`,
    );
  }
  if (kept.length) {
    ctx.warn(
      'RetentionFailed',
      `${tool.name} did not expire ${kept.join(', ')} from ${repo.bucket}/${repo.path}${failure ? `: ${failure}` : ''}; trying again in ${RETENTION_RETRY_MS / 1000} s`,
    );
    failures.set(b.metadata.uid!, now.getTime());
    return { requeueAfter: RETENTION_RETRY_MS };
  }
  return later;
}

/** EXPIRE_SCRIPT's output: pgBackRest's error lines, and the JSON after `info:`. */
function splitInfo(out: string): [string, string] {
  const [head = '', ...rest] = out.split(/^info:$/m);
  return [head, rest.join('info:')];
}

/** Why the backup cannot start yet (Pending), or never will (Failed); undefined when it can start now. */
function whyNotStart(
  b: DatabaseBackupObject,
  db: DatabaseObject | undefined,
  ctx: Context,
): BackupOutcome | undefined {
  const name = b.spec.database;
  if (!db)
    return {
      state: 'Pending',
      reason: 'DatabaseNotFound',
      message: `Database ${name} does not exist in ${b.metadata.namespace}`,
    };
  if (!engineOf(db).backupTool)
    return {
      state: 'Failed',
      reason: 'EngineNotSupported',
      message: `Database ${name} runs ${db.spec.engine}: DatabaseBackup supports ${BACKED_UP} only so far`,
    };
  if (!ownRepository(db))
    return {
      state: 'Failed',
      reason: 'NoObjectStore',
      message: `Database ${name} has no spec.backup.objectStore to back up into: set it, then create a new DatabaseBackup`,
    };
  const running = ctx
    .list(DatabaseBackup, { namespace: b.metadata.namespace, index: { name: BY_DATABASE, value: name } })
    .find((o) => o.metadata.uid !== b.metadata.uid && o.status?.phase === 'Running');
  if (running)
    return {
      state: 'Pending',
      reason: 'WaitingForAnotherBackup',
      message: `DatabaseBackup ${running.metadata.name} of the same Database is running; one at a time`,
    };
  if (!db.status?.currentPrimary)
    return {
      state: 'Pending',
      reason: 'NoPrimary',
      message: `Database ${name} has no primary to back up right now`,
    };
  return undefined;
}

/** What the repository says about this backup, after pgBackRest finished with success. */
function fromRepository(b: DatabaseBackupObject, infoText: string): BackupOutcome {
  let info;
  try {
    info = parseInfo(infoText);
  } catch (err) {
    return { state: 'Failed', reason: 'RepositoryUnreadable', message: (err as Error).message };
  }
  const found = backupByUid(info, b.metadata.uid!);
  if (found && !found.error) return { state: 'Succeeded', backup: found };
  return {
    state: 'Failed',
    reason: 'NotInRepository',
    message: found
      ? `pgBackRest finished, but the repository marks backup ${found.label} as having errors`
      : `pgBackRest finished, but the repository does not list the backup${info.code !== 0 ? ` (${info.message})` : ''}`,
  };
}

/** Runs one script in the container; an exec that could not run at all comes back as `error`. */
async function run(
  executor: Executor,
  ctx: Context,
  b: DatabaseBackupObject,
  pod: string,
  script: string,
  args: readonly string[] = [b.metadata.uid!, `${b.metadata.namespace}/${b.metadata.name}`],
  tool: BackupTool = PGBACKREST,
): Promise<{ stdout: string; error?: string }> {
  try {
    const r = await executor.exec({
      namespace: b.metadata.namespace!,
      pod,
      container: tool.container,
      command: [tool.shell, '-c', script, 'sh', ...args],
      timeoutMs: 90_000,
      signal: ctx.signal,
    });
    // The scripts end with `pgbackrest info`, whose own failure is read from its JSON: only a shell that could not run counts.
    if (r.exitCode === -1) return { stdout: r.stdout, error: r.error ?? 'exec failed' };
    return { stdout: r.stdout };
  } catch (err) {
    if (err instanceof ExecError) return { stdout: '', error: summarizeError(err.message) || err.message };
    throw err;
  }
}

const iso = (d: Date | undefined) => d?.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The phase the conditions say. */
export function backupPhase(conditions: readonly Condition[], started: boolean): BackupPhase {
  const succeeded = conditions.find((c) => c.type === 'Succeeded');
  if (succeeded?.status === 'True') return 'Succeeded';
  if (succeeded?.status === 'False') return 'Failed';
  return started ? 'Running' : 'Pending';
}

/** The status from the last written one and what this reconcile decided (nothing: it stays as it was). */
export function computeBackupStatus(
  b: Live<DatabaseBackupObject> | DatabaseBackupObject,
  o: BackupOutcome | undefined,
  problem: Problem | undefined,
  now: Date = new Date(),
): DatabaseBackupStatusType {
  const gen = b.metadata.generation ?? 0;
  const prev: DatabaseBackupStatusType = b.status ?? {};
  let c: Condition[] = prev.conditions ?? [];
  const set = (type: string, status: 'True' | 'False' | 'Unknown', reason: string, message: string) => {
    c = setCondition(c, { type, status, reason, message, observedGeneration: gen }, now);
  };
  const next: DatabaseBackupStatusType = { ...prev };
  if (o?.state === 'Pending') {
    set('Ready', 'False', o.reason, o.message);
    set('Succeeded', 'Unknown', o.reason, o.message);
  } else if (o?.state === 'Running') {
    const message = `${o.tool ?? 'pgBackRest'} is backing up ${o.instance} into ${o.repository.bucket}/${o.repository.path}`;
    set('Ready', 'False', 'Running', message);
    set('Succeeded', 'Unknown', 'Running', message);
    next.instance = o.instance;
    next.startedAt = o.startedAt;
    next.repository = {
      endpoint: o.repository.endpoint,
      bucket: o.repository.bucket,
      path: o.repository.path,
      region: o.repository.region,
      credentialsSecret: o.repository.credentialsSecret,
      accessKeyIdKey: o.repository.accessKeyIdKey,
      secretAccessKeyKey: o.repository.secretAccessKeyKey,
      ...(o.repository.caSecret ? { caSecret: o.repository.caSecret } : {}),
    };
  } else if (o?.state === 'Succeeded') {
    const k = o.backup;
    const message = `Backup ${k.label} is complete in the repository`;
    set('Ready', 'True', 'Completed', message);
    set('Succeeded', 'True', 'Completed', message);
    next.label = k.label;
    next.type = k.type;
    const started = iso(k.startedAt);
    const stopped = iso(k.stoppedAt);
    if (started) next.startedAt = started;
    if (stopped) next.stoppedAt = stopped;
    if (k.sizeBytes !== undefined) next.sizeBytes = k.sizeBytes;
    if (k.repositorySizeBytes !== undefined) next.repositorySizeBytes = k.repositorySizeBytes;
    if (Object.keys(k.wal).length) next.wal = k.wal;
    if (k.binlog && Object.keys(k.binlog).length) next.binlog = k.binlog;
  } else if (o?.state === 'Failed') {
    set('Ready', 'False', o.reason, o.message);
    set('Succeeded', 'False', o.reason, o.message);
    next.stoppedAt ??= iso(now);
  } else if (problem) {
    set('Ready', 'False', problem.reason, problem.message);
  } else if (!c.length) {
    set('Ready', 'False', 'Pending', 'Not started yet');
    set('Succeeded', 'Unknown', 'Pending', 'Not started yet');
  }
  next.observedGeneration = gen;
  next.conditions = c;
  next.phase = backupPhase(c, next.startedAt !== undefined);
  return next;
}
