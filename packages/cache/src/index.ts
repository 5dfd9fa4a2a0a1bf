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
export type { ReflectorOptions, ReflectorHealth, Transform } from './reflector.ts';
export { Informer, stripManagedFields } from './informer.ts';
export type { EventHandler, InformerOptions } from './informer.ts';
export { SharedInformerFactory } from './factory.ts';
export type { FactoryOptions, InformerRequest, InformerStatus } from './factory.ts';
export { listerWatcher, LIST_PAGE_SIZE } from './lister-watcher.ts';
export type { ListerWatcher, Scope, WatchRequest } from './lister-watcher.ts';
export { backoffDelay, DEFAULT_BACKOFF } from './backoff.ts';
export type { BackoffOptions } from './backoff.ts';
export { silentLogger } from './logger.ts';
export type { Logger } from './logger.ts';
