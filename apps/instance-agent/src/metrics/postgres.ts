// What postgres says about itself, as the series postgres_exporter publishes
// for it: its metric names and labels (pg_stat_database_*, pg_stat_activity_*,
// pg_stat_replication_*, pg_replication_lag_seconds, …), so that the dashboards
// and alert rules users already have for postgres work on Regulon's. Where
// postgres_exporter has no series for what an operator of a replicated
// database watches (each standby's lag in seconds, the WAL segments waiting for
// the archive), the name follows its pattern and the engine README says so.
//
// One query answers a scrape: a JSON document built by postgres, so one psql
// process and one round trip read every view, and the agent parses JSON
// rather than psql's table layout. Every part is read from the statistics
// views and functions postgres keeps in memory; only pg_database_size() and
// pg_ls_archive_statusdir() look at the disk, a stat() per file.
import type { EngineReading, Sample } from './exposition.ts';

/**
 * The query a scrape runs (as a superuser: pg_ls_archive_statusdir needs one, or pg_monitor).
 * Works on a primary and on a standby: what only one of them has is read under a CASE or
 * from a view that is empty on the other.
 */
export const POSTGRES_METRICS_QUERY = `select json_build_object(
  'version', current_setting('server_version_num')::int,
  'recovery', pg_is_in_recovery(),
  'start_time', extract(epoch from pg_postmaster_start_time()),
  'max_connections', current_setting('max_connections')::int,
  'superuser_reserved_connections', current_setting('superuser_reserved_connections')::int,
  'replication_lag', case
    when not pg_is_in_recovery() then 0
    when pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() then 0
    else greatest(0, extract(epoch from now() - pg_last_xact_replay_timestamp())) end,
  'activity', (select coalesce(json_agg(a), '[]') from (
    select coalesce(datname, '') as datname, coalesce(state, '') as state, count(*) as count,
      coalesce(max(extract(epoch from now() - xact_start)), 0) as max_tx_duration
    from pg_stat_activity where backend_type = 'client backend' group by 1, 2) a),
  'databases', (select coalesce(json_agg(d), '[]') from (
    select datname, numbackends, xact_commit, xact_rollback, blks_read, blks_hit, tup_returned,
      tup_fetched, tup_inserted, tup_updated, tup_deleted, conflicts, temp_files, temp_bytes, deadlocks,
      pg_database_size(datid) as size_bytes
    from pg_stat_database where datname is not null and datname not in ('template0', 'template1')) d),
  'archiver', (select row_to_json(x) from (
    select archived_count, failed_count,
      extract(epoch from now() - last_archived_time) as last_archive_age,
      extract(epoch from now() - last_failed_time) as last_failed_age,
      current_setting('archive_mode') as archive_mode
    from pg_stat_archiver) x),
  'archive_ready', (select row_to_json(r) from (
    select count(*) as count, coalesce(extract(epoch from now() - min(modification)), 0) as oldest_age
    from pg_ls_archive_statusdir() where name like '%.ready') r),
  'bgwriter', (select row_to_json(b) from (
    select checkpoints_timed, checkpoints_req, checkpoint_write_time, checkpoint_sync_time,
      buffers_checkpoint, buffers_clean, buffers_backend
    from pg_stat_bgwriter) b),
  'replication', (select coalesce(json_agg(r), '[]') from (
    select coalesce(application_name, '') as application_name,
      coalesce(host(client_addr), '') as client_addr, coalesce(state, '') as state,
      coalesce(sync_state, '') as sync_state,
      pg_wal_lsn_diff(pg_current_wal_lsn(), sent_lsn) as sent_diff,
      pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn) as flush_diff,
      pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn) as replay_diff,
      extract(epoch from write_lag) as write_lag, extract(epoch from flush_lag) as flush_lag,
      extract(epoch from replay_lag) as replay_lag
    from pg_stat_replication where not pg_is_in_recovery()) r),
  'current_wal_lsn', case when pg_is_in_recovery() then pg_wal_lsn_diff(pg_last_wal_receive_lsn(), '0/0')
    else pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') end,
  'wal_receiver', (select row_to_json(w) from (
    select status, coalesce(sender_host, '') as sender_host, received_tli,
      pg_wal_lsn_diff(flushed_lsn, '0/0') as flushed_lsn,
      extract(epoch from now() - last_msg_receipt_time) as last_msg_receipt_age
    from pg_stat_wal_receiver) w),
  'slots', (select coalesce(json_agg(s), '[]') from (
    select slot_name, active,
      case when pg_is_in_recovery() then null else pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) end
        as retained_bytes
    from pg_replication_slots) s)
)`;

interface Activity {
  datname: string;
  state: string;
  count: number;
  max_tx_duration: number;
}

type DatabaseStats = { datname: string } & Record<string, number>;

interface Replication {
  application_name: string;
  client_addr: string;
  state: string;
  sync_state: string;
  sent_diff: number | null;
  flush_diff: number | null;
  replay_diff: number | null;
  write_lag: number | null;
  flush_lag: number | null;
  replay_lag: number | null;
}

interface Document {
  version: number;
  recovery: boolean;
  start_time: number;
  max_connections: number;
  superuser_reserved_connections: number;
  replication_lag: number | null;
  activity: Activity[];
  databases: DatabaseStats[];
  archiver: {
    archived_count: number;
    failed_count: number;
    last_archive_age: number | null;
    last_failed_age: number | null;
    archive_mode: string;
  };
  archive_ready: { count: number; oldest_age: number };
  bgwriter: Record<string, number>;
  replication: Replication[];
  current_wal_lsn: number | null;
  wal_receiver: {
    status: string;
    sender_host: string;
    received_tli: number;
    flushed_lsn: number | null;
    last_msg_receipt_age: number | null;
  } | null;
  slots: { slot_name: string; active: boolean; retained_bytes: number | null }[];
}

/** pg_stat_database columns, published as postgres_exporter's stat_database collector names them. */
const DATABASE_COUNTERS: Readonly<Record<string, string>> = {
  xact_commit: 'Transactions committed',
  xact_rollback: 'Transactions rolled back',
  blks_read: 'Disk blocks read (not found in the buffer cache)',
  blks_hit: 'Disk blocks found in the buffer cache',
  tup_returned: 'Rows returned by queries',
  tup_fetched: 'Rows fetched by queries',
  tup_inserted: 'Rows inserted',
  tup_updated: 'Rows updated',
  tup_deleted: 'Rows deleted',
  conflicts: 'Queries cancelled by conflicts with recovery (standbys only)',
  temp_files: 'Temporary files created by queries',
  temp_bytes: 'Bytes written to temporary files by queries',
  deadlocks: 'Deadlocks detected',
};

const BGWRITER_COUNTERS: Readonly<Record<string, string>> = {
  checkpoints_timed: 'Checkpoints started because checkpoint_timeout passed',
  checkpoints_req: 'Checkpoints requested (WAL volume, a command, a shutdown)',
  buffers_checkpoint: 'Buffers written by checkpoints',
  buffers_clean: 'Buffers written by the background writer',
  buffers_backend: 'Buffers written by backends themselves',
};

/**
 * The samples of the metrics query's answer, or undefined when it is not one (psql's error, a
 * refused login, a server starting up: nothing a scrape should publish).
 */
export function postgresReading(output: string): EngineReading | undefined {
  let doc: Document;
  try {
    doc = JSON.parse(output.trim()) as Document;
  } catch {
    return undefined;
  }
  if (typeof doc !== 'object' || doc === null || typeof doc.recovery !== 'boolean') return undefined;
  const samples: Sample[] = [];
  const add = (
    type: Sample['type'],
    name: string,
    help: string,
    value: number | null | undefined,
    labels?: Record<string, string>,
  ) => {
    if (value === null || value === undefined || !Number.isFinite(Number(value))) return;
    samples.push({ name, help, type, value: Number(value), ...(labels ? { labels } : {}) });
  };

  add(
    'gauge',
    'pg_settings_max_connections',
    'max_connections: connections the server accepts',
    doc.max_connections,
  );
  add(
    'gauge',
    'pg_settings_superuser_reserved_connections',
    'superuser_reserved_connections: of max_connections, kept for superusers',
    doc.superuser_reserved_connections,
  );
  add(
    'gauge',
    'pg_postmaster_start_time_seconds',
    'When the server started (Unix time): a change is a restart',
    doc.start_time,
  );
  add('gauge', 'pg_replication_is_replica', '1 on a standby (in recovery)', doc.recovery ? 1 : 0);
  add(
    'gauge',
    'pg_replication_lag_seconds',
    'On a standby, seconds since the last transaction it replayed was committed, when it has WAL not yet replayed; 0 otherwise',
    doc.replication_lag,
  );
  add(
    'gauge',
    'pg_wal_lsn_bytes',
    'The WAL position: written on a primary, received on a standby (bytes since 0/0)',
    doc.current_wal_lsn,
  );

  for (const a of doc.activity) {
    const labels = { datname: a.datname, state: a.state };
    add('gauge', 'pg_stat_activity_count', 'Client connections by database and state', a.count, labels);
    add(
      'gauge',
      'pg_stat_activity_max_tx_duration',
      'Seconds the oldest open transaction of the database and state has run',
      a.max_tx_duration,
      labels,
    );
  }
  for (const d of doc.databases) {
    const labels = { datname: d.datname };
    add(
      'gauge',
      'pg_stat_database_numbackends',
      'Backends connected to the database',
      d['numbackends'],
      labels,
    );
    for (const [column, help] of Object.entries(DATABASE_COUNTERS))
      add('counter', `pg_stat_database_${column}`, help, d[column], labels);
    add('gauge', 'pg_database_size_bytes', 'Disk space the database uses', d['size_bytes'], labels);
  }

  // The archiver runs on the primary (archive_mode = always is not used): a standby's says nothing.
  const arch = doc.archiver;
  if (!doc.recovery && arch.archive_mode !== 'off') {
    add('counter', 'pg_stat_archiver_archived_count', 'WAL files archived', arch.archived_count);
    add(
      'counter',
      'pg_stat_archiver_failed_count',
      'Failed attempts to archive a WAL file',
      arch.failed_count,
    );
    add(
      'gauge',
      'pg_stat_archiver_last_archive_age',
      'Seconds since the last WAL file was archived',
      arch.last_archive_age,
    );
    add(
      'gauge',
      'pg_stat_archiver_last_failed_age',
      'Seconds since the last failed attempt to archive',
      arch.last_failed_age,
    );
    add(
      'gauge',
      'pg_wal_archive_ready_count',
      'WAL files complete and waiting to be archived',
      doc.archive_ready.count,
    );
    add(
      'gauge',
      'pg_wal_archive_oldest_ready_age_seconds',
      'Seconds the oldest WAL file waiting to be archived has waited (0: none waits)',
      doc.archive_ready.oldest_age,
    );
  }
  for (const [column, help] of Object.entries(BGWRITER_COUNTERS))
    add('counter', `pg_stat_bgwriter_${column}_total`, help, doc.bgwriter[column]);

  for (const r of doc.replication) {
    const labels = {
      application_name: r.application_name,
      client_addr: r.client_addr,
      state: r.state,
      sync_state: r.sync_state,
    };
    add(
      'gauge',
      'pg_stat_replication_pg_wal_lsn_diff',
      "Bytes of WAL the standby has not replayed yet (the primary's position minus its replay position)",
      r.replay_diff,
      labels,
    );
    add(
      'gauge',
      'pg_stat_replication_sent_lsn_diff_bytes',
      'Bytes of WAL not yet sent to the standby',
      r.sent_diff,
      labels,
    );
    add(
      'gauge',
      'pg_stat_replication_flush_lsn_diff_bytes',
      'Bytes of WAL the standby has not flushed to its disk yet',
      r.flush_diff,
      labels,
    );
    add(
      'gauge',
      'pg_stat_replication_write_lag_seconds',
      'Seconds between a commit here and the standby writing it (its last report)',
      r.write_lag ?? 0,
      labels,
    );
    add(
      'gauge',
      'pg_stat_replication_flush_lag_seconds',
      'Seconds between a commit here and the standby flushing it',
      r.flush_lag ?? 0,
      labels,
    );
    add(
      'gauge',
      'pg_stat_replication_replay_lag_seconds',
      'Seconds between a commit here and the standby replaying it',
      r.replay_lag ?? 0,
      labels,
    );
  }
  if (doc.recovery) {
    const w = doc.wal_receiver;
    add(
      'gauge',
      'pg_stat_wal_receiver_streaming',
      '1 while the WAL receiver streams from the primary',
      w?.status === 'streaming' ? 1 : 0,
      { sender_host: w?.sender_host ?? '' },
    );
    if (w) {
      add('gauge', 'pg_stat_wal_receiver_received_tli', 'Timeline of the WAL last received', w.received_tli);
      add(
        'gauge',
        'pg_stat_wal_receiver_last_msg_receipt_age_seconds',
        'Seconds since the primary last sent anything',
        w.last_msg_receipt_age,
      );
    }
  }
  for (const s of doc.slots) {
    const labels = { slot_name: s.slot_name };
    add(
      'gauge',
      'pg_replication_slots_active',
      '1 while a standby streams from the slot',
      s.active ? 1 : 0,
      labels,
    );
    add(
      'gauge',
      'pg_replication_slots_pg_wal_lsn_diff',
      'Bytes of WAL the slot keeps on disk for its standby',
      s.retained_bytes,
      labels,
    );
  }
  add('gauge', 'pg_static', 'Always 1; the label says the server version', 1, {
    server_version_num: String(doc.version),
  });
  return { role: doc.recovery ? 'replica' : 'primary', samples };
}
