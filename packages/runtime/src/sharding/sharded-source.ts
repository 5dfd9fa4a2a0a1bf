// A sharded manager's cache of one namespaced kind that holds only the objects of the buckets
// this replica owns (issue 39: per-replica memory about 1/N). The API server cuts the shard
// when it has the ShardedListAndWatch gate (shardSelector over the namespace's hash, the same
// hash as bucketOfKey); otherwise the reflector drops the other shards' objects on arrival,
// which saves the memory but not the traffic (the informer logs and reports which).
//
// An informer's shard is part of its identity, so a change of the owned buckets swaps the
// informer: the new one lists and syncs while the old one still serves reads and events, the
// handlers move over, then the old one stops. Moving a handler replays the new informer's
// objects to it, as to any late handler, except those the old informer already held at the
// same resourceVersion: the objects of a bucket just acquired are queued (at the initial
// list's low priority), the others are not queued again. Objects of a bucket given up simply
// vanish from the reads: their keys are no longer owned, and a delete event would lie.
// The price of the memory: a bucket acquired is listed before its keys are reconciled (a
// cold takeover for that bucket, where the whole-cache mode takes over warm).
import { shardOfBuckets, type EventHandler, type Informer, type SharedInformerFactory } from '@regulon/cache';
import type { KubeObject, ResourceType } from '@regulon/client';
import type { CacheSource } from '../reconcile/cache-source.ts';

export interface ShardedSourceOptions<T extends KubeObject> {
  factory: SharedInformerFactory;
  /** A namespaced kind: every cluster-scoped object hashes into one bucket, so those are not sharded. */
  type: ResourceType<T>;
  /** The manager's namespace, when it watches one only. */
  namespace?: string | undefined;
  buckets: number;
}

/** One kind's objects of the owned buckets; see the comment at the top of this file. */
export class ShardedSource<T extends KubeObject> implements CacheSource<T> {
  readonly #o: ShardedSourceOptions<T>;
  readonly #indexers: Record<string, (obj: T) => string[]> = {};
  /** Each handler, with its unsubscription from the current informer. */
  readonly #handlers = new Map<EventHandler<T>, () => void>();
  /** Undefined while no bucket is owned: reads find nothing. */
  #current: Informer<T> | undefined;
  #owned = '';

  constructor(options: ShardedSourceOptions<T>) {
    if (!options.type.namespaced)
      throw new TypeError(`sharded source: ${options.type.kind} is cluster-scoped`);
    this.#o = options;
  }

  /** Indexers of every informer this source will use; the current one has them already if it serves. */
  addIndexers(indexers: Record<string, (obj: T) => string[]>): void {
    Object.assign(this.#indexers, indexers);
  }

  addEventHandler(handler: EventHandler<T>): () => void {
    this.#handlers.set(handler, this.#current?.addEventHandler(handler) ?? noop);
    return () => {
      this.#handlers.get(handler)?.();
      this.#handlers.delete(handler);
    };
  }

  get(name: string, namespace?: string): T | undefined {
    return this.#current?.get(name, namespace);
  }

  list(namespace?: string): T[] {
    return this.#current?.list(namespace) ?? [];
  }

  byIndex(name: string, value: string): T[] {
    return this.#current?.byIndex(name, value) ?? [];
  }

  /** The informer serving now, if any (for tests and status). */
  get informer(): Informer<T> | undefined {
    return this.#current;
  }

  /**
   * Serves the objects of `owned` from now on: starts the informer of their shard, waits for
   * its sync (`signal` gives up, leaving the current one serving), moves the handlers, stops
   * the old informer. Calls must not overlap (the caller chains them).
   */
  async reshard(owned: ReadonlySet<number>, signal: AbortSignal): Promise<void> {
    const key = ownedKey(owned);
    if (key === this.#owned) return;
    const old = this.#current;
    let next: Informer<T> | undefined;
    if (owned.size > 0) {
      next = this.#o.factory.informerFor(this.#o.type, {
        ...(this.#o.namespace ? { namespace: this.#o.namespace } : {}),
        ...(Object.keys(this.#indexers).length ? { indexers: { ...this.#indexers } } : {}),
        shard: shardOfBuckets('namespace', owned, this.#o.buckets),
      });
      try {
        await next.waitForSync(signal);
      } catch (err) {
        await this.#o.factory.stop(next);
        throw err;
      }
    }
    for (const [handler, unsubscribe] of this.#handlers) {
      unsubscribe();
      this.#handlers.set(handler, next ? subscribeNewOnly(next, handler, old) : noop);
    }
    this.#current = next;
    this.#owned = key;
    if (old) await this.#o.factory.stop(old);
  }
}

const noop = () => {};

/** A set of buckets as one comparable string: the same buckets in any order give the same key. */
export function ownedKey(owned: ReadonlySet<number>): string {
  return [...owned].sort((a, b) => a - b).join();
}

/**
 * Subscribes `handler` to `next`, whose replay skips the objects `old` holds at the same
 * resourceVersion. `old` is consulted only during the replay (addEventHandler delivers it
 * synchronously), and not kept: it is about to be stopped and its store freed.
 */
function subscribeNewOnly<T extends KubeObject>(
  next: Informer<T>,
  handler: EventHandler<T>,
  old: Informer<T> | undefined,
): () => void {
  let replaying = old;
  const unsubscribe = next.addEventHandler({
    onAdd: (obj, initialList) => {
      const known = replaying?.get(obj.metadata?.name ?? '', obj.metadata?.namespace);
      if (known && known.metadata?.resourceVersion === obj.metadata?.resourceVersion) return;
      handler.onAdd?.(obj, initialList);
    },
    onUpdate: (previous, obj) => handler.onUpdate?.(previous, obj),
    onDelete: (obj) => handler.onDelete?.(obj),
  });
  replaying = undefined;
  return unsubscribe;
}
