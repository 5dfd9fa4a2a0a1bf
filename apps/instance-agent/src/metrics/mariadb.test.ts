import assert from 'node:assert/strict';
import { test } from 'node:test';
import { captured, valueIn as value } from '../testing/readings.ts';
import { renderExposition } from './exposition.ts';
import { mariadbReading, parseVertical } from './mariadb.ts';

// What `mariadb --force -E -e "$MARIADB_METRICS_QUERY"` printed on MariaDB 10.11.19 (Debian
// bookworm's, the catalog's mariadb:10.11): a primary with one semi-synchronous replica, and
// that replica, streaming by GTID.
const primary = captured('mariadb-10.11-primary.out');
const replica = captured('mariadb-10.11-replica.out');

test("a primary's answer: mysqld_exporter's names, semi-sync on with its replica, the binlog", () => {
  const r = mariadbReading(primary);
  assert.equal(r?.role, 'primary');
  assert.equal(value(r, 'mysql_global_variables_max_connections'), 151);
  assert.equal(value(r, 'mysql_global_variables_read_only'), 0);
  // This scrape's session and the replica's binlog dump thread.
  assert.equal(value(r, 'mysql_global_status_threads_connected'), 2);
  assert.equal(value(r, 'mysql_global_status_rpl_semi_sync_master_status'), 1);
  assert.equal(value(r, 'mysql_global_status_rpl_semi_sync_master_clients'), 1);
  assert.equal(value(r, 'mysql_global_status_rpl_semi_sync_master_yes_tx'), 1);
  assert.equal(value(r, 'mysql_global_status_slaves_connected'), 1);
  assert.equal(value(r, 'mysql_global_status_commands_total', { command: 'insert' }), 3);
  assert.equal(value(r, 'mysql_global_status_buffer_pool_pages', { state: 'total' }), 8112);
  assert.equal(value(r, 'mysql_binlog_files'), 1);
  assert.ok((value(r, 'mysql_binlog_size_bytes') ?? 0) > 0);
  // A primary replicates from no one.
  assert.equal(value(r, 'mysql_slave_status_slave_io_running'), undefined);
  assert.equal(r?.samples.find((s) => s.name === 'mysql_global_status_queries')?.type, 'counter');
});

test("a replica's answer: both threads running, no lag, its GTID caught up", () => {
  const r = mariadbReading(replica);
  assert.equal(r?.role, 'replica');
  const link = { connection_name: '', master_host: '127.0.0.1' };
  assert.equal(value(r, 'mysql_slave_status_slave_io_running', link), 1);
  assert.equal(value(r, 'mysql_slave_status_slave_sql_running', link), 1);
  assert.equal(value(r, 'mysql_slave_status_seconds_behind_master', link), 0);
  assert.equal(value(r, 'mysql_slave_status_gtid_lag_transactions', link), 0);
  assert.equal(value(r, 'mysql_slave_status_last_io_errno', link), 0);
  assert.equal(value(r, 'mysql_global_status_rpl_semi_sync_slave_status'), 1);
});

test('a replica whose IO thread cannot connect: 0, its error, and no seconds behind (NULL)', () => {
  const broken = replica
    .replace(/Slave_IO_Running: Yes/, 'Slave_IO_Running: Connecting')
    .replace(/Seconds_Behind_Master: 0/, 'Seconds_Behind_Master: NULL')
    .replace(/Last_IO_Errno: 0/, 'Last_IO_Errno: 2003')
    .replace(/Gtid_IO_Pos: 0-1-9/, 'Gtid_IO_Pos: 0-1-12');
  const r = mariadbReading(broken);
  assert.equal(value(r, 'mysql_slave_status_slave_io_running'), 0);
  assert.equal(value(r, 'mysql_slave_status_seconds_behind_master'), undefined);
  assert.equal(value(r, 'mysql_slave_status_last_io_errno'), 2003);
  assert.equal(value(r, 'mysql_slave_status_gtid_lag_transactions'), 3);
});

test('the vertical format: rows by their markers, fields by their names, values kept whole', () => {
  const rows = parseVertical(replica);
  assert.equal(rows.length, 3);
  assert.ok(rows[0]!.has('regulon_metrics'));
  assert.equal(rows[1]!.get('Slave_SQL_State'), 'Slave has read all relay log; waiting for more updates');
  assert.equal(rows[1]!.get('Connection_name'), '');
});

test('what is not an answer is no reading: a refused login, empty output', () => {
  assert.equal(mariadbReading(''), undefined);
  assert.equal(
    mariadbReading("ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)"),
    undefined,
  );
  assert.equal(
    mariadbReading(
      '*************************** 1. row ***************************\nregulon_metrics: {"version": ',
    ),
    undefined,
  );
});

test('every sample renders in the text format', () => {
  for (const out of [primary, replica]) {
    const r = mariadbReading(out)!;
    assert.match(
      renderExposition(r.samples, { role: r.role! }),
      /^mysql_global_status_queries\{role="\w+"\} \d+$/m,
    );
  }
});
