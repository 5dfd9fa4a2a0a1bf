// The rules of Grafana's dashboard linter (github.com/grafana/dashboard-linter,
// lint/rule_*.go), applied to a dashboard's JSON so a unit test can hold the
// shipped dashboard to them: the linter itself is a Go module this machine
// can't fetch. Rule names are the linter's. Where the Go rule is lax only by
// accident (target-counter-agg-rule looks at selectors without matchers only),
// this one checks what the rule means. PromQL validity is left to a real
// Prometheus (deploy.test.ts parses and runs every query); here a small
// tokenizer finds each query's selectors and ranges.

export interface Finding {
  rule: string;
  /** `dashboard`, `variable <name>`, `panel <title>` or `panel <title> query <refId>`. */
  where: string;
  message: string;
}

interface Variable {
  name: string;
  label?: string;
  type: string;
  query?: string | { query?: string };
  datasource?: { uid?: string } | string;
  multi?: boolean;
  includeAll?: boolean;
  allValue?: string;
  refresh?: number;
}
interface Target {
  expr?: string;
  refId?: string;
}
interface Panel {
  type: string;
  title?: string;
  description?: string;
  datasource?: { uid?: string } | string;
  targets?: Target[];
  fieldConfig?: {
    defaults?: { unit?: string; mappings?: unknown[] };
    overrides?: Array<{ properties?: Array<{ id: string; value: unknown }> }>;
  };
  options?: { reduceOptions?: { fields?: string } };
  panels?: Panel[];
}
export interface DashboardJson {
  editable?: boolean;
  templating?: { list?: Variable[] };
  panels?: Panel[];
}

/** Units Grafana knows (packages/grafana-data/src/valueFormats/categories.ts), those a controller dashboard uses. */
const UNITS = new Set([
  'none', 'short', 'percent', 'percentunit', 'string', 'bool', 'bool_yes_no', 'bool_on_off',
  'bytes', 'decbytes', 'bits', 'decbits', 'kbytes', 'mbytes', 'gbytes', 'Bps', 'binBps', 'bps', 'binbps',
  'ns', 'µs', 'ms', 's', 'm', 'h', 'd', 'dtdurationms', 'dtdurations', 'hertz',
  'ops', 'reqps', 'rps', 'wps', 'iops', 'cps', 'opm', 'rpm', 'wpm', 'cpm', 'pps',
  'dateTimeAsIso', 'dateTimeFromNow',
]); // prettier-ignore

const QUERY_PANELS = new Set([
  'timeseries',
  'graph',
  'singlestat',
  'stat',
  'gauge',
  'table-old',
  'state-timeline',
]);
const DATASOURCE_PANELS = new Set(['timeseries', 'graph', 'singlestat', 'stat', 'gauge', 'table-old']);
const VARIABLE_FUNCTIONS = new Set(['label_names', 'label_values', 'metrics', 'query_result']);

const uid = (ds: { uid?: string } | string | undefined) => (typeof ds === 'string' ? ds : ds?.uid);
const isDatasourceVar = (u: string | undefined) => u === '$datasource' || u === '${datasource}';
const queryOf = (v: Variable) => (typeof v.query === 'string' ? v.query : (v.query?.query ?? ''));

export function lintDashboard(d: DashboardJson): Finding[] {
  const out: Finding[] = [];
  const add = (rule: string, where: string, message: string) => out.push({ rule, where, message });
  const vars = d.templating?.list ?? [];

  // template-datasource-rule
  const datasources = vars.filter((v) => v.type === 'datasource');
  if (datasources.length === 0) add('template-datasource-rule', 'dashboard', 'no templated data source');
  for (const v of datasources) {
    const q = typeof v.query === 'string' ? v.query : '';
    const names = datasources.length === 1 ? ['datasource', `${q}_datasource`] : [`${q}_datasource`];
    if (!names.includes(v.name))
      add('template-datasource-rule', `variable ${v.name}`, `should be named ${names.join(' or ')}`);
    if (datasources.length === 1 ? v.label !== 'Data source' : !v.label?.endsWith(' data source'))
      add('template-datasource-rule', `variable ${v.name}`, `label '${v.label}', should be 'Data source'`);
  }
  const prometheus = datasources.some((v) => v.query === 'prometheus');

  // template-job-rule, template-instance-rule
  if (prometheus)
    for (const name of ['job', 'instance']) {
      const rule = `template-${name}-rule`;
      const v = vars.find((x) => x.name === name);
      if (!v) {
        add(rule, 'dashboard', `is missing the ${name} template`);
        continue;
      }
      const problems = [
        !isDatasourceVar(uid(v.datasource)) && `datasource is ${uid(v.datasource)}, not $datasource`,
        v.type !== 'query' && `type is ${v.type}, not query`,
        v.label !== name[0]!.toUpperCase() + name.slice(1) && `label is ${v.label}`,
        !v.multi && 'not multi-select',
        v.allValue !== '.+' && `allValue is ${v.allValue}, not .+`,
      ];
      for (const p of problems) if (p) add(rule, `variable ${name}`, p);
    }

  for (const v of vars.filter((x) => x.type === 'query')) {
    // template-label-promql-rule (the PromQL itself: Prometheus runs it in deploy.test.ts)
    const m = /^([a-z_]+)\((.+)\)$/s.exec(queryOf(v));
    if (prometheus && (!m || !VARIABLE_FUNCTIONS.has(m[1]!) || !balanced(m[2]!)))
      add('template-label-promql-rule', `variable ${v.name}`, `invalid query ${queryOf(v)}`);
    // template-on-time-change-reload-rule
    if (v.refresh !== 2)
      add('template-on-time-change-reload-rule', `variable ${v.name}`, `refresh is ${v.refresh}, not 2`);
  }

  for (const p of (d.panels ?? []).flatMap((x) => [x, ...(x.panels ?? [])])) {
    const where = `panel ${p.title}`;
    if (DATASOURCE_PANELS.has(p.type) && !isDatasourceVar(uid(p.datasource)))
      add('panel-datasource-rule', where, `datasource is ${uid(p.datasource)}, not $datasource`);
    if (!QUERY_PANELS.has(p.type)) continue;
    if (!p.title || !p.description)
      add('panel-title-description-rule', where, 'missing title or description');
    const unit = unitOf(p);
    const mapped = (p.fieldConfig?.defaults?.mappings?.length ?? 0) > 0;
    const nonNumeric = p.type === 'stat' && !!p.options?.reduceOptions?.fields;
    if (!mapped && !nonNumeric && !UNITS.has(unit ?? ''))
      add('panel-units-rule', where, `no or unknown unit: '${unit ?? ''}'`);
    if (!p.targets?.length) add('panel-no-targets-rule', where, 'has no targets');
    if (prometheus) for (const t of p.targets ?? []) lintTarget(t, `${where} query ${t.refId}`, add);
  }

  if (d.editable !== false)
    add('uneditable-dashboard', 'dashboard', 'is editable; should be editable: false');
  return out;
}

function unitOf(p: Panel): string | undefined {
  for (const o of p.fieldConfig?.overrides ?? [])
    for (const prop of o.properties ?? []) if (prop.id === 'unit') return String(prop.value);
  return p.fieldConfig?.defaults?.unit;
}

function lintTarget(t: Target, where: string, add: (rule: string, where: string, message: string) => void) {
  const expr = t.expr ?? '';
  if (!expr.trim() || !balanced(expr)) {
    add('target-promql-rule', where, `invalid PromQL: ${expr}`);
    return;
  }
  const { selectors, ranges } = scan(expr);
  for (const s of selectors) {
    for (const label of ['job', 'instance'])
      if (!s.matchers.some((m) => m.name === label && m.op === '=~' && m.value === `$${label}`))
        add(`target-${label}-rule`, where, `${s.text} has no ${label}=~"$${label}"`);
    // A counter only means something as a rate: rate/irate/increase over a range, directly.
    if (s.name.endsWith('_total') && !(s.range && ['rate', 'irate', 'increase'].includes(s.call ?? '')))
      add('target-counter-agg-rule', where, `counter ${s.name} is not inside rate, irate or increase`);
  }
  for (const r of ranges)
    if ((r.call === 'rate' || r.call === 'irate') && r.range !== '$__rate_interval')
      add('target-rate-interval-rule', where, `${r.call}(...[${r.range}]) should use $__rate_interval`);
}

/** Brackets pair up outside string literals. */
function balanced(s: string): boolean {
  const stack: string[] = [];
  const pairs: Record<string, string> = { ')': '(', ']': '[', '}': '{' };
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch === '"' || ch === "'" || ch === '`') {
      i = endOfString(s, i);
      if (i < 0) return false;
    } else if ('([{'.includes(ch)) stack.push(ch);
    else if (ch in pairs && stack.pop() !== pairs[ch]) return false;
  }
  return stack.length === 0;
}

/** Index of the closing quote of the string literal opening at `i`, or -1. */
function endOfString(s: string, i: number): number {
  const q = s[i];
  for (let j = i + 1; j < s.length; j++) {
    if (s[j] === '\\' && q !== '`') j++;
    else if (s[j] === q) return j;
  }
  return -1;
}

export interface Selector {
  text: string;
  name: string;
  matchers: Array<{ name: string; op: string; value: string }>;
  /** The function call directly around the selector, and whether it is ranged (`x[5m]`). */
  call: string | undefined;
  range: string | undefined;
}

// Words that precede a label list in parentheses, or are operators and modifiers rather than metric names.
const LABEL_LIST_BEFORE = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set([
  ...LABEL_LIST_BEFORE,
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'atan2',
  'inf',
  'nan',
]);
const AGGREGATIONS = new Set([
  'sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values',
  'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio',
]); // prettier-ignore

/** The vector selectors of a PromQL expression, and every range with the call it sits in. */
export function scan(expr: string): {
  selectors: Selector[];
  ranges: Array<{ call: string | undefined; range: string }>;
} {
  const selectors: Array<Selector & { end: number }> = [];
  const ranges: Array<{ call: string | undefined; range: string }> = [];
  // The function (or grouping) each open parenthesis belongs to.
  const calls: Array<string | undefined> = [];
  let i = 0;
  const skipSpace = () => {
    while (i < expr.length && /\s/.test(expr[i]!)) i++;
  };
  while (i < expr.length) {
    skipSpace();
    const ch = expr[i];
    if (ch === undefined) break;
    const word = /^[A-Za-z_:][\w:]*/.exec(expr.slice(i))?.[0];
    if (word) {
      i += word.length;
      skipSpace();
      const lower = word.toLowerCase();
      if (LABEL_LIST_BEFORE.has(lower)) {
        if (expr[i] === '(') i = expr.indexOf(')', i) + 1;
      } else if (expr[i] === '(') {
        calls.push(lower);
        i++;
      } else if (!KEYWORDS.has(lower) && !AGGREGATIONS.has(lower)) {
        selectors.push(selector(word, calls.at(-1)));
      }
      continue;
    }
    // A number or a duration (0.99, 1e3, 5m): not a metric name.
    const literal = /^[0-9.][\w.]*/.exec(expr.slice(i))?.[0];
    if (literal) {
      i += literal.length;
      continue;
    }
    if (ch === '(' || ch === ')') {
      if (ch === '(') calls.push(undefined);
      else calls.pop();
      i++;
    } else if (ch === '{') selectors.push(selector('', calls.at(-1)));
    else if (ch === '[') {
      const end = expr.indexOf(']', i);
      const range = expr.slice(i + 1, end);
      ranges.push({ call: calls.at(-1), range });
      const last = selectors.at(-1);
      if (last && last.range === undefined && last.end === i) last.range = range;
      i = end + 1;
    } else if (ch === '"' || ch === "'" || ch === '`') i = endOfString(expr, i) + 1;
    else i++;
  }
  return { selectors: selectors.map(({ end: _end, ...s }) => s), ranges };

  /** A selector starting at `i` (after its metric name, if any): reads its matchers. */
  function selector(name: string, call: string | undefined): Selector & { end: number } {
    const matchers: Selector['matchers'] = [];
    let text = name;
    if (expr[i] === '{') {
      const start = i;
      i++;
      for (;;) {
        skipSpace();
        if (expr[i] === '}') break;
        const m = /^([A-Za-z_][\w]*)\s*(=~|!~|!=|=)\s*/.exec(expr.slice(i));
        if (!m) break;
        i += m[0].length;
        const end = endOfString(expr, i);
        matchers.push({ name: m[1]!, op: m[2]!, value: expr.slice(i + 1, end) });
        i = end + 1;
        skipSpace();
        if (expr[i] === ',') i++;
      }
      i++;
      text += expr.slice(start, i);
      skipSpace();
    }
    return { text, name, matchers, call, range: undefined, end: i };
  }
}
