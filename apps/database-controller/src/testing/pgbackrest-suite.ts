// What the postgres backup suites share beyond backupSuite (./backup-suite.ts): SQL on a
// Database's primary (its `items` rows), what its repository holds (`pgbackrest info`, run in the
// primary as the manager runs it), a failover by Pod delete, the manager's backup and archiver
// gauges, and a scheduled backup's slot.
import type { V1Pod } from '@kubernetes/client-node';
import { Kinds } from '@regulon/client';
import { eventually } from '@regulon/testenv';
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

  /** One of the manager's gauges (backup, archiver) for the Database, as the suite's manager exports it. */
  const gauge = async (database: string, metric: string) =>
    (await s.mgr.registry.getSingleMetric(metric)?.get())?.values.find(
      (v) => v.labels['database'] === database && v.labels['database_namespace'] === s.ns,
    )?.value;

  /** regulon_database_backup_failing for the Database. */
  const failingMetric = (database: string) => gauge(database, FAILING_METRIC);

  /** Inserts ids from..to into the Database's `items` table. */
  const insert = (name: string, from: number, to: number) =>
    withPrimary(name, (c) =>
      c.query('insert into items(id) select generate_series($1::int, $2::int)', [from, to]),
    );

  /** The ids in the Database's `items` table, in order. */
  const ids = (name: string) =>
    withPrimary(name, async (c) =>
      (await c.query<{ id: number }>('select id from items order by id')).rows.map((r) => r.id),
    );

  /**
   * Until the Database's standby streams and has replayed all the primary
   * wrote: a Ready standby may not stream yet (it is Ready once it answers
   * queries), and promoted before it does it would lack the rows. That is
   * asynchronous replication's loss, not what these tests are about.
   */
  const standbyPastTheRows = (name: string) =>
    eventually(
      `${name}'s standby streaming and past the rows`,
      () =>
        withPrimary(name, async (c) => {
          const r = await c.query<{ n: number }>(
            "select count(*)::int as n from pg_stat_replication where state = 'streaming' and replay_lsn >= pg_current_wal_lsn()",
          );
          return r.rows[0]!.n === 1 || undefined;
        }),
      120_000,
      200,
    );

  /** Deletes the primary's Pod and waits for another instance to be promoted; returns its name. */
  const failOver = async (name: string, old: string, t: { diagnostic: (m: string) => void }) => {
    const lostAt = Date.now();
    await s.client.resource<V1Pod>(Kinds.Pod).delete(old, { namespace: s.ns });
    const promoted = await eventually(
      `a replica of ${name} promoted`,
      async () => {
        const d = await dbs().get(name, { namespace: s.ns });
        return d.status?.currentPrimary && d.status.currentPrimary !== old
          ? d.status.currentPrimary
          : undefined;
      },
      300_000,
    );
    t.diagnostic(
      `failover ${old} -> ${promoted} ${((Date.now() - lostAt) / 1000).toFixed(1)} s after the Pod was deleted`,
    );
    return promoted;
  };

  return {
    withPrimary,
    repositoryInfo,
    failingMetric,
    insert,
    ids,
    standbyPastTheRows,
    failOver,
    gauge,
  };
}
