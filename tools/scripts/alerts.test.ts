// The alert rules that ship (deploy/monitoring/prometheusrule.yaml) pass
// `promtool check rules`, and `promtool test rules` shows each alert fires on
// the failure it names, after its `for`, and stays silent on a healthy manager.
// promtool comes with Debian's `prometheus` package (.ci/run installs it); a
// missing promtool fails these tests rather than skipping them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { ALERTS, JOB } from './alerts.ts';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'regulon-alerts-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function promtool(...args: string[]) {
  const r = spawnSync('promtool', args, { cwd: dir, encoding: 'utf8' });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT')
    assert.fail(
      "promtool not found on PATH: install Debian's prometheus package (apt-get install -y prometheus); .ci/run does",
    );
  return r;
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

test('promtool check rules accepts the shipped rules', () => {
  shippedRules();
  const r = promtool('check', 'rules', 'rules.yaml');
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`SUCCESS: ${ALERTS.length} rules found`));
});

const j = `job="${JOB}", namespace="regulon-system"`;
const a = `${j}, pod="regulon-manager-a"`;
const b = `${j}, pod="regulon-manager-b"`;
const q = `controller="database", name="database"`;
/** Two replicas, both scraped, a leads: what every case but "down" stands on. */
const replicas = [
  { series: `up{${a}}`, values: '1x60' },
  { series: `up{${b}}`, values: '1x60' },
  { series: `leader_election_master_status{${a}, name="regulon-manager"}`, values: '1x60' },
  { series: `leader_election_master_status{${b}, name="regulon-manager"}`, values: '0x60' },
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
];
const firing = (alertname: string, labels: string, severity: 'warning' | 'critical') =>
  `ALERTS{alertname="${alertname}", alertstate="firing", severity="${severity}"${labels ? `, ${labels}` : ''}}`;

const ruleTests = (rulesFile: string) => ({
  rule_files: [rulesFile],
  evaluation_interval: '1m',
  tests: [
    {
      name: 'healthy: no alert pending or firing',
      interval: '1m',
      input_series: healthy,
      promql_expr_test: [10, 30, 59].map((m) => ({ expr: 'ALERTS', eval_time: `${m}m`, exp_samples: [] })),
    },
    {
      name: 'every replica down: RegulonManagerDown and, with no gauge left, RegulonNoLeader',
      interval: '1m',
      input_series: [
        { series: `up{${a}}`, values: '1 1 0x30' },
        { series: `up{${b}}`, values: '1 1 0x30' },
        // Scrapes fail from minute 2: the gauge goes stale, then absent.
        { series: `leader_election_master_status{${a}, name="regulon-manager"}`, values: '1 1' },
        { series: `leader_election_master_status{${b}, name="regulon-manager"}`, values: '0 0' },
      ],
      promql_expr_test: [
        // absent() of a comparison keeps no labels; absent() of a selector keeps its equality matchers.
        { expr: 'ALERTS{alertstate="firing"}', eval_time: '5m', exp_samples: [] },
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '20m',
          exp_samples: [
            { labels: firing('RegulonManagerDown', '', 'critical'), value: 1 },
            { labels: firing('RegulonNoLeader', `job="${JOB}"`, 'critical'), value: 1 },
            { labels: firing('RegulonManagerReplicaDown', a, 'warning'), value: 1 },
            { labels: firing('RegulonManagerReplicaDown', b, 'warning'), value: 1 },
          ],
        },
      ],
    },
    {
      name: 'both replicas up, neither leads: RegulonNoLeader after 5 minutes',
      interval: '1m',
      input_series: [
        { series: `up{${a}}`, values: '1x20' },
        { series: `up{${b}}`, values: '1x20' },
        { series: `leader_election_master_status{${a}, name="regulon-manager"}`, values: '1 1 0x20' },
        { series: `leader_election_master_status{${b}, name="regulon-manager"}`, values: '0x20' },
      ],
      promql_expr_test: [
        {
          expr: 'ALERTS{alertname="RegulonNoLeader", alertstate="firing"}',
          eval_time: '6m',
          exp_samples: [],
        },
        {
          expr: 'ALERTS{alertname="RegulonNoLeader", alertstate="firing"}',
          eval_time: '9m',
          exp_samples: [
            {
              labels: firing(
                'RegulonNoLeader',
                'name="regulon-manager", namespace="regulon-system"',
                'critical',
              ),
              value: 1,
            },
          ],
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
        { expr: 'ALERTS{alertstate="firing"}', eval_time: '10m', exp_samples: [] },
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '25m',
          exp_samples: [
            {
              labels: firing(
                'RegulonReconcileErrorRatioHigh',
                'controller="database", namespace="regulon-system"',
                'warning',
              ),
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
        { series: `workqueue_depth{${a}, controller="other", name="other"}`, values: '0+5x5 25-5x5 0x50' },
      ],
      promql_expr_test: [
        { expr: 'ALERTS{alertstate="firing"}', eval_time: '10m', exp_samples: [] },
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '40m',
          exp_samples: [{ labels: firing('RegulonWorkQueueGrowing', `${a}, ${q}`, 'warning'), value: 1 }],
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
        { expr: 'ALERTS{alertstate="firing"}', eval_time: '10m', exp_samples: [] },
        {
          expr: 'ALERTS{alertstate="firing"}',
          eval_time: '25m',
          exp_samples: [
            {
              labels: firing(
                'RegulonReconcileSlow',
                'controller="database", namespace="regulon-system"',
                'warning',
              ),
              value: 1,
            },
          ],
        },
      ],
    },
  ],
});

test('promtool test rules: each alert fires on its failure after its for, and none on a healthy manager', () => {
  writeFileSync(join(dir, 'tests.yaml'), stringify(ruleTests(shippedRules())));
  const r = promtool('test', 'rules', 'tests.yaml');
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout + r.stderr, /SUCCESS/);
});

test('every alert is covered by a firing case above, with a runbook-style description', () => {
  const cases = JSON.stringify(ruleTests('rules.yaml'));
  for (const alert of ALERTS) {
    assert.ok(
      cases.includes(`alertname=\\"${alert.alert}\\", alertstate=\\"firing\\"`),
      `${alert.alert} has a firing test`,
    );
    assert.ok(alert.annotations.description.length > 60, `${alert.alert} says what to check`);
  }
});
