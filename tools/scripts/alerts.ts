// The manager's alerts, as code: written to deploy/monitoring/prometheusrule.yaml
// (a monitoring.coreos.com/v1 PrometheusRule) by generate.ts, and checked by
// tools/scripts/deploy.test.ts with promtool and against a real Prometheus.
import { stringify } from 'yaml';
import { MANAGER, NAMESPACE } from './rbac.ts';

/**
 * The `job` label of the manager's series: the ServiceMonitor's default job
 * label is the Service's name. Every query selects on it, so another
 * controller-runtime operator in the same Prometheus is never mixed in.
 */
export const JOB = 'regulon-manager-metrics';
const job = `job="${JOB}"`;

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
} as const;

export const ALERTS: readonly AlertRule[] = [
  {
    alert: 'RegulonReconcileErrorRatioHigh',
    // Over every reconcile result, so a controller that mostly succeeds but fails one object in ten shows.
    expr: `sum by (namespace, controller) (rate(controller_runtime_reconcile_total{${job}, result="error"}[5m]))
  / sum by (namespace, controller) (rate(controller_runtime_reconcile_total{${job}}[5m]))
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
    expr: `deriv(workqueue_depth{${job}}[15m]) > 0 and workqueue_depth{${job}} > 0`,
    for: '15m',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'Regulon {{ $labels.controller }} work queue keeps growing',
      description:
        'The {{ $labels.controller }} work queue on {{ $labels.pod }} has grown for 15 minutes (depth {{ $value }}): reconciles are not keeping up. Check reconcile latency, API request latency and the concurrency flag.',
    },
  },
  {
    alert: 'RegulonNoLeader',
    // absent(): no replica reports the gauge at all (none running, or none scraped).
    expr: `max by (namespace, name) (leader_election_master_status{${job}}) < 1
or absent(leader_election_master_status{${job}})`,
    for: '5m',
    labels: { severity: 'critical' },
    annotations: {
      summary: 'Regulon has no leader',
      description:
        'No regulon-manager replica has held the Lease {{ $labels.name }} for 5 minutes: nothing is being reconciled. Check the manager Pods, their logs (leader-election) and the Lease in the manager namespace.',
    },
  },
  {
    alert: 'RegulonReconcileSlow',
    expr: `histogram_quantile(0.99, sum by (namespace, controller, le) (rate(controller_runtime_reconcile_time_seconds_bucket{${job}}[5m])))
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
    // No replica scraped up: covers a crash loop, a missing Deployment and a broken scrape alike.
    expr: `absent(up{${job}} == 1)`,
    for: '5m',
    labels: { severity: 'critical' },
    annotations: {
      summary: 'Regulon manager is down',
      description:
        'No regulon-manager replica has been scraped successfully for 5 minutes. Check the Deployment in the manager namespace and the ServiceMonitor.',
    },
  },
  {
    alert: 'RegulonManagerReplicaDown',
    expr: `up{${job}} == 0`,
    for: '15m',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'A Regulon manager replica is down',
      description:
        '{{ $labels.pod }} has not been scraped for 15 minutes: the manager runs without a standby, so a failure of the leader stops reconciling until a new Pod starts.',
    },
  },
];

/** The rule groups, as both a PrometheusRule's spec and a plain Prometheus rules file hold them. */
export function ruleGroups(): { groups: Array<{ name: string; rules: readonly AlertRule[] }> } {
  return { groups: [{ name: 'regulon-manager', rules: ALERTS }] };
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
