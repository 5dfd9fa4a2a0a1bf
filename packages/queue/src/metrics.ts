import { Counter, Gauge, Histogram } from 'prom-client';
import { oncePerRegistry, type Clock, type MetricsRegistry } from '@regulon/util';

export type { MetricsRegistry } from '@regulon/util';

/** Metric names exactly as controller-runtime exports them, so existing dashboards and alerts work. */
export const WORKQUEUE_METRIC_NAMES = {
  depth: 'workqueue_depth',
  adds: 'workqueue_adds_total',
  queueDuration: 'workqueue_queue_duration_seconds',
  workDuration: 'workqueue_work_duration_seconds',
  unfinishedWork: 'workqueue_unfinished_work_seconds',
  longestRunningProcessor: 'workqueue_longest_running_processor_seconds',
  retries: 'workqueue_retries_total',
} as const;

/**
 * Histogram buckets shared by the duration metrics: 10ns to 1000s, one per decade, as in
 * client-go. Written out because 1e-8 * 10^k accumulates floating-point error in the `le` labels.
 */
export const WORKQUEUE_DURATION_BUCKETS: readonly number[] = [
  1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000,
];

type Label = 'name' | 'controller';
const LABEL_NAMES: readonly Label[] = ['name', 'controller'];

interface MetricsSource {
  publishCounts(): void;
  publishRunningTimes(): void;
}

interface SharedMetrics {
  readonly depth: Gauge<Label>;
  readonly adds: Counter<Label>;
  readonly queueDuration: Histogram<Label>;
  readonly workDuration: Histogram<Label>;
  readonly unfinishedWork: Gauge<Label>;
  readonly longestRunningProcessor: Gauge<Label>;
  readonly retries: Counter<Label>;
  /** Queues still running on this registry; they publish their state when scraped. */
  readonly live: Set<MetricsSource>;
}

// Every queue of a process reports under the same metric names, so they share one set of
// metric objects per registry.
const sharedMetricsFor = oncePerRegistry((registry): SharedMetrics => {
  const live = new Set<MetricsSource>();
  const publishCounts = (): void => {
    for (const source of live) source.publishCounts();
  };
  // Unfinished-work and longest-running values depend on "now", so they are computed when
  // scraped rather than maintained by a timer that would keep the process awake.
  const publishRunningTimes = (): void => {
    for (const source of live) source.publishRunningTimes();
  };
  const registers = [registry];
  return {
    depth: new Gauge({
      name: WORKQUEUE_METRIC_NAMES.depth,
      help: 'Current depth of workqueue',
      labelNames: LABEL_NAMES,
      registers,
      collect: publishCounts,
    }),
    adds: new Counter({
      name: WORKQUEUE_METRIC_NAMES.adds,
      help: 'Total number of adds handled by workqueue',
      labelNames: LABEL_NAMES,
      registers,
      collect: publishCounts,
    }),
    queueDuration: new Histogram({
      name: WORKQUEUE_METRIC_NAMES.queueDuration,
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: LABEL_NAMES,
      buckets: [...WORKQUEUE_DURATION_BUCKETS],
      registers,
    }),
    workDuration: new Histogram({
      name: WORKQUEUE_METRIC_NAMES.workDuration,
      help: 'How long in seconds processing an item from workqueue takes.',
      labelNames: LABEL_NAMES,
      buckets: [...WORKQUEUE_DURATION_BUCKETS],
      registers,
    }),
    unfinishedWork: new Gauge({
      name: WORKQUEUE_METRIC_NAMES.unfinishedWork,
      help:
        "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. " +
        'Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate ' +
        'at which this increases.',
      labelNames: LABEL_NAMES,
      registers,
      collect: publishRunningTimes,
    }),
    longestRunningProcessor: new Gauge({
      name: WORKQUEUE_METRIC_NAMES.longestRunningProcessor,
      help: 'How many seconds has the longest running processor for workqueue been running.',
      labelNames: LABEL_NAMES,
      registers,
      collect: publishRunningTimes,
    }),
    retries: new Counter({
      name: WORKQUEUE_METRIC_NAMES.retries,
      help: 'Total number of retries handled by workqueue',
      labelNames: LABEL_NAMES,
      registers,
      collect: publishCounts,
    }),
    live,
  };
});

/**
 * Records one queue's metrics under labels `{name, controller}` (both the queue name, as
 * controller-runtime does). Queue names must be unique per registry, like controller names.
 */
export class QueueMetrics<T> implements MetricsSource {
  readonly #m: SharedMetrics;
  readonly #labels: Record<Label, string>;
  readonly #clock: Clock;
  // When each queued item was added; the queue only reports adds of items not already
  // waiting, so a re-add never restarts the measured wait.
  readonly #addTimes = new Map<T, number>();
  readonly #processingStarts = new Map<T, number>();
  // prom-client hashes the label set on every update, which costs more than the queue
  // operation itself; depth and the counters are therefore tallied here and published when
  // scraped. Histogram observations cannot be deferred without buffering them, so they are not.
  #depth = 0;
  #unpublishedAdds = 0;
  #unpublishedRetries = 0;
  #detached = false;

  constructor(registry: MetricsRegistry, name: string, clock: Clock) {
    this.#m = sharedMetricsFor(registry);
    this.#labels = { name, controller: name };
    this.#clock = clock;
    // Export zero-valued series right away so dashboards see an idle queue, not a missing one.
    const l = this.#labels;
    this.#m.depth.set(l, 0);
    this.#m.adds.inc(l, 0);
    this.#m.retries.inc(l, 0);
    this.#m.queueDuration.zero(l);
    this.#m.workDuration.zero(l);
    this.#m.unfinishedWork.set(l, 0);
    this.#m.longestRunningProcessor.set(l, 0);
    this.#m.live.add(this);
  }

  add(item: T): void {
    this.#unpublishedAdds++;
    this.#depth++;
    if (this.#detached) this.publishCounts();
    this.#addTimes.set(item, this.#clock.now());
  }

  /** An added item left the queue without being handed out (removeWhere). */
  remove(item: T): void {
    this.#depth--;
    if (this.#detached) this.publishCounts();
    this.#addTimes.delete(item);
  }

  get(item: T): void {
    const now = this.#clock.now();
    this.#depth--;
    if (this.#detached) this.publishCounts();
    this.#processingStarts.set(item, now);
    const addedAt = this.#addTimes.get(item);
    if (addedAt !== undefined) {
      this.#m.queueDuration.observe(this.#labels, (now - addedAt) / 1000);
      this.#addTimes.delete(item);
    }
  }

  done(item: T): void {
    const startedAt = this.#processingStarts.get(item);
    if (startedAt === undefined) return;
    this.#m.workDuration.observe(this.#labels, (this.#clock.now() - startedAt) / 1000);
    this.#processingStarts.delete(item);
  }

  retry(): void {
    this.#unpublishedRetries++;
    if (this.#detached) this.publishCounts();
  }

  publishCounts(): void {
    this.#m.depth.set(this.#labels, this.#depth);
    if (this.#unpublishedAdds > 0) this.#m.adds.inc(this.#labels, this.#unpublishedAdds);
    if (this.#unpublishedRetries > 0) this.#m.retries.inc(this.#labels, this.#unpublishedRetries);
    this.#unpublishedAdds = 0;
    this.#unpublishedRetries = 0;
  }

  publishRunningTimes(): void {
    const now = this.#clock.now();
    let total = 0;
    let oldest = 0;
    for (const startedAt of this.#processingStarts.values()) {
      const running = now - startedAt;
      total += running;
      if (running > oldest) oldest = running;
    }
    this.#m.unfinishedWork.set(this.#labels, total / 1000);
    this.#m.longestRunningProcessor.set(this.#labels, oldest / 1000);
  }

  /**
   * Leaves the scrape-time refresh. Called once the queue is shut down and idle, so that a
   * controller restarted under the same name is not overwritten by its stopped predecessor.
   * Leftover items a worker may still take afterwards are then published immediately.
   */
  detach(): void {
    if (this.#detached) return;
    this.#detached = true;
    this.#m.live.delete(this);
    this.publishCounts();
    this.#m.unfinishedWork.set(this.#labels, 0);
    this.#m.longestRunningProcessor.set(this.#labels, 0);
  }
}
