/**
 * Backup metrics, for the RegulonDatabaseBackupFailing alert
 * (tools/scripts/alerts.ts) and dashboards. Labelled by the Database's
 * namespace and name only: never anything of the store, its keys or a
 * message. `database_namespace` rather than `namespace`: Prometheus gives
 * the scraped manager's own namespace that name.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { DatabaseBackupObject } from './api.ts';

export const LAST_SUCCESS_METRIC = 'regulon_database_backup_last_success_timestamp_seconds';
export const FAILING_METRIC = 'regulon_database_backup_failing';
export const TOTAL_METRIC = 'regulon_database_backups_total';

type Labels = 'database_namespace' | 'database';

export interface BackupMetrics {
  /**
   * A finished DatabaseBackup as the controller sees it (each is reconciled
   * at start-up, so a new manager knows them all): the Database's latest
   * finished one says whether its backups are failing.
   */
  observe(b: DatabaseBackupObject): void;
  /** A backup this manager saw finish, counted once. */
  finished(b: DatabaseBackupObject, result: 'succeeded' | 'failed'): void;
}

/** When a finished backup finished: the latest one says. */
const finishedAt = (b: DatabaseBackupObject) =>
  Date.parse(b.status?.stoppedAt ?? b.status?.startedAt ?? String(b.metadata.creationTimestamp ?? '')) || 0;

/** One set per registry: prom-client refuses a metric name twice on one registry. */
const made = new WeakMap<Registry, BackupMetrics>();

export function backupMetrics(registry: Registry): BackupMetrics {
  let m = made.get(registry);
  if (!m) made.set(registry, (m = create(registry)));
  return m;
}

function create(registry: Registry): BackupMetrics {
  const registers = [registry];
  const labelNames: Labels[] = ['database_namespace', 'database'];
  const lastSuccess = new Gauge<Labels>({
    name: LAST_SUCCESS_METRIC,
    help: 'When the newest succeeded backup of the Database completed (Unix seconds)',
    labelNames,
    registers,
  });
  const failing = new Gauge<Labels>({
    name: FAILING_METRIC,
    help: "1 while the Database's latest finished backup failed, 0 once one succeeds after it",
    labelNames,
    registers,
  });
  const total = new Counter<Labels | 'result'>({
    name: TOTAL_METRIC,
    help: 'Backups this manager saw finish, by result (succeeded, failed)',
    labelNames: [...labelNames, 'result'],
    registers,
  });
  // Per Database: the latest finished backup seen, and the newest success.
  const latest = new Map<string, { at: number; failed: boolean; successAt: number }>();
  const labelsOf = (b: DatabaseBackupObject) => ({
    database_namespace: b.metadata.namespace ?? '',
    database: b.spec.database,
  });
  return {
    observe(b) {
      const phase = b.status?.phase;
      if (phase !== 'Succeeded' && phase !== 'Failed') return;
      const key = `${b.metadata.namespace}/${b.spec.database}`;
      const at = finishedAt(b);
      const seen = latest.get(key) ?? { at: -1, failed: false, successAt: 0 };
      if (at >= seen.at) {
        seen.at = at;
        seen.failed = phase === 'Failed';
      }
      if (phase === 'Succeeded') seen.successAt = Math.max(seen.successAt, at);
      latest.set(key, seen);
      failing.set(labelsOf(b), seen.failed ? 1 : 0);
      if (seen.successAt) lastSuccess.set(labelsOf(b), seen.successAt / 1000);
    },
    finished(b, result) {
      total.inc({ ...labelsOf(b), result });
    },
  };
}
