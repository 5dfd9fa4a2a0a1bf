import type { Metric, OpenMetricsContentType, PrometheusContentType, Registry } from 'prom-client';

/** Any prom-client registry, whichever exposition format it is bound to. */
export type MetricsRegistry = Registry<PrometheusContentType> | Registry<OpenMetricsContentType>;

/**
 * Wraps `create` so that it runs once per registry: later calls with the same registry
 * return what the first one made. prom-client refuses to register a metric name twice
 * on one registry, so every queue, client or controller reporting on a registry must
 * share one set of metric objects. A WeakMap lets a discarded registry (one per test,
 * say) be collected together with its metrics.
 */
export function oncePerRegistry<T>(
  create: (registry: MetricsRegistry) => T,
): (registry: MetricsRegistry) => T {
  const made = new WeakMap<MetricsRegistry, { value: T }>();
  return (registry) => {
    let entry = made.get(registry);
    if (entry === undefined) {
      entry = { value: create(registry) };
      made.set(registry, entry);
    }
    return entry.value;
  };
}

/**
 * The metric registered on `registry` under `name`, or the one `create` registers there
 * when there is none: another copy of a package (or anything else) may have registered
 * the same well-known name, such as a client-go metric, and reusing it beats failing.
 */
export function registeredMetric<M extends Metric>(
  registry: MetricsRegistry,
  name: string,
  create: () => M,
): M {
  return (registry.getSingleMetric(name) as M | undefined) ?? create();
}
