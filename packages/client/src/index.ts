export { KubeClient } from './client.ts';
export type { ClientOptions, LoadOptions } from './config.ts';
export { DEFAULT_BURST, DEFAULT_QPS, DEFAULT_REQUEST_TIMEOUT_MS, loadKubeConfig } from './config.ts';
export type { KubeCluster, KubeConfigSource, KubeContext } from './kubeconfig.ts';
export {
  Kinds,
  apiVersionOf,
  metadataOnly,
  resourcePath,
  retyped,
  sameKind,
  type ObjectOf,
  type ResourceType,
} from './kinds.ts';
export type {
  KubeObject,
  ListResult,
  ObjectMeta,
  PartialObjectMetadata,
  WatchEvent,
  WatchEventType,
} from './types.ts';
export type {
  ApplyOptions,
  CallOptions,
  DeleteOptions,
  GetOptions,
  ListAllOptions,
  ListOptions,
  PatchOptions,
  PatchStatusOptions,
  PatchType,
  ResourceClient,
  WriteOptions,
} from './resource.ts';
export type { WatchOptions } from './watch.ts';
export { WatchDecodeError } from './watch.ts';
export type { Query, QueryValue, RequestOptions } from './request.ts';
export type { Clock } from '@regulon/util';
export { defaultRetryPolicy, type RetryPolicy } from './retry.ts';
export {
  AlreadyExistsError,
  ApiError,
  ConfigError,
  ConflictError,
  ForbiddenError,
  GoneError,
  InvalidError,
  NotFoundError,
  ServerError,
  TimeoutError,
  TooManyRequestsError,
  UnauthorizedError,
  errorFromStatus,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  ignoreNotFound,
  isServerError,
  isTimeout,
  isTooManyRequests,
  isUnauthorized,
  type Status,
  type StatusCause,
} from './errors.ts';
