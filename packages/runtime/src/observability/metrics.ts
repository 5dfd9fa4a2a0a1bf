import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';
import { oncePerRegistry } from '@regulon/util';

/** controller-runtime's reconcile-time buckets, so existing dashboards' histogram_quantile() reads the same. */
export const RECONCILE_TIME_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
  1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

export type ReconcileResultLabel = 'success' | 'error' | 'requeue' | 'requeue_after';

/** The controller_runtime_* series, under controller-runtime's names and labels. */
export interface ControllerMetrics {
  reconcileTotal: Counter<'controller' | 'result'>;
  reconcileErrors: Counter<'controller'>;
  terminalErrors: Counter<'controller'>;
  panics: Counter<'controller'>;
  reconcileTime: Histogram<'controller'>;
  maxConcurrent: Gauge<'controller'>;
  activeWorkers: Gauge<'controller'>;
}

/** One set of metric objects per registry, shared by every controller on it. */
export const controllerMetrics: (registry: Registry) => ControllerMetrics = oncePerRegistry((registry) => {
  const registers = [registry];
  return {
    reconcileTotal: new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers,
    }),
    reconcileErrors: new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    }),
    terminalErrors: new Counter({
      name: 'controller_runtime_terminal_reconcile_errors_total',
      help: 'Total number of terminal reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    }),
    panics: new Counter({
      name: 'controller_runtime_reconcile_panics_total',
      help: 'Total number of reconciliation panics (programming errors: TypeError, RangeError, ReferenceError) per controller',
      labelNames: ['controller'],
      registers,
    }),
    reconcileTime: new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: RECONCILE_TIME_BUCKETS,
      registers,
    }),
    maxConcurrent: new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: ['controller'],
      registers,
    }),
    activeWorkers: new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'],
      registers,
    }),
  };
});

/** Node process and runtime metrics (CPU, RSS, heap, GC, event-loop lag), once per registry. */
export const registerProcessMetrics: (registry: Registry) => void = oncePerRegistry((registry) =>
  collectDefaultMetrics({ register: registry }),
);
