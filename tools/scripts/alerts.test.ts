// The alert rules that ship (deploy/monitoring/prometheusrule.yaml) pass
// `promtool check rules`, and `promtool test rules` shows each alert fires on
// the failure it names, after its `for`, and stays silent on a healthy
// manager. The series carry an overlay's job name, not the base's, and a Go
// controller-runtime operator that fails in every way sits beside them: the
// rules must find the manager by what it exports and leave the other alone.
// promtool comes from ensurePrometheus() (built once, cached).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ensurePrometheus } from '@regulon/testenv';
import { parse, stringify } from 'yaml';
import { ALERTS, INSTANCE_ALERTS } from './alerts.ts';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'regulon-alerts-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function promtool(...args: string[]) {
  const { promtool: bin } = await ensurePrometheus();
  return spawnSync(bin, args, { cwd: dir, encoding: 'utf8' });
}

/** The rule groups exactly as shipped: the PrometheusRule's spec is a Prometheus rules file. */
function shippedRules(): string {
  const rule = parse(readFileSync(join(root, 'deploy', 'monitoring', 'prometheusrule.yaml'), 'utf8')) as {
    kind: string;
    spec: unknown;
  };
  assert.equal(rule.kind, 'PrometheusRule');
  const file = join(dir, 'rules.yaml');
  writeFileSync(file, stringify(rule.spec));
  return file;
}

test('promtool check rules accepts the shipped rules', async () => {
  shippedRules();
  const r = await promtool('check', 'rules', 'rules.yaml');
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`SUCCESS: ${ALERTS.length + INSTANCE_ALERTS.length} rules found`));
});

/** The manager as an overlay names it: the job is the renamed Service, in the overlay's namespace. */
const j = `job="acme-regulon-manager-metrics", namespace="acme-operators"`;
const a = `${j}, instance="10.0.0.11:8080", pod="acme-regulon-manager-5c9d-a"`;
const b = `${j}, instance="10.0.0.12:8080", pod="acme-regulon-manager-5c9d-b"`;
const q = `controller="database", name="database"`;
/** A Database whose backups the manager reports on. */
const orders = `database_namespace="shop", database="orders"`;
const lease = 'name="regulon-manager"';
/** A replicated Database, as the replication gauges label it. */
const owner = (name: string) => `kind="Database", owner_namespace="shop", owner="${name}"`;
/**
 * A replica's `up`, and what every manager replica exports from start-up and
 * makes it a manager target: scraped throughout, or until minute 2, after
 * which its scrapes fail (up 0) and its series go stale, as Prometheus marks them.
 */
const replica = (labels: string, until: 'end' | '2m') => {
  const values = until === 'end' ? '1x60' : '1 1 stale';
  return [
    { series: `up{${labels}}`, values: until === 'end' ? '1x60' : '1 1 0x60' },
    { series: `nodejs_version_info{${labels}, version="v24.11.0"}`, values },
    { series: `controller_runtime_max_concurrent_reconciles{${labels}, controller="database"}`, values },
    { series: `controller_runtime_max_concurrent_reconciles{${labels}, controller="cache"}`, values },
  ];
};
/**
 * A Go operator with a `database` controller of its own, in another job: every
 * reconcile fails and takes a minute, its queue only grows, it has no leader.
 * Scraped fine throughout. No case below may alert about it.
 */
const g = `job="databases-operator", namespace="databases", instance="10.0.1.7:8080"`;
const otherOperator = [
  { series: `up{${g}}`, values: '1x60' },
  { series: `go_info{${g}, version="go1.25.4"}`, values: '1x60' },
  { series: `controller_runtime_max_concurrent_reconciles{${g}, controller="database"}`, values: '1x60' },
  {
    series: `controller_runtime_reconcile_total{${g}, controller="database", result="error"}`,
    values: '0+10x60',
  },
  {
    series: `controller_runtime_reconcile_time_seconds_bucket{${g}, controller="database", le="60"}`,
    values: '0x60',
  },
  {
    series: `controller_runtime_reconcile_time_seconds_bucket{${g}, controller="database", le="+Inf"}`,
    values: '0+10x60',
  },
  { series: `workqueue_depth{${g}, ${q}}`, values: '0+3x60' },
  { series: `leader_election_master_status{${g}, name="databases-operator"}`, values: '0x60' },
  { series: `regulon_database_backup_failing{${g}, ${orders}}`, values: '1x60' },
  {
    series: `regulon_replication_failover_quorum_missing_instances{${g}, ${owner('orders')}}`,
    values: '1x60',
  },
];
/**
 * Engine instances as deploy/'s scrape job labels them, and the agent: a postgres Database
 * `orders`, a MariaDB Database `ledger`, a replicated Cache `sessions`, each a primary (-0) and a
 * replica (-1); healthy for the whole hour unless `change` gives a series other values. A
 * series is named by its metric and pod, with any further labels after the pod:
 * `pg_up orders-1`, `pg_replication_slots_active orders-0`.
 */
/** A memcached instance: a Deployment's Pod, whose series carry no role (memcached has no primary). */
const MC = 'pages-7f9c4-x2k8l';
const at = (pod: string) => {
  const owner = pod.split('-')[0]!;
  const role = pod === MC ? '' : `, role="${pod.endsWith('-0') ? 'primary' : 'replica'}"`;
  return `job="regulon-instances", namespace="shop", owner="${owner}", pod="${pod}"${role}`;
};
/** What an alert on an instance carries: its grouping labels. */
const instance = (pod: string) => `namespace="shop", owner="${pod.split('-')[0]!}", pod="${pod}"`;
const HEALTHY_INSTANCES: Record<string, [labels: string, values: string]> = {
  'pg_up orders-0': ['', '1x60'],
  'pg_up orders-1': ['', '1x60'],
  'pg_postmaster_start_time_seconds orders-0': ['', '1700000000x60'],
  'pg_postmaster_start_time_seconds orders-1': ['', '1700000000x60'],
  'pg_stat_wal_receiver_streaming orders-1': ['sender_host="10.0.2.10"', '1x60'],
  // A standby hears from its primary every few seconds.
  'pg_stat_wal_receiver_last_msg_receipt_age_seconds orders-1': ['', '2 1 3 0 2x56'],
  'pg_replication_slots_active orders-0': ['slot_name="regulon_orders_1"', '1 0 1x58'],
  // One archive_command failure, healed at the next try; a file waits seconds.
  'pg_stat_archiver_failed_count orders-0': ['', '0 1x59'],
  'pg_wal_archive_ready_count orders-0': ['', '0 1 0x58'],
  'pg_wal_archive_oldest_ready_age_seconds orders-0': ['', '0 5 0x58'],
  'pg_stat_activity_count orders-0': ['datname="app", state="idle"', '40x60'],
  'pg_settings_max_connections orders-0': ['', '100x60'],
  'pg_settings_superuser_reserved_connections orders-0': ['', '3x60'],
  'mysql_up ledger-0': ['', '1x60'],
  'mysql_up ledger-1': ['', '1x60'],
  'mysql_global_status_uptime ledger-0': ['', '600+60x60'],
  'mysql_global_status_uptime ledger-1': ['', '600+60x60'],
  'mysql_slave_status_slave_io_running ledger-1': ['connection_name="", master_host="10.0.2.20"', '1x60'],
  'mysql_slave_status_slave_sql_running ledger-1': ['connection_name="", master_host="10.0.2.20"', '1x60'],
  'mysql_global_status_threads_connected ledger-0': ['', '20x60'],
  'mysql_global_variables_max_connections ledger-0': ['', '151x60'],
  'redis_up sessions-0': ['', '1x60'],
  'redis_up sessions-1': ['', '1x60'],
  'redis_uptime_in_seconds sessions-0': ['', '600+60x60'],
  'redis_uptime_in_seconds sessions-1': ['', '600+60x60'],
  'redis_master_link_up sessions-1': ['master_host="10.0.2.30", master_port="6379"', '1x60'],
  'redis_connected_clients sessions-0': ['', '12x60'],
  'redis_config_maxclients sessions-0': ['', '10000x60'],
  // Nearly full, and never evicting: an allkeys-lru cache at rest.
  'redis_memory_used_bytes sessions-0': ['', '62000000x60'],
  'redis_memory_max_bytes sessions-0': ['', '64000000x60'],
  'redis_evicted_keys_total sessions-0': ['', '0x60'],
  [`memcached_up ${MC}`]: ['', '1x60'],
  [`memcached_uptime_seconds ${MC}`]: ['', '600+60x60'],
  [`memcached_current_connections ${MC}`]: ['', '10x60'],
  [`memcached_max_connections ${MC}`]: ['', '1024x60'],
};
const instances = (
  change: Record<string, string> = {},
  extra: Array<{ series: string; values: string }> = [],
) => [
  ...Object.entries(HEALTHY_INSTANCES).map(([key, [labels, values]]) => {
    const [metric, pod] = key.split(' ') as [string, string];
    return { series: `${metric}{${at(pod)}${labels ? `, ${labels}` : ''}}`, values: change[key] ?? values };
  }),
  ...extra,
];

/** Two replicas, both scraped, a leads, with the other operator beside them: what most cases stand on. */
const replicas = [
  ...otherOperator,
  ...replica(a, 'end'),
  ...replica(b, 'end'),
  { series: `leader_election_master_status{${a}, ${lease}}`, values: '1x60' },
  { series: `leader_election_master_status{${b}, ${lease}}`, values: '0x60' },
];
/** A healthy manager: reconciles succeed quickly, the queue drains as fast as it fills. */
const healthy = [
  ...replicas,
  {
    series: `controller_runtime_reconcile_total{${a}, controller="database", result="success"}`,
    values: '0+10x60',
  },
  {
    series: `controller_runtime_reconcile_total{${a}, controller="database", result="error"}`,
    values: '0x60',
  },
  {
    series: `controller_runtime_reconcile_time_seconds_bucket{${a}, controller="database", le="0.1"}`,
    values: '0+10x60',
  },
  {
    series: `controller_runtime_reconcile_time_seconds_bucket{${a}, controller="database", le="10"}`,
    values: '0+10x60',
  },
  {
    series: `controller_runtime_reconcile_time_seconds_bucket{${a}, controller="database", le="+Inf"}`,
    values: '0+10x60',
  },
  { series: `workqueue_depth{${a}, ${q}}`, values: '0 3 0 1 0 0 2 0x53' },
  // A backup failed once and the next slot's succeeded: no alert.
  { series: `regulon_database_backup_failing{${a}, ${orders}}`, values: '0 1 1 0x57' },
  // An archive_command failure healed at the next look: no alert.
  { series: `regulon_database_wal_archiving_failing{${a}, ${orders}}`, values: '0 1 0x58' },
  // A standby came back within a minute: no alert.
  { series: `regulon_database_synchronous_standbys{${a}, ${orders}}`, values: '1 0 1x58' },
  // A failover waited under a minute for a standby to answer: no alert.
  {
    series: `regulon_replication_failover_quorum_missing_instances{${a}, ${owner('orders')}}`,
    values: '0 1 0x58',
  },
  // A replica trailed beyond maxLag for two minutes: no alert.
  { series: `regulon_replication_lagging_instances{${a}, ${owner('orders')}}`, values: '0 1 1 0x57' },
  ...instances(),
];
const firing = (alertname: string, labels: string, severity: 'warning' | 'critical') =>
  `ALERTS{alertname="${alertname}", alertstate="firing", severity="${severity}"${labels ? `, ${labels}` : ''}}`;
const noneFiringAt = (minute: number) => ({
  expr: 'ALERTS{alertstate="firing"}',
  eval_time: `${minute}m`,
  exp_samples: [],
});

const ruleTests = (rulesFile: string) => ({
  rule_files: [rulesFile],
  evaluation_interval: '1m',
  tests: [
    {
      name: 'healthy, beside a failing operator: no alert pending or firing',
      interval: '1m',
      input_series: healthy,
      promql_expr_test: [10, 30, 59].map((m) => ({ expr: 'ALERTS', eval_time: `${m}m`, exp_samples: [] })),
    },
    {
      name: 'every replica down (scrapes fail, series go stale): RegulonManagerDown after 5 minutes, and no other',
      interval: '1m',
      input_series: [
        ...otherOperator,
        ...replica(a, '2m'),
        ...replica(b, '2m'),
        { series: `leader_election_master_status{${a}, ${lease}}`, values: '1 1 stale' },
        { series: `leader_election_master_status{${b}, ${lease}}`, values: '0 0 stale' },
      ],
      promql_expr_test: [
        noneFiringAt(5),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '20m',
          // absent() of an expression that is not a plain selector carries no labels.
          exp_samples: [{ labels: firing('RegulonManagerDown', '', 'critical'), value: 1 }],
        },
      ],
    },
    {
      name: 'one replica down, the other leading: RegulonManagerReplicaDown after 15 minutes',
      interval: '1m',
      input_series: [
        ...otherOperator,
        ...replica(a, 'end'),
        ...replica(b, '2m'),
        { series: `leader_election_master_status{${a}, ${lease}}`, values: '1x40' },
        { series: `leader_election_master_status{${b}, ${lease}}`, values: '0 0 stale' },
      ],
      promql_expr_test: [
        noneFiringAt(10),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '20m',
          exp_samples: [{ labels: firing('RegulonManagerReplicaDown', b, 'warning'), value: 1 }],
        },
      ],
    },
    {
      name: 'both replicas up, neither leads: RegulonNoLeader after 5 minutes',
      interval: '1m',
      input_series: [
        ...otherOperator,
        ...replica(a, 'end'),
        ...replica(b, 'end'),
        { series: `leader_election_master_status{${a}, ${lease}}`, values: '1 1 0x20' },
        { series: `leader_election_master_status{${b}, ${lease}}`, values: '0x20' },
      ],
      promql_expr_test: [
        noneFiringAt(6),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '9m',
          exp_samples: [{ labels: firing('RegulonNoLeader', `${j}, ${lease}`, 'critical'), value: 1 }],
        },
      ],
    },
    {
      name: 'both replicas up, neither past its cache sync (no Lease gauge at all): RegulonNoLeader after 5 minutes',
      interval: '1m',
      input_series: [...otherOperator, ...replica(a, 'end'), ...replica(b, 'end')],
      promql_expr_test: [
        noneFiringAt(4),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '9m',
          exp_samples: [{ labels: firing('RegulonNoLeader', j, 'critical'), value: 1 }],
        },
      ],
    },
    {
      name: 'half the reconciles fail: RegulonReconcileErrorRatioHigh after 15 minutes',
      interval: '1m',
      input_series: [
        ...replicas,
        {
          series: `controller_runtime_reconcile_total{${a}, controller="database", result="success"}`,
          values: '0+6x40',
        },
        {
          series: `controller_runtime_reconcile_total{${a}, controller="database", result="error"}`,
          values: '0+6x40',
        },
      ],
      promql_expr_test: [
        noneFiringAt(10),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '25m',
          exp_samples: [
            {
              labels: firing('RegulonReconcileErrorRatioHigh', `${j}, controller="database"`, 'warning'),
              value: 1,
            },
          ],
        },
      ],
    },
    {
      name: 'a queue that keeps growing fires RegulonWorkQueueGrowing; a burst that drains does not',
      interval: '1m',
      input_series: [
        ...replicas,
        { series: `workqueue_depth{${a}, ${q}}`, values: '0+2x60' },
        { series: `workqueue_depth{${a}, controller="cache", name="cache"}`, values: '0+5x5 25-5x5 0x50' },
      ],
      promql_expr_test: [
        noneFiringAt(10),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '40m',
          exp_samples: [{ labels: firing('RegulonWorkQueueGrowing', `${a}, ${q}`, 'warning'), value: 1 }],
        },
      ],
    },
    {
      name: "a Database's backups keep failing: RegulonDatabaseBackupFailing after 15 minutes, for that Database only",
      interval: '1m',
      input_series: [
        ...replicas,
        { series: `regulon_database_backup_failing{${a}, ${orders}}`, values: '0 0 1x40' },
        {
          series: `regulon_database_backup_failing{${a}, database_namespace="shop", database="ledger"}`,
          values: '0x40',
        },
      ],
      promql_expr_test: [
        noneFiringAt(12),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '20m',
          exp_samples: [
            {
              labels: firing('RegulonDatabaseBackupFailing', `${j}, ${orders}`, 'warning'),
              value: 1,
            },
          ],
        },
      ],
    },
    {
      name: 'a synchronous failover waits for its quorum: RegulonFailoverWaitsForQuorum after a minute, for that Database only',
      interval: '1m',
      input_series: [
        ...replicas,
        {
          series: `regulon_replication_failover_quorum_missing_instances{${a}, ${owner('orders')}}`,
          values: '0 0 1x40',
        },
        {
          series: `regulon_replication_failover_quorum_missing_instances{${a}, ${owner('ledger')}}`,
          values: '0x40',
        },
      ],
      promql_expr_test: [
        noneFiringAt(2),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '5m',
          exp_samples: [
            {
              labels: firing('RegulonFailoverWaitsForQuorum', `${j}, ${owner('orders')}`, 'critical'),
              value: 1,
            },
          ],
        },
      ],
    },
    {
      name: 'a synchronous primary with no standby confirming: RegulonDatabaseWritesWait after a minute, for that Database only',
      interval: '1m',
      input_series: [
        ...replicas,
        { series: `regulon_database_synchronous_standbys{${a}, ${orders}}`, values: '1 1 0x40' },
        {
          series: `regulon_database_synchronous_standbys{${a}, database_namespace="shop", database="ledger"}`,
          values: '2x40',
        },
      ],
      promql_expr_test: [
        noneFiringAt(2),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '5m',
          exp_samples: [
            { labels: firing('RegulonDatabaseWritesWait', `${j}, ${orders}`, 'critical'), value: 1 },
          ],
        },
      ],
    },
    {
      name: 'WAL archiving that keeps failing: RegulonDatabaseArchivingFails at the first evaluation 30 s after, for that Database only',
      interval: '15s',
      input_series: [
        ...replicas,
        { series: `regulon_database_wal_archiving_failing{${a}, ${orders}}`, values: '0 0 1x20' },
        {
          series: `regulon_database_wal_archiving_failing{${a}, database_namespace="shop", database="ledger"}`,
          values: '0x22',
        },
      ],
      promql_expr_test: [
        { expr: 'ALERTS{alertstate="firing"}', eval_time: '45s', exp_samples: [] },
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '2m',
          exp_samples: [
            { labels: firing('RegulonDatabaseArchivingFails', `${j}, ${orders}`, 'critical'), value: 1 },
          ],
        },
      ],
    },
    {
      name: 'every reconcile takes 10-15 s: RegulonReconcileSlow after 15 minutes',
      interval: '1m',
      input_series: [
        ...replicas,
        {
          series: `controller_runtime_reconcile_time_seconds_bucket{${a}, controller="database", le="10"}`,
          values: '0x40',
        },
        {
          series: `controller_runtime_reconcile_time_seconds_bucket{${a}, controller="database", le="15"}`,
          values: '0+4x40',
        },
        {
          series: `controller_runtime_reconcile_time_seconds_bucket{${a}, controller="database", le="+Inf"}`,
          values: '0+4x40',
        },
      ],
      promql_expr_test: [
        noneFiringAt(10),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '25m',
          exp_samples: [
            {
              labels: firing('RegulonReconcileSlow', `${j}, controller="database"`, 'warning'),
              value: 1,
            },
          ],
        },
      ],
    },
    {
      name: 'an engine stops answering its agent: RegulonInstanceEngineDown after 5 minutes, for that Pod',
      interval: '1m',
      input_series: [
        ...replicas,
        ...instances({ 'pg_up orders-1': '1 1 0x58', [`memcached_up ${MC}`]: '1 1 0x58' }),
      ],
      promql_expr_test: [
        noneFiringAt(5),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '10m',
          exp_samples: ['orders-1', MC].map((pod) => ({
            labels: firing('RegulonInstanceEngineDown', instance(pod), 'warning'),
            value: 1,
          })),
        },
      ],
    },
    {
      name: 'the primary demoted and no other promoted: RegulonNoPrimary after a minute, for the owner',
      interval: '1m',
      input_series: [
        ...replicas,
        ...instances({ 'pg_up orders-0': '1 1 stale' }, [
          { series: `pg_up{${at('orders-0').replace('primary', 'replica')}}`, values: '_ _ 1x58' },
        ]),
      ],
      promql_expr_test: [
        noneFiringAt(2),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '5m',
          exp_samples: [
            { labels: firing('RegulonNoPrimary', 'namespace="shop", owner="orders"', 'critical'), value: 1 },
          ],
        },
      ],
    },
    {
      name: "a replica beyond its Database's maxLag (the manager's count): RegulonReplicaLagging after 5 minutes",
      interval: '1m',
      input_series: [
        ...replicas,
        ...instances(),
        { series: `regulon_replication_lagging_instances{${a}, ${owner('orders')}}`, values: '0 1x59' },
      ],
      promql_expr_test: [
        noneFiringAt(5),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '10m',
          exp_samples: [
            { labels: firing('RegulonReplicaLagging', `${j}, ${owner('orders')}`, 'warning'), value: 1 },
          ],
        },
      ],
    },
    {
      name: 'replicas that stop streaming, seen from each end and each engine: RegulonReplicaNotStreaming after a minute',
      interval: '1m',
      input_series: [
        ...replicas,
        ...instances({
          // A standby cut off: its receiver hears nothing, and the primary's slot for it goes unused.
          'pg_stat_wal_receiver_last_msg_receipt_age_seconds orders-1': '2 2 2 0+60x57',
          'pg_replication_slots_active orders-0': '1 1 1 0x57',
          'mysql_slave_status_slave_io_running ledger-1': '1 1 1 0x57',
          'redis_master_link_up sessions-1': '1 1 1 0x57',
        }),
      ],
      promql_expr_test: [
        noneFiringAt(3),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '10m',
          exp_samples: [
            { labels: firing('RegulonReplicaNotStreaming', instance('orders-1'), 'warning'), value: 1 },
            {
              labels: firing(
                'RegulonReplicaNotStreaming',
                `${instance('orders-0')}, slot_name="regulon_orders_1"`,
                'warning',
              ),
              value: 1,
            },
            { labels: firing('RegulonReplicaNotStreaming', instance('ledger-1'), 'warning'), value: 1 },
            { labels: firing('RegulonReplicaNotStreaming', instance('sessions-1'), 'warning'), value: 1 },
          ],
        },
      ],
    },
    {
      name: 'the archive refuses every WAL file: RegulonPostgresArchivingFails after a minute',
      interval: '1m',
      input_series: [
        ...replicas,
        ...instances({
          'pg_stat_archiver_failed_count orders-0': '0 1 1 2+1x57',
          'pg_wal_archive_ready_count orders-0': '0 0 0 1+1x57',
          'pg_wal_archive_oldest_ready_age_seconds orders-0': '0 0 0 10+60x57',
        }),
      ],
      promql_expr_test: [
        noneFiringAt(3),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '10m',
          exp_samples: [
            { labels: firing('RegulonPostgresArchivingFails', instance('orders-0'), 'critical'), value: 1 },
          ],
        },
      ],
    },
    {
      name: 'connections past 80% of the limit on each engine: RegulonInstanceConnectionsNearLimit after 5 minutes',
      interval: '1m',
      input_series: [
        ...replicas,
        ...instances({
          'pg_stat_activity_count orders-0': '40 40 90x58',
          'mysql_global_status_threads_connected ledger-0': '20 20 140x58',
          'redis_connected_clients sessions-0': '12 12 9000x58',
          [`memcached_current_connections ${MC}`]: '10 10 900x58',
        }),
      ],
      promql_expr_test: [
        noneFiringAt(5),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '10m',
          exp_samples: ['orders-0', 'ledger-0', 'sessions-0', MC].map((pod) => ({
            labels: firing('RegulonInstanceConnectionsNearLimit', instance(pod), 'warning'),
            value: 1,
          })),
        },
      ],
    },
    {
      name: 'redis full and evicting: RegulonRedisEvicting after 5 minutes',
      interval: '1m',
      input_series: [
        ...replicas,
        ...instances({
          'redis_memory_used_bytes sessions-0': '62000000 62000000 63900000x58',
          'redis_evicted_keys_total sessions-0': '0 0 0+250x58',
        }),
      ],
      promql_expr_test: [
        noneFiringAt(5),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '10m',
          exp_samples: [
            { labels: firing('RegulonRedisEvicting', instance('sessions-0'), 'warning'), value: 1 },
          ],
        },
      ],
    },
    {
      name: 'engines restarting twice within 15 minutes: RegulonInstanceRestarting at once',
      interval: '1m',
      input_series: [
        ...replicas,
        ...instances({
          'pg_postmaster_start_time_seconds orders-1': '1700000000x5 1700000400x3 1700000700x50',
          'redis_uptime_in_seconds sessions-1': '600+60x5 0+60x3 0+60x50',
          [`memcached_uptime_seconds ${MC}`]: '600+60x5 0+60x3 0+60x50',
        }),
      ],
      promql_expr_test: [
        noneFiringAt(7),
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '10m',
          exp_samples: ['orders-1', 'sessions-1', MC].map((pod) => ({
            labels: firing('RegulonInstanceRestarting', instance(pod), 'warning'),
            value: 1,
          })),
        },
      ],
    },
  ],
});

test('promtool test rules: each alert fires on its failure after its for, none on a healthy manager, none for another operator', async () => {
  writeFileSync(join(dir, 'tests.yaml'), stringify(ruleTests(shippedRules())));
  const r = await promtool('test', 'rules', 'tests.yaml');
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout + r.stderr, /SUCCESS/);
});

test('every alert is covered by a firing case above, with a runbook-style description', () => {
  const cases = JSON.stringify(ruleTests('rules.yaml'));
  for (const alert of [...ALERTS, ...INSTANCE_ALERTS]) {
    assert.ok(
      cases.includes(`alertname=\\"${alert.alert}\\", alertstate=\\"firing\\"`),
      `${alert.alert} has a firing test`,
    );
    assert.ok(alert.annotations.description.length > 60, `${alert.alert} says what to check`);
  }
});

test('no rule selects on job: the scraper names it, and an overlay renames the Service it defaults to', () => {
  for (const alert of [...ALERTS, ...INSTANCE_ALERTS])
    assert.doesNotMatch(alert.expr, /\bjob\s*(=|!=|=~|!~)\s*"/, alert.alert);
});
