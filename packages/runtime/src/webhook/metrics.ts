import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { oncePerRegistry } from '@regulon/util';

/**
 * controller-runtime's webhook series (pkg/webhook/internal/metrics), under
 * its names and labels, so its dashboards read these unchanged: `webhook` is
 * the path served, `code` the HTTP status written.
 */
export interface WebhookMetrics {
  requestsTotal: Counter<'webhook' | 'code'>;
  latency: Histogram<'webhook'>;
  inFlight: Gauge<'webhook'>;
}

/** controller-runtime's latency buckets: prometheus.DefBuckets. */
export const WEBHOOK_LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const webhookMetrics: (registry: Registry) => WebhookMetrics = oncePerRegistry((registry) => {
  const registers = [registry];
  return {
    requestsTotal: new Counter({
      name: 'controller_runtime_webhook_requests_total',
      help: 'Total number of admission requests by HTTP status code.',
      labelNames: ['webhook', 'code'],
      registers,
    }),
    latency: new Histogram({
      name: 'controller_runtime_webhook_latency_seconds',
      help: 'Histogram of the latency of processing admission requests',
      labelNames: ['webhook'],
      buckets: WEBHOOK_LATENCY_BUCKETS,
      registers,
    }),
    inFlight: new Gauge({
      name: 'controller_runtime_webhook_requests_in_flight',
      help: 'Current number of admission requests being served.',
      labelNames: ['webhook'],
      registers,
    }),
  };
});
