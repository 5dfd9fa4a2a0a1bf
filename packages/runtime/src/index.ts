export { TerminalError, isTerminalError, requestKey, requestFromKey } from './reconcile.ts';
export type { Reconciler, Request, Result, ReconcileContext } from './reconcile.ts';
export { Controller, DEFAULT_MAX_CONCURRENT_RECONCILES, DEFAULT_RECONCILE_TIMEOUT_MS } from './controller.ts';
export type { ControllerOptions, Runnable } from './controller.ts';
export { ControllerBuilder } from './builder.ts';
export type { BuilderOptions } from './builder.ts';
export {
  Manager,
  DEFAULT_CACHE_SYNC_TIMEOUT_MS,
  DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS,
  DEFAULT_METRICS_BIND_ADDRESS,
  DEFAULT_HEALTH_BIND_ADDRESS,
  INFORMER_UNHEALTHY_AFTER_MS,
} from './manager.ts';
export type { ManagerOptions, LeaderElectionConfig } from './manager.ts';
export { generationChanged, labelsChanged, annotationsChanged, and, or, predicate } from './predicates.ts';
export type { Predicate } from './predicates.ts';
export { enqueueObject, enqueueControllerOwner } from './handlers.ts';
export type { MapFunc } from './handlers.ts';
export { controllerMetrics, registerProcessMetrics, RECONCILE_TIME_BUCKETS } from './metrics.ts';
export { MetricsServer, HealthServer, ListenError, parseBindAddress } from './servers.ts';
export type { ServerRole } from './servers.ts';
export { createLogger, REDACTED_PATHS, DEFAULT_LOG_LEVEL } from './logging.ts';
export { setupTracing, tracingConfigured } from './tracing.ts';
export { applyChild, childApplyBody, deleteChildIfControlled } from './apply.ts';
export {
  APPLIED_HASH_ANNOTATION,
  appliedHash,
  canonicalJson,
  isConverged,
  isSubset,
  withAppliedHash,
} from './converged.ts';
export type { ApplyChildOptions } from './apply.ts';
export { applyStatusIfChanged, WrittenStatus, WRITTEN_STATUS_TTL_MS } from './status.ts';
export {
  controllerReference,
  controllerOf,
  isControlledBy,
  assertCanControl,
  ChildConflictError,
} from './ownership.ts';
export {
  announceProblems,
  childProblem,
  ChildRejectedError,
  CHILD_CONFLICT,
  CHILD_REJECTED,
  combineProblems,
  isRejection,
  problemResult,
  setProblemConditions,
} from './problems.ts';
export type { Problem, ProblemConditionOptions } from './problems.ts';
export type { Owner } from './ownership.ts';
export {
  LeaderElector,
  LeadershipLostError,
  defaultIdentity,
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
} from './leader-election.ts';
export type { LeaderElectorOptions } from './leader-election.ts';
export {
  EventRecorder,
  DEFAULT_EVENT_AGGREGATION_WINDOW_MS,
  DEFAULT_EVENT_BURST,
  DEFAULT_EVENT_REFILL_INTERVAL_MS,
} from './events.ts';
export type { EventRecorderOptions, EventType } from './events.ts';
export {
  setCondition,
  removeCondition,
  findCondition,
  isConditionTrue,
  isConditionFalse,
  conditionsEqual,
  conditionMatches,
  isValidConditionReason,
} from './conditions.ts';
export type { Condition, ConditionUpdate, ConditionStatus } from './conditions.ts';
export { addFinalizer, removeFinalizer, hasFinalizer } from './finalizers.ts';
export type { FinalizerOptions } from './finalizers.ts';
export { stopOnSignals, logUnhandledRejections } from './signals.ts';
export type { SignalOptions } from './signals.ts';
export { derivePhase } from './phase.ts';
export type { Phase } from './phase.ts';
export { createSecretOnce, generatePassword } from './secrets.ts';
export * from './config.ts';
export {
  restrictedContainerSecurityContext,
  restrictedPodSecurityContext,
  recommendedLabels,
  contentHash,
  deploymentProblem,
  MANAGED_BY,
} from './workloads.ts';
export { canonicalQuantity, quantityValue } from './quantity.ts';
export type { CanonicalQuantityOptions } from './quantity.ts';
