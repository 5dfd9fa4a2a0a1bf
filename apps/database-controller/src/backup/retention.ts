/**
 * Retention (spec.backup.retention): which succeeded backups of a Database
 * have fallen out of its policy. Decided from the DatabaseBackups, carried
 * out in the repository by pgBackRest (`expire --set`, which also expires the
 * archived WAL no remaining backup needs), and then the repository is the
 * truth: a DatabaseBackup is deleted only once `pgbackrest info` no longer
 * lists its backup. Pure functions; controller.ts runs them.
 */
import type { DatabaseObject } from '../api.ts';
import { MAX_AGE_PATTERN, type DatabaseBackupObject } from './api.ts';
import { sameRepository, type Repository } from './pgbackrest.ts';
import { ownRepository } from './repository.ts';

export interface RetentionPolicy {
  count?: number | undefined;
  maxAge?: string | undefined;
}

const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 } as const;

/** maxAge (as the CRD admits it: 30d, 12h, 90m, 2w) in milliseconds; throws on anything else. */
export function parseMaxAge(text: string): number {
  const m = MAX_AGE_PATTERN.exec(text);
  if (!m) throw new Error(`not a maxAge: ${text}`);
  return Number(text.slice(0, -1)) * UNIT_MS[m[1] as keyof typeof UNIT_MS];
}

/** One backup retention let go, and why, in words for an Event. */
export interface Expiry {
  backup: DatabaseBackupObject;
  label: string;
  why: string;
}

export interface RetentionPlan {
  /** The newest succeeded backup: always kept, and the one whose reconcile carries the plan out. */
  newest: DatabaseBackupObject | undefined;
  /** Oldest first: the order pgBackRest expires them in. */
  expire: Expiry[];
  /** When the next backup kept now becomes older than maxAge (undefined: never, as things stand). */
  nextExpiryAt: Date | undefined;
}

/** When a succeeded backup completed, which is when its age counts from. */
const completedAt = (b: DatabaseBackupObject) => Date.parse(b.status?.stoppedAt ?? b.status?.startedAt ?? '');

/**
 * The succeeded backups of `db` in its own repository that the policy no
 * longer keeps. Counted among them: succeeded DatabaseBackups of this Database with a
 * label, in the repository the Database archives into now (a backup in
 * another, after objectStore changed, is left alone: the instances can no
 * longer reach it). The newest is always kept, whatever its age.
 */
export function retentionPlan(
  db: DatabaseObject,
  backups: readonly DatabaseBackupObject[],
  now: Date,
): RetentionPlan {
  const policy = db.spec.backup?.retention;
  const repo = ownRepository(db);
  if (!policy || !repo) return { newest: undefined, expire: [], nextExpiryAt: undefined };
  const succeeded = backups
    .filter((b) => inRepository(b, db.metadata.name!, repo))
    .filter((b) => !Number.isNaN(completedAt(b)))
    .sort((a, b) => completedAt(b) - completedAt(a) || (b.status!.label! < a.status!.label! ? -1 : 1));
  const maxAgeMs = policy.maxAge ? parseMaxAge(policy.maxAge) : undefined;
  const expire: Expiry[] = [];
  let nextExpiryAt: number | undefined;
  succeeded.forEach((b, i) => {
    if (i === 0) return;
    const label = b.status!.label!;
    if (policy.count !== undefined && i >= policy.count) {
      expire.push({ backup: b, label, why: `beyond the ${policy.count} newest (retention.count)` });
      return;
    }
    if (maxAgeMs === undefined) return;
    const expiresAt = completedAt(b) + maxAgeMs;
    if (expiresAt <= now.getTime())
      expire.push({ backup: b, label, why: `older than ${policy.maxAge} (retention.maxAge)` });
    else nextExpiryAt = Math.min(nextExpiryAt ?? Infinity, expiresAt);
  });
  return {
    newest: succeeded[0],
    expire: expire.reverse(),
    nextExpiryAt: nextExpiryAt === undefined ? undefined : new Date(nextExpiryAt),
  };
}

function inRepository(b: DatabaseBackupObject, database: string, repo: Repository): boolean {
  const s = b.status;
  return (
    b.spec.database === database &&
    s?.phase === 'Succeeded' &&
    !!s.label &&
    !!s.repository &&
    !b.metadata.deletionTimestamp &&
    sameRepository(s.repository, repo)
  );
}
