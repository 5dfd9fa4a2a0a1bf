// The Grafana dashboard, as code (@grafana/grafana-foundation-sdk): written to
// deploy/grafana/regulon.json by generate.ts. Panels are declared as data
// first (DASHBOARD_ROWS) so tests can run every query against a real
// Prometheus and know which panels may legitimately be empty.
//
// It follows Grafana's dashboard linter (github.com/grafana/dashboard-linter,
// whose rules dashboard-lint.ts checks in the unit tests): a datasource
// variable, `job` and `instance` variables that every query filters on, so the
// dashboard works whatever the scrape job is called, and $__rate_interval.
import * as common from '@grafana/grafana-foundation-sdk/common';
import {
  DashboardBuilder,
  DashboardCursorSync,
  DashboardLinkBuilder,
  DashboardLinkType,
  DatasourceVariableBuilder,
  MappingType,
  QueryVariableBuilder,
  RowBuilder,
  VariableRefresh,
  VariableSort,
  type Dashboard,
} from '@grafana/grafana-foundation-sdk/dashboard';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder as StatPanelBuilder } from '@grafana/grafana-foundation-sdk/stat';
import { PanelBuilder as TimeseriesPanelBuilder } from '@grafana/grafana-foundation-sdk/timeseries';
import { MANAGER_CONTROLLERS, MANAGER_TARGETS } from './alerts.ts';

export const DASHBOARD_UID = 'regulon-manager';

export interface PanelQuery {
  expr: string;
  legend: string;
}

export interface PanelSpec {
  title: string;
  description: string;
  kind: 'timeseries' | 'stat';
  unit: string;
  queries: PanelQuery[];
  /** Why this panel may show no data on a healthy manager; tests accept an empty result only for these. */
  mayBeEmpty?: string;
  /** Stat panels: show the series name (e.g. the leading pod) instead of the value. */
  showName?: boolean;
  /** Stat panels: value -> text. */
  valueText?: Record<string, { text: string; color: string }>;
  width?: number;
}

export interface RowSpec {
  title: string;
  panels: PanelSpec[];
}

/** Selectors shared by every query; $job/$instance/$controller are the dashboard's variables. */
const target = `job=~"$job", instance=~"$instance"`;
const ctl = `${target}, controller=~"$controller"`;
/** One series per manager replica: `instance` always exists, `pod` where the scrape adds it (the ServiceMonitor does). */
const replica = 'instance, pod';
const replicaLegend = '{{instance}} {{pod}}';
const rate = (metric: string, sel: string) => `rate(${metric}{${sel}}[$__rate_interval])`;
const quantiles = (metric: string, sel: string, by: string, legend: string): PanelQuery[] =>
  [0.5, 0.9, 0.99].map((q) => ({
    expr: `histogram_quantile(${q}, sum by (${by}, le) (${rate(`${metric}_bucket`, sel)}))`,
    legend: `${legend} p${q * 100}`,
  }));

export const DASHBOARD_ROWS: readonly RowSpec[] = [
  {
    title: 'Reconciles',
    panels: [
      {
        title: 'Reconcile rate by result',
        description:
          'Reconciles per second by controller and result: success, error (retried with backoff), requeue, requeue_after.',
        kind: 'timeseries',
        unit: 'ops',
        queries: [
          {
            expr: `sum by (controller, result) (${rate('controller_runtime_reconcile_total', ctl)})`,
            legend: '{{controller}} {{result}}',
          },
        ],
      },
      {
        title: 'Reconcile error ratio',
        description:
          'Share of reconciles that returned an error. The RegulonReconcileErrorRatioHigh alert fires above 10% for 15 minutes.',
        kind: 'timeseries',
        unit: 'percentunit',
        queries: [
          {
            expr: `sum by (controller) (${rate('controller_runtime_reconcile_total', `${ctl}, result="error"`)}) / sum by (controller) (${rate('controller_runtime_reconcile_total', ctl)})`,
            legend: '{{controller}}',
          },
        ],
      },
      {
        title: 'Errors, terminal errors and panics',
        description:
          'Errors are retried; terminal errors (TerminalError) are not; panics are programming errors (TypeError, RangeError, ...) caught by the reconcile loop.',
        kind: 'timeseries',
        unit: 'ops',
        queries: [
          {
            expr: `sum by (controller) (${rate('controller_runtime_reconcile_errors_total', ctl)})`,
            legend: '{{controller}} errors',
          },
          {
            expr: `sum by (controller) (${rate('controller_runtime_terminal_reconcile_errors_total', ctl)})`,
            legend: '{{controller}} terminal',
          },
          {
            expr: `sum by (controller) (${rate('controller_runtime_reconcile_panics_total', ctl)})`,
            legend: '{{controller}} panics',
          },
        ],
      },
      {
        title: 'Reconcile time',
        description:
          'p50/p90/p99 of the time one reconcile takes. The RegulonReconcileSlow alert fires when p99 stays above 10s.',
        width: 12,
        kind: 'timeseries',
        unit: 's',
        queries: quantiles('controller_runtime_reconcile_time_seconds', ctl, 'controller', '{{controller}}'),
      },
      {
        title: 'Active workers vs max',
        description:
          'Reconciles running now against --<controller>-concurrency. Active at max for long means the queue waits for workers.',
        width: 12,
        kind: 'timeseries',
        unit: 'short',
        queries: [
          {
            expr: `sum by (controller) (controller_runtime_active_workers{${ctl}})`,
            legend: '{{controller}} active',
          },
          {
            expr: `max by (controller) (controller_runtime_max_concurrent_reconciles{${ctl}})`,
            legend: '{{controller}} max',
          },
        ],
      },
    ],
  },
  {
    title: 'Work queue',
    panels: [
      {
        title: 'Queue depth',
        description:
          'Keys waiting for a worker. The RegulonWorkQueueGrowing alert fires when it grows for 15 minutes.',
        kind: 'timeseries',
        unit: 'short',
        queries: [{ expr: `sum by (controller) (workqueue_depth{${ctl}})`, legend: '{{controller}}' }],
      },
      {
        title: 'Queue latency',
        description: 'How long a key waits in the queue before a worker picks it up (p50/p90/p99).',
        kind: 'timeseries',
        unit: 's',
        queries: quantiles('workqueue_queue_duration_seconds', ctl, 'controller', '{{controller}}'),
      },
      {
        title: 'Work duration',
        description: 'How long a worker holds a key (p50/p90/p99): the reconcile plus queue bookkeeping.',
        kind: 'timeseries',
        unit: 's',
        queries: quantiles('workqueue_work_duration_seconds', ctl, 'controller', '{{controller}}'),
      },
      {
        title: 'Unfinished work and longest running',
        description:
          'Seconds of work in progress not yet done, and the longest-running reconcile now: a stuck reconcile shows as a line that keeps climbing.',
        width: 12,
        kind: 'timeseries',
        unit: 's',
        queries: [
          {
            expr: `sum by (controller) (workqueue_unfinished_work_seconds{${ctl}})`,
            legend: '{{controller}} unfinished',
          },
          {
            expr: `max by (controller) (workqueue_longest_running_processor_seconds{${ctl}})`,
            legend: '{{controller}} longest running',
          },
        ],
      },
      {
        title: 'Adds and retries',
        description: 'Keys added per second, and retries (rate-limited re-adds after an error).',
        width: 12,
        kind: 'timeseries',
        unit: 'ops',
        queries: [
          {
            expr: `sum by (controller) (${rate('workqueue_adds_total', ctl)})`,
            legend: '{{controller}} adds',
          },
          {
            expr: `sum by (controller) (${rate('workqueue_retries_total', ctl)})`,
            legend: '{{controller}} retries',
          },
        ],
      },
    ],
  },
  {
    title: 'Leader election',
    panels: [
      {
        title: 'Leader',
        description:
          'Whether some replica holds the Lease. The RegulonNoLeader alert fires after 5 minutes without.',
        kind: 'stat',
        unit: 'none',
        width: 6,
        valueText: {
          '0': { text: 'no leader', color: 'red' },
          '1': { text: 'leading', color: 'green' },
        },
        queries: [{ expr: `max by (name) (leader_election_master_status{${target}})`, legend: '{{name}}' }],
      },
      {
        title: 'Leading pod',
        description: 'The replica that holds the Lease now.',
        kind: 'stat',
        unit: 'none',
        width: 6,
        showName: true,
        queries: [
          {
            expr: `max by (${replica}) (leader_election_master_status{${target}}) == 1`,
            legend: replicaLegend,
          },
        ],
      },
      {
        title: 'Leader by pod',
        description: '1 while a replica leads: a handover shows as one line dropping and another rising.',
        kind: 'timeseries',
        unit: 'none',
        width: 12,
        queries: [
          { expr: `max by (${replica}) (leader_election_master_status{${target}})`, legend: replicaLegend },
        ],
      },
    ],
  },
  {
    title: 'Kubernetes API',
    panels: [
      {
        title: 'API requests by code and method',
        description:
          'Requests the manager sends to the API server. 409 on PATCH/PUT is an optimistic-concurrency conflict; 429 is server-side throttling.',
        width: 12,
        kind: 'timeseries',
        unit: 'reqps',
        queries: [
          {
            expr: `sum by (code, method) (${rate('rest_client_requests_total', target)})`,
            legend: '{{method}} {{code}}',
          },
        ],
      },
      {
        title: 'API request latency',
        description: 'p50/p90/p99 of request latency by verb, as the client measures it (including retries).',
        width: 12,
        kind: 'timeseries',
        unit: 's',
        queries: quantiles('rest_client_request_duration_seconds', target, 'verb', '{{verb}}'),
      },
    ],
  },
  {
    title: 'Process',
    panels: [
      {
        title: 'CPU',
        description: 'CPU seconds per second, per replica.',
        width: 6,
        kind: 'timeseries',
        unit: 'short',
        queries: [
          {
            expr: `sum by (${replica}) (${rate('process_cpu_seconds_total', target)})`,
            legend: replicaLegend,
          },
        ],
      },
      {
        title: 'Memory',
        description: 'Resident memory per replica (the container limit applies to this).',
        width: 6,
        kind: 'timeseries',
        unit: 'bytes',
        queries: [
          { expr: `sum by (${replica}) (process_resident_memory_bytes{${target}})`, legend: replicaLegend },
        ],
      },
      {
        title: 'Heap',
        description:
          'V8 heap used and total per replica: used that only grows across reconciles points to a leak (e.g. a cache without a transform).',
        width: 6,
        kind: 'timeseries',
        unit: 'bytes',
        queries: [
          {
            expr: `sum by (${replica}) (nodejs_heap_size_used_bytes{${target}})`,
            legend: `${replicaLegend} used`,
          },
          {
            expr: `sum by (${replica}) (nodejs_heap_size_total_bytes{${target}})`,
            legend: `${replicaLegend} total`,
          },
        ],
      },
      {
        title: 'Event-loop lag',
        description:
          'How late timers fire (p50/p99 over the sampling window). Sustained lag delays every reconcile and Lease renewal alike.',
        width: 6,
        kind: 'timeseries',
        unit: 's',
        queries: [
          {
            expr: `max by (${replica}) (nodejs_eventloop_lag_p50_seconds{${target}})`,
            legend: `${replicaLegend} p50`,
          },
          {
            expr: `max by (${replica}) (nodejs_eventloop_lag_p99_seconds{${target}})`,
            legend: `${replicaLegend} p99`,
          },
        ],
      },
    ],
  },
];

export interface VariableSpec {
  name: string;
  label: string;
  /** label_values(selector, label) or query_result(PromQL), as Grafana's Prometheus data source runs them. */
  query: string;
  /** query_result(): picks the value out of each result line (`{job="..."} 1 <time>`). */
  regex?: string;
  /** Offers "All" (`.+`) and selects it by default; without it, the first value is the default. */
  all: boolean;
  /** What "All" matches when not ALL_VALUE: `.*` for a label some series lack. */
  allValue?: string;
}

/**
 * The dashboard's query variables, in order (each may use those before it).
 * `job` defaults to the first job, by name, whose targets are manager replicas
 * (MANAGER_TARGETS): the dashboard finds the manager whatever the scrape job is
 * called, and a job holding another controller-runtime operator is not offered.
 * It has no "All": that would mix in every job's series.
 */
export const VARIABLES: readonly VariableSpec[] = [
  {
    name: 'job',
    label: 'Job',
    query: `query_result(group by (job) (${MANAGER_TARGETS}))`,
    regex: '/job="([^"]+)"/',
    all: false,
  },
  {
    name: 'instance',
    label: 'Instance',
    query: `label_values(controller_runtime_max_concurrent_reconciles{job=~"$job", ${MANAGER_CONTROLLERS}}, instance)`,
    all: true,
  },
  {
    name: 'controller',
    label: 'Controller',
    query: `label_values(controller_runtime_max_concurrent_reconciles{${target}, ${MANAGER_CONTROLLERS}}, controller)`,
    all: true,
  },
];

/** What "All" means for a variable: the linter asks for `.+` (any value, but the label must be there). */
export const ALL_VALUE = '.+';

const datasource = { type: 'prometheus', uid: '${datasource}' };

function panel(p: PanelSpec) {
  const targets = p.queries.map((q, i) =>
    new DataqueryBuilder()
      .expr(q.expr)
      .legendFormat(q.legend)
      .refId(String.fromCharCode(65 + i))
      .datasource(datasource),
  );
  if (p.kind === 'stat') {
    const b = new StatPanelBuilder()
      .title(p.title)
      .description(p.description)
      .datasource(datasource)
      .unit(p.unit)
      .span(p.width ?? 8)
      .height(6)
      .graphMode(common.BigValueGraphMode.None)
      .colorMode(common.BigValueColorMode.Value)
      .textMode(p.showName ? common.BigValueTextMode.Name : common.BigValueTextMode.Value)
      .reduceOptions(new common.ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false));
    if (p.valueText)
      b.mappings([
        { type: MappingType.ValueToText, options: Object.fromEntries(Object.entries(p.valueText)) },
      ]);
    for (const t of targets) b.withTarget(t.instant());
    return b;
  }
  const b = new TimeseriesPanelBuilder()
    .title(p.title)
    .description(p.description)
    .datasource(datasource)
    .unit(p.unit)
    .span(p.width ?? 8)
    .height(8)
    .lineWidth(1)
    .fillOpacity(10)
    .showPoints(common.VisibilityMode.Never)
    .legend(
      new common.VizLegendOptionsBuilder()
        .displayMode(common.LegendDisplayMode.List)
        .placement(common.LegendPlacement.Bottom)
        .showLegend(true),
    )
    .tooltip(
      new common.VizTooltipOptionsBuilder()
        .mode(common.TooltipDisplayMode.Multi)
        .sort(common.SortOrder.Descending),
    );
  for (const t of targets) b.withTarget(t);
  return b;
}

/** A dashboard as data: what buildDashboard() makes, and what the tests read. */
export interface DashboardSpec {
  uid: string;
  title: string;
  description: string;
  tags: string[];
  /** Query variables, in order (each may use those before it); the data source variable comes first. */
  variables: readonly VariableSpec[];
  rows: readonly RowSpec[];
  /** Links in the dashboard's header: to another dashboard by uid, keeping the time range. */
  links?: ReadonlyArray<{ title: string; uid: string; tooltip: string }>;
}

export function buildDashboard(spec: DashboardSpec): Dashboard {
  const b = new DashboardBuilder(spec.title)
    .uid(spec.uid)
    .description(spec.description)
    .tags(spec.tags)
    // Provisioned from a ConfigMap or a file, which overwrites edits made in Grafana.
    .readonly()
    .tooltip(DashboardCursorSync.Crosshair)
    .refresh('30s')
    .time({ from: 'now-1h', to: 'now' })
    .timezone('browser')
    .withVariable(new DatasourceVariableBuilder('datasource').label('Data source').type('prometheus'));
  for (const l of spec.links ?? [])
    b.link(
      new DashboardLinkBuilder(l.title)
        .type(DashboardLinkType.Link)
        .url(`/d/${l.uid}`)
        .tooltip(l.tooltip)
        .icon('dashboard')
        .keepTime(true)
        .includeVars(false)
        .targetBlank(false)
        .asDropdown(false)
        .tags([]),
    );
  for (const v of spec.variables) {
    const q = new QueryVariableBuilder(v.name)
      .label(v.label)
      .query({ query: v.query, refId: 'PrometheusVariableQueryEditor-VariableQuery' })
      .definition(v.query)
      .datasource(datasource)
      .refresh(VariableRefresh.OnTimeRangeChanged)
      .sort(VariableSort.AlphabeticalAsc)
      .multi(true)
      .includeAll(v.all)
      .allValue(v.allValue ?? ALL_VALUE);
    if (v.regex) q.regex(v.regex);
    if (v.all) q.current({ selected: true, text: 'All', value: '$__all' });
    b.withVariable(q);
  }
  // Stable ids: links to one panel (viewPanel=<id>) survive regenerating.
  let id = 0;
  for (const row of spec.rows) {
    b.withRow(new RowBuilder(row.title).id(++id));
    for (const p of row.panels) b.withPanel(panel(p).id(++id));
  }
  return b.build();
}

/** The engine instances' dashboards the manager's links to (engine-dashboards.ts makes them). */
export const ENGINE_DASHBOARD_LINKS = [
  { title: 'PostgreSQL instances', uid: 'regulon-postgres', tooltip: "Databases' postgres instances" },
  { title: 'MariaDB instances', uid: 'regulon-mariadb', tooltip: "Databases' MariaDB instances" },
  { title: 'Redis instances', uid: 'regulon-redis', tooltip: "Caches' redis instances" },
  { title: 'Memcached instances', uid: 'regulon-memcached', tooltip: "Caches' memcached instances" },
] as const;

export const MANAGER_DASHBOARD: DashboardSpec = {
  uid: DASHBOARD_UID,
  title: 'Regulon manager',
  description:
    'Regulon controllers: reconciles, work queues, leader election, Kubernetes API requests and the Node.js process. Generated by tools/scripts/dashboards.ts.',
  tags: ['regulon', 'kubernetes', 'controller-runtime'],
  variables: VARIABLES,
  rows: DASHBOARD_ROWS,
  links: ENGINE_DASHBOARD_LINKS,
};

export function dashboard(): Dashboard {
  return buildDashboard(MANAGER_DASHBOARD);
}

export function dashboardJson(spec: DashboardSpec = MANAGER_DASHBOARD): string {
  return `${JSON.stringify(buildDashboard(spec), null, 2)}\n`;
}
