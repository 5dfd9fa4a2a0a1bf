/**
 * WAL archiving gauges, for the RegulonDatabaseArchivingFails alert
 * (tools/scripts/alerts.ts) and dashboards: whether each Database's archiver
 * fails now, and how long its oldest waiting segment has waited (the archive
 * lag). Only for a Database whose archiver this manager has read: no figure
 * is made up for the others.
 */
import { Gauge, type Registry } from 'prom-client';
import { oncePerRegistry } from '@regulon/util';
import type { DatabaseObject } from '../api.ts';
import type { ArchiverHealth } from './archiver.ts';

export const ARCHIVING_FAILING_METRIC = 'regulon_database_wal_archiving_failing';
export const ARCHIVE_LAG_METRIC = 'regulon_database_wal_archive_lag_seconds';

type Labels = 'database_namespace' | 'database';
const gaugesOf = oncePerRegistry((registry) => {
  const labelNames: Labels[] = ['database_namespace', 'database'];
  return {
    failing: new Gauge<Labels>({
      name: ARCHIVING_FAILING_METRIC,
      help: "1 while the Database's WAL archiving into its object store fails or is stuck, 0 while it keeps up",
      labelNames,
      registers: [registry],
    }),
    lag: new Gauge<Labels>({
      name: ARCHIVE_LAG_METRIC,
      help: 'How long the oldest WAL segment waiting to be archived has waited, in seconds (0: none waits)',
      labelNames,
      registers: [registry],
    }),
  };
});

export function archiverReporter(
  registry: Registry,
): (db: DatabaseObject, health: ArchiverHealth | undefined) => void {
  const g = gaugesOf(registry);
  return (db, health) => {
    const labels = { database_namespace: db.metadata.namespace ?? '', database: db.metadata.name ?? '' };
    if (health) {
      g.failing.set(labels, health.ok ? 0 : 1);
      g.lag.set(labels, health.oldestPendingSeconds);
    } else {
      g.failing.remove(labels);
      g.lag.remove(labels);
    }
  };
}
