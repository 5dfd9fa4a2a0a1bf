// PostgreSQL replication on real Pods: the scenarios of testing/replication-suite.ts,
// with what postgres adds (its postmaster, its system identifier and LSNs, a
// replication slot on the primary for each other instance, a synchronous standby).
//   npx regulon-testenv exec -- npx node --test apps/database-controller/src/replication.integration.test.ts
import assert from 'node:assert/strict';
import pg from 'pg';
import { Kinds } from '@regulon/client';
import type { V1Pod } from '@kubernetes/client-node';
import { POSTGRES_METRICS_PORT } from './postgres/pod.ts';
import { slotName } from './postgres/start-script.ts';
import { POSTGRES_DASHBOARD } from '../../../tools/scripts/engine-dashboards.ts';
import { describeReplication, type SuiteContext } from './testing/replication-suite.ts';
import { ENGINE_CASES } from './testing/side-by-side.ts';
import { LOAD_TABLE, readCredentials } from './testing/workload.ts';
import { parsePrometheusText, sampleValue } from '../../../packages/runtime/src/testing/prometheus.ts';

/** One query on an instance, as the replication role (its password from the create-once Secret). */
async function asReplicationRole<R extends pg.QueryResultRow>(
  { client, namespace, name }: SuiteContext,
  pod: string,
  sql: string,
): Promise<R[]> {
  const secret = await client.resource(Kinds.Secret).get(`${name}-replication`, { namespace });
  const p = await client.resource<V1Pod>(Kinds.Pod).get(pod, { namespace });
  const conn = new pg.Client({
    host: p.status!.podIP!,
    user: 'regulon_replication',
    password: Buffer.from(secret.data!['password']!, 'base64').toString(),
    database: 'postgres',
    connectionTimeoutMillis: 3000,
  });
  conn.on('error', () => {});
  await conn.connect();
  try {
    return (await conn.query<R>(sql)).rows;
  } finally {
    await conn.end();
  }
}

describeReplication({
  title: 'Database replication on real PostgreSQL',
  ...ENGINE_CASES.postgres,
  name: 'pg',
  identity: /^\d+$/,
  position: /^[0-9A-F]+\/[0-9A-F]+$/,
  uriScheme: 'postgresql://',
  instanceAgent: true,
  metrics: {
    dashboard: POSTGRES_DASHBOARD,
    port: POSTGRES_METRICS_PORT,
    prefix: 'pg',
    primary: (text, replicas) => {
      assert.equal(sampleValue(parsePrometheusText(text), 'pg_replication_is_replica'), 0);
      // One series per standby, each streaming, named by its application_name (its Pod).
      const standbys = text.split('\n').filter((l) => l.startsWith('pg_stat_replication_pg_wal_lsn_diff{'));
      assert.equal(standbys.length, replicas, `a lag series per standby:\n${standbys.join('\n')}`);
      assert.ok(
        standbys.every((l) => l.includes('state="streaming"')),
        standbys.join('\n'),
      );
      const slots = text.split('\n').filter((l) => l.startsWith('pg_replication_slots_active{'));
      assert.equal(
        slots.filter((l) => l.endsWith(' 1')).length,
        replicas,
        `every slot in use:\n${slots.join('\n')}`,
      );
      assert.ok(sampleValue(parsePrometheusText(text), 'pg_settings_max_connections') > 0);
    },
    replica: (text) => {
      assert.equal(sampleValue(parsePrometheusText(text), 'pg_replication_is_replica'), 1);
      assert.equal(sampleValue(parsePrometheusText(text), 'pg_stat_wal_receiver_streaming'), 1);
      assert.ok(sampleValue(parsePrometheusText(text), 'pg_replication_lag_seconds') >= 0);
    },
  },
  keptForReplicas: {
    read: async (ctx, primary) =>
      (
        await asReplicationRole<{ slot_name: string }>(
          ctx,
          primary,
          'select slot_name from pg_replication_slots order by 1',
        )
      ).map((r) => r.slot_name),
    expected: (others) => others.map(slotName).sort(),
  },
  readThrough: async ({ client, namespace, name }, host) => {
    const creds = await readCredentials(client, namespace, name);
    const conn = new pg.Client({
      host,
      port: creds.port,
      user: creds.username,
      password: creds.password,
      database: creds.database,
      connectionTimeoutMillis: 3000,
      query_timeout: 5000,
    });
    conn.on('error', () => {});
    await conn.connect();
    try {
      const server = await conn.query<{ ip: string }>('select host(inet_server_addr()) as ip');
      const rows = await conn.query<{ id: string }>(`select id from ${LOAD_TABLE}`);
      return { answeredBy: server.rows[0]!.ip, ids: new Set(rows.rows.map((r) => Number(r.id))) };
    } finally {
      await conn.end();
    }
  },
  waitsForReplicas: async (ctx, primary) => {
    const [row] = await asReplicationRole<{ names: string; sync: string }>(
      ctx,
      primary,
      "select current_setting('synchronous_standby_names') as names, (select count(*) from pg_stat_replication where sync_state in ('sync', 'quorum'))::text as sync",
    );
    // The instances by name (postgres/config.ts), never `*`.
    const db = primary.replace(/-\d+$/, '');
    const named = `ANY 1 (${[0, 1, 2, 3, 4].map((i) => `"${db}-${i}"`).join(', ')})`;
    return row?.names === named && Number(row.sync) >= 1;
  },
});
