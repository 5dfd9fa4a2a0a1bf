// What the postgres backup suites share beyond backupSuite (./backup-suite.ts): SQL on a
// Database's primary, what its repository holds (`pgbackrest info`, run in the primary as the
// manager runs it), the manager's backup-failing gauge, and a scheduled backup's slot.
import type { V1Pod } from '@kubernetes/client-node';
import { Kinds } from '@regulon/client';
import pg from 'pg';
import { Database } from '../api.ts';
import type { DatabaseBackupObject } from '../backup/api.ts';
import { PodExec } from '../backup/exec.ts';
import { FAILING_METRIC } from '../backup/metrics.ts';
import { parseInfo, type RepositoryInfo } from '../backup/pgbackrest.ts';
import { SLOT_ANNOTATION } from '../backup/schedule.ts';
import type { BackupSuite } from './backup-suite.ts';
import { readCredentials } from './workload.ts';

/** The slot a scheduled DatabaseBackup was made for (ms), from its annotation. */
export const slotOf = (b: DatabaseBackupObject) =>
  Date.parse(b.metadata.annotations?.[SLOT_ANNOTATION] ?? '');

/** The helpers, on the suite's cluster and namespace once its `before` ran. */
export function postgresBackupTools(s: BackupSuite) {
  let execIn: PodExec | undefined;
  const dbs = () => s.client.resource(Database);

  /** Runs `use` connected to the Database's primary (its Pod IP: this host reaches the real node's Pods). */
  const withPrimary = async <R>(name: string, use: (c: pg.Client) => Promise<R>): Promise<R> => {
    const db = await dbs().get(name, { namespace: s.ns });
    const primary = db.status?.currentPrimary ?? `${name}-0`;
    const pod = await s.client.resource<V1Pod>(Kinds.Pod).get(primary, { namespace: s.ns });
    const creds = await readCredentials(s.client, s.ns, name);
    const c = new pg.Client({
      host: pod.status!.podIP!,
      port: 5432,
      user: creds.username,
      password: creds.password,
      database: creds.database,
      connectionTimeoutMillis: 5_000,
    });
    c.on('error', () => {});
    await c.connect();
    try {
      return await use(c);
    } finally {
      await c.end().catch(() => {});
    }
  };

  /** `pgbackrest info` of the Database's repository, run in its primary: what the store holds. */
  const repositoryInfo = async (name: string): Promise<RepositoryInfo> => {
    const db = await dbs().get(name, { namespace: s.ns });
    execIn ??= new PodExec(s.env.kubeConfig);
    const r = await execIn.exec({
      namespace: s.ns,
      pod: db.status!.currentPrimary!,
      container: 'postgres',
      command: ['pgbackrest', 'info', '--output=json'],
      timeoutMs: 90_000,
    });
    return parseInfo(r.stdout);
  };

  /** regulon_database_backup_failing for the Database, as the suite's manager exports it. */
  const failingMetric = async (database: string) =>
    (await s.mgr.registry.getSingleMetric(FAILING_METRIC)?.get())?.values.find(
      (v) => v.labels['database'] === database && v.labels['database_namespace'] === s.ns,
    )?.value;

  return { withPrimary, repositoryInfo, failingMetric };
}
