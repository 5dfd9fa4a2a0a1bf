import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Logger } from '@regulon/util';
import { captured, valueIn as value } from '../testing/readings.ts';
import {
  CUSTOM_QUERIES_BUDGET_MS,
  CUSTOM_QUERY_DIALECTS,
  CUSTOM_QUERY_ROW_LIMIT,
  CustomQueries,
  customQuerySamples,
  parseCustomQueries,
  shellQueryRunner,
  type CustomQuery,
} from './custom-queries.ts';
import { renderExposition, type EngineReading } from './exposition.ts';
import { SCRAPE_TIMEOUT_MS } from './server.ts';

// The fixtures are what postgres 15.18 and MariaDB 10.11.19 (Debian bookworm's) printed for the
// dialects' SQL, run through the metrics commands' clients (psql -tAXq -c, mariadb --force -E -e)
// with a row limit of 3 for the `many` queries; .err files are the clients' stderr when the query
// failed (its echo of the statement left out).

const one = (text: string): CustomQuery => {
  const parsed = parseCustomQueries([{ source: 'queries.yaml', text }]);
  assert.deepEqual(parsed.errors, []);
  return parsed.queries[0]!;
};

const PG_DATABASES = one(`
databases:
  query: select datname, numbackends, xact_commit, blks_hit::numeric / nullif(blks_hit + blks_read, 0) as hit_ratio, (datname = 'postgres') as is_default from pg_stat_database where datname is not null order by datname
  metrics:
    - datname: {usage: LABEL, description: The database}
    - numbackends: {usage: GAUGE, description: Backends connected}
    - xact_commit: {usage: COUNTER, description: Transactions committed}
    - hit_ratio: {usage: GAUGE, description: Buffer cache hit ratio}
    - is_default: {usage: GAUGE, description: 1 for the postgres database}
`);

test("a CloudNativePG-style file: each query's name, SQL (its trailing semicolon removed) and columns", () => {
  const parsed = parseCustomQueries([
    {
      source: 'queries.yaml',
      text: `
pg_replication:
  query: "SELECT CASE WHEN NOT pg_is_in_recovery() THEN 0 ELSE 1 END AS lag;"
  metrics:
    - lag:
        usage: "GAUGE"
        description: "Replication lag behind primary in seconds"
orders:
  query: |
    select region, count(*) as waiting
    from shop.orders group by region
  metrics:
    - region: {usage: label}
    - waiting: {usage: COUNTER}
    - ignored: {usage: DISCARD}
`,
    },
  ]);
  assert.deepEqual(parsed.errors, []);
  assert.deepEqual(
    parsed.queries.map((q) => [q.name, q.query, q.columns.map((c) => `${c.name}:${c.usage}`)]),
    [
      ['pg_replication', 'SELECT CASE WHEN NOT pg_is_in_recovery() THEN 0 ELSE 1 END AS lag', ['lag:GAUGE']],
      [
        'orders',
        'select region, count(*) as waiting\nfrom shop.orders group by region',
        ['region:LABEL', 'waiting:COUNTER', 'ignored:DISCARD'],
      ],
    ],
  );
  assert.equal(parsed.queries[0]!.columns[0]!.description, 'Replication lag behind primary in seconds');
});

test('each mistake is named with its file and query, and only the queries without one run', () => {
  const parsed = parseCustomQueries([
    {
      source: 'a.yaml',
      text: `
good:
  query: select 1 as v
  metrics: [{v: {usage: GAUGE}}]
no_metrics:
  query: select 1 as v
no_query:
  metrics: [{v: {usage: GAUGE}}]
bad_usage:
  query: select 1 as v
  metrics: [{v: {usage: HISTOGRAM}}]
other_database:
  query: select 1 as v
  target_databases: ['*']
  metrics: [{v: {usage: GAUGE}}]
role_label:
  query: select 'x' as role, 1 as v
  metrics: [{role: {usage: LABEL}}, {v: {usage: GAUGE}}]
labels_only:
  query: select 'x' as l
  metrics: [{l: {usage: LABEL}}]
"9lives":
  query: select 1 as v
  metrics: [{v: {usage: GAUGE}}]
twice:
  query: select 1 as v
  metrics: [{v: {usage: GAUGE}}, {v: {usage: COUNTER}}]
`,
    },
    { source: 'b.yaml', text: 'good:\n  query: select 2 as v\n  metrics: [{v: {usage: GAUGE}}]\n' },
    // good_v is good's column v: the same series name.
    {
      source: 'c.yaml',
      text: 'good_v:\n  query: select 2 as x\n  metrics: [{x: {usage: GAUGE}}]\ngood:\n  x: 1\n',
    },
    { source: 'd.yaml', text: 'a: [unclosed\n' },
    { source: 'e.yaml', text: '- a list\n' },
    { source: 'f.yaml', text: '' },
  ]);
  assert.deepEqual(
    parsed.queries.map((q) => q.name),
    ['good', 'good_v'],
  );
  const says = (where: string, what: RegExp) =>
    assert.ok(
      parsed.errors.some((e) => e.startsWith(where) && what.test(e)),
      `${where} ${what}: ${parsed.errors.join('\n')}`,
    );
  says('a.yaml: query "no_metrics"', /metrics is missing/);
  says('a.yaml: query "no_query"', /query is missing or empty/);
  says(
    'a.yaml: query "bad_usage"',
    /usage must be one of LABEL, GAUGE, COUNTER, DISCARD, not string "HISTOGRAM"/,
  );
  says('a.yaml: query "other_database"', /target_databases is not supported/);
  says('a.yaml: query "role_label"', /the label role is the agent's own/);
  says('a.yaml: query "labels_only"', /no column is a GAUGE or a COUNTER/);
  says('a.yaml: query "9lives"', /the name must be letters, digits and underscores/);
  says('a.yaml: query "twice"', /column v is listed twice/);
  says('b.yaml: query "good"', /another file already defines a query of this name/);
  says('c.yaml: query "good"', /x is not supported/);
  says('d.yaml', /not YAML/);
  says('e.yaml', /must be a map of query names/);
  assert.equal(parsed.errors.length, 14, parsed.errors.join('\n'));
});

test('two queries whose series would share a name: the second is refused', () => {
  const parsed = parseCustomQueries([
    {
      source: 'q.yaml',
      text: 'a_b:\n  query: select 1 as c\n  metrics: [{c: {usage: GAUGE}}]\na:\n  query: select 1 as b_c\n  metrics: [{b_c: {usage: GAUGE}}]\n',
    },
  ]);
  assert.deepEqual(
    parsed.queries.map((q) => q.name),
    ['a_b'],
  );
  assert.match(parsed.errors[0]!, /query "a": its series a_b_c is also query a_b column c's/);
});

test("postgres: each row's GAUGE and COUNTER columns as samples, its LABEL columns as labels; NULL is no sample", () => {
  const out = captured('postgres-15-custom-databases.out');
  const doc = JSON.parse(out) as { rows: Record<string, unknown>[] };
  const r = customQuerySamples('pg', PG_DATABASES, out);
  assert.equal(r.error, undefined);
  assert.equal(r.dropped, 0);
  const reading: EngineReading = { role: 'primary', samples: r.samples };
  const pgRow = doc.rows.find((x) => x['datname'] === 'postgres')!;
  assert.equal(value(reading, 'pg_databases_xact_commit', { datname: 'postgres' }), pgRow['xact_commit']);
  assert.equal(value(reading, 'pg_databases_hit_ratio', { datname: 'postgres' }), pgRow['hit_ratio']);
  assert.ok((pgRow['hit_ratio'] as number) > 0 && (pgRow['hit_ratio'] as number) < 1);
  // Booleans are 1 and 0.
  assert.equal(value(reading, 'pg_databases_is_default', { datname: 'postgres' }), 1);
  assert.equal(value(reading, 'pg_databases_is_default', { datname: 'template1' }), 0);
  // template0 has never been read: its ratio is NULL, and it has no such sample.
  assert.equal(doc.rows.find((x) => x['datname'] === 'template0')!['hit_ratio'], null);
  assert.equal(value(reading, 'pg_databases_hit_ratio', { datname: 'template0' }), undefined);
  assert.equal(value(reading, 'pg_databases_numbackends', { datname: 'template0' }), 0);
  const text = renderExposition(r.samples, { role: 'primary' });
  assert.match(text, /^# HELP pg_databases_xact_commit Transactions committed$/m);
  assert.match(text, /^# TYPE pg_databases_xact_commit counter$/m);
  assert.match(text, /^# TYPE pg_databases_numbackends gauge$/m);
  assert.match(text, /^pg_databases_numbackends\{datname="postgres",role="primary"\} \d+$/m);
});

test("mariadb: the same mapping from the client's vertical output", () => {
  const q = one(`
users:
  query: select host, count(*) as accounts, sum(is_role = 'Y') as roles, cast(null as signed) as missing from mysql.user group by host order by host
  metrics:
    - host: {usage: LABEL, description: The host part of the accounts}
    - accounts: {usage: GAUGE, description: Accounts of that host}
    - roles: {usage: GAUGE}
    - missing: {usage: GAUGE}
`);
  const out = captured('mariadb-10.11-custom-users.out');
  const answer = CUSTOM_QUERY_DIALECTS['mariadb']!.answer(out);
  assert.ok(answer);
  const rows = (JSON.parse(answer) as { rows: { host: string; accounts: number }[] }).rows;
  const r = customQuerySamples('mysql', q, answer);
  assert.equal(r.error, undefined);
  const reading: EngineReading = { role: 'replica', samples: r.samples };
  assert.ok(rows.length >= 2);
  for (const row of rows)
    assert.equal(value(reading, 'mysql_users_accounts', { host: row.host }), row.accounts);
  // An empty string is a label value like any other.
  assert.ok(rows.some((row) => row.host === ''));
  assert.equal(r.samples.filter((s) => s.name === 'mysql_users_missing').length, 0);
  assert.equal(
    r.samples.find((s) => s.name === 'mysql_users_roles')!.help,
    'Column roles of the user-defined query users',
  );
});

test('rows beyond the limit are counted, not published: the wrapper counts the rows before its limit', () => {
  const q = one('many:\n  query: select 1\n  metrics: [{name: {usage: LABEL}}, {n: {usage: GAUGE}}]\n');
  for (const [prefix, answer] of [
    ['pg', captured('postgres-15-custom-many.out')],
    ['mysql', CUSTOM_QUERY_DIALECTS['mariadb']!.answer(captured('mariadb-10.11-custom-many.out'))!],
  ] as const) {
    const r = customQuerySamples(prefix, q, answer, 3);
    assert.equal(r.error, undefined);
    assert.deepEqual(
      r.samples.map((s) => [s.labels?.['name'], s.value]),
      [
        ['row 1', 1],
        ['row 2', 2],
        ['row 3', 3],
      ],
    );
    // generate_series(1, 5000) / seq_1_to_5000, limited to 3.
    assert.equal(r.dropped, 4997);
  }
});

test('an answer that cannot be published whole fails the query: text in a GAUGE, two rows with the same labels, an undeclared column', () => {
  const text = one('text:\n  query: select 1\n  metrics: [{v: {usage: GAUGE}}]\n');
  assert.match(
    customQuerySamples('pg', text, captured('postgres-15-custom-text.out')).error ?? '',
    /column v \(a GAUGE\) is not a number in row 1: "not a number"/,
  );
  const noLabels = one('many:\n  query: select 1\n  metrics: [{n: {usage: GAUGE}}]\n');
  const twins = customQuerySamples('pg', noLabels, captured('postgres-15-custom-many.out'), 3);
  assert.match(twins.error ?? '', /rows 1 and 2 have the same labels \(none\)/);
  assert.deepEqual(twins.samples, []);
  const absent = one(
    'databases:\n  query: select 1\n  metrics: [{datname: {usage: LABEL}}, {nope: {usage: GAUGE}}]\n',
  );
  assert.match(
    customQuerySamples('pg', absent, captured('postgres-15-custom-databases.out')).error ?? '',
    /the answer has no column nope/,
  );
  assert.match(customQuerySamples('pg', noLabels, 'psql: error').error ?? '', /not the JSON document/);
});

test("the SQL bounds the query's time and rows in the engine, and keeps it read-only", () => {
  const q = one('q:\n  query: select 1 as v -- a comment\n  metrics: [{v: {usage: GAUGE}}]\n');
  const pg = CUSTOM_QUERY_DIALECTS['postgres']!.sql(q, { timeoutMs: 1000, rowLimit: 1000 });
  assert.match(pg, /^set statement_timeout = 1000; set transaction read only; /);
  // The query on a line of its own: its comment ends before the wrapper resumes.
  assert.match(pg, /\(\nselect 1 as v -- a comment\n\) regulon_query limit 1000\)/);
  const my = CUSTOM_QUERY_DIALECTS['mariadb']!.sql(q, { timeoutMs: 1000, rowLimit: 1000 });
  assert.match(my, /^set session transaction read only; SET STATEMENT max_statement_time=1\.000,/);
  assert.match(my, /json_object\('v', regulon_rows\.`v`\)/);
  assert.equal(CUSTOM_QUERY_ROW_LIMIT, 1000);
  // The user queries end before the scrape gives up on the engine's own series.
  assert.ok(CUSTOM_QUERIES_BUDGET_MS < SCRAPE_TIMEOUT_MS);
});

const silent: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

test("a failed query's error is the client's own line, never the command", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'custom-queries-'));
  try {
    for (const [fixture, said] of [
      ['postgres-15-custom-slow.err', 'ERROR:  canceling statement due to statement timeout'],
      ['postgres-15-custom-broken.err', 'ERROR:  column "nosuchcolumn" does not exist'],
      ['postgres-15-custom-writes.err', 'ERROR:  cannot execute nextval() in a read-only transaction'],
      [
        'mariadb-10.11-custom-slow.err',
        'ERROR 1969 (70100) at line 1: Query execution was interrupted (max_statement_time exceeded)',
      ],
      [
        'mariadb-10.11-custom-undeclared.err',
        "ERROR 1054 (42S22) at line 1: Unknown column 'regulon_rows.b' in 'SELECT'",
      ],
      [
        'mariadb-10.11-custom-writes.err',
        'ERROR 1792 (25006) at line 1: Cannot execute statement in a READ ONLY transaction',
      ],
    ]) {
      const file = join(dir, fixture!);
      writeFileSync(file, captured(fixture!));
      const run = shellQueryRunner(`echo "$SECRET_LOOKING_ENV" >&2; cat ${file} >&2; exit 1`, 'Q');
      assert.deepEqual(await run('select 1', AbortSignal.timeout(5_000)), { ok: false, error: said });
    }
    const run = shellQueryRunner('printf "%s" "$Q"', 'Q');
    assert.deepEqual(await run('select 1', AbortSignal.timeout(5_000)), { ok: true, output: 'select 1' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A metrics command that answers each query with its captured output, by a word of its SQL. */
function fixtureCommand(dir: string): string {
  const out = (f: string) => {
    writeFileSync(join(dir, f), captured(f));
    return join(dir, f);
  };
  return [
    'case "$Q" in',
    `*pg_stat_database*) cat ${out('postgres-15-custom-databases.out')};;`,
    `*generate_series*) cat ${out('postgres-15-custom-many.out')};;`,
    `*pg_sleep*) cat ${out('postgres-15-custom-slow.err')} >&2; exit 1;;`,
    // A client that hangs: only the budget ends it.
    '*hang*) exec sleep 30;;',
    'esac',
  ].join('\n');
}

test("an agent scrape: each query up or not, its rows dropped and its time, beside the engine's own series", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'custom-queries-'));
  const warned: object[] = [];
  const log: Logger = { ...silent, warn: (o) => warned.push(o) };
  try {
    const queries = join(dir, 'queries.yaml');
    writeFileSync(
      queries,
      `
databases:
  query: select datname, numbackends, xact_commit, hit_ratio, is_default from pg_stat_database
  metrics:
    - datname: {usage: LABEL}
    - numbackends: {usage: GAUGE}
    - xact_commit: {usage: COUNTER}
    - hit_ratio: {usage: GAUGE}
    - is_default: {usage: GAUGE}
many:
  query: select g as n, 'row ' || g as name from generate_series(1, 5000) g
  metrics: [{name: {usage: LABEL}}, {n: {usage: GAUGE}}]
slow:
  query: select pg_sleep(5) as slept
  metrics: [{slept: {usage: GAUGE}}]
stat_database:
  query: select datname, xact_commit from pg_stat_database -- xact_commit_as_builtin
  metrics: [{datname: {usage: LABEL}}, {xact_commit: {usage: COUNTER}}]
broken:
  query: select 1
`,
    );
    const custom = new CustomQueries({
      engine: 'postgres',
      prefix: 'pg',
      files: [queries, join(dir, 'missing.yaml')],
      run: shellQueryRunner(fixtureCommand(dir), 'Q'),
      log,
      rowLimit: 3,
    });
    const builtin: EngineReading = {
      role: 'primary',
      samples: [
        {
          name: 'pg_stat_database_xact_commit',
          help: 'x',
          type: 'counter',
          value: 42,
          labels: { datname: 'app' },
        },
      ],
    };
    const scrape = async () =>
      custom.publish(builtin, await custom.read(AbortSignal.timeout(SCRAPE_TIMEOUT_MS)));
    const r = await scrape();
    assert.equal(r?.role, 'primary');
    const up = (query: string) => value(r, 'regulon_instance_custom_query_up', { query });
    assert.equal(up('databases'), 1);
    assert.equal(up('many'), 1);
    assert.equal(up('slow'), 0);
    // Its series would be pg_stat_database_xact_commit, the engine's own: refused, and the engine's kept.
    assert.equal(up('stat_database'), 0);
    assert.deepEqual(
      r?.samples.filter((s) => s.name === 'pg_stat_database_xact_commit').map((s) => s.value),
      [42],
    );
    assert.equal(up('broken'), undefined, 'a query with a mistake is not run');
    // broken (no metrics) and the missing file.
    assert.equal(value(r, 'regulon_instance_custom_queries_config_errors'), 2);
    assert.equal(value(r, 'regulon_instance_custom_query_rows_dropped', { query: 'many' }), 4997);
    assert.equal(value(r, 'regulon_instance_custom_query_rows_dropped', { query: 'databases' }), 0);
    assert.ok(value(r, 'pg_databases_numbackends', { datname: 'postgres' }) !== undefined);
    assert.ok((value(r, 'regulon_instance_custom_query_duration_seconds', { query: 'many' }) ?? -1) > 0);
    // Renders: no family is both a gauge and a counter, no name the format refuses.
    assert.match(
      renderExposition(r.samples, { role: 'primary' }),
      /^pg_many_n\{name="row 1",role="primary"\} 1$/m,
    );
    // Logged once each: the two problems of the files, the two failing queries, none of them again.
    const logged = () => warned.map((w) => JSON.stringify(w));
    assert.equal(warned.length, 4, logged().join('\n'));
    assert.ok(logged().some((w) => w.includes('canceling statement due to statement timeout')));
    assert.ok(logged().some((w) => w.includes('missing.yaml: no such file')));
    await scrape();
    assert.equal(warned.length, 4, logged().join('\n'));
    // No engine reading: nothing of the user queries either (<prefix>_up 0 says it all).
    assert.equal(
      custom.publish(undefined, await custom.read(AbortSignal.timeout(SCRAPE_TIMEOUT_MS))),
      undefined,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('queries that hang end with the budget, and those not started by then are reported, not waited for', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'custom-queries-'));
  try {
    const queries = join(dir, 'queries.yaml');
    // Six hanging queries, four at a time: the first four are killed at the budget, the last two never start.
    writeFileSync(
      queries,
      Array.from(
        { length: 6 },
        (_, i) => `q${i}:\n  query: select 'hang' as v\n  metrics: [{v: {usage: GAUGE}}]\n`,
      ).join(''),
    );
    const custom = new CustomQueries({
      engine: 'postgres',
      prefix: 'pg',
      files: [queries],
      run: shellQueryRunner(fixtureCommand(dir), 'Q'),
      log: silent,
      budgetMs: 300,
    });
    const started = performance.now();
    const answers = await custom.read(AbortSignal.timeout(SCRAPE_TIMEOUT_MS));
    const took = performance.now() - started;
    assert.ok(took >= 300 && took < 1_500, `${took} ms`);
    assert.deepEqual(
      answers.queries.map((q) => q.outcome.error),
      [
        ...Array<string>(4).fill('not answered within the time a scrape gives user queries'),
        ...Array<string>(2).fill('not run: the time a scrape gives user queries ran out'),
      ],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
