// spec.monitoring.customQueriesConfigMap: the ConfigMaps of user-defined
// metrics queries, mounted into the instances, whose agents run them at each
// scrape (@regulon/instance-agent, metrics/custom-queries.ts). The manager
// reads the same ConfigMaps with the agent's own parser and says in the
// MetricsQueriesValid condition what the agents will skip, so that a mistake
// is seen on the Database, not only in a metric. It never stops the
// reconcile nor touches Ready: the database serves without its extra series.
import type { V1ConfigMap, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { parseCustomQueries } from '@regulon/instance-agent';
import type { DatabaseObject } from './api.ts';

export const METRICS_QUERIES_CONDITION = 'MetricsQueriesValid';
/** The Warning Event's reason when the condition turns False (its message says which problem). */
export const METRICS_QUERIES_INVALID_EVENT = 'MetricsQueriesInvalid';
/** Where an instance's container finds the i-th ConfigMap's key: `<MOUNT>/<i>/<key>`. */
export const METRICS_QUERIES_MOUNT = '/regulon-metrics-queries';

export interface MetricsQueriesCheck {
  status: 'True' | 'False';
  reason: 'Valid' | 'ConfigMapNotFound' | 'KeyNotFound' | 'InvalidQueries';
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
      ...missing[0]!,
      message: `${[...missing.map((m) => m.message), ...errors].slice(0, MAX_LISTED).join('; ')}${more(missing.length + errors.length)}: ${unaffected}`,
    };
  if (errors.length)
    return {
      status: 'False',
      reason: 'InvalidQueries',
      message: `${errors.slice(0, MAX_LISTED).join('; ')}${more(errors.length)}: ${unaffected}; ${queries.length} other ${queries.length === 1 ? 'query runs' : 'queries run'}`,
    };
  return {
    status: 'True',
    reason: 'Valid',
    message: `${queries.length} user-defined ${queries.length === 1 ? 'query' : 'queries'} (${queries.map((q) => q.name).join(', ')}) run at each scrape of the instances' metrics`,
  };
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
