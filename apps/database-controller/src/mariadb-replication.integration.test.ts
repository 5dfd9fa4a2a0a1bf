// MariaDB replication on real Pods: the scenarios of testing/replication-suite.ts,
// with what MariaDB adds (mariadbd, a cluster id instead of a system
// identifier, GTID positions, semi-synchronous replication).
//   npx regulon-testenv exec -- npx node --test apps/database-controller/src/mariadb-replication.integration.test.ts
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { Kinds } from '@regulon/client';
import mysql from 'mysql2/promise';
import { MARIADB_METRICS_PORT } from './mariadb/pod.ts';
import { MARIADB_DASHBOARD } from '../../../tools/scripts/engine-dashboards.ts';
import { describeReplication, type SuiteContext } from './testing/replication-suite.ts';
import { ENGINE_CASES } from './testing/side-by-side.ts';
import { LOAD_TABLE, readCredentials } from './testing/workload.ts';
import { parsePrometheusText, sampleValue } from '../../../packages/runtime/src/testing/prometheus.ts';

/** One row from an instance, as the application's account (the credentials Secret's). */
async function ask(
  { client, namespace, name }: SuiteContext,
  pod: string,
  sql: string,
): Promise<Record<string, unknown>> {
  const creds = await readCredentials(client, namespace, name);
  const p = await client.resource<V1Pod>(Kinds.Pod).get(pod, { namespace });
  const conn = await mysql.createConnection({
    host: p.status!.podIP!,
    port: creds.port,
    user: creds.username,
    password: creds.password,
    connectTimeout: 3000,
  });
  conn.on('error', () => {});
  try {
    const [rows] = await conn.query<mysql.RowDataPacket[]>({ sql, timeout: 5000 });
    return rows[0] ?? {};
  } finally {
    conn.destroy();
  }
}

/** A new connection to `host` with the application's credentials. */
async function connectAsApp(creds: Awaited<ReturnType<typeof readCredentials>>, host: string) {
  const conn = await mysql.createConnection({
    host,
    port: creds.port,
    user: creds.username,
    password: creds.password,
    database: creds.database,
    connectTimeout: 3000,
  });
  conn.on('error', () => {});
  return conn;
}

describeReplication({
  title: 'Database replication on real MariaDB',
  ...ENGINE_CASES.mariadb,
  name: 'mdb',
  identity: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  position: /^\d+-\d+-\d+$/,
  uriScheme: 'mysql://',
  instanceAgent: true,
  metrics: {
    dashboard: MARIADB_DASHBOARD,
    port: MARIADB_METRICS_PORT,
    prefix: 'mysql',
    primary: (text, replicas) => {
      assert.equal(sampleValue(parsePrometheusText(text), 'mysql_global_variables_read_only'), 0);
      assert.equal(sampleValue(parsePrometheusText(text), 'mysql_global_status_slaves_connected'), replicas);
      assert.ok(sampleValue(parsePrometheusText(text), 'mysql_binlog_size_bytes') > 0);
      assert.ok(sampleValue(parsePrometheusText(text), 'mysql_global_variables_max_connections') > 0);
    },
    replica: (text) => {
      assert.equal(sampleValue(parsePrometheusText(text), 'mysql_global_variables_read_only'), 1);
      assert.equal(sampleValue(parsePrometheusText(text), 'mysql_slave_status_slave_io_running'), 1);
      assert.equal(sampleValue(parsePrometheusText(text), 'mysql_slave_status_slave_sql_running'), 1);
      assert.ok(sampleValue(parsePrometheusText(text), 'mysql_slave_status_seconds_behind_master') >= 0);
      assert.ok(sampleValue(parsePrometheusText(text), 'mysql_slave_status_gtid_lag_transactions') >= 0);
    },
    connectionLimit: 'mysql_global_variables_max_connections',
    holdConnections: async ({ client, namespace, name }, host, count) => {
      const creds = await readCredentials(client, namespace, name);
      const opened = await Promise.allSettled(Array.from({ length: count }, () => connectAsApp(creds, host)));
      const pool = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
      const refused = opened.find((o) => o.status === 'rejected');
      if (refused) {
        pool.forEach((c) => c.destroy());
        throw new Error(`${pool.length} of ${count} connections opened: ${String(refused.reason)}`);
      }
      return {
        close: () => {
          pool.forEach((c) => c.destroy());
          return Promise.resolve();
        },
      };
    },
  },
  readThrough: async ({ client, namespace, name }, host) => {
    const conn = await connectAsApp(await readCredentials(client, namespace, name), host);
    try {
      // report_host is `<pod>.<headless Service>...` (the start script sets it): the Pod that answered.
      const [server] = await conn.query<mysql.RowDataPacket[]>({
        sql: 'select @@report_host as host',
        timeout: 5000,
      });
      const [rows] = await conn.query<mysql.RowDataPacket[]>({
        sql: `select id from ${LOAD_TABLE}`,
        timeout: 5000,
      });
      return {
        answeredBy: String(server[0]?.['host'] ?? '').split('.')[0]!,
        ids: new Set(rows.map((r) => Number(r['id']))),
      };
    } finally {
      conn.destroy();
    }
  },
  waitsForReplicas: async (ctx, primary) => {
    const row = await ask(
      ctx,
      primary,
      "SELECT @@global.rpl_semi_sync_master_enabled AS enabled, (SELECT variable_value FROM information_schema.global_status WHERE variable_name = 'Rpl_semi_sync_master_clients') AS clients",
    );
    return Number(row['enabled']) === 1 && Number(row['clients']) >= 1;
  },
});
