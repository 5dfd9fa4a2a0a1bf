/**
 * The Database controller's part of backups and restores (postgres):
 * - the recovery Secret of spec.bootstrap.recovery, resolved once before the
 *   first Pod starts (the source repository's settings and keys, copied);
 * - the pgBackRest stanza of spec.backup.objectStore, created on the primary
 *   once it serves, so archive_command can archive from then on; then its
 *   archiver, watched (backup/archiver.ts); and on a promoted primary, the
 *   earlier timelines' WAL the archive lacks, archived (backup/timelines.ts).
 */
import type { V1Secret } from '@kubernetes/client-node';
import { isNotFound, Kinds, metadataOnly } from '@regulon/client';
import { ProblemError, type Context } from '@regulon/runtime';
import type { DatabaseObject } from '../api.ts';
import { childNames, labels } from '../names.ts';
import { DatabaseBackup } from './api.ts';
import { ARCHIVER_COMMAND, archiverHealth, parseArchiverState, type ArchiverHealth } from './archiver.ts';
import { ExecError, type Executor } from './exec.ts';
import {
  parsePushed,
  parseTimelineScan,
  planCatchUp,
  pushCommand,
  TIMELINES_SCAN_COMMAND,
} from './timelines.ts';
import {
  recoverySecretData,
  repositoryOf,
  sameRepository,
  STANZA_CREATE_SCRIPT,
  summarizeError,
  type RecoveryTarget,
  type Repository,
} from './pgbackrest.ts';
import { ownRepository } from './repository.ts';
import { MARIABACKUP_LABEL, mariadbRecoverySecretData } from './mariabackup.ts';
import { engineOf } from '../engines/index.ts';

/** The source repository and target spec.bootstrap.recovery names, or a problem saying why not yet. */
export function resolveRecovery(
  db: DatabaseObject,
  ctx: Context,
  backupsWatched: boolean,
): { repo: Repository; target: RecoveryTarget } | undefined {
  const recovery = db.spec.bootstrap?.recovery;
  if (!recovery) return undefined;
  if (recovery.source)
    return {
      // A source without a path is refused at admission; the fallback only satisfies the type.
      repo: repositoryOf(recovery.source, recovery.source.path ?? ''),
      target: recovery.targetTime ? { type: 'time', target: recovery.targetTime } : { type: 'default' },
    };
  const name = recovery.backup!;
  if (!backupsWatched)
    throw new ProblemError({
      reason: 'RecoveryBackupUnavailable',
      message: `spec.bootstrap.recovery.backup names DatabaseBackup ${name}, but this manager does not run the DatabaseBackup controller: name its repository in spec.bootstrap.recovery.source instead`,
    });
  const backup = ctx.get(DatabaseBackup, name);
  const repo = backup?.status?.repository;
  if (!backup || backup.status?.phase !== 'Succeeded' || !backup.status.label || !repo)
    throw new ProblemError({
      reason: 'RecoveryBackupNotReady',
      message: backup
        ? `DatabaseBackup ${name} has not succeeded (${backup.status?.phase ?? 'Pending'}): the Database is restored from it once it has`
        : `DatabaseBackup ${name} named in spec.bootstrap.recovery.backup does not exist in ${db.metadata.namespace}`,
      // A failed backup never succeeds later: that waits for a person (another Database, another backup).
      stalled: backup?.status?.phase === 'Failed',
    });
  return {
    repo: {
      ...repo,
      ...(repo.caSecret ? { caSecret: repo.caSecret } : {}),
    },
    // To the end of that backup: exactly what it holds, nothing written after.
    target: { type: 'immediate', set: backup.status.label },
  };
}

/**
 * Creates the recovery Secret once, before the StatefulSet: the source
 * repository's settings, its keys and CA copied from the source's Secrets,
 * and the target. Once made it is never rewritten (the Pods' first start
 * read it), so deleting the DatabaseBackup later changes nothing here.
 */
export async function ensureRecoverySecret(
  db: DatabaseObject,
  ctx: Context,
  backupsWatched: boolean,
): Promise<void> {
  if (!db.spec.bootstrap?.recovery) return;
  const name = childNames(db).recovery;
  // Made already: nothing is resolved again (the DatabaseBackup may be gone by now).
  if (ctx.get(metadataOnly(Kinds.Secret), name)) return;
  const resolved = resolveRecovery(db, ctx, backupsWatched)!;
  const own = ownRepository(db);
  if (own && sameRepository(own, resolved.repo))
    throw new ProblemError({
      reason: 'RecoveryRepositoryInUse',
      message: `spec.backup.objectStore is the repository the Database is restored from (${own.bucket}/${own.path}): a restored Database archiving there would mix its WAL with the source's. Set spec.backup.objectStore.path to a path of its own`,
    });
  const source = await readSecret(db, ctx, resolved.repo.credentialsSecret);
  const accessKeyId = source?.[resolved.repo.accessKeyIdKey];
  const secretAccessKey = source?.[resolved.repo.secretAccessKeyKey];
  if (!accessKeyId || !secretAccessKey)
    throw new ProblemError({
      reason: 'RecoveryCredentialsMissing',
      message: `Secret ${resolved.repo.credentialsSecret} with keys ${resolved.repo.accessKeyIdKey} and ${resolved.repo.secretAccessKeyKey} (the source repository's access keys) does not exist in ${db.metadata.namespace}`,
      stalled: false,
    });
  let ca: string | undefined;
  if (resolved.repo.caSecret) {
    ca = (await readSecret(db, ctx, resolved.repo.caSecret.name))?.[resolved.repo.caSecret.key];
    if (!ca)
      throw new ProblemError({
        reason: 'RecoveryCredentialsMissing',
        message: `Secret ${resolved.repo.caSecret.name} with key ${resolved.repo.caSecret.key} (the source store's CA) does not exist in ${db.metadata.namespace}`,
        stalled: false,
      });
  }
  let data: Record<string, string>;
  const engine = engineOf(db);
  const mariabackup = engine.backupTool === 'mariabackup';
  // The two tools' labels differ in shape (mariabackup.ts, pgBackRest's): a backup of the other engine cannot be restored.
  if (resolved.target.set && MARIABACKUP_LABEL.test(resolved.target.set) !== mariabackup)
    throw new ProblemError({
      reason: 'RecoveryBackupWrongEngine',
      message: `DatabaseBackup ${db.spec.bootstrap.recovery.backup} is a backup of a Database of another engine: a ${db.spec.engine} Database is restored from a ${db.spec.engine} backup only`,
    });
  if (!engine.pointInTimeRecovery && resolved.target.type === 'time')
    throw new ProblemError({
      reason: 'PointInTimeNotSupported',
      message: `spec.bootstrap.recovery.targetTime: a ${db.spec.engine} Database is restored to the end of a backup (${engine.backupTool}); point in time from binary logs is not implemented yet`,
    });
  try {
    data = mariabackup
      ? mariadbRecoverySecretData(resolved.repo, { accessKeyId, secretAccessKey, ca }, resolved.target.set)
      : recoverySecretData(resolved.repo, { accessKeyId, secretAccessKey, ca }, resolved.target);
  } catch (err) {
    throw new ProblemError({
      reason: 'InvalidTargetTime',
      message: `spec.bootstrap.recovery.targetTime: ${(err as Error).message}; write it as 2026-11-24T12:00:00Z`,
    });
  }
  await ctx.createOnce(name, (): V1Secret => ({
    metadata: { name, labels: labels(db) },
    type: 'Opaque',
    stringData: data,
  }));
}

/** A Secret's data, decoded; undefined when it does not exist. Read by GET: the cache holds Secrets' metadata only. */
async function readSecret(
  db: DatabaseObject,
  ctx: Context,
  name: string,
): Promise<Record<string, string> | undefined> {
  try {
    const s = await ctx.client
      .resource<V1Secret>(Kinds.Secret)
      .get(name, { namespace: db.metadata.namespace!, signal: ctx.signal });
    return Object.fromEntries(
      Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** How long a failed stanza-create waits before the next try. */
const STANZA_RETRY_MS = 60_000;

/**
 * How often a primary's archiver is read once its stanza exists: a failure
 * shows in BackupSucceeded, an Event and the gauges within this, well inside
 * a minute.
 */
export const ARCHIVER_CHECK_MS = 15_000;

interface ArchivingState {
  /** Where the stanza was made: the primary's Pod uid and the repository. */
  key: string;
  ok: boolean;
  message: string;
  at: number;
  /** The archiver, read on that primary once the stanza exists; when it was last read. */
  archiver?: ArchiverHealth;
  checkedAt?: number;
  /** Whether the earlier timelines' WAL this primary holds was compared with the archive (and pushed). */
  timelinesDone?: boolean;
}

/**
 * The stanzas made, by Database uid: what was made where (the repository and
 * the primary's Pod uid), or when it last failed and why; then, every
 * ARCHIVER_CHECK_MS, whether the primary's archiver keeps up. In memory: a
 * new manager makes each stanza again once, which pgBackRest answers with "ok".
 */
export class Stanzas {
  readonly #state = new Map<string, ArchivingState>();

  readonly executor: Executor;

  constructor(executor: Executor) {
    this.executor = executor;
  }

  /** What the status says about archiving: undefined until known. */
  archiving(db: DatabaseObject): { ok: boolean; message: string } | undefined {
    const s = this.#state.get(db.metadata.uid ?? '');
    if (!s) return undefined;
    const { ok, message } = s.ok && s.archiver ? s.archiver : s;
    return { ok, message };
  }

  /** The archiver as last read on the Database's primary (for the gauges); undefined until read. */
  archiver(db: DatabaseObject): ArchiverHealth | undefined {
    const s = this.#state.get(db.metadata.uid ?? '');
    return s?.ok ? s.archiver : undefined;
  }

  /**
   * Creates the stanza on `primary` (a Pod that serves) unless it was made
   * there already, then watches the archiver there; returns when to look
   * again. A failure is a Warning Event and BackupSucceeded=False, never a
   * problem: the Database serves without its archive.
   */
  async ensure(
    db: DatabaseObject,
    ctx: Context,
    primary: { pod: string; uid: string | undefined },
    now = Date.now(),
  ): Promise<number | undefined> {
    const repo = ownRepository(db);
    if (!repo) {
      this.#state.delete(db.metadata.uid ?? '');
      return undefined;
    }
    const key = `${primary.uid}|${repo.endpoint}|${repo.bucket}|${repo.path}`;
    const prev = this.#state.get(db.metadata.uid ?? '');
    if (prev?.key === key && prev.ok) return this.#watchArchiver(db, ctx, primary.pod, prev, repo, now);
    if (prev?.key === key && now - prev.at < STANZA_RETRY_MS) return STANZA_RETRY_MS - (now - prev.at);
    let ok = false;
    let message: string;
    try {
      const r = await this.executor.exec({
        namespace: db.metadata.namespace!,
        pod: primary.pod,
        container: 'postgres',
        command: ['sh', '-c', STANZA_CREATE_SCRIPT],
        timeoutMs: 90_000,
        signal: ctx.signal,
      });
      ok = r.exitCode === 0;
      message = ok
        ? `WAL is archived into ${repo.bucket}/${repo.path}`
        : `Cannot archive WAL into ${repo.bucket}/${repo.path}: ${summarizeError(r.stdout + r.stderr) || r.error || `stanza-create exited with ${r.exitCode}`}`;
    } catch (err) {
      if (!(err instanceof ExecError)) throw err;
      message = `Cannot set up WAL archiving on ${primary.pod}: ${err.message}`;
    }
    // checkedAt: the archiver's first read comes one period on, archive_command running only now
    // that the stanza exists.
    const state: ArchivingState = { key, ok, message, at: now, checkedAt: now };
    this.#state.set(db.metadata.uid ?? '', state);
    if (!ok) {
      ctx.warn('ArchivingFailed', message);
      return STANZA_RETRY_MS;
    }
    if (prev?.ok === false || !prev) ctx.event('Normal', 'ArchivingReady', message);
    await this.#archiveEarlierTimelines(db, ctx, primary.pod, state, repo);
    return ARCHIVER_CHECK_MS;
  }

  /**
   * On a primary past timeline 1: archives the earlier timelines' segments it
   * holds and the archive lacks (an Event says which), and reports a Warning
   * for those no instance can give any more. Done once per primary; a failed
   * look or push is tried again at the next check.
   */
  async #archiveEarlierTimelines(
    db: DatabaseObject,
    ctx: Context,
    pod: string,
    s: ArchivingState,
    repo: Repository,
  ): Promise<void> {
    const run = async (command: readonly string[], timeoutMs: number) => {
      try {
        const r = await this.executor.exec({
          namespace: db.metadata.namespace!,
          pod,
          container: 'postgres',
          command,
          timeoutMs,
          signal: ctx.signal,
        });
        return r.exitCode === 0 ? r.stdout : undefined;
      } catch (err) {
        if (!(err instanceof ExecError)) throw err;
        return undefined;
      }
    };
    const out = await run(TIMELINES_SCAN_COMMAND, 60_000);
    if (out === undefined) return;
    const scan = parseTimelineScan(out);
    // Timeline 1: nothing came before it.
    if (!scan) {
      s.timelinesDone = out.trim() === '';
      return;
    }
    const plan = planCatchUp(scan);
    const where = `${repo.bucket}/${repo.path}`;
    const { pushed, failed } =
      plan.push.length === 0
        ? { pushed: [], failed: [] }
        : parsePushed((await run(pushCommand(plan.push), 60_000 + plan.push.length * 10_000)) ?? '');
    if (pushed.length > 0)
      ctx.event(
        'Normal',
        'ArchiveCaughtUp',
        `Archived ${pushed.length} WAL segment(s) of an earlier timeline into ${where} that the former primary had not (${pushed[0]}${pushed.length > 1 ? ` to ${pushed.at(-1)}` : ''}): a restore passes the failover`,
      );
    if (pushed.length + failed.length < plan.push.length || failed.length > 0) {
      const why = failed[0] ? `${failed[0].segment}: ${failed[0].why}` : 'no answer';
      ctx.warn(
        'ArchivingFailed',
        `Could not archive the earlier timelines' WAL segments the archive lacks into ${where} (${why}); trying again`,
      );
      return;
    }
    for (const gap of plan.gaps)
      ctx.warn(
        'ArchiveGap',
        `The archive in ${where} lacks ${gap.count} WAL segment(s) of timeline ${gap.timeline} (${gap.first}${gap.count > 1 ? ` to ${gap.last}` : ''}) that the former primary never archived and no instance holds: a restore from an earlier backup cannot pass them (it fails, saying so); backups taken from now on restore past them`,
      );
    s.timelinesDone = true;
  }

  /** Reads the archiver on the primary when due; a change is an Event. Returns when to read it next. */
  async #watchArchiver(
    db: DatabaseObject,
    ctx: Context,
    pod: string,
    s: ArchivingState,
    repo: Repository,
    now: number,
  ): Promise<number> {
    const since = now - (s.checkedAt ?? 0);
    if (since < ARCHIVER_CHECK_MS) return ARCHIVER_CHECK_MS - since;
    s.checkedAt = now;
    if (!s.timelinesDone) await this.#archiveEarlierTimelines(db, ctx, pod, s, repo);
    let out: string | undefined;
    try {
      const r = await this.executor.exec({
        namespace: db.metadata.namespace!,
        pod,
        container: 'postgres',
        command: ARCHIVER_COMMAND,
        timeoutMs: 15_000,
        signal: ctx.signal,
      });
      if (r.exitCode === 0) out = r.stdout;
    } catch (err) {
      if (!(err instanceof ExecError)) throw err;
    }
    // No answer (the primary busy, or going away: replication reports that) changes nothing said.
    const state = out === undefined ? undefined : parseArchiverState(out);
    if (!state) return ARCHIVER_CHECK_MS;
    const health = archiverHealth(state, `${repo.bucket}/${repo.path}`);
    const was = s.archiver;
    s.archiver = health;
    if (!health.ok && was?.ok !== false) ctx.warn('ArchivingFailed', health.message);
    else if (health.ok && was?.ok === false) ctx.event('Normal', 'ArchivingRecovered', health.message);
    return ARCHIVER_CHECK_MS;
  }
}
