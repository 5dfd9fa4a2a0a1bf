import { Counter, Histogram, type Registry } from 'prom-client';
import { oncePerRegistry, registeredMetric } from '@regulon/util';

/** What client-go records, with the same meaning. */
export interface RequestMetrics {
  /** One per attempt (a retry is another): `code` is the HTTP status, or `<error>` when no response arrived. */
  attempt(method: string, code: number | '<error>'): void;
  /**
   * One per request, from before the client-side rate limiter to the final
   * response, retries and their backoff included: client-go's
   * rest_client_request_duration_seconds times its request() call so.
   */
  request(method: string, seconds: number): void;
}

interface MetricSet {
  requests: Counter<'code' | 'method' | 'host'>;
  duration: Histogram<'verb' | 'host'>;
}

/** client-go's (component-base) request-latency buckets, in seconds. */
const LATENCY_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

const REQUESTS = 'rest_client_requests_total';
const DURATION = 'rest_client_request_duration_seconds';

// Clients sharing a registry share the metric objects; another copy of this package (or
// anything else) may have registered the same client-go names already.
const metricsFor = oncePerRegistry((registry): MetricSet => ({
  requests: registeredMetric(
    registry,
    REQUESTS,
    () =>
      new Counter({
        name: REQUESTS,
        help: 'Number of HTTP requests to the Kubernetes API server, partitioned by status code, method, and host.',
        labelNames: ['code', 'method', 'host'] as const,
        registers: [registry],
      }),
  ),
  duration: registeredMetric(
    registry,
    DURATION,
    () =>
      new Histogram({
        name: DURATION,
        help: 'Request latency in seconds to the Kubernetes API server, partitioned by verb and host.',
        labelNames: ['verb', 'host'] as const,
        buckets: LATENCY_BUCKETS,
        registers: [registry],
      }),
  ),
}));

export const noMetrics: RequestMetrics = { attempt: () => {}, request: () => {} };

export function requestMetrics(registry: Registry | undefined, host: string): RequestMetrics {
  if (!registry) return noMetrics;
  const { requests, duration } = metricsFor(registry);
  return {
    attempt(method, code) {
      requests.inc({ code: String(code), method, host });
    },
    request(method, seconds) {
      duration.observe({ verb: method, host }, seconds);
    },
  };
}
