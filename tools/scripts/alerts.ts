// The manager's alerts, as code: written to deploy/monitoring/prometheusrule.yaml
// (a monitoring.coreos.com/v1 PrometheusRule) by generate.ts, and checked by
// tools/scripts/alerts.test.ts with promtool and by deploy.test.ts against a
// real Prometheus scraping a renamed installation.
import { CONTROLLERS } from '@regulon/manager';
import { stringify } from 'yaml';
import { MANAGER, NAMESPACE } from './rbac.ts';

/**
 * The `controller` label of the manager's controller_runtime_* and workqueue_*
 * series: the names of the controllers it runs, which no overlay renames.
 */
export const MANAGER_CONTROLLERS = `controller=~"${CONTROLLERS.map((c) => c.name).join('|')}"`;

/**
 * Keeps a vector to the series of Node.js processes. A Go controller-runtime
 * operator exports the same metric names, and may well have a controller named
 * `database` or `cache`; only Regulon exports them from Node.js.
 */
const ON_NODE = 'and on (job, instance) nodejs_version_info';

/**
 * One series per manager controller per scraped manager replica, leader or
 * standby (both export it from start-up), whatever Prometheus calls the job.
 * The job is the scraper's choice: the ServiceMonitor names it after the
 * Service, which a kustomize `namePrefix` renames, and a hand-written scrape
 * config names it anything. So nothing here selects on `job`; alerts group by
 * it, so that two installations in one Prometheus stay apart.
 */
export const MANAGER_TARGETS = `controller_runtime_max_concurrent_reconciles{${MANAGER_CONTROLLERS}} ${ON_NODE}`;

export interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: { severity: 'warning' | 'critical' };
  annotations: { summary: string; description: string };
}

/** Thresholds, named so the README and the rules can't disagree. */
export const THRESHOLDS = {
  errorRatio: 0.1,
  p99Seconds: 10,
  /** How long a Database's latest backup may stay failed before the alert fires: a schedule a minute apart retries well within it. */
  backupFailingFor: '15m',
} as const;

const c = MANAGER_CONTROLLERS;
const rate5m = (series: string) => `rate(${series}[5m]) ${ON_NODE}`;

export const ALERTS: readonly AlertRule[] = [
  {
    alert: 'RegulonReconcileErrorRatioHigh',
    // Over every reconcile result, so a controller that mostly succeeds but fails one object in ten shows.
    expr: `sum by (job, namespace, controller) (${rate5m(`controller_runtime_reconcile_total{${c}, result="error"}`)})
  / sum by (job, namespace, controller) (${rate5m(`controller_runtime_reconcile_total{${c}}`)})
> ${THRESHOLDS.errorRatio}`,
    for: '15m',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'Regulon {{ $labels.controller }} reconciles fail often',
      description: `More than ${THRESHOLDS.errorRatio * 100}% of the {{ $labels.controller }} controller's reconciles in {{ $labels.namespace }} returned an error over the last 15 minutes ({{ $value | humanizePercentage }}). Its logs (controller={{ $labels.controller }}) and Warning Events name the objects.`,
    },
  },
  {
    alert: 'RegulonWorkQueueGrowing',
    // deriv() over 15 minutes, held for 15 more: a backlog that keeps growing, not a burst that drains.
    expr: `(deriv(workqueue_depth{${c}}[15m]) > 0 and workqueue_depth{${c}} > 0) ${ON_NODE}`,
    for: '15m',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'Regulon {{ $labels.controller }} work queue keeps growing',
      description:
        'The {{ $labels.controller }} work queue on {{ $labels.instance }} {{ $labels.pod }} has grown for 15 minutes (depth {{ $value }}): reconciles are not keeping up. Check reconcile latency, API request latency and the concurrency flag.',
    },
  },
  {
    alert: 'RegulonNoLeader',
    // Replicas run and report the Lease but none holds it; or they run and report
    // no Lease at all: the gauge appears once the caches have synced, so a
    // manager stuck before that (missing RBAC, say) shows here too.
    expr: `max by (job, namespace, name) (leader_election_master_status and on (job, instance) (${MANAGER_TARGETS})) < 1
or group by (job, namespace) (${MANAGER_TARGETS}) unless on (job, namespace) leader_election_master_status`,
    for: '5m',
    labels: { severity: 'critical' },
    annotations: {
      summary: 'Regulon has no leader',
      description:
        'The regulon-manager replicas of {{ $labels.job }} in {{ $labels.namespace }} run, but for 5 minutes none has held the Lease {{ $labels.name }} (or, with no Lease named, none has synced its caches and started campaigning): nothing is being reconciled. Check the manager logs (leader-election, caches synced) and the Lease in the manager namespace.',
    },
  },
  {
    alert: 'RegulonReconcileSlow',
    expr: `histogram_quantile(0.99, sum by (job, namespace, controller, le) (${rate5m(`controller_runtime_reconcile_time_seconds_bucket{${c}}`)}))
> ${THRESHOLDS.p99Seconds}`,
    for: '15m',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'Regulon {{ $labels.controller }} reconciles are slow',
      description: `The 99th percentile of {{ $labels.controller }} reconcile time has been over ${THRESHOLDS.p99Seconds}s for 15 minutes ({{ $value | humanizeDuration }}). A reconcile makes a few API calls: look at API request latency and client-side throttling first.`,
    },
  },
  {
    alert: 'RegulonManagerDown',
    // No scraped target is a manager: a crash loop, a missing Deployment and a
    // broken scrape alike. A failed scrape marks the target's series stale at
    // once, so this does not wait for them to age out.
    expr: `absent(${MANAGER_TARGETS})`,
    for: '5m',
    labels: { severity: 'critical' },
    annotations: {
      summary: 'Regulon manager is down',
      description:
        'No regulon-manager replica has been scraped successfully for 5 minutes. Check the Deployment in the manager namespace, and that Prometheus scrapes its metrics Service (the ServiceMonitor, or your scrape config).',
    },
  },
  {
    alert: 'RegulonManagerReplicaDown',
    // A target of a job (and namespace) that has a live manager target is down.
    // When every replica is down there is none, and RegulonManagerDown fires instead.
    expr: `up == 0 and on (job, namespace) group by (job, namespace) (${MANAGER_TARGETS})`,
    for: '15m',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'A Regulon manager replica is down',
      description:
        '{{ $labels.instance }} {{ $labels.pod }} of {{ $labels.job }} has not been scraped for 15 minutes while another replica runs: the manager runs without a standby, so a failure of the leader stops reconciling until a new Pod starts.',
    },
  },
  {
    alert: 'RegulonDatabaseBackupFailing',
    // The latest finished DatabaseBackup of the Database failed, and none has succeeded since.
    // max by: two replicas that both export it (a former leader, say) make one alert.
    expr: `max by (job, namespace, database_namespace, database) (regulon_database_backup_failing ${ON_NODE}) > 0`,
    for: THRESHOLDS.backupFailingFor,
    labels: { severity: 'warning' },
    annotations: {
      summary: 'Backups of Database {{ $labels.database_namespace }}/{{ $labels.database }} are failing',
      description: `The latest backup of Database {{ $labels.database }} in {{ $labels.database_namespace }} failed and none has succeeded since, for ${THRESHOLDS.backupFailingFor}: the object store is missing new base backups (archived WAL may be stuck too), and point-in-time recovery does not reach past the last good one. \`kubectl get databasebackups -n {{ $labels.database_namespace }}\` shows the failed one; its Succeeded condition and Warning Events say why (store unreachable, keys refused, bucket missing). The Database keeps serving.`,
    },
  },
  {
    alert: 'RegulonFailoverWaitsForQuorum',
    // A synchronous failover that cannot prove any standby holds every acknowledged commit
    // promotes nobody: no instance accepts writes until a standby returns or a person decides.
    expr: `max by (job, namespace, kind, owner_namespace, owner) (regulon_replication_failover_quorum_missing_instances ${ON_NODE}) > 0`,
    for: '1m',
    labels: { severity: 'critical' },
    annotations: {
      summary:
        '{{ $labels.kind }} {{ $labels.owner_namespace }}/{{ $labels.owner }} has no primary: its failover waits for standbys',
      description:
        '{{ $labels.kind }} {{ $labels.owner }} in {{ $labels.owner_namespace }} lost its primary, and {{ $value }} standby(s) do not answer, without which no standby provably holds every acknowledged commit: nothing is promoted and writes fail. Its ReplicationHealthy condition (FailoverQuorumNotReached) names them. Bring them back; or, accepting that the commits only they hold are lost, name an answering standby in the regulon.dev/force-promote annotation.',
    },
  },
  {
    alert: 'RegulonDatabaseWritesWait',
    // A synchronous primary with no standby confirming: every commit waits (postgres), or waits
    // out rpl_semi_sync_master_timeout and then goes on unconfirmed (mariadb).
    expr: `max by (job, namespace, database_namespace, database) (regulon_database_synchronous_standbys ${ON_NODE}) == 0`,
    for: '1m',
    labels: { severity: 'critical' },
    annotations: {
      summary:
        'Database {{ $labels.database_namespace }}/{{ $labels.database }}: no standby confirms its commits',
      description:
        "Database {{ $labels.database }} in {{ $labels.database_namespace }} replicates synchronously, and no standby has confirmed its primary's commits for a minute: writes wait. Its ReplicationHealthy condition (NoSynchronousStandby) and status.instances say which standbys are not streaming. Bring one back; turning spec.replication.synchronous off lets writes go on without the guarantee that a failover loses none.",
    },
  },
  {
    alert: 'RegulonDatabaseArchivingFails',
    // archive_command fails, or a segment has waited over 40 s (a store that refuses or hangs): every WAL
    // segment written since is in the primary's volume only.
    expr: `max by (job, namespace, database_namespace, database) (regulon_database_wal_archiving_failing ${ON_NODE}) == 1`,
    for: '30s',
    labels: { severity: 'critical' },
    annotations: {
      summary:
        'Database {{ $labels.database_namespace }}/{{ $labels.database }}: WAL archiving into its object store fails',
      description:
        "Database {{ $labels.database }} in {{ $labels.database_namespace }} cannot archive its WAL: no restore or point in time can reach past the last archived segment, and the segments waiting fill the primary's volume. Its BackupSucceeded condition (ArchivingFailed) names the segment; the primary's log has archive_command's error. regulon_database_wal_archive_lag_seconds says how long the oldest segment has waited.",
    },
  },
];

/**
 * The engine instances' alerts: on the series each Pod's agent publishes (deploy/'s PodMonitor
 * `regulon-instances`, or its plain scrape job), by the names of the engines' exporters, and on
 * the manager's word where only it knows the bound (a Database's maxLag). Every series of an
 * instance carries `namespace`, `pod`, `owner` (the Database or Cache, from the Pod's
 * app.kubernetes.io/instance label) and `role`; the rules group by them, never by `job`.
 */
export const INSTANCE_THRESHOLDS = {
  /** Of the connections an engine accepts (postgres: those not reserved for superusers). */
  connectionsRatio: 0.8,
  /** Of redis's maxmemory. */
  memoryRatio: 0.9,
  /** How long the oldest complete WAL file may wait for the archive: archive_command runs within seconds of its completion. */
  archiveWaitSeconds: 120,
  /** A standby hears from its primary every wal_sender_timeout / 2 (2.5 s) at the least. */
  receiptAgeSeconds: 30,
  /** Engine starts within restartWindow that make an instance "restarting". */
  restarts: 2,
  restartWindow: '15m',
} as const;

const T = INSTANCE_THRESHOLDS;
/** An instance: what its series share, whoever scrapes it. */
const BY_INSTANCE = 'namespace, owner, pod';
/** The engines with a primary: NoPrimary counts their roles. */
const ENGINE_UP = '{__name__=~"pg_up|mysql_up|redis_up"}';
/** Every engine's agent answers its scrape with one of these. */
const ANY_ENGINE_UP = '{__name__=~"pg_up|mysql_up|redis_up|memcached_up"}';

export const INSTANCE_ALERTS: readonly AlertRule[] = [
  {
    alert: 'RegulonInstanceEngineDown',
    // The agent answers its scrape, the engine does not answer the agent (hung, starting, refusing its superuser).
    expr: `max by (${BY_INSTANCE}) (${ANY_ENGINE_UP}) == 0`,
    for: '5m',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'Engine of {{ $labels.namespace }}/{{ $labels.pod }} does not answer',
      description:
        "The instance agent of {{ $labels.pod }} ({{ $labels.owner }} in {{ $labels.namespace }}) has answered its scrapes for 5 minutes, but its engine has not answered the agent's question within 2 s: the server is hung, still starting (a clone or a recovery), or refuses its own superuser. `kubectl logs {{ $labels.pod }}` and the owner's status.instances say which; a primary that stays this way is fenced by its agent when it cannot renew its Lease.",
    },
  },
  {
    alert: 'RegulonNoPrimary',
    // Instances are scraped and answer, and none of an owner's says it is the primary.
    expr: `count by (namespace, owner) (${ENGINE_UP} == 1)
unless count by (namespace, owner) ({__name__=~"pg_up|mysql_up|redis_up", role="primary"} == 1)`,
    for: '1m',
    labels: { severity: 'critical' },
    annotations: {
      summary: '{{ $labels.namespace }}/{{ $labels.owner }} has no primary',
      description:
        "Every instance of {{ $labels.owner }} in {{ $labels.namespace }} that answers says it is a replica, for a minute: writes fail. A failover takes seconds; one that waits is named by the owner's ReplicationHealthy condition (NoPrimary, FailoverQuorumNotReached) and its Events. RegulonFailoverWaitsForQuorum fires too when a synchronous failover waits for its quorum.",
    },
  },
  {
    alert: 'RegulonReplicaLagging',
    // The manager's count: the bound is the owner's spec.replication.maxLag, which only it reads.
    expr: `max by (job, namespace, kind, owner_namespace, owner) (regulon_replication_lagging_instances ${ON_NODE}) > 0`,
    for: '5m',
    labels: { severity: 'warning' },
    annotations: {
      summary:
        '{{ $labels.kind }} {{ $labels.owner_namespace }}/{{ $labels.owner }}: a replica trails beyond maxLag',
      description:
        "{{ $value }} replica(s) of {{ $labels.kind }} {{ $labels.owner }} in {{ $labels.owner_namespace }} have streamed beyond the owner's spec.replication.maxLag for 5 minutes: they are out of the read-only Service, and a switchover to one waits for it to catch up. status.instances gives each one's lag (state Lagging); the instance's own series say why: pg_stat_replication_replay_lag_seconds against write_lag (slow replay or a slow network), mysql_slave_status_seconds_behind_master, redis_connected_slave_lag_seconds.",
    },
  },
  {
    alert: 'RegulonReplicaNotStreaming',
    // From both ends, so that one unscrapeable end does not hide it: a standby's receiver stopped
    // or silent, a primary's slot for a standby unused; a replica's IO or SQL thread stopped; a
    // redis replica's link down.
    expr: `max by (${BY_INSTANCE}) (pg_stat_wal_receiver_streaming{role="replica"}) == 0
or max by (${BY_INSTANCE}) (pg_stat_wal_receiver_last_msg_receipt_age_seconds{role="replica"}) > ${T.receiptAgeSeconds}
or max by (${BY_INSTANCE}, slot_name) (pg_replication_slots_active{role="primary", slot_name=~"regulon_.*"}) == 0
or max by (${BY_INSTANCE}) (mysql_slave_status_slave_io_running{role="replica"}) == 0
or max by (${BY_INSTANCE}) (mysql_slave_status_slave_sql_running{role="replica"}) == 0
or max by (${BY_INSTANCE}) (redis_master_link_up{role="replica"}) == 0`,
    for: '1m',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'A replica of {{ $labels.namespace }}/{{ $labels.owner }} does not stream from its primary',
      description: `On {{ $labels.pod }} ({{ $labels.owner }} in {{ $labels.namespace }}), for a minute: a standby's WAL receiver not streaming or silent over ${T.receiptAgeSeconds} s, a primary's replication slot ({{ $labels.slot_name }}) unused, a MariaDB replica's IO or SQL thread stopped, or a redis replica's link down. The replica falls behind, and a failover cannot promote it without losing what it lacks. The owner's status.instances names it (NotStreaming, NotLinked) with the engine's replicationError; a partition between the two Pods, a full volume and a diverged history are the usual causes.`,
    },
  },
  {
    alert: 'RegulonPostgresArchivingFails',
    // archive_command failed in the last 5 minutes with WAL still waiting, or a file has waited too long.
    expr: `(max by (${BY_INSTANCE}) (increase(pg_stat_archiver_failed_count{role="primary"}[5m])) > 0
  and on (${BY_INSTANCE}) max by (${BY_INSTANCE}) (pg_wal_archive_ready_count{role="primary"}) > 0)
or max by (${BY_INSTANCE}) (pg_wal_archive_oldest_ready_age_seconds{role="primary"}) > ${T.archiveWaitSeconds}`,
    for: '1m',
    labels: { severity: 'critical' },
    annotations: {
      summary: 'Primary {{ $labels.namespace }}/{{ $labels.pod }} fails to archive its WAL',
      description: `The primary {{ $labels.pod }} of Database {{ $labels.owner }} in {{ $labels.namespace }} has failed to archive WAL in the last 5 minutes with files still waiting, or its oldest waiting file is over ${T.archiveWaitSeconds} s old: a restore or a point in time cannot reach past the last archived file, and the waiting files fill its volume. pg_wal_archive_ready_count says how many wait; the Pod's log has archive_command's error (pgBackRest: the store's answer). The manager's RegulonDatabaseArchivingFails says the same from its side.`,
    },
  },
  {
    alert: 'RegulonInstanceConnectionsNearLimit',
    expr: `sum by (${BY_INSTANCE}) (pg_stat_activity_count)
  / on (${BY_INSTANCE}) max by (${BY_INSTANCE}) (pg_settings_max_connections - pg_settings_superuser_reserved_connections)
  > ${T.connectionsRatio}
or max by (${BY_INSTANCE}) (mysql_global_status_threads_connected)
  / on (${BY_INSTANCE}) max by (${BY_INSTANCE}) (mysql_global_variables_max_connections) > ${T.connectionsRatio}
or max by (${BY_INSTANCE}) (redis_connected_clients)
  / on (${BY_INSTANCE}) max by (${BY_INSTANCE}) (redis_config_maxclients) > ${T.connectionsRatio}
or max by (${BY_INSTANCE}) (memcached_current_connections)
  / on (${BY_INSTANCE}) max by (${BY_INSTANCE}) (memcached_max_connections) > ${T.connectionsRatio}`,
    for: '5m',
    labels: { severity: 'warning' },
    annotations: {
      summary: '{{ $labels.namespace }}/{{ $labels.pod }} is near its connection limit',
      description: `{{ $labels.pod }} ({{ $labels.owner }} in {{ $labels.namespace }}) has used over ${T.connectionsRatio * 100}% of the connections it accepts for 5 minutes ({{ $value | humanizePercentage }}): past the limit, new connections are refused. pg_stat_activity_count by state shows idle sessions a pool holds open; raise max_connections (spec.parameters) or shrink the clients' pools.`,
    },
  },
  {
    alert: 'RegulonRedisEvicting',
    expr: `max by (${BY_INSTANCE}) (redis_memory_used_bytes)
  / on (${BY_INSTANCE}) max by (${BY_INSTANCE}) (redis_memory_max_bytes > 0) > ${T.memoryRatio}
and on (${BY_INSTANCE}) sum by (${BY_INSTANCE}) (increase(redis_evicted_keys_total[5m])) > 0`,
    for: '5m',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'Redis {{ $labels.namespace }}/{{ $labels.pod }} is full and evicting keys',
      description: `{{ $labels.pod }} (Cache {{ $labels.owner }} in {{ $labels.namespace }}) has used over ${T.memoryRatio * 100}% of its maxmemory and evicted keys in the last 5 minutes, for 5 minutes: reads miss what was evicted (redis_keyspace_misses_total rises). A cache that evicts by design can silence this; otherwise raise the Cache's spec.memory or maxMemoryPercent.`,
    },
  },
  {
    alert: 'RegulonInstanceRestarting',
    // A start time that changed, or an uptime that went back, twice within the window.
    expr: `max by (${BY_INSTANCE}) (changes(pg_postmaster_start_time_seconds[${T.restartWindow}])) >= ${T.restarts}
or max by (${BY_INSTANCE}) (resets(mysql_global_status_uptime[${T.restartWindow}])) >= ${T.restarts}
or max by (${BY_INSTANCE}) (resets(redis_uptime_in_seconds[${T.restartWindow}])) >= ${T.restarts}
or max by (${BY_INSTANCE}) (resets(memcached_uptime_seconds[${T.restartWindow}])) >= ${T.restarts}`,
    for: '0s',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'The engine of {{ $labels.namespace }}/{{ $labels.pod }} keeps restarting',
      description: `The engine of {{ $labels.pod }} ({{ $labels.owner }} in {{ $labels.namespace }}) started {{ $value }} times in ${T.restartWindow}. \`kubectl logs {{ $labels.pod }} --previous\` has the last run's end (the container's termination message too); an agent that fenced its engine logs why (its Lease lost without a quorum).`,
    },
  },
];

/** The rule groups, as both a PrometheusRule's spec and a plain Prometheus rules file hold them. */
export function ruleGroups(): { groups: Array<{ name: string; rules: readonly AlertRule[] }> } {
  return {
    groups: [
      { name: 'regulon-manager', rules: ALERTS },
      { name: 'regulon-instances', rules: INSTANCE_ALERTS },
    ],
  };
}

export function prometheusRuleYaml(): string {
  const rule = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: {
      name: MANAGER,
      namespace: NAMESPACE,
      labels: { 'app.kubernetes.io/name': MANAGER, 'app.kubernetes.io/part-of': 'regulon' },
    },
    spec: ruleGroups(),
  };
  const body = stringify(rule, { lineWidth: 0, indent: 2, indentSeq: true, singleQuote: true });
  return `# Code generated by tools/scripts/alerts.ts. DO NOT EDIT: change the rules there and run \`npm run generate\`.\n${body}`;
}

/**
 * deploy/monitoring/RUNBOOK.md: a paragraph per alert (its description, which the alert itself
 * carries to whoever is paged), with when it fires and its severity, generated from the rules so
 * that the two cannot disagree.
 */
export function runbookMarkdown(): string {
  const section = (title: string, rules: readonly AlertRule[]) => [
    `## ${title}`,
    '',
    ...rules.flatMap((r) => [
      `### ${r.alert}`,
      '',
      `${r.labels.severity}; fires after ${r.for === '0s' ? 'one evaluation' : r.for} of:`,
      '',
      '```promql',
      r.expr,
      '```',
      '',
      r.annotations.description
        .replace(/\{\{ \$labels\.(\w+) \}\}/g, '<$1>')
        .replace(/\{\{ \$value[^}]*\}\}/g, '<value>'),
      '',
    ]),
  ];
  return [
    '<!-- Code generated by tools/scripts/alerts.ts. DO NOT EDIT: change the rules there and run `npm run generate`. -->',
    '',
    '# Runbook: what each Regulon alert means and what to look at',
    '',
    "Every alert in `prometheusrule.yaml`, with the paragraph its description carries. Placeholders in angle brackets are the alert's labels.",
    '',
    ...section("The manager's alerts (group `regulon-manager`)", ALERTS),
    ...section("The engine instances' alerts (group `regulon-instances`)", INSTANCE_ALERTS),
  ].join('\n');
}
