import { SharedInformerFactory, type Informer } from '@regulon/cache';
import { KubeClient, type KubeObject, type ResourceType } from '@regulon/client';
import type { Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { ControllerBuilder } from '../builder/builder.ts';
import type { Runnable } from '../reconcile/controller.ts';
import { EventRecorder } from '../events/events.ts';
import { defaultIdentity, LeaderElector, LeadershipLostError } from '../election/leader-election.ts';
import { createLogger } from '../observability/logging.ts';
import { registerProcessMetrics } from '../observability/metrics.ts';
import { HealthServer, MetricsServer } from './servers.ts';
import { runtimeTracer } from '../observability/tracing.ts';

/** Defaults, named where they are defined (controller-runtime's). */
export const DEFAULT_CACHE_SYNC_TIMEOUT_MS = 120_000;
export const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS = 30_000;
export const DEFAULT_METRICS_BIND_ADDRESS = ':8080';
export const DEFAULT_HEALTH_BIND_ADDRESS = ':8081';
/**
 * An informer whose list/watch has been failing for longer than this, counted
 * from its first failure, makes /readyz fail: a cache that may be this stale
 * must not look healthy. Shorter outages (an API server rollout) don't flap it.
 */
export const INFORMER_UNHEALTHY_AFTER_MS = 60_000;

export interface LeaderElectionConfig {
  enabled: boolean;
  namespace: string;
  name: string;
  identity?: string | undefined;
  leaseDurationMs?: number | undefined;
  renewDeadlineMs?: number | undefined;
  retryPeriodMs?: number | undefined;
}

export interface ManagerOptions {
  client?: KubeClient | undefined;
  logger?: Logger | undefined;
  registry?: Registry | undefined;
  tracer?: Tracer | undefined;
  /** Metrics listen address (`:8080`); `0` disables. */
  metricsBindAddress?: string | undefined;
  /** Health probes listen address (`:8081`); `0` disables. */
  healthBindAddress?: string | undefined;
  leaderElection?: LeaderElectionConfig | undefined;
  cacheSyncTimeoutMs?: number | undefined;
  gracefulShutdownTimeoutMs?: number | undefined;
  /** /readyz fails while an informer has been failing for longer than this (default {@link INFORMER_UNHEALTHY_AFTER_MS}). */
  informerUnhealthyAfterMs?: number | undefined;
  /** Restrict the cache of namespaced kinds to this namespace. */
  namespace?: string | undefined;
  /**
   * The per-object Event rate limit of every controller's recorder (default: client-go's spam
   * filter, 25 at once, then one per 5 min). A fault suite that puts many incidents on one object
   * within minutes, and asserts their Events, raises it.
   */
  events?: { burst?: number | undefined; refillIntervalMs?: number | undefined } | undefined;
}

/**
 * Runs many controllers in one process around one client, one shared cache,
 * one metrics registry, one logger and one tracer.
 *
 * Start order: HTTP servers; caches, then wait for sync; leader election;
 * leader-only runnables once leading (the others right after sync).
 * Graceful stop: stop taking work, let in-flight reconciles finish (up to the
 * shutdown timeout), release the Lease, stop caches and servers.
 */
export class Manager {
  readonly client: KubeClient;
  readonly informers: SharedInformerFactory;
  readonly registry: Registry;
  readonly logger: Logger;
  readonly tracer: Tracer;
  readonly health = new HealthServer();
  readonly metricsServer: MetricsServer;
  readonly identity: string;
  readonly #o: ManagerOptions;
  readonly #runnables: Runnable[] = [];
  readonly #stop = new AbortController();
  #synced = false;
  #electionRunning = false;
  #leading = false;
  #started = false;
  #elector: LeaderElector | undefined;

  constructor(options: ManagerOptions = {}) {
    this.#o = options;
    this.registry = options.registry ?? new Registry();
    this.logger = options.logger ?? createLogger();
    this.client = options.client ?? KubeClient.load({ registry: this.registry });
    this.tracer = options.tracer ?? runtimeTracer();
    this.identity = options.leaderElection?.identity ?? defaultIdentity();
    this.informers = new SharedInformerFactory(this.client, {
      logger: this.logger.child({ component: 'cache' }),
    });
    this.metricsServer = new MetricsServer(this.registry);
    registerProcessMetrics(this.registry);
    this.health.addHealthCheck('ping', () => ({ ok: true }));
    this.health.addReadyCheck('cache-sync', () => ({ ok: this.#synced }));
    this.health.addReadyCheck('leader-election', () => ({ ok: this.#electionRunning }));
    const unhealthyAfterMs = options.informerUnhealthyAfterMs ?? INFORMER_UNHEALTHY_AFTER_MS;
    this.health.addReadyCheck('informers', () => {
      const now = Date.now();
      const failing = this.informers
        .status()
        .filter((s) => s.health.failingSince !== undefined && now - s.health.failingSince > unhealthyAfterMs);
      return failing.length
        ? { ok: false, detail: failing.map((s) => `${s.name}: ${s.health.lastError}`).join('; ') }
        : { ok: true };
    });
  }

  /**
   * The shared informer for a kind (metadata-only when the handle is, see
   * metadataOnly()), scoped to the manager's namespace when it has one.
   */
  informerFor<T extends KubeObject>(
    type: ResourceType<T>,
    opts: { indexers?: Record<string, (obj: T) => string[]> } = {},
  ): Informer<T> {
    return this.informers.informerFor<T>(type, {
      ...(this.#o.namespace && type.namespaced ? { namespace: this.#o.namespace } : {}),
      ...(opts.indexers && Object.keys(opts.indexers).length ? { indexers: opts.indexers } : {}),
    });
  }

  /** Starts building a controller named `name` (used in metrics, logs and traces). */
  controller(name: string): ControllerBuilder {
    return new ControllerBuilder(this, name);
  }

  add(runnable: Runnable): void {
    if (this.#runnables.some((r) => r.name === runnable.name))
      throw new Error(`a runnable named ${runnable.name} is already registered`);
    this.#runnables.push(runnable);
  }

  eventRecorder(controller: string): EventRecorder {
    return new EventRecorder({
      client: this.client,
      reportingController: controller,
      reportingInstance: this.identity,
      logger: this.logger.child({ controller, component: 'events' }),
      ...this.#o.events,
    });
  }

  get leading(): boolean {
    return this.#leading;
  }

  /** Asks a running manager to stop gracefully. */
  stop(): void {
    this.#stop.abort();
  }

  /**
   * Runs until `signal` aborts or `stop()` is called (resolves after a
   * graceful shutdown), or until leadership is lost (rejects with
   * LeadershipLostError after stopping leader work at once).
   */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.#started) throw new Error('manager already started');
    this.#started = true;
    const stop = signal ? AbortSignal.any([signal, this.#stop.signal]) : this.#stop.signal;
    const cacheStop = new AbortController();
    const runStop = new AbortController();
    const drainTimeout = this.#o.gracefulShutdownTimeoutMs ?? DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS;
    const drain = new AbortController();
    const running: Array<Promise<void>> = [];
    // The Lease is renewed until in-flight work has drained, so no other
    // replica can lead while this one still reconciles.
    const electionStop = new AbortController();
    let electing: Promise<void> | undefined;
    let lost: LeadershipLostError | undefined;

    const metricsPort = await this.metricsServer.listen(
      this.#o.metricsBindAddress ?? DEFAULT_METRICS_BIND_ADDRESS,
    );
    let healthPort: number | undefined;
    try {
      healthPort = await this.health.listen(this.#o.healthBindAddress ?? DEFAULT_HEALTH_BIND_ADDRESS);
    } catch (err) {
      // A listening metrics server would keep the process alive after start() failed.
      await this.metricsServer.close();
      throw err;
    }
    this.logger.info({ metricsPort, healthPort, identity: this.identity }, 'manager starting');
    try {
      this.informers.start(cacheStop.signal);
      try {
        await this.informers.waitForSync(stop, this.#o.cacheSyncTimeoutMs ?? DEFAULT_CACHE_SYNC_TIMEOUT_MS);
      } catch (err) {
        // Stopped while the caches synced: a graceful stop, as documented, not a failure.
        if (!stop.aborted) throw err;
      }
      if (stop.aborted) return;
      this.#synced = true;
      this.logger.info({ informers: this.informers.status().length }, 'caches synced');

      const startAll = (leaderOnly: boolean, runSignal: AbortSignal, drainSignal: AbortSignal) => {
        for (const r of this.#runnables.filter((x) => x.needLeaderElection === leaderOnly)) {
          running.push(
            r.start(runSignal, drainSignal).catch((err: unknown) => {
              this.logger.error({ err, runnable: r.name }, 'runnable failed');
            }),
          );
        }
      };
      startAll(false, runStop.signal, drain.signal);

      const le = this.#o.leaderElection;
      if (le?.enabled) {
        const leaderStop = new AbortController();
        this.#elector = new LeaderElector({
          client: this.client,
          namespace: le.namespace,
          name: le.name,
          identity: this.identity,
          registry: this.registry,
          logger: this.logger.child({ component: 'leader-election' }),
          ...(le.leaseDurationMs ? { leaseDurationMs: le.leaseDurationMs } : {}),
          ...(le.renewDeadlineMs ? { renewDeadlineMs: le.renewDeadlineMs } : {}),
          ...(le.retryPeriodMs ? { retryPeriodMs: le.retryPeriodMs } : {}),
          onStartedLeading: (leading: AbortSignal) => {
            this.#leading = true;
            this.logger.info({ identity: this.identity }, 'became leader; starting leader-only controllers');
            startAll(
              true,
              AbortSignal.any([runStop.signal, leading]),
              AbortSignal.any([drain.signal, leading]),
            );
          },
          onStoppedLeading: () => {
            this.#leading = false;
            leaderStop.abort();
          },
        });
        // Nothing is written once the renew deadline passed, whatever the timers say (see
        // LeaderElector.assertLeading): the leader-only work's writes go through this client.
        const elector = this.#elector;
        this.client.guardWrites(() => elector.assertLeading());
        electing = this.#elector.run(electionStop.signal).catch((err: unknown) => {
          if (err instanceof LeadershipLostError) {
            lost = err;
            this.logger.error({ err }, 'leadership lost; stopping all leader work now');
            this.#stop.abort();
          } else if (!electionStop.signal.aborted) {
            this.logger.error({ err }, 'leader election failed');
            this.#stop.abort();
          }
        });
        this.#electionRunning = true;
      } else {
        this.#electionRunning = true;
        this.#leading = true;
        startAll(true, runStop.signal, drain.signal);
      }

      await new Promise<void>((resolve) =>
        stop.aborted ? resolve() : stop.addEventListener('abort', () => resolve(), { once: true }),
      );
    } finally {
      this.#synced = false;
      this.logger.info(
        { timeoutMs: drainTimeout },
        'stopping: no new work; waiting for in-flight reconciles',
      );
      if (lost) drain.abort(lost);
      const timer = setTimeout(() => drain.abort(new Error('graceful shutdown timed out')), drainTimeout);
      runStop.abort();
      await Promise.all(running);
      clearTimeout(timer);
      electionStop.abort();
      await electing;
      if (this.#elector && !lost) await this.#elector.release();
      this.#leading = false;
      cacheStop.abort();
      await Promise.all([this.metricsServer.close(), this.health.close()]);
      this.logger.info('manager stopped');
    }
    if (lost) throw lost;
  }
}
