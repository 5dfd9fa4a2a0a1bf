// Active-active replicas dividing a fixed number of buckets among themselves, each bucket
// owned through its own coordination.k8s.io/v1 Lease (issue 39's sharded mode; the
// runtime maps keys to buckets and uses this to decide which keys it may work on).
//
// Three kinds of Lease, all in one namespace:
//  - `<name>-member-<hash of identity>`: each replica's announcement, held and renewed by a
//    LeaderElector of its own (no one else campaigns for it). Deleted on release(), or by
//    another member once it has stayed expired for a while: identities are unique per
//    process, so a killed replica's Lease would otherwise stay forever.
//  - `<name>-bucket-<i>`: one per bucket, held by its owner through a LeaderElector that
//    exists only while this replica wants or holds the bucket.
//
// Every retry period a replica lists the member Leases, judges each live or expired by its
// own observation of renewals (LeaseObservation: never by comparing clocks across
// machines), computes the assignment over the live members (assignment.ts), campaigns for
// the buckets assigned to it and hands over those no longer assigned.
//
// Never one bucket on two replicas. A bucket's Lease is acquired only when released or
// expired by the acquirer's own observation (the election's rules). A hand-over first
// awaits onRevoked (the caller stops taking the bucket's keys and finishes its in-flight
// work) while the elector keeps renewing, then aborts the work signal, then releases the
// Lease. A holder that cannot renew within the renew deadline aborts the work signal at
// once, and assertOwns throws from that moment, even in a process resumed after a freeze
// whose deadline timer has not run yet. The election's timing rule (renew deadline < lease
// duration) then guarantees the old holder stopped before anyone can acquire.
//
// Views of the membership may differ for a moment (a join seen by one replica a retry
// period before another). Then two replicas may both want a bucket: the one holding it keeps
// it, renewing, until its own view says to hand over; the other keeps campaigning and finds
// it held. Or neither wants it: the bucket is idle until the views agree, at most about a
// retry period later. Never two owners, because ownership is the Lease, not the view.
//
// Takeover after a replica is killed: its membership expires in the survivors' view one
// lease duration after their last sighting of a renewal; its buckets' Leases stopped being
// renewed at the same moment, and the list that reads the membership reads them too, so the
// new owner's elector goes on counting from that list's first sighting instead of starting
// over (LeaderElectorOptions.observation). A kill -9 thus costs about one lease duration
// plus two retry periods; a release() hands over within about one retry period after the
// drains.
import { createHash } from 'node:crypto';
import {
  Kinds,
  isConflict,
  isNotFound,
  retyped,
  type KubeClient,
  type ResourceClient,
} from '@regulon/client';
import {
  oncePerRegistry,
  realClock,
  registeredMetric,
  silentLogger,
  sleep,
  timeoutSignal,
  type Clock,
  type Logger,
  type MetricsRegistry,
} from '@regulon/util';
import { Counter, Gauge } from 'prom-client';
import {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  LeaderElector,
  LeadershipLostError,
  LeaseObservation,
  type Lease,
} from '../election/leader-election.ts';
import { errorMessage } from '../support.ts';
import { assignBuckets } from './assignment.ts';

/**
 * Buckets the key space is split into. Enough for 16 replicas with one bucket each and
 * a fair spread at 3 to 5; each costs one Lease renewal (a GET and a PUT) per retry period
 * on its owner, so 16 buckets at the default 2 s retry period are 16 writes/s per group.
 */
export const DEFAULT_BUCKET_COUNT = 16;
/** Buckets this process owns, labelled by group `name` and `identity`. */
export const OWNED_BUCKETS_METRIC_NAME = 'regulon_sharding_owned_buckets';
/** Buckets this process stopped owning: `outcome` is `handed_over` (drained, released) or `lost`. */
export const BUCKET_HANDOVERS_METRIC_NAME = 'regulon_sharding_bucket_handovers_total';
/**
 * How long a member's Lease must have stayed expired before another member deletes it:
 * long enough that a replica frozen or cut off for a while finds its Lease still there (and
 * one deleted under it is created again at its next renewal: the Lease is found by name).
 */
export const DEFAULT_STALE_MEMBER_AFTER_MS = 60_000;
/** Live members (this process included) in this process's view of the group. */
export const LIVE_MEMBERS_METRIC_NAME = 'regulon_sharding_live_members';

export interface BucketOwnershipOptions {
  client: Pick<KubeClient, 'resource'>;
  /** Namespace of every Lease of the group. */
  namespace: string;
  /** The group: its Leases are `<name>-member-…` and `<name>-bucket-<i>`. Every replica must use the same. */
  name: string;
  /** Unique per process; see defaultIdentity. */
  identity: string;
  /** Default {@link DEFAULT_BUCKET_COUNT}; every replica of the group must use the same. */
  buckets?: number | undefined;
  /** Lease timings, as LeaderElector's and with its defaults; the same for members and buckets. */
  leaseDurationMs?: number | undefined;
  renewDeadlineMs?: number | undefined;
  /** Also the period at which the membership is re-read. */
  retryPeriodMs?: number | undefined;
  /** Default {@link DEFAULT_STALE_MEMBER_AFTER_MS}: a member Lease expired this long past its duration is deleted. */
  staleMemberAfterMs?: number | undefined;
  clock?: Clock | undefined;
  logger?: Logger | undefined;
  registry?: MetricsRegistry | undefined;
  /**
   * This process now owns `bucket`. `signal` aborts the moment the ownership ends without a
   * drain (the Lease was lost, or start()'s signal aborted); after a hand-over it aborts once
   * onRevoked has finished. A rejection is logged only.
   */
  onAcquired(bucket: number, signal: AbortSignal): void | Promise<void>;
  /**
   * This process stops owning `bucket`. On a hand-over it is awaited before the Lease is
   * released, the Lease still renewed meanwhile: stop taking the bucket's keys and finish the
   * work in flight (watch the work signal: it aborts if the Lease is lost during the drain).
   * After a loss it is called right after the work signal aborted and not awaited. Called
   * once per onAcquired. A rejection is logged, and the hand-over goes on.
   */
  onRevoked(bucket: number): void | Promise<void>;
}

/** assertOwns throws this when the bucket is not (or no longer) owned; `cause` is the LeadershipLostError after a loss. */
export class BucketNotOwnedError extends Error {
  readonly identity: string;
  readonly bucket: number;
  constructor(identity: string, bucket: number, cause?: unknown) {
    super(`${identity} does not own bucket ${bucket}`, cause === undefined ? undefined : { cause });
    this.name = 'BucketNotOwnedError';
    this.identity = identity;
    this.bucket = bucket;
  }
}

interface ShardingMetrics {
  owned: Gauge<'name' | 'identity'>;
  handovers: Counter<'name' | 'identity' | 'outcome'>;
  members: Gauge<'name' | 'identity'>;
}

const shardingMetrics = oncePerRegistry((registry): ShardingMetrics => ({
  owned: registeredMetric(
    registry,
    OWNED_BUCKETS_METRIC_NAME,
    () =>
      new Gauge({
        name: OWNED_BUCKETS_METRIC_NAME,
        help: 'Buckets of the sharding group `name` this process owns.',
        labelNames: ['name', 'identity'] as const,
        registers: [registry],
      }),
  ),
  handovers: registeredMetric(
    registry,
    BUCKET_HANDOVERS_METRIC_NAME,
    () =>
      new Counter({
        name: BUCKET_HANDOVERS_METRIC_NAME,
        help: 'Buckets this process stopped owning: handed_over after a drain, or lost when renewals failed.',
        labelNames: ['name', 'identity', 'outcome'] as const,
        registers: [registry],
      }),
  ),
  members: registeredMetric(
    registry,
    LIVE_MEMBERS_METRIC_NAME,
    () =>
      new Gauge({
        name: LIVE_MEMBERS_METRIC_NAME,
        help: 'Live members of the sharding group `name` as this process sees them, itself included.',
        labelNames: ['name', 'identity'] as const,
        registers: [registry],
      }),
  ),
}));

/** One bucket this process campaigns for, owns or is handing over; at most one per bucket at a time. */
interface BucketSlot {
  readonly bucket: number;
  readonly elector: LeaderElector;
  /** Stops the elector without releasing (start()'s signal aborted). */
  readonly stop: AbortController;
  /** run() settled; the slot outlives it only while a hand-over still has to release. */
  ended: Promise<void>;
  /** While owned: the work signal's controller. */
  work: AbortController | undefined;
  /** The elector's leading signal: its reason tells a loss from a stop. */
  leading: AbortSignal | undefined;
  /** Set when this replica decided to give the bucket up. */
  handOver: Promise<void> | undefined;
  /** onRevoked was called for the current ownership. */
  revoked: boolean;
}

/**
 * Owns a share of a group's buckets among the live replicas and hands them over on
 * rebalance; see the comment at the top of this file for the guarantees. One start() per
 * instance; release() ends it for good.
 */
export class BucketOwnership {
  readonly identity: string;
  readonly bucketCount: number;
  readonly #o: BucketOwnershipOptions;
  readonly #leases: ResourceClient<Lease>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #metrics: ShardingMetrics | undefined;
  readonly #timings: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  readonly #staleMemberAfterMs: number;
  readonly #memberPrefix: string;
  readonly #memberLease: string;
  readonly #slots = new Map<number, BucketSlot>();
  readonly #owned = new Set<number>();
  /** Member and bucket Leases as this process has seen them, by Lease name. */
  readonly #seen = new Map<string, LeaseObservation>();
  readonly #releasing = new AbortController();
  #member: LeaderElector | undefined;
  #started = false;
  /** Set once start()'s signal aborted: nothing is written from then on. */
  #halted = false;
  #finished: Promise<void> = Promise.resolve();
  #wake = Promise.withResolvers<void>();
  #view = '';

  constructor(options: BucketOwnershipOptions) {
    this.#o = options;
    this.identity = options.identity;
    this.bucketCount = options.buckets ?? DEFAULT_BUCKET_COUNT;
    if (!Number.isInteger(this.bucketCount) || this.bucketCount < 1) {
      throw new RangeError(`bucket ownership: buckets must be a positive integer, got ${this.bucketCount}`);
    }
    // The longest Lease name, `<name>-bucket-<n>`, must stay a DNS subdomain of at most 253 characters.
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(options.name) || options.name.length > 200) {
      throw new TypeError(
        `bucket ownership: name ${JSON.stringify(options.name)} must be a lowercase DNS name of at most 200 characters`,
      );
    }
    this.#timings = {
      leaseDurationMs: options.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS,
      renewDeadlineMs: options.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS,
      retryPeriodMs: options.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS,
    };
    this.#staleMemberAfterMs = options.staleMemberAfterMs ?? DEFAULT_STALE_MEMBER_AFTER_MS;
    this.#leases = options.client.resource(retyped<Lease>(Kinds.Lease));
    this.#clock = options.clock ?? realClock;
    this.#log = options.logger ?? silentLogger;
    this.#metrics = options.registry ? shardingMetrics(options.registry) : undefined;
    this.#memberPrefix = `${options.name}-member-`;
    // The identity may hold characters a name may not (defaultIdentity's `_`); the Lease's
    // holder carries it verbatim. 40 bits of hash make a collision between live replicas
    // negligible, and a collision would only keep one of the two out of the group.
    const hash = createHash('sha256').update(options.identity).digest('hex').slice(0, 10);
    this.#memberLease = `${this.#memberPrefix}${hash}`;
    // The elector validates the timings; building the membership one now fails fast.
    this.#member = this.#memberElector();
    this.#report();
  }

  /** The buckets this process owns now: acquired, and neither handed over nor lost. */
  owned(): ReadonlySet<number> {
    return this.#owned;
  }

  /**
   * Throws BucketNotOwnedError unless this process owns `bucket` now, losing the bucket first
   * when the local clock says its renew deadline passed without a renewal and the deadline's
   * timer has not fired yet (LeaderElector.assertLeading): call it before every write made
   * for the bucket's keys, so that a process resumed after SIGSTOP acts on no bucket it lost.
   */
  assertOwns(bucket: number): void {
    try {
      this.#slots.get(bucket)?.elector.assertLeading();
    } catch (err) {
      throw new BucketNotOwnedError(this.identity, bucket, err);
    }
    if (!this.#owned.has(bucket)) throw new BucketNotOwnedError(this.identity, bucket);
  }

  /**
   * Joins the group and keeps this process's share owned until `signal` aborts or release()
   * is called. An abort stops at once: every work signal aborts, onRevoked is called
   * unawaited, nothing more is written, and the Leases are left to expire (as a killed
   * process's would). release() hands everything over gracefully. Resolves when stopped.
   */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.#started) throw new Error(`bucket ownership ${this.#o.name}: start() called twice`);
    if (this.#releasing.signal.aborted) throw new Error(`bucket ownership ${this.#o.name}: already released`);
    this.#started = true;
    const finished = Promise.withResolvers<void>();
    this.#finished = finished.promise;
    const stop = signal ? AbortSignal.any([signal, this.#releasing.signal]) : this.#releasing.signal;
    const memberStop = new AbortController();
    const announcing = this.#announce(AbortSignal.any([memberStop.signal, stop]));
    try {
      while (!stop.aborted) {
        await this.#pass(stop);
        await this.#nextPass(stop);
      }
      if (this.#releasing.signal.aborted && !signal?.aborted) {
        await this.#leave(memberStop, announcing);
      } else {
        this.#halted = true;
        memberStop.abort();
        for (const slot of this.#slots.values()) slot.stop.abort();
        await Promise.all([announcing, ...[...this.#slots.values()].map((s) => s.ended)]);
      }
    } finally {
      this.#report();
      finished.resolve();
    }
  }

  /**
   * Graceful leave: stops start(), deletes the membership Lease so that the others rebalance
   * at once, then hands over every owned bucket (onRevoked awaited, then the Lease released)
   * and resolves when all are handed over. Never throws; a Lease that cannot be released
   * simply expires.
   */
  async release(): Promise<void> {
    this.#releasing.abort(new Error('bucket ownership released'));
    await this.#finished;
  }

  async #leave(memberStop: AbortController, announcing: Promise<void>): Promise<void> {
    memberStop.abort();
    await announcing;
    const timeout = timeoutSignal(this.#clock, this.#timings.renewDeadlineMs);
    try {
      await this.#leases.delete(this.#memberLease, { namespace: this.#o.namespace, signal: timeout.signal });
    } catch (err) {
      if (!isNotFound(err)) {
        this.#log.warn(
          { err, lease: this.#memberLease },
          'could not delete the membership Lease; it will expire',
        );
      }
    } finally {
      timeout.cancel();
    }
    this.#log.info({ group: this.#o.name, identity: this.identity }, 'left the sharding group; handing over');
    await Promise.all([...this.#slots.values()].map((slot) => this.#handOver(slot)));
  }

  /** Holds the membership Lease until `stop`, announcing again after a loss. */
  async #announce(stop: AbortSignal): Promise<void> {
    for (;;) {
      const elector = (this.#member ??= this.#memberElector());
      try {
        await elector.run(stop);
      } catch (err) {
        if (!(err instanceof LeadershipLostError)) throw err;
        this.#log.warn({ group: this.#o.name, reason: err.message }, 'membership lost; announcing again');
      }
      if (stop.aborted) return;
      this.#member = undefined;
    }
  }

  #memberElector(): LeaderElector {
    return new LeaderElector({
      client: this.#o.client,
      namespace: this.#o.namespace,
      name: this.#memberLease,
      identity: this.identity,
      ...this.#timings,
      clock: this.#clock,
      logger: this.#log,
      onStartedLeading: () => this.#kick(),
      onStoppedLeading: () => this.#kick(),
    });
  }

  /** Reads the membership, and campaigns for or hands over buckets to match the assignment. */
  async #pass(stop: AbortSignal): Promise<void> {
    await this.#observeMembers(stop);
    if (stop.aborted) return;
    const live = this.#liveMembers();
    const view = live.join(',');
    if (view !== this.#view) {
      this.#view = view;
      this.#log.info(
        { group: this.#o.name, identity: this.identity, members: live },
        'sharding members changed',
      );
    }
    const mine = new Set<number>(
      live.includes(this.identity) ? (assignBuckets(this.bucketCount, live).get(this.identity) ?? []) : [],
    );
    for (const bucket of mine) if (!this.#slots.has(bucket)) this.#campaign(bucket);
    for (const slot of this.#slots.values()) {
      if (!mine.has(slot.bucket)) void this.#handOver(slot);
    }
    this.#metrics?.members.set({ name: this.#o.name, identity: this.identity }, live.length);
  }

  async #observeMembers(stop: AbortSignal): Promise<void> {
    const timeout = timeoutSignal(this.#clock, this.#timings.renewDeadlineMs);
    try {
      const list = await this.#leases.list({
        namespace: this.#o.namespace,
        signal: AbortSignal.any([stop, timeout.signal]),
      });
      const listed = new Set<string>();
      for (const lease of list.items) {
        const name = lease.metadata?.name ?? '';
        if (!name.startsWith(`${this.#o.name}-`) || name === this.#memberLease) continue;
        listed.add(name);
        const observation = this.#observation(name);
        observation.observe(lease.spec ?? {});
        if (name.startsWith(this.#memberPrefix) && observation.expired(this.#staleMemberAfterMs)) {
          await this.#deleteStaleMember(lease, stop);
        }
      }
      for (const name of this.#seen.keys()) if (!listed.has(name)) this.#seen.delete(name);
    } catch (err) {
      // Observations age meanwhile: members whose renewals go unseen expire, which is the
      // safe direction (their buckets' Leases still decide).
      if (!stop.aborted) this.#log.warn({ err }, `could not list the sharding members: ${errorMessage(err)}`);
    } finally {
      timeout.cancel();
    }
  }

  /** Deletes a long-expired member Lease unless it changed since this process listed it. */
  async #deleteStaleMember(lease: Lease, stop: AbortSignal): Promise<void> {
    // Only a member deletes: a replica not in the group may be the one cut off.
    if (!this.#member?.isLeader) return;
    const name = lease.metadata?.name ?? '';
    const timeout = timeoutSignal(this.#clock, this.#timings.renewDeadlineMs);
    try {
      await this.#leases.delete(name, {
        namespace: this.#o.namespace,
        preconditions: { resourceVersion: lease.metadata?.resourceVersion ?? '' },
        signal: AbortSignal.any([stop, timeout.signal]),
      });
      this.#seen.delete(name);
      this.#log.info(
        { group: this.#o.name, lease: name, holder: lease.spec?.holderIdentity },
        'deleted the membership Lease of a member gone for good',
      );
    } catch (err) {
      // Renewed meanwhile (a conflict), or deleted by another member: both fine.
      if (!isNotFound(err) && !isConflict(err)) {
        this.#log.warn(
          { err, lease: name },
          `could not delete a stale membership Lease: ${errorMessage(err)}`,
        );
      }
    } finally {
      timeout.cancel();
    }
  }

  #observation(leaseName: string): LeaseObservation {
    let observation = this.#seen.get(leaseName);
    if (!observation) {
      observation = new LeaseObservation(this.#clock, this.#timings.leaseDurationMs);
      this.#seen.set(leaseName, observation);
    }
    return observation;
  }

  /** Live identities in this process's view, sorted; itself only while it holds its membership. */
  #liveMembers(): string[] {
    const live = new Set<string>();
    if (this.#member?.isLeader) live.add(this.identity);
    for (const [name, observation] of this.#seen) {
      const holder = observation.holder;
      if (name.startsWith(this.#memberPrefix) && holder && !observation.expired()) live.add(holder);
    }
    return [...live].sort();
  }

  #campaign(bucket: number): void {
    const stop = new AbortController();
    const lease = `${this.#o.name}-bucket-${bucket}`;
    const slot: BucketSlot = {
      bucket,
      stop,
      ended: Promise.resolve(),
      work: undefined,
      leading: undefined,
      handOver: undefined,
      revoked: false,
      elector: new LeaderElector({
        client: this.#o.client,
        namespace: this.#o.namespace,
        name: lease,
        identity: this.identity,
        ...this.#timings,
        clock: this.#clock,
        logger: this.#log,
        registry: this.#o.registry,
        observation: this.#observation(lease),
        onStartedLeading: (leading) => this.#own(slot, leading),
        onStoppedLeading: () => this.#disown(slot),
      }),
    };
    this.#slots.set(bucket, slot);
    slot.ended = slot.elector.run(stop.signal).catch((err: unknown) => {
      if (!(err instanceof LeadershipLostError)) this.#log.error({ err, bucket }, 'bucket election failed');
    });
    // A slot being handed over stays until its Lease is released: a second elector of the
    // same identity would renew the Lease the first one is about to clear.
    void slot.ended.then(() => {
      if (!slot.handOver) this.#drop(slot);
    });
  }

  #own(slot: BucketSlot, leading: AbortSignal): void {
    // Won while already on the way out: claim nothing; the elector stops and releases next.
    if (slot.handOver || this.#halted) return;
    const work = new AbortController();
    slot.work = work;
    slot.leading = leading;
    slot.revoked = false;
    this.#owned.add(slot.bucket);
    this.#report();
    this.#log.info({ group: this.#o.name, bucket: slot.bucket, identity: this.identity }, 'bucket acquired');
    this.#callback('onAcquired', slot.bucket, () => this.#o.onAcquired(slot.bucket, work.signal));
  }

  /**
   * Ends the ownership at once (synchronously, so the owned set and the work signal change
   * in the same turn as the elector's leading signal): a loss, or a stop without release.
   */
  #disown(slot: BucketSlot, reason?: Error): void {
    const work = slot.work;
    if (!work) return;
    slot.work = undefined;
    const cause: unknown = reason ?? slot.leading?.reason;
    this.#owned.delete(slot.bucket);
    work.abort(cause);
    this.#report();
    const lost = cause instanceof LeadershipLostError;
    if (lost) {
      this.#metrics?.handovers.inc({ name: this.#o.name, identity: this.identity, outcome: 'lost' });
      this.#log.error(
        { group: this.#o.name, bucket: slot.bucket, reason: errorMessage(cause) },
        'bucket lost; its work stopped now',
      );
    }
    if (!slot.revoked) {
      slot.revoked = true;
      this.#callback('onRevoked', slot.bucket, () => this.#o.onRevoked(slot.bucket));
    }
  }

  /** Drains (onRevoked, the Lease still renewed), then stops the work, then releases the Lease. Idempotent. */
  #handOver(slot: BucketSlot): Promise<void> {
    slot.handOver ??= (async () => {
      if (slot.work && !slot.revoked) {
        slot.revoked = true;
        this.#log.info({ group: this.#o.name, bucket: slot.bucket }, 'handing over bucket: draining');
        try {
          await this.#o.onRevoked(slot.bucket);
        } catch (err) {
          this.#log.error({ err, bucket: slot.bucket }, 'onRevoked failed; handing over anyway');
        }
        if (slot.work) {
          this.#disown(slot, new Error(`bucket ${slot.bucket} handed over`));
          this.#metrics?.handovers.inc({
            name: this.#o.name,
            identity: this.identity,
            outcome: 'handed_over',
          });
        }
      }
      // After start()'s signal aborted nothing more is written: the Lease expires.
      if (!this.#halted) await slot.elector.release();
      else slot.stop.abort();
      await slot.ended;
      this.#log.info({ group: this.#o.name, bucket: slot.bucket }, 'bucket handed over');
      this.#drop(slot);
    })();
    return slot.handOver;
  }

  #drop(slot: BucketSlot): void {
    if (this.#slots.get(slot.bucket) === slot) this.#slots.delete(slot.bucket);
    this.#kick();
  }

  #callback(which: string, bucket: number, call: () => void | Promise<void>): void {
    try {
      Promise.resolve(call()).catch((err: unknown) => this.#log.error({ err, bucket }, `${which} failed`));
    } catch (err) {
      this.#log.error({ err, bucket }, `${which} failed`);
    }
  }

  /** Waits a retry period, or less when something changed (membership won or lost, a slot ended). */
  async #nextPass(stop: AbortSignal): Promise<void> {
    const pause = new AbortController();
    const woken = this.#wake.promise.then(() => pause.abort());
    try {
      await sleep(this.#clock, this.#timings.retryPeriodMs, AbortSignal.any([stop, pause.signal]));
    } catch {
      // Woken or stopped.
    }
    void woken;
    this.#wake = Promise.withResolvers<void>();
  }

  #kick(): void {
    this.#wake.resolve();
  }

  #report(): void {
    this.#metrics?.owned.set({ name: this.#o.name, identity: this.identity }, this.#owned.size);
  }
}
