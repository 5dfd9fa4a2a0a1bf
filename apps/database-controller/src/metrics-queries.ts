// spec.monitoring.customQueriesConfigMap: the ConfigMaps of user-defined
// metrics queries, mounted into the instances, whose agents run them at each
// scrape (@regulon/instance-agent, metrics/custom-queries.ts). The manager
// reads the same ConfigMaps with the agent's own parser and says in the
// MetricsQueriesValid condition what the agents will skip, so that a mistake
// is seen on the Database, not only in a metric. It never stops the
// reconcile nor touches Ready: the database serves without its extra series.
// Queries that parse are also put to the primary's engine, which plans them
// without running them (metrics-queries-engine.ts): a query it refuses (a
// missing table or column, a syntax error) is QueryRefused.
import { createHash } from 'node:crypto';
import type { V1ConfigMap, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { parseCustomQueries, type CustomQuery } from '@regulon/instance-agent';
import type { DatabaseObject } from './api.ts';

export const METRICS_QUERIES_CONDITION = 'MetricsQueriesValid';
/** The Warning Event's reason when the condition turns False (its message says which problem). */
export const METRICS_QUERIES_INVALID_EVENT = 'MetricsQueriesInvalid';
/** Where an instance's container finds the i-th ConfigMap's key: `<MOUNT>/<i>/<key>`. */
export const METRICS_QUERIES_MOUNT = '/regulon-metrics-queries';

/** MetricsQueriesValid's reason when the primary's engine refuses a query that parses. */
export const QUERY_REFUSED = 'QueryRefused';

export interface MetricsQueriesCheck {
  status: 'True' | 'False';
  reason: 'Valid' | 'ConfigMapNotFound' | 'KeyNotFound' | 'InvalidQueries' | typeof QUERY_REFUSED;
  message: string;
}

const refsOf = (db: DatabaseObject) => db.spec.monitoring?.customQueriesConfigMap ?? [];

/** The ConfigMaps the Database names, for the controller's index: a change to one wakes it. */
export function metricsQueriesConfigMaps(db: DatabaseObject): string[] {
  return [...new Set(refsOf(db).map((r) => r.name))];
}

/** At most this many problems are spelled out in the condition; the rest are counted. */
const MAX_LISTED = 3;

/**
 * What the agents will make of the named ConfigMaps, as `configMap` (the controller's cache)
 * shows them; undefined when the Database names none.
 */
export function checkMetricsQueries(
  db: DatabaseObject,
  configMap: (name: string) => V1ConfigMap | undefined,
): MetricsQueriesCheck | undefined {
  return readMetricsQueries(db, configMap)?.check;
}

/** checkMetricsQueries, with the queries that parse (those the agents run). */
export function readMetricsQueries(
  db: DatabaseObject,
  configMap: (name: string) => V1ConfigMap | undefined,
): { check: MetricsQueriesCheck; queries: CustomQuery[] } | undefined {
  const refs = refsOf(db);
  if (!refs.length) return undefined;
  const ns = db.metadata.namespace;
  const sources = [];
  const missing: MetricsQueriesCheck[] = [];
  for (const { name, key } of refs) {
    const cm = configMap(name);
    const text = cm?.data?.[key];
    if (!cm)
      missing.push({
        status: 'False',
        reason: 'ConfigMapNotFound',
        message: `ConfigMap ${name} named in spec.monitoring.customQueriesConfigMap does not exist in ${ns}`,
      });
    else if (text === undefined)
      missing.push({
        status: 'False',
        reason: 'KeyNotFound',
        message: `ConfigMap ${name} has no key ${key} (spec.monitoring.customQueriesConfigMap)${cm.binaryData?.[key] !== undefined ? ': it is in binaryData, and the queries must be text in data' : ''}`,
      });
    else sources.push({ source: `ConfigMap ${name} key ${key}`, text });
  }
  const { queries, errors } = parseCustomQueries(sources);
  const unaffected = 'the instances run without the queries concerned, and are not affected otherwise';
  if (missing.length)
    return {
      queries,
      check: {
        ...missing[0]!,
        message: `${[...missing.map((m) => m.message), ...errors].slice(0, MAX_LISTED).join('; ')}${more(missing.length + errors.length)}: ${unaffected}`,
      },
    };
  if (errors.length)
    return {
      queries,
      check: {
        status: 'False',
        reason: 'InvalidQueries',
        message: `${errors.slice(0, MAX_LISTED).join('; ')}${more(errors.length)}: ${unaffected}; ${others(queries.length)}`,
      },
    };
  return {
    queries,
    check: {
      status: 'True',
      reason: 'Valid',
      message: `${queries.length} user-defined ${queries.length === 1 ? 'query' : 'queries'} (${queries.map((q) => q.name).join(', ')}) run at each scrape of the instances' metrics`,
    },
  };
}

const others = (n: number) => `${n} other ${n === 1 ? 'query runs' : 'queries run'}`;

/** A query the primary's engine refused to plan, with its error. */
export interface QueryRefusal {
  name: string;
  error: string;
}

/** What the primary's engine said of the queries that parse: those it refused, of how many. */
export interface EngineAnswer {
  refusals: QueryRefusal[];
  total: number;
}

/**
 * The statement that asks the engine to plan a query as the agent runs it, without running it: a
 * derived table, as in the agent's wrapper (custom-queries.ts), so that a leading WITH plans as it
 * runs, a second statement or a duplicate column name is refused as it is at a scrape, and a
 * trailing `-- comment` ends on its own line. The parser has removed a trailing semicolon.
 */
export function planStatement(query: string): string {
  return `EXPLAIN SELECT * FROM (\n${query}\n) regulon_query`;
}

/** What one check of the queries on the primary is about: their names and text, and the primary. */
export function engineCheckKey(
  queries: readonly Pick<CustomQuery, 'name' | 'query'>[],
  primary: string,
): string {
  return createHash('sha256')
    .update(JSON.stringify([primary, queries.map((q) => [q.name, q.query])]))
    .digest('hex');
}

/** An engine's error as a condition carries it: its first line, bounded. */
export function errorLine(message: string): string {
  const line = (message.split('\n')[0] ?? '').replace(/\s+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/**
 * MetricsQueriesValid from the file check and what the primary's engine said. A file problem comes
 * first: the engine is asked only once the files are sound. `answer` undefined (not asked yet for
 * these queries and this primary, or the primary could not be asked): unknown is not refused, and a
 * QueryRefused the status says stays as it is until the engine answers again.
 */
export function withEngineAnswer(
  check: MetricsQueriesCheck | undefined,
  answer: EngineAnswer | undefined,
  engine: string,
  previous?: { status: string; reason?: string | undefined; message?: string | undefined },
): MetricsQueriesCheck | undefined {
  if (!check || check.status === 'False') return check;
  if (!answer)
    return previous?.status === 'False' && previous.reason === QUERY_REFUSED && previous.message
      ? { status: 'False', reason: QUERY_REFUSED, message: previous.message }
      : check;
  const { refusals, total } = answer;
  if (!refusals.length) return check;
  const n = refusals.length;
  const listed = refusals.slice(0, MAX_LISTED).map((r) => `${r.name}: ${errorLine(r.error)}`);
  return {
    status: 'False',
    reason: QUERY_REFUSED,
    message: `${engine} refuses ${n} of ${total} user-defined ${total === 1 ? 'query' : 'queries'}: ${listed.join('; ')}${more(n)}. The instances publish no series for ${n === 1 ? 'it' : 'them'} (regulon_instance_custom_query_up 0) and are not affected otherwise${total > n ? `; ${others(total - n)}` : ''}`,
  };
}

/** How long after the primary could not be asked it is asked again (for the same queries). */
export const ENGINE_CHECK_RETRY_MS = 30_000;

/**
 * What the primaries' engines said, by Database uid: the engine is asked again only when the
 * queries' text or the primary changed (the key, engineCheckKey), or, after it could not be asked,
 * once ENGINE_CHECK_RETRY_MS have passed. In memory: a new manager asks once again.
 */
export class EngineCheckMemo {
  readonly #checks = new Map<string, { key: string; answer?: EngineAnswer; failedAt?: number }>();

  /** Whether the primary is to be asked now about the queries under `key`. */
  due(uid: string, key: string, now: number): boolean {
    const c = this.#checks.get(uid);
    if (c?.key !== key) return true;
    if (c.answer) return false;
    return c.failedAt === undefined || now - c.failedAt >= ENGINE_CHECK_RETRY_MS;
  }

  answered(uid: string, key: string, answer: EngineAnswer): void {
    this.#checks.set(uid, { key, answer });
  }

  /** The primary could not be asked: what it said under another key no longer holds. */
  failed(uid: string, key: string, now: number): void {
    this.#checks.set(uid, { key, failedAt: now });
  }

  /** What the engine said under `key`; undefined when it has not answered for it. */
  answer(uid: string, key: string): EngineAnswer | undefined {
    const c = this.#checks.get(uid);
    return c?.key === key ? c.answer : undefined;
  }

  /** A Database that names no queries (any more), or is gone. */
  forget(uid: string): void {
    this.#checks.delete(uid);
  }
}

const more = (n: number) => (n > MAX_LISTED ? ` (and ${n - MAX_LISTED} more)` : '');

/**
 * The volumes that carry the named keys into an instance, the container's mounts of them, and the
 * files the agent reads (--metrics-queries-file). Optional volumes: a missing ConfigMap or key
 * leaves an empty directory, and the Pod starts anyway; the agent and the condition say what is
 * missing. Not subPath mounts: the kubelet refreshes these when the ConfigMap changes.
 */
export function metricsQueriesVolumes(db: DatabaseObject): {
  volumes: V1Volume[];
  mounts: V1VolumeMount[];
  files: string[];
} {
  const refs = refsOf(db);
  return {
    volumes: refs.map(({ name, key }, i) => ({
      name: `metrics-queries-${i}`,
      configMap: { name, items: [{ key, path: key }], optional: true },
    })),
    mounts: refs.map((_, i) => ({
      name: `metrics-queries-${i}`,
      mountPath: `${METRICS_QUERIES_MOUNT}/${i}`,
      readOnly: true,
    })),
    files: refs.map(({ key }, i) => `${METRICS_QUERIES_MOUNT}/${i}/${key}`),
  };
}
