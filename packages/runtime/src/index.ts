export { TerminalError, isTerminalError, requestKey, requestFromKey } from './reconcile/reconcile.ts';
export type { Reconciler, Request, Result, ReconcileContext } from './reconcile/reconcile.ts';
export {
  Controller,
  DEFAULT_MAX_CONCURRENT_RECONCILES,
  DEFAULT_RECONCILE_TIMEOUT_MS,
  INITIAL_LIST_PRIORITY,
} from './reconcile/controller.ts';
export type { ControllerOptions, Runnable } from './reconcile/controller.ts';
export { ALL_KEYS, bucketOfKey, UNOWNED_KEYS_DROPPED_METRIC_NAME } from './reconcile/owned-keys.ts';
export type { DroppedAt, OwnedKeys } from './reconcile/owned-keys.ts';
export { ControllerBuilder } from './builder/builder.ts';
export { ObjectReconciler } from './reconcile/object-reconciler.ts';
export type {
  Finalizer,
  Live,
  NameLimit,
  ObjectReconcilerOptions,
  ReconcileFunc,
  StatusFunc,
  StatusOf,
} from './reconcile/object-reconciler.ts';
export type { CacheReader, Context, ListOptions } from './reconcile/context.ts';
export type { BuilderOptions, ControllerHost } from './builder/builder.ts';
export {
  Manager,
  DEFAULT_CACHE_SYNC_TIMEOUT_MS,
  DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS,
  DEFAULT_METRICS_BIND_ADDRESS,
  DEFAULT_HEALTH_BIND_ADDRESS,
  INFORMER_UNHEALTHY_AFTER_MS,
  DEFAULT_SHARDING_NAME,
} from './manager/manager.ts';
export type { ManagerOptions, LeaderElectionConfig, ShardingConfig } from './manager/manager.ts';
export { testManager, type TestManagerOptions } from './manager/test-manager.ts';
export {
  generationChanged,
  labelsChanged,
  annotationsChanged,
  and,
  or,
  predicate,
} from './reconcile/predicates.ts';
export type { Predicate } from './reconcile/predicates.ts';
export { enqueueObject, enqueueControllerOwner } from './builder/handlers.ts';
export type { MapFunc } from './builder/handlers.ts';
export {
  controllerMetrics,
  registerProcessMetrics,
  RECONCILE_TIME_BUCKETS,
} from './observability/metrics.ts';
export { MetricsServer, HealthServer, ListenError, parseBindAddress } from './manager/servers.ts';
export type { ServerRole } from './manager/servers.ts';
export { createLogger, REDACTED_PATHS, DEFAULT_LOG_LEVEL } from './observability/logging.ts';
export { setupTracing, tracingConfigured } from './observability/tracing.ts';
export { applyChild, applyOwned, childApplyBody, deleteChildIfControlled } from './apply/apply.ts';
export type { ApplyOutcome } from './apply/apply.ts';
export {
  APPLIED_HASH_ANNOTATION,
  appliedHash,
  canonicalJson,
  isConverged,
  isSubset,
  withAppliedHash,
} from './apply/converged.ts';
export type { ApplyChildOptions } from './apply/apply.ts';
export { applyStatusIfChanged, WrittenStatus, WRITTEN_STATUS_TTL_MS } from './status/status.ts';
export {
  controllerReference,
  controllerOf,
  isControlledBy,
  assertCanControl,
  ChildConflictError,
} from './apply/ownership.ts';
export {
  announceProblems,
  childProblem,
  ChildRejectedError,
  CHILD_CONFLICT,
  CHILD_REJECTED,
  combineProblems,
  isRejection,
  problemOf,
  ProblemError,
  problemResult,
  setProblemConditions,
} from './status/problems.ts';
export type { Problem, ProblemConditionOptions } from './status/problems.ts';
export type { Owner } from './apply/ownership.ts';
export {
  LeaderElector,
  LeadershipLostError,
  defaultIdentity,
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  LeaseObservation,
  leaseRecordKey,
} from './election/leader-election.ts';
export type { LeaderElectorOptions, Lease, LeaseSpec } from './election/leader-election.ts';
export {
  BucketOwnership,
  BucketNotOwnedError,
  DEFAULT_BUCKET_COUNT,
  DEFAULT_STALE_MEMBER_AFTER_MS,
  OWNED_BUCKETS_METRIC_NAME,
  BUCKET_HANDOVERS_METRIC_NAME,
  LIVE_MEMBERS_METRIC_NAME,
} from './sharding/bucket-ownership.ts';
export type { BucketOwnershipOptions } from './sharding/bucket-ownership.ts';
export { assignBuckets, bucketWeight } from './sharding/assignment.ts';
export { ShardedControllers, type ShardedControllersOptions } from './sharding/sharded-controllers.ts';
export { currentReconcile, type ReconcileScope } from './reconcile/current-reconcile.ts';
export {
  EventRecorder,
  DEFAULT_EVENT_AGGREGATION_WINDOW_MS,
  DEFAULT_EVENT_BURST,
  DEFAULT_EVENT_REFILL_INTERVAL_MS,
} from './events/events.ts';
export type { EventRecorderOptions, EventType } from './events/events.ts';
export {
  setCondition,
  removeCondition,
  findCondition,
  isConditionTrue,
  isConditionFalse,
  conditionsEqual,
  conditionMatches,
  isValidConditionReason,
} from './status/conditions.ts';
export type { Condition, ConditionUpdate, ConditionStatus } from './status/conditions.ts';
export { addFinalizer, removeFinalizer, hasFinalizer } from './apply/finalizers.ts';
export type { FinalizerOptions } from './apply/finalizers.ts';
export { stopOnSignals, logUnhandledRejections } from './manager/signals.ts';
export type { SignalOptions } from './manager/signals.ts';
export { createSecretOnce, generatePassword } from './apply/secrets.ts';
export { canonicalQuantity, quantityValue } from './apply/quantity.ts';
export type { CanonicalQuantityOptions } from './apply/quantity.ts';
export {
  WebhookServer,
  WebhookBuilder,
  WebhookListenError,
  DEFAULT_WEBHOOK_BIND_ADDRESS,
} from './webhook/server.ts';
export type {
  AdmissionContext,
  Defaulter,
  Validation,
  Validator,
  WebhookServerOptions,
} from './webhook/server.ts';
export {
  AdmissionDeniedError,
  MalformedReviewError,
  errorBody,
  fieldErrors,
  invalidStatus,
  parseAdmissionReview,
} from './webhook/admission.ts';
export type {
  AdmissionRequest,
  AdmissionResponse,
  AdmissionReview,
  AdmissionStatus,
  FieldError,
  FieldErrorType,
  Operation,
  StatusCause,
} from './webhook/admission.ts';
export {
  CONVERSION_PATH,
  ConversionError,
  conversionReviewOf,
  parseConversionReview,
  stashConversionData,
  takeConversionData,
} from './webhook/conversion.ts';
export type {
  ConversionBuilder,
  ConversionDefinition,
  ConversionRequest,
  ConversionResponse,
  ConversionResult,
  ConversionReview,
  SpokeConverter,
} from './webhook/conversion.ts';
export {
  FileCertificates,
  ManagedCertificates,
  caInjectionRules,
  MutatingWebhookConfigurations,
  ValidatingWebhookConfigurations,
  DEFAULT_CA_VALIDITY_MS,
  DEFAULT_CERT_VALIDITY_MS,
  DEFAULT_ROTATE_BEFORE_MS,
  DEFAULT_CERT_CHECK_INTERVAL_MS,
} from './webhook/certificates.ts';
export type {
  CertificateSource,
  FileCertificatesOptions,
  ManagedCertificatesOptions,
  ServedWebhooks,
} from './webhook/certificates.ts';
export type { KeyPair, ServingNames } from './webhook/generate.ts';
export {
  applyWebhookConfigurations,
  configurationNames,
  crdConversion,
  deleteWebhookConfigurations,
  webhookConfigurations,
  webhookDefinition,
  webhookPath,
} from './webhook/configurations.ts';
export type {
  ClientConfig,
  ConfigurationNames,
  ConfigurationOptions,
  CrdConversion,
  FailurePolicy,
  WebhookDefinition,
  WebhookPolicy,
} from './webhook/configurations.ts';
export { jsonPatch, applyJsonPatch } from './webhook/patch.ts';
export type { JsonPatchOperation } from './webhook/patch.ts';
export { webhookMetrics, WEBHOOK_LATENCY_BUCKETS } from './webhook/metrics.ts';
export { migrateStorageVersion } from './storage-version/migrate.ts';
export { StorageVersionMigrator, type StorageVersionMigratorOptions } from './storage-version/migrator.ts';
export type { StorageMigrationOptions, StorageMigrationResult } from './storage-version/migrate.ts';
export { microTime } from './support.ts';
