// Which queue keys a controller works on. In a sharded manager each replica owns some
// buckets of the key space and its controllers take only those buckets' keys; a bucket
// changes hands once the old owner has stopped dequeuing its keys and finished their
// in-flight reconciles (Controller.setOwnedKeys).
import { bucketOf } from '@regulon/cache';
import { oncePerRegistry } from '@regulon/util';
import { Counter, type Registry } from 'prom-client';
import { requestFromKey } from './reconcile.ts';

/**
 * Says whether a controller works on `key` (`namespace/name`, or `name` when cluster-scoped).
 * Consulted on every add and every dequeue, so it must be cheap and synchronous.
 */
export type OwnedKeys = (key: string) => boolean;

/** Every key: a controller outside a sharded manager. */
export const ALL_KEYS: OwnedKeys = () => true;

/**
 * The bucket of `count` that a queue key falls in, hashed by its namespace: the same bucket
 * the API server's `shardRange(object.metadata.namespace, …)` puts the object in, and
 * @regulon/cache's `bucketOf(obj, 'namespace', count)`. A cluster-scoped key has no namespace
 * and hashes "", as the server does for every cluster-scoped object.
 */
export function bucketOfKey(key: string, count: number): number {
  const namespace = requestFromKey(key).namespace ?? '';
  return bucketOf({ metadata: { namespace } }, 'namespace', count);
}

export const UNOWNED_KEYS_DROPPED_METRIC_NAME = 'regulon_controller_unowned_keys_dropped_total';

/**
 * Where a key the controller does not own was stopped: `event` an informer event or a
 * waitFor wake, `requeue` the requeue or retry a reconcile's outcome asked for, `queue`
 * taken out of the queue when the owned keys changed, or found there by a worker (added
 * with `controller.queue.add` directly).
 */
export type DroppedAt = 'event' | 'requeue' | 'queue';

/** One counter per registry, shared by every controller on it. */
export const unownedKeysDropped: (registry: Registry) => Counter<'controller' | 'at'> = oncePerRegistry(
  (registry) =>
    new Counter({
      name: UNOWNED_KEYS_DROPPED_METRIC_NAME,
      help: 'Keys a controller dropped because it does not own them (sharding), by where they were stopped',
      labelNames: ['controller', 'at'],
      registers: [registry],
    }),
);
