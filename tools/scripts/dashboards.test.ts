// The shipped dashboard passes Grafana's dashboard linter rules (as
// dashboard-lint.ts applies them), and each rule flags the mistake it is
// about, so a passing run means something. The queries' PromQL and the
// variables' defaults are checked against a real Prometheus in deploy.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { lintDashboard, scan, type DashboardJson } from './dashboard-lint.ts';
import { dashboardJson } from './dashboards.ts';
import { ENGINE_DASHBOARDS } from './engine-dashboards.ts';

const file = join(import.meta.dirname, '..', '..', 'deploy', 'grafana', 'regulon.json');
const shipped = () => JSON.parse(readFileSync(file, 'utf8')) as DashboardJson;

test("the shipped dashboard passes every rule of Grafana's dashboard linter", () => {
  assert.equal(readFileSync(file, 'utf8'), dashboardJson(), 'deploy/grafana/regulon.json is generated');
  assert.deepEqual(lintDashboard(shipped()), []);
});

for (const [name, spec] of Object.entries(ENGINE_DASHBOARDS))
  test(`the engine dashboard ${name} passes every rule of Grafana's dashboard linter, and links back to the manager's`, () => {
    const path = join(import.meta.dirname, '..', '..', 'deploy', 'grafana', name);
    assert.equal(readFileSync(path, 'utf8'), dashboardJson(spec), `deploy/grafana/${name} is generated`);
    const d = JSON.parse(readFileSync(path, 'utf8')) as DashboardJson & { links?: Array<{ url: string }> };
    assert.deepEqual(lintDashboard(d), []);
    assert.deepEqual(
      d.links?.map((l) => l.url),
      ['/d/regulon-manager'],
    );
  });

test('an engine dashboard with roles filters every query on $role, whose "All" also matches the series without one', () => {
  for (const [name, spec] of Object.entries(ENGINE_DASHBOARDS)) {
    const d = JSON.parse(dashboardJson(spec)) as DashboardJson;
    const role = d.templating!.list!.find((v) => v.name === 'role');
    const exprs = d.panels!.flatMap((p) => (p.targets ?? []).map((t) => t.expr!));
    if (name === 'regulon-memcached.json') {
      // memcached has no primary: its series carry no role, so no variable offers one.
      assert.equal(role, undefined, name);
      assert.ok(
        exprs.every((e) => !e.includes('$role')),
        name,
      );
      continue;
    }
    assert.equal(role?.allValue, '.*', `${name}: "All" is .*`);
    assert.equal(role?.includeAll, true, name);
    const unfiltered = exprs.filter((e) => !e.includes('role=~"$role"'));
    assert.deepEqual(unfiltered, [], `${name}: every query filters on the role`);
  }
});

test("the manager's dashboard links to each engine's", () => {
  const d = shipped() as DashboardJson & { links?: Array<{ url: string }> };
  assert.deepEqual(
    d.links?.map((l) => l.url).sort(),
    Object.values(ENGINE_DASHBOARDS)
      .map((e) => `/d/${e.uid}`)
      .sort(),
  );
});

const variable = (d: DashboardJson, name: string) => d.templating!.list!.find((v) => v.name === name)!;
const firstQueryPanel = (d: DashboardJson) => d.panels!.find((p) => p.type === 'timeseries')!;
const everyTarget = (d: DashboardJson, f: (expr: string) => string) => {
  for (const p of d.panels!) for (const t of p.targets ?? []) t.expr = f(t.expr!);
};

/** One mistake per rule, each made on a copy of the shipped dashboard. */
const mistakes: Record<string, (d: DashboardJson) => void> = {
  'template-datasource-rule': (d) => (variable(d, 'datasource').name = 'prom'),
  'template-job-rule': (d) => (d.templating!.list = d.templating!.list!.filter((v) => v.name !== 'job')),
  'template-instance-rule': (d) => (variable(d, 'instance').allValue = '.*'),
  'template-label-promql-rule': (d) =>
    (variable(d, 'controller').query = 'label_values(up{job=~"$job", controller)'),
  'template-on-time-change-reload-rule': (d) => (variable(d, 'job').refresh = 1),
  'panel-datasource-rule': (d) => (firstQueryPanel(d).datasource = { uid: 'PBFA97CFB590B2093' }),
  'panel-title-description-rule': (d) => (firstQueryPanel(d).description = ''),
  'panel-units-rule': (d) => (firstQueryPanel(d).fieldConfig = { defaults: {} }),
  'panel-no-targets-rule': (d) => (firstQueryPanel(d).targets = []),
  'target-promql-rule': (d) => (firstQueryPanel(d).targets![0]!.expr = 'sum(rate(x[5m])'),
  'target-rate-interval-rule': (d) => everyTarget(d, (e) => e.replace('[$__rate_interval]', '[5m]')),
  // What the dashboard did before: a hard-coded job, no instance.
  'target-job-rule': (d) => everyTarget(d, (e) => e.replace('job=~"$job"', 'job="regulon-manager-metrics"')),
  'target-instance-rule': (d) => everyTarget(d, (e) => e.replace(', instance=~"$instance"', '')),
  'target-counter-agg-rule': (d) =>
    (firstQueryPanel(d).targets![0]!.expr =
      'sum(controller_runtime_reconcile_total{job=~"$job", instance=~"$instance"})'),
  'uneditable-dashboard': (d) => (d.editable = true),
};

for (const [rule, make] of Object.entries(mistakes))
  test(`${rule} flags a dashboard that breaks it`, () => {
    const d = shipped();
    make(d);
    const rules = new Set(lintDashboard(d).map((f) => f.rule));
    assert.ok(rules.has(rule), `${rule} in ${[...rules].join(', ') || 'no findings'}`);
  });

test('scan finds every selector, with its matchers, range and the call around it, and no label or keyword', () => {
  const { selectors, ranges } = scan(
    'histogram_quantile(0.99, sum by (controller, le) (rate(a_bucket{job=~"$job", x="}"}[$__rate_interval])))' +
      ' / on (job) group_left max without (pod) (b) > 1e3 and ignoring (instance) increase(c_total[1h] offset 5m)',
  );
  assert.deepEqual(
    selectors.map((s) => [
      s.name,
      s.matchers.map((m) => `${m.name}${m.op}${m.value}`).join(','),
      s.call,
      s.range,
    ]),
    [
      ['a_bucket', 'job=~$job,x=}', 'rate', '$__rate_interval'],
      ['b', '', undefined, undefined],
      ['c_total', '', 'increase', '1h'],
    ],
  );
  assert.deepEqual(ranges, [
    { call: 'rate', range: '$__rate_interval' },
    { call: 'increase', range: '1h' },
  ]);
});
