/**
 * The synchronous standbys gauge, for the RegulonDatabaseWritesWait alert
 * (tools/scripts/alerts.ts): how many standbys confirm the primary's commits,
 * for each synchronous Database whose primary this manager observed. 0 means
 * every commit waits. A Database that is not synchronous, or whose primary was
 * not observed, has no series: no figure is made up.
 */
import { Gauge, type Registry } from 'prom-client';
import { oncePerRegistry } from '@regulon/util';
import type { DatabaseObject } from '../api.ts';
import type { ReplicationView } from './replication.ts';

export const SYNCHRONOUS_STANDBYS_METRIC = 'regulon_database_synchronous_standbys';

type Labels = 'database_namespace' | 'database';
const gaugeOf = oncePerRegistry(
  (registry) =>
    new Gauge<Labels>({
      name: SYNCHRONOUS_STANDBYS_METRIC,
      help: "Standbys confirming a synchronous Database's commits now (0: every commit waits)",
      labelNames: ['database_namespace', 'database'],
      registers: [registry],
    }),
);

export function synchronousStandbysReporter(
  registry: Registry,
): (db: DatabaseObject, view: ReplicationView | undefined) => void {
  const g = gaugeOf(registry);
  return (db, view) => {
    const labels = { database_namespace: db.metadata.namespace ?? '', database: db.metadata.name ?? '' };
    const primary = view?.plan.currentPrimary;
    const seen = primary ? view.observations.get(primary) : undefined;
    if (db.spec.replication?.synchronous && seen?.reachable && seen.confirming !== undefined)
      g.set(labels, seen.confirming);
    else g.remove(labels);
  };
}
