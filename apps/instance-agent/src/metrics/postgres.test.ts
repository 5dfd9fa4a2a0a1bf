import assert from 'node:assert/strict';
import { test } from 'node:test';
import { captured, valueIn as value } from '../testing/readings.ts';
import { renderExposition } from './exposition.ts';
import { postgresReading } from './postgres.ts';

// POSTGRES_METRICS_QUERY as postgres 15.18 (Debian bookworm's)
// answered it: a primary with one streaming standby, archive_command failing (four WAL files
// waiting), a transaction open for 2 s in `app`; and that standby.
const primary = captured('postgres-15-primary.json');
const standby = captured('postgres-15-standby.json');

test("a primary's answer: postgres_exporter's names, its standby's lag, the archiver failing", () => {
  const r = postgresReading(primary);
  const doc = JSON.parse(primary) as {
    start_time: number;
    databases: Array<Record<string, number | string>>;
    archiver: { failed_count: number };
    archive_ready: { count: number; oldest_age: number };
  };
  const app = doc.databases.find((d) => d['datname'] === 'app')!;
  assert.equal(r?.role, 'primary');
  assert.equal(value(r, 'pg_settings_max_connections'), 100);
  assert.equal(value(r, 'pg_replication_is_replica'), 0);
  assert.equal(value(r, 'pg_postmaster_start_time_seconds'), doc.start_time);
  assert.equal(value(r, 'pg_stat_activity_count', { datname: 'app', state: 'active' }), 1);
  // The transaction held open for about 2 s (psql's own start included) when the query ran.
  assert.ok((value(r, 'pg_stat_activity_max_tx_duration', { datname: 'app', state: 'active' }) ?? 0) > 1.5);
  assert.equal(value(r, 'pg_stat_database_tup_inserted', { datname: 'app' }), app['tup_inserted']);
  assert.ok((app['tup_inserted'] as number) >= 10_000, 'the 10,000 rows inserted');
  assert.equal(value(r, 'pg_stat_database_blks_hit', { datname: 'app' }), app['blks_hit']);
  assert.equal(value(r, 'pg_database_size_bytes', { datname: 'app' }), app['size_bytes']);
  // archive_command is `false`: it failed, archived nothing, and WAL files wait.
  assert.equal(value(r, 'pg_stat_archiver_failed_count'), doc.archiver.failed_count);
  assert.ok(doc.archiver.failed_count > 0);
  assert.equal(value(r, 'pg_stat_archiver_archived_count'), 0);
  // Never archived: no age rather than a made-up one.
  assert.equal(value(r, 'pg_stat_archiver_last_archive_age'), undefined);
  assert.equal(value(r, 'pg_wal_archive_ready_count'), doc.archive_ready.count);
  assert.ok(doc.archive_ready.count > 0);
  assert.equal(value(r, 'pg_wal_archive_oldest_ready_age_seconds'), doc.archive_ready.oldest_age);
  const standbyLabels = { application_name: 'walreceiver', client_addr: '127.0.0.1', state: 'streaming' };
  assert.equal(value(r, 'pg_stat_replication_pg_wal_lsn_diff', standbyLabels), 0);
  assert.ok((value(r, 'pg_stat_replication_replay_lag_seconds', standbyLabels) ?? -1) >= 0);
  assert.equal(value(r, 'pg_replication_slots_active', { slot_name: 'regulon_s1' }), 1);
  assert.ok((value(r, 'pg_stat_bgwriter_checkpoints_req_total') ?? 0) >= 1);
  // A primary has no WAL receiver.
  assert.equal(value(r, 'pg_stat_wal_receiver_streaming'), undefined);
  assert.equal(r?.samples.find((s) => s.name === 'pg_stat_database_xact_commit')?.type, 'counter');
  assert.equal(r?.samples.find((s) => s.name === 'pg_stat_activity_count')?.type, 'gauge');
});

test("a standby's answer: its receiver streaming, its lag, and no archiver figures (a standby's archiver is idle)", () => {
  const r = postgresReading(standby);
  assert.equal(r?.role, 'replica');
  assert.equal(value(r, 'pg_replication_is_replica'), 1);
  assert.equal(value(r, 'pg_replication_lag_seconds'), 0);
  assert.equal(value(r, 'pg_stat_wal_receiver_streaming', { sender_host: '127.0.0.1' }), 1);
  assert.equal(value(r, 'pg_stat_wal_receiver_received_tli'), 1);
  assert.equal(value(r, 'pg_stat_archiver_failed_count'), undefined);
  assert.equal(value(r, 'pg_wal_archive_ready_count'), undefined);
  assert.equal(value(r, 'pg_stat_replication_pg_wal_lsn_diff'), undefined);
});

test('a standby that lost its primary says its receiver is not streaming', () => {
  const doc = JSON.parse(standby) as Record<string, unknown>;
  const r = postgresReading(JSON.stringify({ ...doc, wal_receiver: null }));
  assert.equal(value(r, 'pg_stat_wal_receiver_streaming'), 0);
});

test('what is not an answer is no reading: psql errors, empty output, other JSON', () => {
  assert.equal(postgresReading(''), undefined);
  assert.equal(
    postgresReading('psql: error: connection to server at "127.0.0.1", port 5432 failed'),
    undefined,
  );
  assert.equal(postgresReading('{"a": 1}'), undefined);
  assert.equal(postgresReading('null'), undefined);
});

test('every sample renders in the text format', () => {
  for (const doc of [primary, standby]) {
    const r = postgresReading(doc)!;
    const text = renderExposition(r.samples, { role: r.role! });
    assert.match(text, /^pg_stat_database_xact_commit\{datname="postgres",role="(primary|replica)"\} \d+$/m);
  }
});
