export {
  Store,
  deepFreeze,
  namespaceIndex,
  controllerOwnerIndex,
  NAMESPACE_INDEX,
  CONTROLLER_OWNER_INDEX,
} from './store.ts';
export type { IndexFunc, StoreChange } from './store.ts';
export { objectKey, splitKey } from './keys.ts';
export { Reflector, MIN_WATCH_TIMEOUT_SECONDS, STALL_GRACE_MS } from './reflector.ts';
export type { ReflectorOptions, ReflectorHealth, ShardMode, Transform } from './reflector.ts';
export { Informer, stripManagedFields } from './informer.ts';
export type { EventHandler, InformerOptions } from './informer.ts';
export { SharedInformerFactory } from './factory.ts';
export type { FactoryOptions, InformerRequest, InformerStatus } from './factory.ts';
export { listerWatcher, LIST_PAGE_SIZE } from './lister-watcher.ts';
export type { ListerWatcher, ListRequest, Scope, WatchRequest } from './lister-watcher.ts';
export {
  shard,
  shardOfBuckets,
  bucketRange,
  bucketOf,
  bucketOfHash,
  contains,
  inRanges,
  selectorFor,
  describeShard,
  shardHash,
  shardValue,
  fnv1a64,
  hex,
  HASH_SPACE,
  EMPTY_HASH,
} from './shard.ts';
export type { Shard, ShardField, ShardRange, HashBound } from './shard.ts';
export { SHARD_MODE_METRIC } from './metrics.ts';
export { DEFAULT_BACKOFF } from './reflector.ts';
export type { BackoffOptions } from './reflector.ts';
// The logger shape lives in @regulon/util; re-exported because cache users pass one here.
export { silentLogger } from '@regulon/util';
export type { Logger } from '@regulon/util';
