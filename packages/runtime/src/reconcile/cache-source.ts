import type { EventHandler } from '@regulon/cache';
import type { KubeObject } from '@regulon/client';

/**
 * What a controller watches and its reconcile reads for one kind: an Informer, or in a
 * sharded manager that caches its buckets only, a ShardedSource that swaps informers as the
 * buckets change hands. The handlers and the reads stay with the source across a swap.
 */
export interface CacheSource<T extends KubeObject> {
  /** Replays the objects held now as `onAdd(obj, true)`, then delivers every change. */
  addEventHandler(handler: EventHandler<T>): () => void;
  /** The cached object `namespace/name` (or `name` when cluster-scoped). */
  get(name: string, namespace?: string): T | undefined;
  /** Cached objects, optionally of one namespace. */
  list(namespace?: string): T[];
  /** Cached objects whose indexer `name` maps to `value`. */
  byIndex(name: string, value: string): T[];
}
