/**
 * The WAL archiver of a postgres primary whose Database archives into an
 * object store: whether archive_command fails or hangs, and how long the
 * oldest segment has waited. Until a segment is archived, neither a restore
 * nor a standby cloned from the archive can reach past it, so a failing
 * archiver must be seen within a minute, not at the next backup.
 *
 * It is read from pg_stat_archiver and the archive status directory (a
 * `.ready` file per segment waiting) through psql on the primary's own Unix
 * socket, where the container's processes are trusted: no password, and the
 * same for a single instance as for a replicated one.
 */

/** Fields separated by `|`, one row: see parseArchiverState. */
const ARCHIVER_SQL = [
  "select coalesce(last_archived_wal, ''),",
  '  coalesce((extract(epoch from last_archived_time) * 1000)::bigint, 0),',
  "  coalesce(last_failed_wal, ''),",
  '  coalesce((extract(epoch from last_failed_time) * 1000)::bigint, 0),',
  '  failed_count,',
  "  (select count(*) from pg_ls_archive_statusdir() where name like '%.ready'),",
  "  coalesce((select (extract(epoch from min(modification)) * 1000)::bigint from pg_ls_archive_statusdir() where name like '%.ready'), 0),",
  "  coalesce((select min(split_part(name, '.', 1)) from pg_ls_archive_statusdir() where name like '%.ready'), ''),",
  '  (extract(epoch from clock_timestamp()) * 1000)::bigint',
  'from pg_stat_archiver',
].join(' ');

/** The command run in the postgres container; its stdout is parseArchiverState's input. */
export const ARCHIVER_COMMAND = [
  'sh',
  '-c',
  `psql -X -q -At -F '|' -d postgres -U "\${SUPERUSER:-postgres}" -c "${ARCHIVER_SQL}"`,
];

/** What the archiver says. Times are milliseconds since the epoch by the server's clock. */
export interface ArchiverState {
  lastArchivedWal: string | undefined;
  lastArchivedAt: number | undefined;
  lastFailedWal: string | undefined;
  lastFailedAt: number | undefined;
  /** Failed attempts since the server started (or the statistics were reset). */
  failedCount: number;
  /** Segments completed and not archived yet. */
  pendingSegments: number;
  /** When the oldest of them was completed (its `.ready` file written), and its name. */
  oldestPendingAt: number | undefined;
  oldestPendingWal: string | undefined;
  /** The server's clock when it answered: ages are measured against it, not the manager's. */
  serverNow: number;
}

export function parseArchiverState(out: string): ArchiverState | undefined {
  const fields = out.trim().split('|');
  if (fields.length !== 9) return undefined;
  const n = fields.map(Number);
  if ([1, 3, 4, 5, 6, 8].some((i) => !Number.isFinite(n[i]))) return undefined;
  return {
    lastArchivedWal: fields[0] || undefined,
    lastArchivedAt: n[1] || undefined,
    lastFailedWal: fields[2] || undefined,
    lastFailedAt: n[3] || undefined,
    failedCount: n[4]!,
    pendingSegments: n[5]!,
    oldestPendingAt: n[6] || undefined,
    oldestPendingWal: fields[7] || undefined,
    serverNow: n[8]!,
  };
}

/**
 * A segment waiting longer than this is archiving that does not keep up,
 * failure reported or not: pgBackRest retries a store that refuses or does
 * not answer until its io-timeout (60 s, or spec.backup.storeTimeoutSeconds)
 * before archive_command fails, and a hung store may never fail it. A
 * healthy archiver is seconds behind, even on
 * a busy server; a backlog this old is a restore that cannot reach the last
 * 40 s, which is worth saying either way.
 */
export const ARCHIVE_STUCK_MS = 40_000;

export interface ArchiverHealth {
  ok: boolean;
  /** For BackupSucceeded: stable while nothing changes, so a status is not rewritten at each look. */
  message: string;
  /** How long the oldest waiting segment has waited (0: none waits). */
  oldestPendingSeconds: number;
}

/** Whether the archiver keeps up with the primary, said of the repository `where` (bucket/path). */
export function archiverHealth(s: ArchiverState, where: string): ArchiverHealth {
  const oldestPendingSeconds = s.oldestPendingAt ? Math.max(0, (s.serverNow - s.oldestPendingAt) / 1000) : 0;
  const lastGood = s.lastArchivedWal
    ? `the last segment archived is ${s.lastArchivedWal}`
    : 'no segment has been archived yet';
  // A failure after the last success: archive_command still fails (the archiver retries the same segment).
  const failing = s.lastFailedAt !== undefined && (s.lastArchivedAt ?? 0) < s.lastFailedAt;
  if (failing)
    return {
      ok: false,
      message: `WAL archiving into ${where} fails: segment ${s.lastFailedWal} could not be archived (${s.failedCount} failed attempts since the server started); ${lastGood}, and no restore can reach past it. The primary's log has archive_command's error`,
      oldestPendingSeconds,
    };
  if (oldestPendingSeconds * 1000 > ARCHIVE_STUCK_MS)
    return {
      ok: false,
      message: `WAL archiving into ${where} does not keep up: segment ${s.oldestPendingWal} has waited more than ${ARCHIVE_STUCK_MS / 1000} s to be archived, no failure reported yet (a store that refuses or does not answer); ${lastGood}, and no restore can reach past it`,
      oldestPendingSeconds,
    };
  return { ok: true, message: `WAL is archived into ${where}`, oldestPendingSeconds };
}
