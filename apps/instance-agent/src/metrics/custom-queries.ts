// User-defined metrics queries for postgres and MariaDB, in the shape of
// CloudNativePG's custom queries (and postgres_exporter's queries.yaml before
// them): a YAML map of query name to its SQL and what each column of its
// answer is.
//
//   orders_waiting:
//     query: select region, count(*) as count from shop.orders where state = 'waiting' group by region
//     metrics:
//       - region: { usage: LABEL, description: Where the orders ship to }
//       - count: { usage: GAUGE, description: Orders waiting to be packed }
//
// becomes `pg_orders_waiting_count{region="north",role="primary"} 12` on a
// postgres instance (`mysql_orders_waiting_count` on MariaDB).
//
// One parser, parseCustomQueries, serves both sides: the manager reports what
// it finds wrong in the Database's MetricsQueriesValid condition, and the agent
// runs only the queries it accepts, so the two never disagree about a file.
//
// Each query runs in its own client process (the engine's metrics command, the
// SQL in its METRICS_QUERY_ENV variable), so one that fails, hangs or returns
// rubbish costs only its own series. The SQL is wrapped so that the engine
// itself bounds it and hands back JSON:
//  - the time: postgres' statement_timeout, MariaDB's `SET STATEMENT
//    max_statement_time=... FOR`, both enforced by the server, which cancels
//    the statement and frees what it held (a client-side kill alone would
//    leave the backend running); the process is killed too once the scrape's
//    budget for user queries has passed;
//  - the rows: `limit N` over the query, and `count(*) over ()` (a window,
//    evaluated before the limit) says how many it had, so that the rows
//    beyond the limit are counted, not silently lost;
//  - writes: a read-only transaction (postgres: `set transaction read only`,
//    which binds the implicit transaction the statements of one `psql -c` share;
//    default_transaction_read_only would bind only the next one, and a
//    nextval() went through; MariaDB: `set session transaction read only`), and
//    the query is a derived
//    table, where neither engine accepts anything but a query;
//  - the output: JSON built by the engine (postgres json_agg of the rows,
//    MariaDB JSON_ARRAYAGG(JSON_OBJECT(...)) of the declared columns), so that
//    any column type, a NULL, a tab or a line break in a value arrives intact.
//    The client's table formats cannot promise that: batch output prints NULL
//    as the string "NULL", vertical output breaks on a line break in a value,
//    and --xml would need an XML parser in the agent for the same result.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { Logger } from '@regulon/util';
import { parse as parseYaml } from 'yaml';
import type { EngineReading, Sample } from './exposition.ts';
import { parseVertical } from './mariadb.ts';

/** How a column of a query's answer is published (CloudNativePG's usages, less the histogram ones). */
export type ColumnUsage = 'LABEL' | 'GAUGE' | 'COUNTER' | 'DISCARD';
const USAGES: readonly ColumnUsage[] = ['LABEL', 'GAUGE', 'COUNTER', 'DISCARD'];

export interface CustomQueryColumn {
  name: string;
  usage: ColumnUsage;
  description: string | undefined;
}

export interface CustomQuery {
  /** The query's name: its series are `<engine prefix>_<name>_<column>`. */
  name: string;
  /** The SQL, one query, as the file gives it (a trailing semicolon removed). */
  query: string;
  columns: CustomQueryColumn[];
}

/** A file of queries, as read: where it came from (for messages) and its text. */
export interface CustomQueriesSource {
  source: string;
  text: string;
}

export interface ParsedCustomQueries {
  /** The queries that may run, in the files' order. */
  queries: CustomQuery[];
  /** What is wrong, one sentence each, naming the file and the query; a query named here does not run. */
  errors: string[];
}

/** How long one query may run, enforced by the engine. */
export const CUSTOM_QUERY_TIMEOUT_MS = 1_000;
/** Rows of one query published at a scrape; the rest are counted (`regulon_instance_custom_query_rows_dropped`). */
export const CUSTOM_QUERY_ROW_LIMIT = 1_000;
/** Queries across all the files: each is a client process and a connection at every scrape. */
export const MAX_CUSTOM_QUERIES = 32;
/** Queries run at once at a scrape: a bound on the connections a scrape opens. */
export const CUSTOM_QUERY_CONCURRENCY = 4;
/**
 * The time a scrape gives all the user queries together, below the scrape's own 2 s
 * (server.ts SCRAPE_TIMEOUT_MS), which they run beside: however slow they are, the engine's own
 * series are never given up on for them. A query not started by then is reported as not run.
 */
export const CUSTOM_QUERIES_BUDGET_MS = 1_500;

/** The column the wrapper adds to each row: the query's row count before the limit. */
const TOTAL_COLUMN = 'regulon_rows_total';
/** The label the agent gives every series of an instance. */
const RESERVED_LABELS = new Set(['role']);
const NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const QUERY_KEYS = new Set(['query', 'metrics']);
const COLUMN_KEYS = new Set(['usage', 'description']);

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The queries of `sources`, each checked on its own: a query with a mistake is named in `errors`
 * and left out, the others run. A file that is not YAML, or not a map of queries, contributes
 * nothing but its error. Series names are checked across all the files, as they are published
 * together.
 */
export function parseCustomQueries(sources: readonly CustomQueriesSource[]): ParsedCustomQueries {
  const queries: CustomQuery[] = [];
  const errors: string[] = [];
  // Series name -> the query and column that publish it.
  const series = new Map<string, string>();
  const names = new Set<string>();
  for (const { source, text } of sources) {
    let doc: unknown;
    try {
      doc = parseYaml(text);
    } catch (err) {
      errors.push(`${source}: not YAML: ${firstLine((err as Error).message)}`);
      continue;
    }
    if (doc === null || doc === undefined) continue; // An empty file: no queries.
    if (!isMap(doc)) {
      errors.push(
        `${source}: must be a map of query names to queries ({query, metrics}), not ${describe(doc)}`,
      );
      continue;
    }
    for (const [name, spec] of Object.entries(doc)) {
      const where = `${source}: query ${JSON.stringify(name)}`;
      const problems = checkQuery(name, spec);
      if (!problems.ok) {
        errors.push(...problems.errors.map((e) => `${where}: ${e}`));
        continue;
      }
      const q = problems.query;
      if (names.has(name)) {
        errors.push(`${where}: another file already defines a query of this name`);
        continue;
      }
      const clash = q.columns
        .filter((c) => c.usage === 'GAUGE' || c.usage === 'COUNTER')
        .map((c) => ({ column: c.name, owner: series.get(`${name}_${c.name}`) }))
        .find((c) => c.owner !== undefined);
      if (clash) {
        errors.push(
          `${where}: its series ${name}_${clash.column} is also ${clash.owner}'s: rename the query or the column`,
        );
        continue;
      }
      if (queries.length >= MAX_CUSTOM_QUERIES) {
        errors.push(
          `${where}: more than ${MAX_CUSTOM_QUERIES} queries; this one and those after it do not run`,
        );
        continue;
      }
      names.add(name);
      for (const c of q.columns)
        if (c.usage === 'GAUGE' || c.usage === 'COUNTER')
          series.set(`${name}_${c.name}`, `query ${name} column ${c.name}`);
      queries.push(q);
    }
  }
  return { queries, errors };
}

function checkQuery(
  name: string,
  spec: unknown,
): { ok: true; query: CustomQuery } | { ok: false; errors: string[] } {
  const errors: string[] = [];
  if (!NAME.test(name))
    errors.push(
      'the name must be letters, digits and underscores, not starting with a digit (it becomes part of a metric name)',
    );
  if (!isMap(spec))
    return { ok: false, errors: [...errors, `must be a map with query and metrics, not ${describe(spec)}`] };
  for (const k of Object.keys(spec))
    if (!QUERY_KEYS.has(k))
      errors.push(
        `${k} is not supported (a query has query and metrics; target_databases, primary and the like are not implemented)`,
      );
  const sql =
    typeof spec['query'] === 'string'
      ? spec['query']
          .trim()
          .replace(/;+\s*$/, '')
          .trim()
      : '';
  if (!sql) errors.push('query is missing or empty: it must be one SQL query, as a string');
  const columns: CustomQueryColumn[] = [];
  const metrics = spec['metrics'];
  if (!Array.isArray(metrics) || metrics.length === 0)
    errors.push(
      'metrics is missing: it must be a list of columns, each `- <column>: {usage: GAUGE, description: ...}`',
    );
  else
    metrics.forEach((entry, i) => {
      const at = `metrics[${i}]`;
      if (!isMap(entry) || Object.keys(entry).length !== 1) {
        errors.push(
          `${at} must be one column name mapped to its usage and description, not ${describe(entry)}`,
        );
        return;
      }
      const [column, def] = Object.entries(entry)[0]!;
      if (!NAME.test(column)) {
        errors.push(
          `${at}: column ${JSON.stringify(column)} must be letters, digits and underscores, not starting with a digit`,
        );
        return;
      }
      if (column === TOTAL_COLUMN) {
        errors.push(`${at}: the column name ${TOTAL_COLUMN} is the agent's own: alias the column otherwise`);
        return;
      }
      if (columns.some((c) => c.name === column)) {
        errors.push(`${at}: column ${column} is listed twice`);
        return;
      }
      if (!isMap(def)) {
        errors.push(`${at}: column ${column} needs {usage, description}, not ${describe(def)}`);
        return;
      }
      for (const k of Object.keys(def))
        if (!COLUMN_KEYS.has(k))
          errors.push(`${at}: column ${column}: ${k} is not supported (usage, description)`);
      const usage = typeof def['usage'] === 'string' ? def['usage'].toUpperCase() : def['usage'];
      if (!USAGES.includes(usage as ColumnUsage)) {
        errors.push(
          `${at}: column ${column}: usage must be one of ${USAGES.join(', ')}, not ${describe(def['usage'])}`,
        );
        return;
      }
      if (usage === 'LABEL' && RESERVED_LABELS.has(column)) {
        errors.push(
          `${at}: column ${column}: the label ${column} is the agent's own (the instance's role): alias the column otherwise`,
        );
        return;
      }
      const description = def['description'];
      if (description !== undefined && typeof description !== 'string') {
        errors.push(`${at}: column ${column}: description must be a string`);
        return;
      }
      columns.push({ name: column, usage: usage as ColumnUsage, description });
    });
  if (columns.length && !columns.some((c) => c.usage === 'GAUGE' || c.usage === 'COUNTER'))
    errors.push('no column is a GAUGE or a COUNTER: the query would publish nothing');
  return errors.length ? { ok: false, errors } : { ok: true, query: { name, query: sql, columns } };
}

function describe(v: unknown): string {
  if (v === null || v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a map';
  return `${typeof v} ${JSON.stringify(v)}`;
}

const firstLine = (s: string) => s.split('\n')[0]!.trim();

/** What a query's wrapper answers: at most the row limit of its rows, and how many it had. */
interface Answer {
  rows: Record<string, unknown>[];
  total: number;
}

/** The engines that run user queries, by the agent's --metrics-engine name. */
export interface CustomQueryDialect {
  /** The SQL the metrics command runs for `q`: bounded in time and rows, read-only, answering JSON. */
  sql: (q: CustomQuery, limits: { timeoutMs: number; rowLimit: number }) => string;
  /** The wrapper's answer in the metrics command's output; undefined when there is none. */
  answer: (output: string) => string | undefined;
}

/** The name of the one column the wrapper's answer is in. */
const ANSWER_COLUMN = 'regulon_custom_query';

// The user's query on lines of its own: a trailing `-- comment` ends before the wrapper resumes.
const inner = (q: CustomQuery, rowLimit: number) =>
  `(select regulon_query.*, count(*) over () as ${TOTAL_COLUMN} from (\n${q.query}\n) regulon_query limit ${rowLimit}) regulon_rows`;

export const CUSTOM_QUERY_DIALECTS: Readonly<Record<string, CustomQueryDialect>> = {
  // psql -tAXq -c "...": several statements in one -c are sent together and only the last one's
  // result is printed, the JSON document alone.
  postgres: {
    sql: (q, { timeoutMs, rowLimit }) =>
      `set statement_timeout = ${Math.ceil(timeoutMs)}; set transaction read only; ` +
      `select json_build_object('rows', coalesce(json_agg(regulon_rows), '[]'), 'total', coalesce(max(regulon_rows.${TOTAL_COLUMN}), 0)) as ${ANSWER_COLUMN} from ${inner(q, rowLimit)}`,
    answer: (output) => output.trim() || undefined,
  },
  // mariadb --force -E -e "...": each statement's result in vertical form, one `column: value`
  // line per column; JSON has no raw line break, so the document is one line. JSON_OBJECT needs
  // the column names, which the file declares (an undeclared column is not published anyway).
  // group_concat_max_len bounds JSON_ARRAYAGG's result (1 MiB by default, too little for 1000
  // wide rows); the row limit bounds it instead.
  mariadb: {
    sql: (q, { timeoutMs, rowLimit }) =>
      `set session transaction read only; ` +
      `SET STATEMENT max_statement_time=${(timeoutMs / 1000).toFixed(3)}, group_concat_max_len=67108864 FOR ` +
      `select json_object('rows', coalesce(json_arrayagg(json_object(${q.columns
        .map((c) => `'${c.name}', regulon_rows.\`${c.name}\``)
        .join(
          ', ',
        )})), json_array()), 'total', coalesce(max(regulon_rows.${TOTAL_COLUMN}), 0)) as ${ANSWER_COLUMN} from ${inner(q, rowLimit)}`,
    answer: (output) =>
      parseVertical(output)
        .find((r) => r.has(ANSWER_COLUMN))
        ?.get(ANSWER_COLUMN),
  },
};

/** One query's outcome at a scrape: its samples, or why it has none. */
export interface QueryOutcome {
  samples: Sample[];
  /** Rows beyond the row limit, not published. */
  dropped: number;
  /** Why it published nothing (SQL error, timeout, a column that is not a number, ...). */
  error?: string;
}

/**
 * The samples of `q` from its wrapper's answer (`text`, the JSON document): each GAUGE and
 * COUNTER column of each row is a sample named `<prefix>_<query>_<column>`, labelled with the
 * row's LABEL columns. A NULL value is no sample for that row. Anything else that is not a number
 * (or a string of one, a boolean) fails the whole query, as do two rows with the same labels:
 * publishing half an answer would look like a whole one.
 */
export function customQuerySamples(
  prefix: string,
  q: CustomQuery,
  text: string,
  rowLimit = CUSTOM_QUERY_ROW_LIMIT,
): QueryOutcome {
  let answer: Answer;
  try {
    answer = JSON.parse(text) as Answer;
  } catch {
    return { samples: [], dropped: 0, error: 'the answer is not the JSON document the wrapper builds' };
  }
  if (!isMap(answer) || !Array.isArray(answer.rows) || typeof answer.total !== 'number')
    return { samples: [], dropped: 0, error: 'the answer is not the JSON document the wrapper builds' };
  const labelColumns = q.columns.filter((c) => c.usage === 'LABEL');
  const valueColumns = q.columns.filter((c) => c.usage === 'GAUGE' || c.usage === 'COUNTER');
  const samples: Sample[] = [];
  const seen = new Map<string, number>();
  for (const [i, row] of answer.rows.slice(0, rowLimit).entries()) {
    if (!isMap(row)) return fail('a row is not an object');
    const missing = q.columns.find((c) => !Object.hasOwn(row, c.name));
    if (missing) return fail(`the answer has no column ${missing.name}`);
    const labels: Record<string, string> = {};
    for (const c of labelColumns) labels[c.name] = labelValue(row[c.name]);
    const key = JSON.stringify(labelColumns.map((c) => labels[c.name]));
    const twin = seen.get(key);
    if (twin !== undefined)
      return fail(
        `rows ${twin + 1} and ${i + 1} have the same labels (${labelColumns.map((c) => `${c.name}=${JSON.stringify(labels[c.name])}`).join(', ') || 'none'}): add a LABEL column that tells them apart`,
      );
    seen.set(key, i);
    for (const c of valueColumns) {
      const raw = row[c.name];
      if (raw === null) continue;
      const value = numberOf(raw);
      if (value === undefined)
        return fail(
          `column ${c.name} (a ${c.usage}) is not a number in row ${i + 1}: ${JSON.stringify(raw).slice(0, 80)}`,
        );
      samples.push({
        name: `${prefix}_${q.name}_${c.name}`,
        help: c.description ?? `Column ${c.name} of the user-defined query ${q.name}`,
        type: c.usage === 'COUNTER' ? 'counter' : 'gauge',
        value,
        ...(labelColumns.length ? { labels } : {}),
      });
    }
  }
  return { samples, dropped: Math.max(0, answer.total - Math.min(answer.rows.length, rowLimit)) };
}

const fail = (error: string): QueryOutcome => ({ samples: [], dropped: 0, error });

function labelValue(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** A JSON number, a boolean (1, 0), or a string postgres or MariaDB writes a number as ("NaN", "Infinity", "12.5"). */
function numberOf(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v.trim());
    return Number.isNaN(n) && v.trim() !== 'NaN' ? undefined : n;
  }
  return undefined;
}

/** Runs one SQL text through the metrics command: its stdout, or its failure's first error line. */
export type QueryRunner = (
  sql: string,
  signal: AbortSignal,
) => Promise<{ ok: true; output: string } | { ok: false; error: string }>;

/** A QueryRunner over a shell command that reads the SQL from the environment variable `env`. */
export function shellQueryRunner(command: string, env: string): QueryRunner {
  return (sql, signal) =>
    new Promise((resolve) => {
      execFile(
        '/bin/sh',
        ['-c', command],
        { signal, killSignal: 'SIGKILL', env: { ...process.env, [env]: sql }, maxBuffer: 64 * 1024 ** 2 },
        (err, stdout, stderr) => {
          if (!err) return resolve({ ok: true, output: String(stdout) });
          if (signal.aborted)
            return resolve({ ok: false, error: 'not answered within the time a scrape gives user queries' });
          // The client's own message (postgres `ERROR:  ...`, MariaDB `ERROR 1054 (42S22) at line 1: ...`),
          // never the command line, which names the credentials' variables.
          const said = String(stderr)
            .split('\n')
            .map((l) => l.trim())
            .find((l) => /^(ERROR|FATAL|psql:)/.test(l));
          resolve({
            ok: false,
            error: (said ?? `the metrics command failed (exit ${err.code ?? err.signal})`).slice(0, 300),
          });
        },
      );
    });
}

export interface CustomQueriesOptions {
  /** The --metrics-engine name (a key of CUSTOM_QUERY_DIALECTS). */
  engine: string;
  /** The engine's series prefix (pg, mysql). */
  prefix: string;
  /** The files of queries (the mounted ConfigMap keys), read at each scrape: an edit applies without a restart. */
  files: readonly string[];
  run: QueryRunner;
  log: Logger;
  timeoutMs?: number;
  rowLimit?: number;
  budgetMs?: number;
}

/** What the user queries answered at one scrape, before it is published beside the engine's own. */
export interface CustomAnswers {
  /** Problems with the files: the queries they concern do not run. */
  configErrors: number;
  queries: { name: string; outcome: QueryOutcome; seconds: number }[];
  rowLimit: number;
}

/**
 * The user queries of an instance's agent: read from their files at each scrape (only the text is
 * kept between scrapes, to log a problem once rather than at every scrape), run a few at a time
 * within CUSTOM_QUERIES_BUDGET_MS (`read`), and published beside the engine's own series, each
 * with its up, rows-dropped and duration series (`publish`).
 */
export class CustomQueries {
  readonly #o: CustomQueriesOptions;
  readonly #dialect: CustomQueryDialect;
  #parsed: { key: string; parsed: ParsedCustomQueries } | undefined;
  /** The last error logged per query: a change is logged, a repeat at the next scrape is not. */
  readonly #logged = new Map<string, string>();

  constructor(o: CustomQueriesOptions) {
    const dialect = CUSTOM_QUERY_DIALECTS[o.engine];
    if (!dialect) throw new Error(`the ${o.engine} engine runs no user-defined queries`);
    this.#o = o;
    this.#dialect = dialect;
  }

  async #load(): Promise<ParsedCustomQueries> {
    const sources = await Promise.all(
      this.#o.files.map(async (file): Promise<CustomQueriesSource | string> => {
        try {
          return { source: file, text: await readFile(file, 'utf8') };
        } catch (err) {
          return (err as NodeJS.ErrnoException).code === 'ENOENT'
            ? `${file}: no such file (the ConfigMap or its key does not exist)`
            : `${file}: cannot be read: ${(err as Error).message}`;
        }
      }),
    );
    const key = JSON.stringify(sources);
    if (this.#parsed?.key !== key) {
      const parsed = parseCustomQueries(
        sources.filter((s): s is CustomQueriesSource => typeof s !== 'string'),
      );
      const unread = sources.filter((s): s is string => typeof s === 'string');
      this.#parsed = { key, parsed: { queries: parsed.queries, errors: [...unread, ...parsed.errors] } };
      for (const problem of this.#parsed.parsed.errors)
        this.#o.log.warn({ problem }, 'a user-defined metrics query is not run');
    }
    return this.#parsed.parsed;
  }

  /** Runs every query the files define, a few at a time, within the budget. */
  async read(signal: AbortSignal): Promise<CustomAnswers> {
    const o = this.#o;
    const { queries, errors } = await this.#load();
    const budget = AbortSignal.any([signal, AbortSignal.timeout(o.budgetMs ?? CUSTOM_QUERIES_BUDGET_MS)]);
    const limits = {
      timeoutMs: o.timeoutMs ?? CUSTOM_QUERY_TIMEOUT_MS,
      rowLimit: o.rowLimit ?? CUSTOM_QUERY_ROW_LIMIT,
    };
    const answers: CustomAnswers['queries'] = queries.map((q) => ({
      name: q.name,
      outcome: fail('not run: the time a scrape gives user queries ran out'),
      seconds: 0,
    }));
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < queries.length && !budget.aborted; i = next++) {
        const q = queries[i]!;
        const started = performance.now();
        const ran = await o.run(this.#dialect.sql(q, limits), budget);
        const answer = ran.ok ? this.#dialect.answer(ran.output) : undefined;
        answers[i]!.outcome = !ran.ok
          ? fail(ran.error)
          : answer === undefined
            ? fail('the metrics command printed no answer')
            : customQuerySamples(o.prefix, q, answer, limits.rowLimit);
        answers[i]!.seconds = (performance.now() - started) / 1000;
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(CUSTOM_QUERY_CONCURRENCY, queries.length) }, () => worker()),
    );
    return { configErrors: errors.length, queries: answers, rowLimit: limits.rowLimit };
  }

  /**
   * The engine's reading with the user queries' samples added. A query with a series named like
   * one of the engine's own (pg_stat_database_xact_commit) publishes none of its samples and is
   * up 0: a user query never changes or hides a built-in series. No engine reading (the engine
   * did not answer): nothing, as `<prefix>_up 0` says.
   */
  publish(reading: EngineReading | undefined, answers: CustomAnswers): EngineReading | undefined {
    if (!reading) return reading;
    const builtin = new Set(reading.samples.map((s) => s.name));
    const samples: Sample[] = [
      {
        name: 'regulon_instance_custom_queries_config_errors',
        help: 'Problems found in the user-defined queries files (a missing file, bad YAML, a query without metrics); the queries they concern do not run',
        type: 'gauge',
        value: answers.configErrors,
      },
    ];
    for (const { name, outcome, seconds } of answers.queries) {
      const clash = outcome.samples.find((s) => builtin.has(s.name));
      const error =
        outcome.error ??
        (clash ? `its series ${clash.name} is one the agent publishes itself: rename the query` : undefined);
      this.#logOnChange(name, error);
      const labels = { query: name };
      if (!error) samples.push(...outcome.samples);
      samples.push(
        {
          name: 'regulon_instance_custom_query_up',
          help: '1 when the user-defined query answered and its answer was published',
          type: 'gauge',
          value: error ? 0 : 1,
          labels,
        },
        {
          name: 'regulon_instance_custom_query_rows_dropped',
          help: `Rows of the user-defined query beyond the ${answers.rowLimit} a scrape publishes`,
          type: 'gauge',
          value: outcome.dropped,
          labels,
        },
        {
          name: 'regulon_instance_custom_query_duration_seconds',
          help: 'How long the user-defined query took at the last scrape',
          type: 'gauge',
          value: seconds,
          labels,
        },
      );
    }
    return { role: reading.role, samples: [...reading.samples, ...samples] };
  }

  #logOnChange(query: string, error: string | undefined) {
    const before = this.#logged.get(query);
    if (error === before) return;
    if (error) {
      this.#logged.set(query, error);
      this.#o.log.warn({ query, error }, 'a user-defined metrics query failed');
    } else {
      this.#logged.delete(query);
      this.#o.log.info({ query }, 'a user-defined metrics query answers again');
    }
  }
}
