// The user-defined metrics queries that parse, put to the primary's engine:
// it plans each one without running it (EXPLAIN, metrics-queries.ts
// planStatement), over the connection the manager already makes to the
// instances (the replication account, InstanceDriver.plan). A query it
// refuses turns MetricsQueriesValid False (QueryRefused), with one Warning
// Event. Asked only when the queries' text or the primary changed
// (EngineCheckMemo); a primary that cannot be asked changes nothing, and
// neither the reconcile nor Ready waits for it.
import { Kinds } from '@regulon/client';
import type { Context } from '@regulon/runtime';
import type { DatabaseObject } from './api.ts';
import type { InstanceDriver } from './engine.ts';
import {
  engineCheckKey,
  EngineCheckMemo,
  METRICS_QUERIES_CONDITION,
  METRICS_QUERIES_INVALID_EVENT,
  planStatement,
  QUERY_REFUSED,
  readMetricsQueries,
  withEngineAnswer,
  type EngineAnswer,
} from './metrics-queries.ts';
import { replicationPassword, type ReplicationView } from './replication/replication.ts';

/** How long the primary may take over all the queries of one check (each has PLAN_TIMEOUT_MS). */
const CHECK_BUDGET_MS = 5_000;

export class EngineQueryCheck {
  readonly #memo: EngineCheckMemo;

  constructor(memo: EngineCheckMemo = new EngineCheckMemo()) {
    this.#memo = memo;
  }

  /**
   * The reconcile's part, once it has seen the instances: asks the primary when the memo says so,
   * and warns of a refusal the status does not state yet. Never throws.
   */
  async ensure(
    db: DatabaseObject,
    ctx: Context,
    view: ReplicationView,
    driver: InstanceDriver | undefined,
  ): Promise<void> {
    const uid = db.metadata.uid!;
    const target = this.#target(db, ctx, view);
    if (!target) {
      if (!db.spec.monitoring?.customQueriesConfigMap?.length) this.#memo.forget(uid);
      return;
    }
    const { queries, primary, key, check } = target;
    const now = Date.now();
    if (!driver || !this.#memo.due(uid, key, now)) return;
    // A primary that serves: one the kubelet calls ready and, replicated, that answered as writable.
    const host = view.hosts.get(primary);
    const seen = view.observations.get(primary);
    const ready = view.members.find((m) => m.pod === primary)?.ready;
    if (!host || !ready || (view.replicated && !(seen?.reachable && seen.server.writable))) return;
    let answer: EngineAnswer;
    try {
      const password = await replicationPassword(db, ctx);
      if (!password) return;
      const verdicts = await driver.plan(
        { host, password, signal: ctx.signal },
        queries.map((q) => ({ name: q.name, sql: planStatement(q.query) })),
        now + CHECK_BUDGET_MS,
      );
      const refusals = [];
      for (const [name, v] of verdicts)
        if (v.verdict === 'refused') refusals.push({ name, error: v.error });
        else if (v.verdict === 'unknown')
          ctx.log.info({ query: name, primary, error: v.error }, 'a metrics query could not be checked');
      answer = { refusals, total: queries.length };
    } catch (err) {
      this.#memo.failed(uid, key, now);
      ctx.log.info({ primary, err: (err as Error).message }, 'metrics queries not checked on the primary');
      return;
    }
    this.#memo.answered(uid, key, answer);
    const result = withEngineAnswer(check, answer, db.spec.engine);
    if (result?.reason !== QUERY_REFUSED) return;
    const said = db.status?.conditions?.some(
      (c) =>
        c.type === METRICS_QUERIES_CONDITION &&
        c.status === 'False' &&
        c.reason === QUERY_REFUSED &&
        c.message === result.message,
    );
    if (!said) ctx.warn(METRICS_QUERIES_INVALID_EVENT, result.message);
  }

  /** The status's part: what the primary's engine said of the queries as they are now, if it did. */
  answer(db: DatabaseObject, ctx: Context, view: ReplicationView | undefined): EngineAnswer | undefined {
    const target = view ? this.#target(db, ctx, view) : undefined;
    return target ? this.#memo.answer(db.metadata.uid!, target.key) : undefined;
  }

  /** The queries to put to the primary, when the files are sound and a primary serves. */
  #target(db: DatabaseObject, ctx: Context, view: ReplicationView) {
    const read = readMetricsQueries(db, (name) => ctx.get(Kinds.ConfigMap, name));
    const primary = view.plan.servingPrimary;
    if (!read || read.check.status !== 'True' || !read.queries.length || !primary) return undefined;
    return { ...read, primary, key: engineCheckKey(read.queries, primary) };
  }
}
