// The controllers of a sharded manager (issue 39): they run on every replica, and each
// replica works only on the keys of the buckets it owns through a BucketOwnership.
//
// Keys are hashed by namespace (bucketOfKey), not by uid. An owner and the children its
// reconcile reads and writes share a namespace (Kubernetes owner references cannot cross
// namespaces), so they land in one bucket, on one replica, and that replica's cache and
// queue see both; by uid an owner's children would fall in other buckets, on other replicas.
// The cost: one namespace is never spread over replicas, so a hot namespace is one replica's
// load whatever the replica count, and every cluster-scoped object hashes the namespace ''
// into one and the same bucket. The API server's shardSelector can hash the namespace too, so
// a replica's caches can later hold its buckets' namespaces only (issue 39, step 4).
import { bucketOfKey, type OwnedKeys } from '../reconcile/owned-keys.ts';
import { currentReconcile } from '../reconcile/current-reconcile.ts';
import type { Controller } from '../reconcile/controller.ts';
import type { KubeObject } from '@regulon/client';
import { backoffDelay, type Backoff, type Logger } from '@regulon/util';
import { BucketOwnership, type BucketOwnershipOptions } from './bucket-ownership.ts';
import { ownedKey, type ShardedSource } from './sharded-source.ts';

export type ShardedControllersOptions = Omit<BucketOwnershipOptions, 'onAcquired' | 'onRevoked'> & {
  /** Gives up an informer swap whose new informer has not synced by then (the old one keeps serving). */
  cacheSyncTimeoutMs: number;
};

/** A failed swap is tried again after 1 s, doubling per failure in a row up to 30 s. */
export const RESHARD_RETRY: Backoff = { initialMs: 1000, maxMs: 30_000 };

/**
 * Hands keys to a replica's sharded controllers as its BucketOwnership acquires and gives up
 * buckets:
 *  - a bucket acquired joins the owned set, every controller owns its keys from then on, and
 *    the keys of the bucket's objects already in the (warm) caches are queued at the initial
 *    list's low priority, because the queue dropped them while another replica owned them;
 *  - a bucket given up leaves the set, and every controller's setOwnedKeys is awaited before
 *    onRevoked returns: the Lease is released only after none of its keys is queued or being
 *    reconciled here;
 *  - a write made by a reconcile of a key whose bucket this replica does not own (any more)
 *    is refused by guardWrite, even in a process resumed after a freeze (assertOwns).
 */
export class ShardedControllers {
  readonly ownership: BucketOwnership;
  readonly #controllers: Controller[] = [];
  readonly #names = new Set<string>();
  readonly #owned = new Set<number>();
  readonly #buckets: number;
  /** The one predicate every controller is given; it reads #owned, which changes. */
  readonly #owns: OwnedKeys;
  /** The caches that hold the owned buckets' objects only (ShardingConfig.shardCaches). */
  readonly #sources: Array<ShardedSource<KubeObject>> = [];
  /** The swaps of #sources, one after the other; each follows the owned set as it is then. */
  #resharding: Promise<void> = Promise.resolve();
  /** The retry of a failed swap; the owned set it is for, and how many of its swaps in a row failed. */
  #retry: NodeJS.Timeout | undefined;
  #failing = { owned: '', inARow: 0 };
  /** A swap is queued and not started: it reads the owned set when it starts, so one is enough. */
  #reshardQueued = false;
  readonly #stop = new AbortController();
  readonly #log: Logger | undefined;
  readonly #cacheSyncTimeoutMs: number;

  constructor(options: ShardedControllersOptions) {
    const { cacheSyncTimeoutMs, ...ownership } = options;
    this.#log = options.logger;
    this.#cacheSyncTimeoutMs = cacheSyncTimeoutMs;
    this.ownership = new BucketOwnership({
      ...ownership,
      onAcquired: (bucket) => this.#acquired(bucket),
      onRevoked: (bucket) => this.#revoked(bucket),
    });
    this.#buckets = this.ownership.bucketCount;
    this.#owns = (key) => this.#owned.has(bucketOfKey(key, this.#buckets));
  }

  /** Shards `controller`: it works on no key until this replica owns a bucket. */
  add(controller: Controller): void {
    this.#controllers.push(controller);
    this.#names.add(controller.name);
    void controller.setOwnedKeys(this.#owns);
  }

  /** Makes `source` follow the owned buckets. */
  addSource(source: ShardedSource<KubeObject>): void {
    this.#sources.push(source);
  }

  /** Stops following: no swap starts from now on. */
  stop(): void {
    this.#stop.abort();
    clearTimeout(this.#retry);
  }

  /** The buckets whose keys the controllers work on now. */
  owned(): ReadonlySet<number> {
    return this.#owned;
  }

  /**
   * For KubeClient.guardWrites: throws BucketNotOwnedError when the code running now is a
   * reconcile of one of these controllers for a key whose bucket this replica does not own.
   * Writes outside a reconcile (Lease renewals, other runnables) and by unsharded
   * controllers pass.
   */
  guardWrite(): void {
    const reconcile = currentReconcile();
    if (!reconcile || !this.#names.has(reconcile.controller)) return;
    this.ownership.assertOwns(bucketOfKey(reconcile.key, this.#buckets));
  }

  #acquired(bucket: number): void {
    this.#owned.add(bucket);
    const inBucket: OwnedKeys = (key) => bucketOfKey(key, this.#buckets) === bucket;
    for (const controller of this.#controllers) {
      void controller.setOwnedKeys(this.#owns);
      controller.enqueueCached(inBucket);
    }
    this.#reshard();
  }

  async #revoked(bucket: number): Promise<void> {
    this.#owned.delete(bucket);
    await Promise.all(this.#controllers.map((c) => c.setOwnedKeys(this.#owns)));
    // After the drain, and not awaited: the hand-over does not wait for a list.
    this.#reshard();
  }

  /**
   * Swaps every sharded source to the owned set, after the swaps already asked for. A swap
   * whose new informer does not sync in time leaves the old one serving, is logged, and is
   * tried again after a backoff (1 s, doubling up to 30 s, from 1 s again for a new owned set)
   * until it succeeds: until then the acquired buckets' keys are owned but their objects are
   * not in the cache, so they would wait for the next hand-over, which may never come. A
   * source already serving the owned set returns at once, so a retry swaps only the ones that
   * failed.
   * Buckets acquired one after another while a swap runs make one swap after it, not one
   * each: every swap lists its whole shard anew.
   */
  #reshard(): void {
    if (this.#sources.length === 0) return;
    clearTimeout(this.#retry);
    if (this.#reshardQueued) return;
    this.#reshardQueued = true;
    this.#resharding = this.#resharding.then(async () => {
      this.#reshardQueued = false;
      if (this.#stop.signal.aborted) return;
      const owned = new Set(this.#owned);
      const signal = AbortSignal.any([this.#stop.signal, AbortSignal.timeout(this.#cacheSyncTimeoutMs)]);
      const results = await Promise.allSettled(this.#sources.map((s) => s.reshard(owned, signal)));
      if (this.#stop.signal.aborted) return;
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed.length === 0) {
        this.#failing = { owned: '', inARow: 0 };
        return;
      }
      // A new owned set is a new swap: its retries back off from the start.
      const key = ownedKey(owned);
      if (this.#failing.owned !== key) this.#failing = { owned: key, inARow: 0 };
      const retryInMs = backoffDelay(this.#failing.inARow++, RESHARD_RETRY);
      for (const result of failed)
        this.#log?.error(
          { err: result.reason as unknown, retryInMs },
          'a sharded cache did not sync its new buckets; the swap is tried again',
        );
      this.#retry = setTimeout(() => this.#reshard(), retryInMs);
    });
  }
}
