// Runs the Grafana dashboard's queries against a real Prometheus the way
// Grafana would: each query variable's options from Prometheus, its default
// value ("All" = allValue, else the first option), substituted into every
// panel query. For the tests that check "every panel has data"
// (tools/scripts/deploy.test.ts, apps/manager's in-cluster tests).
import { DASHBOARD_ROWS, type RowSpec } from './dashboards.ts';

/** The parts of a Grafana dashboard these checks read. */
export interface GrafanaDashboard {
  templating: {
    list: Array<{
      name: string;
      type: string;
      query?: string | { query: string };
      regex?: string;
      multi?: boolean;
      includeAll?: boolean;
      allValue?: string;
      current?: { value: string | string[] };
    }>;
  };
  panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }>;
}

export interface Series {
  metric: Record<string, string>;
  value: [number, string];
}

/** An instant query; throws with Prometheus's error when it fails. */
export async function query(promUrl: string, expr: string): Promise<Series[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as {
    status: string;
    error?: string;
    data?: { resultType: string; result: Series[] };
  };
  if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
  return body.data!.result;
}

/** A variable's value as Grafana's Prometheus data source writes it into a query (interpolateQueryExpr). */
export function formatValue(value: string, multi: boolean): string {
  return multi ? value.replace(/\\/g, '\\\\\\\\').replace(/[$^*{}[\]'+?.()|]/g, '\\\\$&') : value;
}

/** Replaces $name and ${name} with their values; throws on a variable with none. */
export function substitute(expr: string, values: Record<string, string>): string {
  return expr.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, braced: string | undefined, bare: string | undefined) => {
    const name = (braced ?? bare)!;
    if (!(name in values)) throw new Error(`no value for $${name} in ${expr}`);
    return values[name]!;
  });
}

/** A query variable's options, as Grafana gets them from Prometheus: label_values() via the label API, query_result() via a query. */
export async function variableOptions(
  promUrl: string,
  v: GrafanaDashboard['templating']['list'][number],
  values: Record<string, string>,
): Promise<string[]> {
  const q = substitute(typeof v.query === 'string' ? v.query : v.query!.query, values);
  let found: string[];
  const labelValues = /^label_values\((.*),\s*(\w+)\)$/s.exec(q);
  const queryResult = /^query_result\((.*)\)$/s.exec(q);
  if (labelValues) {
    const res = await fetch(
      `${promUrl}/api/v1/label/${labelValues[2]}/values?match[]=${encodeURIComponent(labelValues[1]!)}`,
    );
    const body = (await res.json()) as { status: string; error?: string; data: string[] };
    if (body.status !== 'success') throw new Error(`${q}: ${body.error}`);
    found = body.data;
  } else if (queryResult) {
    // Grafana turns each result into a line, `{label="value", ...} <value> <time>`, for the regex.
    found = (await query(promUrl, queryResult[1]!)).map(
      (s) =>
        `{${Object.entries(s.metric)
          .map(([k, val]) => `${k}="${val}"`)
          .join(', ')}} ${s.value[1]} ${s.value[0] * 1000}`,
    );
  } else throw new Error(`unknown variable query ${q}`);
  if (v.regex) {
    const re = new RegExp(v.regex.replace(/^\/(.*)\/$/s, '$1'));
    found = found.flatMap((line) => {
      const m = re.exec(line);
      return m ? [m[1] ?? m[0]] : [];
    });
  }
  return [...new Set(found)].sort();
}

export interface PanelCheck {
  /** Each query variable's options. */
  options: Record<string, string[]>;
  /** The values substituted: Grafana's defaults. */
  values: Record<string, string>;
  queries: number;
  /** `panel: expr` of each query that returned no series (panels that may be empty excepted). */
  empty: string[];
  /** `panel: expr` of each query whose series are all NaN or infinite. */
  notFinite: string[];
}

/**
 * Runs every panel query with every variable at Grafana's default: a variable
 * set to "All" takes its allValue, any other its first option.
 * `rateInterval` stands in for $__rate_interval. `rows` are the dashboard's panels as data,
 * which say which panel may be empty.
 */
export async function checkPanels(
  promUrl: string,
  dashboard: GrafanaDashboard,
  rateInterval = '5m',
  rows: readonly RowSpec[] = DASHBOARD_ROWS,
): Promise<PanelCheck> {
  const values: Record<string, string> = { __rate_interval: rateInterval };
  const options: Record<string, string[]> = {};
  for (const v of dashboard.templating.list.filter((x) => x.type === 'query')) {
    options[v.name] = await variableOptions(promUrl, v, values);
    if (options[v.name]!.length === 0) throw new Error(`$${v.name} has no options`);
    values[v.name] =
      v.current?.value === '$__all'
        ? v.allValue!
        : formatValue(options[v.name]![0]!, !!(v.multi || v.includeAll));
  }
  const empty: string[] = [];
  const notFinite: string[] = [];
  let queries = 0;
  for (const panel of dashboard.panels) {
    const spec = rows.flatMap((r) => r.panels).find((p) => p.title === panel.title);
    for (const t of panel.targets ?? []) {
      queries++;
      const result = await query(promUrl, substitute(t.expr, values));
      if (spec?.mayBeEmpty) continue;
      if (result.length === 0) empty.push(`${panel.title}: ${t.expr}`);
      else if (!result.some((s) => Number.isFinite(Number(s.value[1]))))
        notFinite.push(`${panel.title}: ${t.expr}`);
    }
  }
  return { options, values, queries, empty, notFinite };
}
