// Leader election over a coordination.k8s.io/v1 Lease, after client-go's
// tools/leaderelection.
//
// Safety rests on two rules:
//  - A candidate judges a lease expired only after it has itself watched the
//    record stay unchanged for the lease duration, timed on its own monotonic
//    clock. Comparing the holder's renewTime with the local wall clock would
//    make the election depend on clock skew between machines.
//  - A leader stops its work once no renewal has succeeded within the renew
//    deadline, counted from when that renewal was sent. Every candidate starts
//    its own expiry count no earlier than the write it observes, so with
//    renewDeadline < leaseDuration the old leader has stopped before anyone
//    else can acquire.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  Kinds,
  isAlreadyExists,
  isConflict,
  isNotFound,
  retyped,
  type KubeClient,
  type KubeObject,
  type ResourceClient,
} from '@regulon/client';
import {
  abortReason,
  oncePerRegistry,
  realClock,
  registeredMetric,
  silentLogger,
  sleep,
  timeoutSignal,
  type Clock,
  type Logger,
  type MetricsRegistry,
  type TimerHandle,
} from '@regulon/util';
import { Gauge } from 'prom-client';
import { errorMessage, microTime } from '../support.ts';

/** How long a lease is valid without renewal (controller-runtime's default). */
export const DEFAULT_LEASE_DURATION_MS = 15_000;
/** How long a leader keeps leading while its renewals fail (controller-runtime's default). */
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
/** Pause between acquire attempts and between renewals (controller-runtime's default). */
export const DEFAULT_RETRY_PERIOD_MS = 2_000;
/**
 * Acquire attempts wait retryPeriod * (1 + up to this factor), so standbys do
 * not hit the API server in lockstep. Smaller than client-go's 1.2 so that a
 * released lease is taken over within about one retry period.
 */
export const RETRY_JITTER_FACTOR = 0.2;
/** client-go's metric: 1 while this process leads the lease named by the `name` label, else 0. */
export const LEADER_ELECTION_METRIC_NAME = 'leader_election_master_status';

/** coordination.k8s.io/v1 LeaseSpec as JSON; times are MicroTime strings. */
export interface LeaseSpec {
  holderIdentity?: string | undefined;
  leaseDurationSeconds?: number | undefined;
  acquireTime?: string | undefined;
  renewTime?: string | undefined;
  leaseTransitions?: number | undefined;
}

export interface Lease extends KubeObject {
  spec?: LeaseSpec | undefined;
}

export interface LeaderElectorOptions {
  client: Pick<KubeClient, 'resource'>;
  /** Namespace and name of the Lease. */
  namespace: string;
  name: string;
  /** Unique per process; see {@link defaultIdentity}. */
  identity: string;
  /** Default {@link DEFAULT_LEASE_DURATION_MS}; written to the Lease in whole seconds, rounded up. */
  leaseDurationMs?: number | undefined;
  /** Default {@link DEFAULT_RENEW_DEADLINE_MS}; must be below leaseDurationMs. */
  renewDeadlineMs?: number | undefined;
  /** Default {@link DEFAULT_RETRY_PERIOD_MS}; its jittered maximum must be below renewDeadlineMs. */
  retryPeriodMs?: number | undefined;
  clock?: Clock | undefined;
  logger?: Logger | undefined;
  registry?: MetricsRegistry | undefined;
  /**
   * What this process already saw of the Lease (a list of a group's Leases, say), made with
   * the same clock: the expiry count goes on from its first sighting of the current record
   * instead of starting over at the elector's first read. The elector records its own reads
   * and writes into it.
   */
  observation?: LeaseObservation | undefined;
  /**
   * Called once this process leads. `signal` aborts the moment leadership
   * ends, which is when the work must stop. A rejection is logged only.
   */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  /**
   * Called when leadership ends. On a graceful stop or release() it is awaited
   * before the Lease is given up; after a lost lease it is called at once and
   * not awaited.
   */
  onStoppedLeading(): void | Promise<void>;
  /** Called with each new holder this process observes (itself included); never with an empty holder. */
  onNewLeader?(identity: string): void;
}

/**
 * What a renewal changes in a Lease's record: an observer counts a Lease's
 * expiry from when it first saw this key, never from the holder's times.
 */
export function leaseRecordKey(spec: LeaseSpec): string {
  return JSON.stringify([
    spec.holderIdentity ?? '',
    spec.leaseDurationSeconds ?? 0,
    spec.acquireTime ?? '',
    spec.renewTime ?? '',
    spec.leaseTransitions ?? 0,
  ]);
}

/**
 * A Lease record as this process has seen it, and when (on its own clock) it first saw it:
 * the first safety rule above. A holder's lease counts as expired once the record stayed
 * unchanged for the duration it declares, timed from that first sighting; shared by every
 * component that judges someone else's Lease (the elector, the sharded buckets' membership).
 */
export class LeaseObservation {
  readonly #clock: Clock;
  readonly #defaultDurationMs: number;
  #spec: LeaseSpec | undefined;
  #key = '';
  #seenAt = 0;

  /** `defaultDurationMs` stands in when a record declares no duration. */
  constructor(clock: Clock, defaultDurationMs: number) {
    this.#clock = clock;
    this.#defaultDurationMs = defaultDurationMs;
  }

  /** Records what a read or write returned; the expiry count restarts only when the record changed. */
  observe(spec: LeaseSpec): void {
    const key = leaseRecordKey(spec);
    if (key === this.#key) return;
    this.#key = key;
    this.#spec = spec;
    this.#seenAt = this.#clock.now();
  }

  /** The last record seen; undefined before the first. */
  get spec(): LeaseSpec | undefined {
    return this.#spec;
  }

  /** The holder of the last record seen; undefined when none was seen or the lease is released. */
  get holder(): string | undefined {
    return this.#spec?.holderIdentity || undefined;
  }

  /**
   * True once the last record stayed unchanged for its declared duration (a released lease
   * says 1 s), and `graceMs` more.
   */
  expired(graceMs = 0): boolean {
    const seconds = this.#spec?.leaseDurationSeconds;
    const durationMs = seconds && seconds > 0 ? seconds * 1000 : this.#defaultDurationMs;
    return this.#clock.now() >= this.#seenAt + durationMs + graceMs;
  }
}

/** run() rejects with this when renewals stopped succeeding or another holder took the lease. */
export class LeadershipLostError extends Error {
  readonly identity: string;
  /** `namespace/name` of the Lease. */
  readonly lease: string;
  constructor(identity: string, lease: string, reason: string) {
    super(`${identity} lost leadership of Lease ${lease}: ${reason}`);
    this.name = 'LeadershipLostError';
    this.identity = identity;
    this.lease = lease;
  }
}

/** POD_NAME (or the host name), plus a random suffix so two processes on one host never share an identity. */
export function defaultIdentity(): string {
  const base = process.env['POD_NAME'] || hostname();
  return `${base}_${randomUUID()}`;
}

// Every elector on a registry shares one gauge, labelled by lease name.
const leaderGauge = oncePerRegistry((registry) =>
  registeredMetric(
    registry,
    LEADER_ELECTION_METRIC_NAME,
    () =>
      new Gauge({
        name: LEADER_ELECTION_METRIC_NAME,
        help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
        labelNames: ['name'] as const,
        registers: [registry],
      }),
  ),
);

/** What one try to acquire or renew found. */
type Outcome =
  | 'acquired'
  // Another identity holds an unexpired lease.
  | 'held'
  // Lost a write race or the request failed; try again next period.
  | 'failed';

/**
 * Campaigns for a Lease and calls back when this process starts and stops
 * leading. One `run()` at a time; `release()` ends it for good.
 */
export class LeaderElector {
  readonly identity: string;
  /** `namespace/name` of the Lease. */
  readonly lease: string;
  readonly #o: LeaderElectorOptions;
  readonly #leases: ResourceClient<Lease>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #gauge: Gauge<'name'> | undefined;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #release = new AbortController();
  #runFinished: Promise<void> | undefined;
  #leading: AbortController | undefined;
  /** While leading: loses leadership once the local clock passed the renew deadline (see assertLeading). */
  #checkDeadline: (() => void) | undefined;
  #stopped: Promise<void> = Promise.resolve();
  readonly #observed: LeaseObservation;
  #reportedLeader = '';

  constructor(options: LeaderElectorOptions) {
    this.#o = options;
    this.identity = options.identity;
    this.lease = `${options.namespace}/${options.name}`;
    this.#leaseDurationMs = options.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS;
    this.#renewDeadlineMs = options.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS;
    this.#retryPeriodMs = options.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS;
    if (!options.identity) throw new TypeError('leader election: identity must not be empty');
    if (!options.namespace || !options.name)
      throw new TypeError('leader election: namespace and name are required');
    if (!(this.#retryPeriodMs > 0)) throw new RangeError('leader election: retryPeriodMs must be > 0');
    if (!(this.#leaseDurationMs > this.#renewDeadlineMs)) {
      throw new RangeError('leader election: leaseDurationMs must be greater than renewDeadlineMs');
    }
    if (!(this.#renewDeadlineMs > this.#retryPeriodMs * (1 + RETRY_JITTER_FACTOR))) {
      throw new RangeError(
        `leader election: renewDeadlineMs must be greater than ${1 + RETRY_JITTER_FACTOR} * retryPeriodMs`,
      );
    }
    this.#leases = options.client.resource(retyped<Lease>(Kinds.Lease));
    this.#clock = options.clock ?? realClock;
    this.#observed = options.observation ?? new LeaseObservation(this.#clock, this.#leaseDurationMs);
    this.#log = options.logger ?? silentLogger;
    this.#gauge = options.registry ? leaderGauge(options.registry) : undefined;
    this.#gauge?.set({ name: options.name }, 0);
  }

  /** True while this process leads (between onStartedLeading and onStoppedLeading). */
  get isLeader(): boolean {
    return this.#leading !== undefined && !this.#leading.signal.aborted;
  }

  /**
   * Throws the LeadershipLostError once this process has lost its leadership, losing it first
   * when the local clock says the renew deadline passed without a renewal and the deadline's
   * timer has not fired yet. A process resumed after a freeze (SIGSTOP, a paused VM) runs the
   * I/O that completed meanwhile before its timers, so a write in that turn would go out before
   * the timer stops it: the Manager checks here before every write (KubeClient.guardWrites).
   * Never throws when the election was stopped or released rather than lost.
   */
  assertLeading(): void {
    this.#checkDeadline?.();
    const reason: unknown = this.#leading?.signal.reason;
    if (this.#leading?.signal.aborted && reason instanceof LeadershipLostError) throw reason;
  }

  /** The holder in the last observed record; undefined when none was seen or the lease is released. */
  get leader(): string | undefined {
    return this.#observed.holder;
  }

  /**
   * Campaigns until leading, then renews until `signal` aborts or release()
   * is called (resolves, after onStoppedLeading has finished) or leadership
   * is lost (rejects with LeadershipLostError right after the leading signal
   * aborted and onStoppedLeading was called). The Lease stays held after a
   * plain abort; call release() to hand it over early.
   */
  async run(signal?: AbortSignal): Promise<void> {
    if (this.#release.signal.aborted) throw new Error(`leader election for ${this.lease}: already released`);
    if (this.#runFinished) throw new Error(`leader election for ${this.lease}: already running`);
    const finished = Promise.withResolvers<void>();
    this.#runFinished = finished.promise;
    const stop = signal ? AbortSignal.any([signal, this.#release.signal]) : this.#release.signal;
    try {
      const acquiredAt = await this.#acquire(stop);
      if (acquiredAt !== undefined) await this.#lead(stop, acquiredAt);
    } finally {
      this.#runFinished = undefined;
      finished.resolve();
    }
  }

  /**
   * Graceful hand-over: stops run() (waiting for onStoppedLeading), then, if
   * this process holds the Lease, clears its holder and shortens it to one
   * second so that a standby takes over at its next attempt instead of waiting
   * out the lease. Never throws; a failure is logged and the lease then simply
   * expires.
   */
  async release(): Promise<void> {
    this.#release.abort(new Error('leader election released'));
    if (this.#runFinished) await this.#runFinished;
    await this.#stopped;
    this.#setGauge(0);
    if (this.#observed.holder !== this.identity) return;
    const timeout = timeoutSignal(this.#clock, this.#renewDeadlineMs);
    const opts = { namespace: this.#o.namespace, signal: timeout.signal };
    try {
      // A renewal cut short may still have landed, leaving our resourceVersion
      // stale: re-read and retry rather than leave the standby waiting.
      for (let attempt = 0; attempt < 3; attempt++) {
        const lease = await this.#leases.get(this.#o.name, opts);
        if (lease.spec?.holderIdentity !== this.identity) return;
        const now = microTime(new Date());
        const spec: LeaseSpec = {
          ...lease.spec,
          holderIdentity: '',
          leaseDurationSeconds: 1,
          acquireTime: now,
          renewTime: now,
        };
        try {
          const released = await this.#leases.replace({ ...lease, spec }, { signal: timeout.signal });
          this.#observe(released);
          this.#log.info({ lease: this.lease, identity: this.identity }, 'released leader lease');
          return;
        } catch (err) {
          if (!isConflict(err)) throw err;
        }
      }
      this.#log.warn(
        { lease: this.lease },
        'could not release the leader lease: kept conflicting; it will expire instead',
      );
    } catch (err) {
      this.#log.warn(
        { err, lease: this.lease },
        'could not release the leader lease; it will expire instead',
      );
    } finally {
      timeout.cancel();
    }
  }

  /** Tries every jittered retry period; returns when the successful try started, or undefined once stopped. */
  async #acquire(stop: AbortSignal): Promise<number | undefined> {
    this.#log.info({ lease: this.lease, identity: this.identity }, 'attempting to acquire leader lease');
    for (;;) {
      if (stop.aborted) return undefined;
      const startedAt = this.#clock.now();
      const outcome = await this.#attempt(stop, this.#renewDeadlineMs);
      // A success that took longer than the renew deadline would start out
      // with no time left to lead; the next try renews it properly.
      if (outcome === 'acquired' && this.#clock.now() - startedAt < this.#renewDeadlineMs) return startedAt;
      if (outcome === 'held')
        this.#log.debug({ lease: this.lease, holder: this.leader }, 'lease is held by another candidate');
      try {
        await sleep(this.#clock, this.#retryPeriodMs * (1 + Math.random() * RETRY_JITTER_FACTOR), stop);
      } catch {
        return undefined;
      }
    }
  }

  async #lead(stop: AbortSignal, acquiredAt: number): Promise<void> {
    const leading = new AbortController();
    this.#leading = leading;
    let lost: LeadershipLostError | undefined;
    const lose = (reason: string): void => {
      if (leading.signal.aborted) return;
      lost = new LeadershipLostError(this.identity, this.lease, reason);
      this.#log.error(
        { lease: this.lease, identity: this.identity, reason },
        'leadership lost; stopping leader work now',
      );
      this.#stopLeading(lost);
    };
    let renewedAt = acquiredAt;
    let deadline: TimerHandle | undefined;
    const armDeadline = (): void => {
      if (deadline) this.#clock.clearTimeout(deadline);
      deadline = this.#clock.setTimeout(
        () => lose(`no renewal succeeded within the renew deadline of ${this.#renewDeadlineMs} ms`),
        renewedAt + this.#renewDeadlineMs - this.#clock.now(),
      );
    };
    armDeadline();
    this.#checkDeadline = () => {
      if (this.#clock.now() >= renewedAt + this.#renewDeadlineMs)
        lose(`no renewal succeeded within the renew deadline of ${this.#renewDeadlineMs} ms`);
    };
    this.#setGauge(1);
    this.#log.info({ lease: this.lease, identity: this.identity }, 'acquired leader lease; leading');
    this.#callStartedLeading(leading.signal);

    const active = AbortSignal.any([stop, leading.signal]);
    try {
      for (;;) {
        await sleep(this.#clock, this.#retryPeriodMs, active);
        const startedAt = this.#clock.now();
        const outcome = await this.#attempt(active, renewedAt + this.#renewDeadlineMs - startedAt);
        if (active.aborted) break;
        if (outcome === 'acquired') {
          renewedAt = startedAt;
          armDeadline();
        } else if (outcome === 'held') {
          // The record names someone else: they acquired it, so waiting for
          // the deadline would only prolong two leaders working at once.
          lose(`the lease is now held by ${this.leader ?? 'another candidate'}`);
          break;
        }
      }
    } catch {
      // Aborted while waiting: stopped, released or lost.
    } finally {
      if (deadline) this.#clock.clearTimeout(deadline);
      this.#checkDeadline = undefined;
    }
    if (lost) throw lost;
    this.#stopLeading(undefined);
    await this.#stopped;
  }

  /** Aborts the leading signal, zeroes the gauge and calls onStoppedLeading, all synchronously. */
  #stopLeading(reason: Error | undefined): void {
    const leading = this.#leading;
    if (!leading || leading.signal.aborted) return;
    leading.abort(reason ?? new Error('leader election stopped'));
    this.#setGauge(0);
    try {
      this.#stopped = Promise.resolve(this.#o.onStoppedLeading()).catch((err: unknown) => {
        this.#log.error({ err }, 'onStoppedLeading failed');
      });
    } catch (err) {
      this.#log.error({ err }, 'onStoppedLeading failed');
      this.#stopped = Promise.resolve();
    }
  }

  #callStartedLeading(signal: AbortSignal): void {
    try {
      Promise.resolve(this.#o.onStartedLeading(signal)).catch((err: unknown) => {
        this.#log.error({ err }, 'onStartedLeading failed');
      });
    } catch (err) {
      this.#log.error({ err }, 'onStartedLeading failed');
    }
  }

  /** One try, bounded by `timeoutMs`; errors are logged and reported as 'failed'. */
  async #attempt(parent: AbortSignal, timeoutMs: number): Promise<Outcome> {
    const timeout = timeoutSignal(this.#clock, Math.max(0, timeoutMs));
    const signal = AbortSignal.any([parent, timeout.signal]);
    try {
      return await this.#tryAcquireOrRenew(signal);
    } catch (err) {
      if (!parent.aborted) {
        const cause = signal.aborted ? abortReason(signal) : err;
        this.#log.warn(
          { err: cause, lease: this.lease },
          `failed to acquire or renew the leader lease: ${errorMessage(cause)}`,
        );
      }
      return 'failed';
    } finally {
      timeout.cancel();
    }
  }

  async #tryAcquireOrRenew(signal: AbortSignal): Promise<Outcome> {
    const { namespace, name } = this.#o;
    let lease: Lease;
    try {
      lease = await this.#leases.get(name, { namespace, signal });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      const now = microTime(new Date());
      try {
        const created = await this.#leases.create(
          {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name, namespace },
            spec: {
              holderIdentity: this.identity,
              leaseDurationSeconds: this.#leaseSeconds(),
              acquireTime: now,
              renewTime: now,
              leaseTransitions: 0,
            },
          },
          { signal },
        );
        this.#observe(created);
        return 'acquired';
      } catch (createErr) {
        if (isAlreadyExists(createErr)) return 'failed';
        throw createErr;
      }
    }

    this.#observe(lease);
    const old = lease.spec ?? {};
    const holder = old.holderIdentity ?? '';
    const ours = holder === this.identity;
    if (holder !== '' && !ours && !this.#observed.expired()) return 'held';

    const now = microTime(new Date());
    const transitions = old.leaseTransitions ?? 0;
    const spec: LeaseSpec = {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.#leaseSeconds(),
      acquireTime: ours && old.acquireTime ? old.acquireTime : now,
      renewTime: now,
      leaseTransitions: ours ? transitions : transitions + 1,
    };
    try {
      // The resourceVersion we read makes this a compare-and-swap: of several
      // candidates seeing an expired lease, exactly one write succeeds.
      const updated = await this.#leases.replace({ ...lease, spec }, { signal });
      this.#observe(updated);
      return 'acquired';
    } catch (err) {
      if (isConflict(err)) return 'failed';
      throw err;
    }
  }

  #observe(lease: Lease): void {
    const spec = lease.spec ?? {};
    this.#observed.observe(spec);
    const holder = spec.holderIdentity ?? '';
    if (holder !== '' && holder !== this.#reportedLeader) {
      this.#reportedLeader = holder;
      this.#log.info({ lease: this.lease, leader: holder }, 'new leader observed');
      try {
        this.#o.onNewLeader?.(holder);
      } catch (err) {
        this.#log.error({ err }, 'onNewLeader failed');
      }
    }
  }

  #leaseSeconds(): number {
    return Math.max(1, Math.ceil(this.#leaseDurationMs / 1000));
  }

  #setGauge(value: 0 | 1): void {
    this.#gauge?.set({ name: this.#o.name }, value);
  }
}
