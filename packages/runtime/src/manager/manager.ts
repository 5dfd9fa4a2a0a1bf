import { SharedInformerFactory, type Informer } from '@regulon/cache';
import { KubeClient, type KubeObject, type ResourceType } from '@regulon/client';
import type { Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { ControllerBuilder } from '../builder/builder.ts';
import { Controller, type Runnable } from '../reconcile/controller.ts';
import { EventRecorder } from '../events/events.ts';
import { defaultIdentity, LeaderElector, LeadershipLostError } from '../election/leader-election.ts';
import { createLogger } from '../observability/logging.ts';
import { registerProcessMetrics } from '../observability/metrics.ts';
import type { CacheSource } from '../reconcile/cache-source.ts';
import { ShardedControllers } from '../sharding/sharded-controllers.ts';
import { ShardedSource } from '../sharding/sharded-source.ts';
import { RunnableGroup } from './runnable-group.ts';
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
  /**
   * Hand the Lease over on a graceful stop (default true). False leaves it
   * to expire, as controller-runtime does unless LeaderElectionReleaseOnCancel
   * is set: a standby then leads only after the lease duration, as after a crash.
   */
  releaseOnStop?: boolean | undefined;
  /**
   * Sync the caches before campaigning (default true), so a takeover
   * reconciles at once from them. False starts the caches, and the others
   * group after them, only once leading: a cold standby, which lists
   * everything after it won, is not ready until then and serves no webhook.
   * It is there to compare takeover times, not to run, and not with `sharding`.
   */
  warmStandby?: boolean | undefined;
}

/** The sharding group's Lease name prefix when ShardingConfig.name is not given. */
export const DEFAULT_SHARDING_NAME = 'regulon-shards';

/**
 * Sharded mode (issue 39): the controllers run on every replica and divide the key space,
 * hashed by namespace, into buckets owned through Leases (BucketOwnership). Every replica of
 * one operator must use the same namespace, name and bucket count.
 */
export interface ShardingConfig {
  /** Namespace of the group's Leases. */
  namespace: string;
  /** The group: its Leases are `<name>-member-…` and `<name>-bucket-<i>` (default {@link DEFAULT_SHARDING_NAME}). */
  name?: string | undefined;
  /** Default DEFAULT_BUCKET_COUNT (16). */
  buckets?: number | undefined;
  /** Lease timings of the members and buckets, with LeaderElector's defaults. */
  leaseDurationMs?: number | undefined;
  renewDeadlineMs?: number | undefined;
  retryPeriodMs?: number | undefined;
  /**
   * Off by default: every replica caches every object, so a bucket changes hands warm. On,
   * the sharded controllers' caches of namespaced kinds hold the owned buckets' objects
   * only (the API server cuts them with the ShardedListAndWatch gate, the client otherwise):
   * memory about 1/N per replica, but a bucket acquired is listed before its keys are
   * reconciled. See ShardedSource.
   */
  shardCaches?: boolean | undefined;
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
  /**
   * Off by default. On, the controllers that need leader election run on every replica
   * instead, each on the keys of the buckets the replica owns (see ShardedControllers);
   * leader election, when enabled too, still guards the other leader-only runnables (the
   * storage-version migrator, webhook certificates). Controllers built with
   * `needLeaderElection: false` keep working on every key on every replica.
   */
  sharding?: ShardingConfig | undefined;
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
 * What it runs is in groups, started in this order, each once the one before
 * is up:
 *  1. servers: metrics and health (closed again if start() fails);
 *  2. caches: every informer, waited for until synced; so a standby's caches
 *     are warm before it campaigns, and a takeover reconciles from them at
 *     once, with no fresh list (a cold standby, `warmStandby: false`, starts
 *     groups 2 and 3 only once leading);
 *  3. others: runnables that need no leadership (webhook servers, controllers
 *     built with `needLeaderElection: false`), on every replica;
 *  4. the election (with leader election on);
 *  5. leader-only: the other controllers, once leading; leadership lost ends
 *     their work at once and start() rejects with LeadershipLostError.
 * In sharded mode (`sharding`) the controllers of group 5 form a sharded group
 * instead, started with group 3 on every replica, with the bucket ownership
 * beside it; a graceful stop hands every bucket over (drained, then its Lease
 * released) while the groups drain.
 * A graceful stop goes the other way: leader-only and others take no new work
 * and drain their in-flight reconciles (up to the shutdown timeout) while the
 * Lease is still renewed; then the Lease is released; then the caches stop;
 * then the servers close.
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
  readonly #others: RunnableGroup;
  readonly #leaderOnly: RunnableGroup;
  /** Sharded mode only: the controllers that divide the key space, and their buckets. */
  readonly #sharded: RunnableGroup;
  readonly #sharding: ShardedControllers | undefined;
  /** ShardingConfig.shardCaches: one source per kind and metadata-only flag. */
  readonly #shardedSources = new Map<string, ShardedSource<KubeObject>>();
  readonly #stop = new AbortController();
  #synced = false;
  #electionRunning = false;
  #leading = false;
  #started = false;
  #elector: LeaderElector | undefined;
  /** Settles once the election has ended, lost or not (see #campaign). */
  #electing: Promise<void> | undefined;
  #lost: LeadershipLostError | undefined;
  /** What ended a start whose caches sync only once leading (a cold standby's sync that timed out). */
  #failure: Error | undefined;

  constructor(options: ManagerOptions = {}) {
    this.#o = options;
    this.registry = options.registry ?? new Registry();
    this.logger = options.logger ?? createLogger();
    this.client = options.client ?? KubeClient.load({ registry: this.registry });
    this.tracer = options.tracer ?? runtimeTracer();
    this.identity = options.leaderElection?.identity ?? defaultIdentity();
    this.informers = new SharedInformerFactory(this.client, {
      logger: this.logger.child({ component: 'cache' }),
      // Sharded informers (sharding.shardCaches) report where their shard is cut.
      registry: this.registry,
    });
    this.#others = new RunnableGroup('others', this.logger);
    this.#leaderOnly = new RunnableGroup('leader-only', this.logger);
    this.#sharded = new RunnableGroup('sharded', this.logger);
    const sharding = options.sharding;
    if (sharding && options.leaderElection?.enabled && options.leaderElection.warmStandby === false) {
      // A cold standby starts its caches only once leading: its sharded controllers, which
      // run on every replica, would have nothing to reconcile from.
      throw new Error('manager: sharding needs warm caches on every replica (leaderElection.warmStandby)');
    }
    if (sharding) {
      this.#sharding = new ShardedControllers({
        client: this.client,
        namespace: sharding.namespace,
        name: sharding.name ?? DEFAULT_SHARDING_NAME,
        identity: this.identity,
        buckets: sharding.buckets,
        leaseDurationMs: sharding.leaseDurationMs,
        renewDeadlineMs: sharding.renewDeadlineMs,
        retryPeriodMs: sharding.retryPeriodMs,
        logger: this.logger.child({ component: 'sharding' }),
        registry: this.registry,
        cacheSyncTimeoutMs: options.cacheSyncTimeoutMs ?? DEFAULT_CACHE_SYNC_TIMEOUT_MS,
      });
      this.#installWriteGuard();
    }
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

  /**
   * What a controller reads `type` through (ControllerHost): the shared informer, except for
   * a sharded controller's namespaced kind when `sharding.shardCaches` is on, which reads a
   * ShardedSource of the owned buckets, shared by every sharded controller.
   */
  controllerCache<T extends KubeObject>(
    type: ResourceType<T>,
    opts: { indexers?: Record<string, (obj: T) => string[]>; needLeaderElection: boolean },
  ): CacheSource<T> {
    const sharding = this.#sharding;
    if (!sharding || !this.#o.sharding?.shardCaches || !opts.needLeaderElection || !type.namespaced)
      return this.informerFor(type, opts);
    const key = `${type.group}/${type.kind}${type.metadataOnly ? ' (metadata only)' : ''}`;
    let source = this.#shardedSources.get(key) as ShardedSource<T> | undefined;
    if (!source) {
      source = new ShardedSource<T>({
        factory: this.informers,
        type,
        namespace: this.#o.namespace,
        buckets: sharding.ownership.bucketCount,
      });
      this.#shardedSources.set(key, source as unknown as ShardedSource<KubeObject>);
      sharding.addSource(source as unknown as ShardedSource<KubeObject>);
    }
    if (opts.indexers) source.addIndexers(opts.indexers);
    return source;
  }

  /** Starts building a controller named `name` (used in metrics, logs and traces). */
  controller(name: string): ControllerBuilder {
    return new ControllerBuilder(this, name);
  }

  /**
   * Adds a runnable to the leader-only group, or to the others when it needs no leadership;
   * in sharded mode a controller that needs leader election joins the sharded group instead.
   */
  add(runnable: Runnable): void {
    const groups = [this.#others, this.#leaderOnly, this.#sharded];
    if (groups.some((g) => g.members.some((r) => r.name === runnable.name)))
      throw new Error(`a runnable named ${runnable.name} is already registered`);
    if (this.#sharding && runnable.needLeaderElection && runnable instanceof Controller) {
      this.#sharding.add(runnable);
      this.#sharded.add(runnable);
      return;
    }
    (runnable.needLeaderElection ? this.#leaderOnly : this.#others).add(runnable);
  }

  /** In sharded mode: the buckets this replica's controllers work on now. */
  get ownedBuckets(): ReadonlySet<number> | undefined {
    return this.#sharding?.owned();
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
    // Aborts in-flight reconciles: when the graceful shutdown times out, or the Lease is lost.
    const drain = new AbortController();
    // The Lease is renewed until in-flight work has drained, so no other
    // replica can lead while this one still reconciles.
    const electionStop = new AbortController();

    // Caches, then the others group, before the election, or (a cold standby) once leading.
    const startCachesAndOthers = async (until: AbortSignal): Promise<boolean> => {
      if (!(await this.#startCaches(until, cacheStop.signal))) return false;
      this.#others.start(drain.signal);
      this.#startSharding(drain.signal);
      return true;
    };
    const le = this.#o.leaderElection;
    const warm = !le?.enabled || (le.warmStandby ?? true);

    await this.#startServers();
    try {
      if (warm && !(await startCachesAndOthers(stop))) return;
      this.#campaign(electionStop.signal, async (leading) => {
        if (!warm) {
          try {
            if (!(await startCachesAndOthers(leading ? AbortSignal.any([stop, leading]) : stop))) return;
          } catch (err) {
            this.#failure = err instanceof Error ? err : new Error(String(err));
            this.#stop.abort();
            return;
          }
        }
        this.#leaderOnly.start(drain.signal, leading);
      });
      await new Promise<void>((resolve) =>
        stop.aborted ? resolve() : stop.addEventListener('abort', () => resolve(), { once: true }),
      );
    } finally {
      await this.#shutdown(drain, electionStop, cacheStop);
    }
    if (this.#failure) throw this.#failure;
    if (this.#lost) throw this.#lost;
  }

  /** Group 1: the metrics and health servers. */
  async #startServers(): Promise<void> {
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
  }

  /**
   * Group 2: starts every informer and waits until all have synced. False
   * when `stop` aborted first: a stop during the sync is graceful, not a failure.
   */
  async #startCaches(stop: AbortSignal, cacheStop: AbortSignal): Promise<boolean> {
    this.informers.start(cacheStop);
    try {
      await this.informers.waitForSync(stop, this.#o.cacheSyncTimeoutMs ?? DEFAULT_CACHE_SYNC_TIMEOUT_MS);
    } catch (err) {
      if (!stop.aborted) throw err;
    }
    if (stop.aborted) return false;
    this.#synced = true;
    this.logger.info({ informers: this.informers.status().length }, 'caches synced');
    return true;
  }

  /**
   * Sharded mode: the sharded controllers start owning no key, then the bucket ownership
   * joins the group and hands them buckets. It runs until #shutdown releases it.
   */
  #startSharding(drain: AbortSignal): void {
    if (!this.#sharding) return;
    this.#sharded.start(drain);
    this.#sharding.ownership.start().catch((err: unknown) => {
      this.logger.error({ err }, 'bucket ownership failed; this replica owns no bucket');
    });
  }

  /**
   * One write guard for the client (KubeClient.guardWrites takes one): a lost leadership
   * refuses every write (see LeaderElector.assertLeading), and in sharded mode a reconcile
   * writes only while its key's bucket is owned here.
   */
  #installWriteGuard(): void {
    this.client.guardWrites(() => {
      this.#elector?.assertLeading();
      this.#sharding?.guardWrite();
    });
  }

  /**
   * Group 4: campaigns for the Lease and calls `onLeading` with the
   * leadership's signal once leading, which starts group 5; without leader
   * election this replica leads from the start.
   */
  #campaign(electionStop: AbortSignal, onLeading: (leading?: AbortSignal) => Promise<void>): void {
    this.#electionRunning = true;
    const le = this.#o.leaderElection;
    if (!le?.enabled) {
      this.#leading = true;
      void onLeading();
      return;
    }
    const elector = new LeaderElector({
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
        return onLeading(leading);
      },
      onStoppedLeading: () => {
        this.#leading = false;
      },
    });
    this.#elector = elector;
    // Nothing is written once the renew deadline passed, whatever the timers say (see
    // LeaderElector.assertLeading): the leader-only work's writes go through this client.
    this.#installWriteGuard();
    this.#electing = elector.run(electionStop).catch((err: unknown) => {
      if (err instanceof LeadershipLostError) {
        this.#lost = err;
        this.logger.error({ err }, 'leadership lost; stopping all leader work now');
        this.#stop.abort();
      } else if (!electionStop.aborted) {
        this.logger.error({ err }, 'leader election failed');
        this.#stop.abort();
      }
    });
  }

  /**
   * The groups' stop order: leader-only and others drain together (the Lease
   * still renewed), then the election ends and the Lease is released, then the
   * caches stop, then the servers close.
   */
  async #shutdown(drain: AbortController, electionStop: AbortController, cacheStop: AbortController) {
    this.#synced = false;
    const drainTimeout = this.#o.gracefulShutdownTimeoutMs ?? DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS;
    this.logger.info({ timeoutMs: drainTimeout }, 'stopping: no new work; waiting for in-flight reconciles');
    if (this.#lost) drain.abort(this.#lost);
    const timer = setTimeout(() => drain.abort(new Error('graceful shutdown timed out')), drainTimeout);
    // Handing the buckets over waits for their keys' reconciles, as the groups' drain does.
    await Promise.all([
      this.#leaderOnly.stop(),
      this.#others.stop(),
      this.#sharded.stop(),
      this.#sharding?.ownership.release(),
    ]);
    this.#sharding?.stop();
    clearTimeout(timer);
    electionStop.abort();
    await this.#electing;
    const release = this.#o.leaderElection?.releaseOnStop ?? true;
    if (this.#elector && !this.#lost && release) await this.#elector.release();
    this.#leading = false;
    cacheStop.abort();
    await Promise.all([this.metricsServer.close(), this.health.close()]);
    this.logger.info('manager stopped');
  }
}
