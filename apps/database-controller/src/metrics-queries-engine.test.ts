// The user-defined metrics queries put to the primary's engine: which condition from which
// refusals, the memo that says when to ask again, and each engine's reading of its errors.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Context } from '@regulon/runtime';
import type { DatabaseObject } from './api.ts';
import type { InstanceDriver, PlanVerdict } from './engine.ts';
import { planVerdictOf as mariadbVerdict } from './mariadb/instance.ts';
import {
  checkMetricsQueries,
  ENGINE_CHECK_RETRY_MS,
  engineCheckKey,
  EngineCheckMemo,
  errorLine,
  METRICS_QUERIES_CONDITION,
  METRICS_QUERIES_INVALID_EVENT,
  planStatement,
  QUERY_REFUSED,
  withEngineAnswer,
} from './metrics-queries.ts';
import { EngineQueryCheck } from './metrics-queries-engine.ts';
import { childNames } from './names.ts';
import { planVerdictOf as postgresVerdict } from './postgres/instance.ts';
import type { ReplicationView } from './replication/replication.ts';
import { computeStatus } from './status.ts';
import { databaseWith } from './testing/parameters-corpus.ts';

// The pair the real-node scenario names (testing/replication-suite.ts).
const PAIR = `
broken:
  query: select count(*) as n from regulon_no_such_table
  metrics:
    - n: {usage: GAUGE, description: Rows}
regulon_probe:
  query: select 'regulon' as tag, 42 as answer
  metrics:
    - tag: {usage: LABEL, description: A tag}
    - answer: {usage: GAUGE, description: The answer}
`;
const PG_REFUSAL = 'relation "regulon_no_such_table" does not exist';
const EXPECTED =
  'postgres refuses 1 of 2 user-defined queries: broken: relation "regulon_no_such_table" does not exist. ' +
  'The instances publish no series for it (regulon_instance_custom_query_up 0) and are not affected otherwise; 1 other query runs';

const withQueries = (engine: 'postgres' | 'mariadb' = 'postgres'): DatabaseObject => {
  const db = databaseWith(engine, {});
  return {
    ...db,
    metadata: { ...db.metadata, uid: 'uid-1' },
    spec: { ...db.spec, monitoring: { customQueriesConfigMap: [{ name: 'q', key: 'queries.yaml' }] } },
  };
};
const files =
  (text: string | undefined) =>
  (name: string): V1ConfigMap | undefined =>
    name === 'q' && text !== undefined ? { metadata: { name }, data: { 'queries.yaml': text } } : undefined;

test('a refused query is QueryRefused, naming it and the first line of its error', () => {
  const valid = checkMetricsQueries(withQueries(), files(PAIR))!;
  assert.equal(valid.reason, 'Valid');
  const refused = withEngineAnswer(
    valid,
    { refusals: [{ name: 'broken', error: `${PG_REFUSAL}\nLINE 2: select count(*)` }], total: 2 },
    'postgres',
  );
  assert.deepEqual(refused, { status: 'False', reason: QUERY_REFUSED, message: EXPECTED });
  assert.doesNotMatch(refused.message, /regulon_probe/);
  // None refused: the file check stands.
  assert.equal(withEngineAnswer(valid, { refusals: [], total: 2 }, 'postgres'), valid);
  // Several: each named, up to three, the rest counted; no "other query runs" when none does.
  const many = withEngineAnswer(
    valid,
    { refusals: ['a', 'b', 'c', 'd'].map((name) => ({ name, error: 'No database selected' })), total: 4 },
    'mariadb',
  );
  assert.equal(
    many?.message,
    'mariadb refuses 4 of 4 user-defined queries: a: No database selected; b: No database selected; c: No database selected (and 1 more). The instances publish no series for them (regulon_instance_custom_query_up 0) and are not affected otherwise',
  );
});

test('file problems come first, and an unknown answer is not a refusal', () => {
  const db = withQueries();
  const missing = checkMetricsQueries(db, files(undefined))!;
  const answer = { refusals: [{ name: 'broken', error: PG_REFUSAL }], total: 2 };
  assert.equal(withEngineAnswer(missing, answer, 'postgres'), missing);
  assert.equal(withEngineAnswer(undefined, answer, 'postgres'), undefined);
  const valid = checkMetricsQueries(db, files(PAIR))!;
  // Not asked (yet): Valid, unless the status says QueryRefused, which stays as it is.
  assert.equal(withEngineAnswer(valid, undefined, 'postgres'), valid);
  const said = { status: 'False', reason: QUERY_REFUSED, message: EXPECTED };
  assert.deepEqual(withEngineAnswer(valid, undefined, 'postgres', said), said);
  assert.equal(withEngineAnswer(valid, undefined, 'postgres', { ...said, reason: 'InvalidQueries' }), valid);
});

test('the status carries the answer beside Ready, and keeps a refusal while unknown', () => {
  const db = withQueries();
  const observed = (engineAnswer?: { refusals: { name: string; error: string }[]; total: number }) => ({
    statefulSet: undefined,
    backupJobs: [],
    problem: undefined,
    credentialsSecret: childNames(db).credentials,
    metricsQueries: checkMetricsQueries(db, files(PAIR)),
    engineAnswer,
  });
  const status = computeStatus(db, observed({ refusals: [{ name: 'broken', error: PG_REFUSAL }], total: 2 }));
  const c = status.conditions?.find((x) => x.type === METRICS_QUERIES_CONDITION);
  assert.deepEqual([c?.status, c?.reason, c?.message], ['False', QUERY_REFUSED, EXPECTED]);
  const ready = (s: typeof status) => s.conditions?.find((x) => x.type === 'Ready')?.reason;
  assert.equal(ready(status), ready(computeStatus(db, observed())));
  const later = computeStatus({ ...db, status }, observed());
  assert.equal(later.conditions?.find((x) => x.type === METRICS_QUERIES_CONDITION)?.reason, QUERY_REFUSED);
  const fixed = computeStatus({ ...db, status }, observed({ refusals: [], total: 2 }));
  assert.equal(fixed.conditions?.find((x) => x.type === METRICS_QUERIES_CONDITION)?.reason, 'Valid');
});

test('the plan statement, the error line and the key', () => {
  assert.equal(
    planStatement('select 1 -- a comment'),
    'EXPLAIN SELECT * FROM (\nselect 1 -- a comment\n) regulon_query',
  );
  assert.equal(
    errorLine('syntax error at or near "1"\nLINE 2: selec 1\n   ^'),
    'syntax error at or near "1"',
  );
  assert.equal(errorLine('x'.repeat(300)).length, 200);
  const q = [{ name: 'a', query: 'select 1' }];
  assert.equal(engineCheckKey(q, 'd-0'), engineCheckKey([{ name: 'a', query: 'select 1' }], 'd-0'));
  assert.notEqual(engineCheckKey(q, 'd-0'), engineCheckKey(q, 'd-1'));
  assert.notEqual(engineCheckKey(q, 'd-0'), engineCheckKey([{ name: 'a', query: 'select 2' }], 'd-0'));
});

test('the memo asks again only for new queries or a new primary, and retries a failure later', () => {
  const memo = new EngineCheckMemo();
  assert.equal(memo.due('u', 'k1', 0), true);
  memo.answered('u', 'k1', { refusals: [], total: 1 });
  assert.equal(memo.due('u', 'k1', 1e9), false);
  assert.deepEqual(memo.answer('u', 'k1'), { refusals: [], total: 1 });
  assert.equal(memo.answer('u', 'k2'), undefined);
  assert.equal(memo.due('u', 'k2', 0), true);
  memo.failed('u', 'k2', 1000);
  assert.equal(memo.answer('u', 'k1'), undefined);
  assert.equal(memo.due('u', 'k2', 1000 + ENGINE_CHECK_RETRY_MS - 1), false);
  assert.equal(memo.due('u', 'k2', 1000 + ENGINE_CHECK_RETRY_MS), true);
  memo.answered('u', 'k2', { refusals: [], total: 1 });
  memo.forget('u');
  assert.equal(memo.due('u', 'k2', 0), true);
});

test("each engine's errors: a refusal, what says nothing of the query, and what is no answer", () => {
  const pg = (code: string, message: string) => postgresVerdict(Object.assign(new Error(message), { code }));
  assert.deepEqual(pg('42P01', PG_REFUSAL), { verdict: 'refused', error: PG_REFUSAL });
  assert.equal(pg('42601', 'syntax error')?.verdict, 'refused');
  assert.equal(pg('22012', 'division by zero')?.verdict, 'refused');
  assert.equal(pg('42501', 'permission denied for table t')?.verdict, 'unknown');
  assert.equal(pg('57014', 'canceling statement due to statement timeout')?.verdict, 'unknown');
  assert.equal(pg('ECONNREFUSED', 'connect ECONNREFUSED'), undefined);
  const my = (errno: number, sqlMessage: string, fatal = false) =>
    mariadbVerdict(Object.assign(new Error(sqlMessage), { errno, sqlMessage, fatal }));
  assert.deepEqual(my(1046, 'No database selected'), { verdict: 'refused', error: 'No database selected' });
  assert.equal(my(1054, "Unknown column 'zz' in 'SELECT'")?.verdict, 'refused');
  assert.equal(my(1142, 'SELECT command denied')?.verdict, 'unknown');
  assert.equal(my(1969, 'max_statement_time exceeded')?.verdict, 'unknown');
  assert.equal(mariadbVerdict(Object.assign(new Error('connect ECONNREFUSED'), { errno: -111 })), undefined);
  assert.equal(my(1053, 'Server shutdown in progress', true), undefined);
});

test('the reconcile asks the primary once per queries and primary, warns once, and waits out a failure', async () => {
  let db = withQueries();
  let text = PAIR;
  const warnings: string[] = [];
  const ctx = {
    get: (_kind: unknown, name: string) => files(text)(name),
    client: {
      resource: () => ({
        get: () => Promise.resolve({ data: { password: Buffer.from('pw').toString('base64') } }),
      }),
    },
    warn: (reason: string, message: string) => warnings.push(`${reason}: ${message}`),
    log: { info: () => {} },
    signal: undefined,
  } as unknown as Context;
  const asked: { host: string; names: string[] }[] = [];
  let reachable = true;
  const driver = {
    plan: (e: { host: string; password: string }, statements: { name: string; sql: string }[]) => {
      assert.equal(e.password, 'pw');
      asked.push({ host: e.host, names: statements.map((s) => s.name) });
      if (!reachable) return Promise.reject(new Error('connect ECONNREFUSED'));
      return Promise.resolve(
        new Map<string, PlanVerdict>(
          statements.map((s) => [
            s.name,
            s.sql.includes('regulon_no_such_table')
              ? { verdict: 'refused', error: PG_REFUSAL }
              : { verdict: 'accepted' },
          ]),
        ),
      );
    },
  } as unknown as InstanceDriver;
  const view = (primary: string): ReplicationView =>
    ({
      replicated: false,
      plan: { servingPrimary: primary },
      members: [
        { pod: 'd-0', ready: true },
        { pod: 'd-1', ready: true },
      ],
      observations: new Map(),
      hosts: new Map([
        ['d-0', '10.0.0.1'],
        ['d-1', '10.0.0.2'],
      ]),
    }) as unknown as ReplicationView;
  const check = new EngineQueryCheck();
  assert.equal(check.answer(db, ctx, view('d-0')), undefined);
  await check.ensure(db, ctx, view('d-0'), driver);
  assert.deepEqual(asked, [{ host: '10.0.0.1', names: ['broken', 'regulon_probe'] }]);
  assert.deepEqual(warnings, [`${METRICS_QUERIES_INVALID_EVENT}: ${EXPECTED}`]);
  assert.deepEqual(check.answer(db, ctx, view('d-0'))?.refusals, [{ name: 'broken', error: PG_REFUSAL }]);
  // The status says it now: nothing is asked or said again.
  db = {
    ...db,
    status: {
      conditions: [
        {
          type: METRICS_QUERIES_CONDITION,
          status: 'False',
          reason: QUERY_REFUSED,
          message: EXPECTED,
          lastTransitionTime: '',
        },
      ],
    },
  };
  await check.ensure(db, ctx, view('d-0'), driver);
  assert.equal(asked.length, 1);
  // A new primary is asked, and says the same: no new Event.
  await check.ensure(db, ctx, view('d-1'), driver);
  assert.deepEqual(asked[1], { host: '10.0.0.2', names: ['broken', 'regulon_probe'] });
  assert.equal(warnings.length, 1);
  // Fixed queries on a primary that cannot be asked: unknown, not asked again at once.
  text = PAIR.replace('regulon_no_such_table', 'pg_class');
  reachable = false;
  await check.ensure(db, ctx, view('d-1'), driver);
  await check.ensure(db, ctx, view('d-1'), driver);
  assert.equal(asked.length, 3);
  assert.equal(check.answer(db, ctx, view('d-1')), undefined);
  // Nothing to ask while the files have a problem.
  text = 'a: [';
  await check.ensure(db, ctx, view('d-0'), driver);
  assert.equal(asked.length, 3);
});
