// The engines whose metrics the agent publishes (--metrics-engine names one):
// the prefix of their series, the question a scrape asks, and how the answer
// becomes samples.
import type { EngineReading } from './exposition.ts';
import { MARIADB_METRICS_QUERY, mariadbReading } from './mariadb.ts';
import { memcachedReading } from './memcached.ts';
import { POSTGRES_METRICS_QUERY, postgresReading } from './postgres.ts';
import { redisReading } from './redis.ts';

export interface MetricsEngine {
  /** The prefix of the engine's series, its exporter's: `pg` publishes `pg_up`. */
  prefix: string;
  /**
   * For an engine asked in SQL: the query, which the metrics command finds in its
   * METRICS_QUERY_ENV variable (pod.ts; so the command line stays short and needs no quoting).
   */
  query?: string;
  /** The samples of what the metrics command printed; undefined when it is not an answer. */
  reading: (output: string) => EngineReading | undefined;
}

export const METRICS_ENGINES: Readonly<Record<string, MetricsEngine>> = {
  redis: { prefix: 'redis', reading: redisReading },
  memcached: { prefix: 'memcached', reading: memcachedReading },
  mariadb: { prefix: 'mysql', query: MARIADB_METRICS_QUERY, reading: mariadbReading },
  postgres: { prefix: 'pg', query: POSTGRES_METRICS_QUERY, reading: postgresReading },
};
