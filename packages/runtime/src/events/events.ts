// Kubernetes Events (events.k8s.io/v1) from controllers, after client-go's
// event correlator (tools/record/events_cache.go):
//  - a repeat of an identical event becomes a series update on the existing
//    Event object instead of a new object;
//  - each regarding object has a token bucket, so a controller stuck in a hot
//    loop cannot flood the API server (and etcd) with Events.
// Recording is fire-and-forget: an event is diagnostic output and must never
// fail or slow down the reconcile that emits it.
import { randomBytes } from 'node:crypto';
import {
  Kinds,
  isAlreadyExists,
  isNotFound,
  retyped,
  type KubeClient,
  type KubeObject,
  type ResourceClient,
} from '@regulon/client';
import {
  TokenBucket,
  oncePerRegistry,
  realClock,
  registeredMetric,
  silentLogger,
  type Clock,
  type Logger,
  type MetricsRegistry,
} from '@regulon/util';
import { Counter } from 'prom-client';
import { isQualifiedName, microTime, truncateUtf8 } from '../support.ts';

/** An identical event within this long of the previous occurrence updates its series (client-go: 10 min). */
export const DEFAULT_EVENT_AGGREGATION_WINDOW_MS = 10 * 60_000;
/** Events each regarding object may emit in a burst (client-go's spam filter: 25). */
export const DEFAULT_EVENT_BURST = 25;
/** After the burst, one more event per object per this interval (client-go's spam filter: 1 per 5 min). */
export const DEFAULT_EVENT_REFILL_INTERVAL_MS = 5 * 60_000;
/** Series and token buckets kept, least recently used first out (client-go's LRU size). */
export const DEFAULT_EVENT_CACHE_SIZE = 4096;
/** API validation limits of events.k8s.io/v1 Event, in bytes. */
export const EVENT_NOTE_MAX_BYTES = 1024;
export const EVENT_REASON_MAX_BYTES = 128;
export const EVENT_ACTION_MAX_BYTES = 128;
export const EVENT_REPORTING_INSTANCE_MAX_BYTES = 128;
/** This package's own counter of events dropped by the rate limit, labelled by reporting controller. */
export const EVENTS_DROPPED_METRIC_NAME = 'regulon_events_dropped_total';

export type EventType = 'Normal' | 'Warning';

export interface ObjectReference {
  apiVersion?: string | undefined;
  kind?: string | undefined;
  namespace?: string | undefined;
  name?: string | undefined;
  uid?: string | undefined;
  resourceVersion?: string | undefined;
  fieldPath?: string | undefined;
}

export interface EventSeries {
  count: number;
  /** MicroTime */
  lastObservedTime: string;
}

/** events.k8s.io/v1 Event as JSON. */
export interface KubeEvent extends KubeObject {
  /** MicroTime of the first occurrence. */
  eventTime: string;
  series?: EventSeries | undefined;
  reportingController: string;
  reportingInstance: string;
  action: string;
  reason: string;
  regarding: ObjectReference;
  related?: ObjectReference | undefined;
  note?: string | undefined;
  type: EventType;
}

export interface EventRecorderOptions {
  client: Pick<KubeClient, 'resource'>;
  /** The controller's name, a qualified name such as `example.com/widget-controller`. */
  reportingController: string;
  /** This process, e.g. the pod name or leader-election identity; cut to 128 bytes. */
  reportingInstance: string;
  clock?: Clock | undefined;
  logger?: Logger | undefined;
  registry?: MetricsRegistry | undefined;
  /** Default {@link DEFAULT_EVENT_BURST}; at least 1. */
  burst?: number | undefined;
  /** Default {@link DEFAULT_EVENT_REFILL_INTERVAL_MS}; 0 refills at once, so nothing is dropped. */
  refillIntervalMs?: number | undefined;
  /** Default {@link DEFAULT_EVENT_AGGREGATION_WINDOW_MS}. */
  aggregationWindowMs?: number | undefined;
  /** Default {@link DEFAULT_EVENT_CACHE_SIZE}. */
  cacheSize?: number | undefined;
}

/** One Event object and the occurrences it stands for. */
interface Series {
  readonly namespace: string;
  readonly template: Omit<KubeEvent, 'metadata' | 'series'>;
  /** Prefix of the Event's name; a suffix makes it unique. */
  readonly namePrefix: string;
  name: string;
  /** Occurrences recorded, and how many of them the API server already has. */
  count: number;
  written: number;
  lastObservedMs: number;
  lastObservedTime: string;
  exists: boolean;
  writing: boolean;
}

// Every recorder on a registry shares one counter, labelled by reporting controller.
const droppedCounter = oncePerRegistry((registry) =>
  registeredMetric(
    registry,
    EVENTS_DROPPED_METRIC_NAME,
    () =>
      new Counter({
        name: EVENTS_DROPPED_METRIC_NAME,
        help: 'Events not written because their regarding object exceeded its event rate limit.',
        labelNames: ['controller'] as const,
        registers: [registry],
      }),
  ),
);

/**
 * Writes events.k8s.io/v1 Events about objects. One recorder per controller;
 * recorders are independent (each has its own aggregation and rate limits).
 */
export class EventRecorder {
  readonly reportingController: string;
  readonly reportingInstance: string;
  readonly #events: ResourceClient<KubeEvent>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #dropped: Counter<'controller'> | undefined;
  readonly #burst: number;
  readonly #refillMs: number;
  readonly #windowMs: number;
  readonly #cacheSize: number;
  // Both maps are LRU: Map iteration order is insertion order, and an entry
  // is re-inserted whenever it is used.
  readonly #series = new Map<string, Series>();
  readonly #buckets = new Map<string, TokenBucket>();
  readonly #pending = new Set<Promise<void>>();
  #droppedCount = 0;

  constructor(options: EventRecorderOptions) {
    if (!isQualifiedName(options.reportingController)) {
      throw new TypeError(
        `reportingController ${JSON.stringify(options.reportingController)} is not a qualified name (such as example.com/my-controller)`,
      );
    }
    if (!options.reportingInstance) throw new TypeError('reportingInstance must not be empty');
    this.reportingController = options.reportingController;
    this.reportingInstance = truncateUtf8(options.reportingInstance, EVENT_REPORTING_INSTANCE_MAX_BYTES, '');
    this.#events = options.client.resource(retyped<KubeEvent>(Kinds.Event));
    this.#clock = options.clock ?? realClock;
    this.#log = options.logger ?? silentLogger;
    this.#dropped = options.registry ? droppedCounter(options.registry) : undefined;
    this.#dropped?.inc({ controller: this.reportingController }, 0);
    this.#burst = options.burst ?? DEFAULT_EVENT_BURST;
    this.#refillMs = options.refillIntervalMs ?? DEFAULT_EVENT_REFILL_INTERVAL_MS;
    // Checked here, not when the first object's bucket is made inside the fire-and-forget event().
    if (!(this.#burst >= 1)) throw new RangeError(`event burst must be >= 1, got ${this.#burst}`);
    if (!(this.#refillMs >= 0 && this.#refillMs < Infinity))
      throw new RangeError(`event refillIntervalMs must be a finite number >= 0, got ${this.#refillMs}`);
    this.#windowMs = options.aggregationWindowMs ?? DEFAULT_EVENT_AGGREGATION_WINDOW_MS;
    this.#cacheSize = Math.max(1, options.cacheSize ?? DEFAULT_EVENT_CACHE_SIZE);
  }

  /** Events dropped by the per-object rate limit since this recorder was created. */
  get dropped(): number {
    return this.#droppedCount;
  }

  /**
   * Records that `action` was taken (or failed) on `regarding` because of
   * `reason`. Returns at once; the write happens in the background and a
   * failure is logged, never thrown. `reason` and `action` are CamelCase
   * words; `note` is free text, cut to the API's 1 KiB.
   */
  event(regarding: KubeObject, type: EventType, reason: string, action: string, note: string): void {
    try {
      this.#record(regarding, type, reason, action, note);
    } catch (err) {
      this.#log.error({ err, reason, action }, 'failed to record event');
    }
  }

  /** Resolves once every write started so far (and any follow-up series update) has finished. */
  async flush(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending);
  }

  #record(
    regarding: KubeObject,
    type: EventType,
    rawReason: string,
    rawAction: string,
    rawNote: string,
  ): void {
    const meta = regarding.metadata;
    const reason = truncateUtf8(String(rawReason), EVENT_REASON_MAX_BYTES, '');
    const action = truncateUtf8(String(rawAction), EVENT_ACTION_MAX_BYTES, '');
    const note = truncateUtf8(String(rawNote), EVENT_NOTE_MAX_BYTES);
    if (!meta?.name || (type !== 'Normal' && type !== 'Warning') || !reason || !action) {
      this.#log.error(
        { kind: regarding.kind, name: meta?.name, type, reason, action },
        'event not recorded: it needs a named regarding object, type Normal or Warning, a reason and an action',
      );
      return;
    }
    const ref: ObjectReference = {
      ...(regarding.apiVersion ? { apiVersion: regarding.apiVersion } : {}),
      ...(regarding.kind ? { kind: regarding.kind } : {}),
      ...(meta.namespace ? { namespace: meta.namespace } : {}),
      name: meta.name,
      ...(meta.uid ? { uid: meta.uid } : {}),
      ...(meta.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}),
    };
    const objectKey =
      meta.uid ?? `${ref.apiVersion ?? ''}/${ref.kind ?? ''}/${ref.namespace ?? ''}/${ref.name}`;
    const now = this.#clock.now();

    // As in client-go, every occurrence spends a token, repeats included: a
    // series update is an API write too.
    if (!this.#take(objectKey)) {
      this.#droppedCount++;
      this.#dropped?.inc({ controller: this.reportingController });
      this.#log.debug(
        { kind: ref.kind, namespace: ref.namespace, name: ref.name, reason },
        'event dropped: rate limit of the regarding object',
      );
      return;
    }

    const key = `${objectKey}\u0000${type}\u0000${reason}\u0000${action}\u0000${note}`;
    const wall = microTime(new Date());
    let series = this.#series.get(key);
    if (series && now - series.lastObservedMs <= this.#windowMs) {
      series.count++;
      series.lastObservedMs = now;
      series.lastObservedTime = wall;
      this.#series.delete(key);
      this.#series.set(key, series);
    } else {
      // Events of cluster-scoped objects go to `default`, as client-go's do.
      const namespace = ref.namespace ?? 'default';
      const namePrefix = eventNamePrefix(meta.name);
      series = {
        namespace,
        template: {
          apiVersion: 'events.k8s.io/v1',
          kind: 'Event',
          eventTime: wall,
          reportingController: this.reportingController,
          reportingInstance: this.reportingInstance,
          action,
          reason,
          regarding: ref,
          note,
          type,
        },
        namePrefix,
        name: uniqueName(namePrefix),
        count: 1,
        written: 0,
        lastObservedMs: now,
        lastObservedTime: wall,
        exists: false,
        writing: false,
      };
      this.#series.delete(key);
      this.#series.set(key, series);
      evictOldest(this.#series, this.#cacheSize);
    }
    this.#schedule(series);
  }

  #take(objectKey: string): boolean {
    let bucket = this.#buckets.get(objectKey);
    if (bucket) {
      this.#buckets.delete(objectKey);
    } else {
      bucket = new TokenBucket(this.#refillMs, this.#burst, this.#clock);
    }
    this.#buckets.set(objectKey, bucket);
    evictOldest(this.#buckets, this.#cacheSize);
    return bucket.tryTake();
  }

  /** One writer per series: occurrences arriving while a write is in flight are folded into the next write. */
  #schedule(series: Series): void {
    if (series.writing) return;
    series.writing = true;
    const write = this.#drain(series);
    this.#pending.add(write);
    void write.finally(() => this.#pending.delete(write));
  }

  async #drain(s: Series): Promise<void> {
    try {
      while (s.written < s.count) {
        const count = s.count;
        const seriesField: EventSeries = { count, lastObservedTime: s.lastObservedTime };
        try {
          if (!s.exists) {
            await this.#events.create({
              ...s.template,
              metadata: { name: s.name, namespace: s.namespace },
              ...(count > 1 ? { series: seriesField } : {}),
            });
            s.exists = true;
          } else {
            await this.#events.patch(
              s.name,
              { series: seriesField },
              { type: 'merge', namespace: s.namespace },
            );
          }
          s.written = count;
        } catch (err) {
          if (isNotFound(err) && s.exists) {
            // The Event expired (the API server's event TTL) while the series
            // went on: start a new object.
            s.exists = false;
            s.name = uniqueName(s.namePrefix);
            continue;
          }
          if (isAlreadyExists(err)) {
            s.name = uniqueName(s.namePrefix);
            continue;
          }
          this.#log.error(
            {
              err,
              namespace: s.namespace,
              event: s.name,
              reason: s.template.reason,
              regarding: s.template.regarding.name,
            },
            'failed to write event',
          );
          // Give up on these occurrences rather than retry against a failing
          // API server; the next occurrence tries again.
          s.written = s.count;
        }
      }
    } finally {
      // Cleared in the same tick as the loop's last check, so an occurrence
      // recorded after it always starts a new writer.
      s.writing = false;
    }
  }
}

function evictOldest<V>(map: Map<string, V>, max: number): void {
  while (map.size > max) {
    const oldest = map.keys().next();
    if (oldest.done) return;
    map.delete(oldest.value);
  }
}

// Event names are DNS subdomains; the regarding object's name may not be one
// (RBAC names allow ':' and upper case), so it is folded into one.
function eventNamePrefix(name: string): string {
  const folded = name
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 253 - 1 - 20)
    .replace(/[^a-z0-9]+$/, '');
  return folded || 'event';
}

function uniqueName(prefix: string): string {
  // Time first, as client-go does, so names sort by creation; random bits so
  // that two recorders writing in the same millisecond do not collide.
  return `${prefix}.${Date.now().toString(16)}${randomBytes(4).toString('hex')}`;
}
