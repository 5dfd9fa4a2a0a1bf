export {
  FENCE_GRACE_SECONDS,
  notReplicating,
  SHUTDOWN_PATIENCE_MS,
  plan,
  type Member,
  type Plan,
  type PlanInput,
  type PrimaryAnswer,
  type Role,
  type Server,
  type Step,
  type Topology,
} from './plan.ts';
export { renderRoleDecision } from './start-decision.ts';
export {
  isInstancePod,
  memberOf,
  outdated,
  podReady,
  requeueAfter,
  REVISION_LABEL,
  ROLE_LABEL,
  roleLabelChanges,
  rollingRevision,
  ReplicationMemory,
  LEASE_WATCH_GAP_MS,
  LEASE_READ_INTERVAL_MS,
  type InstancePod,
  type RollingStatefulSet,
} from './members.ts';
export { MEMBERS_KEY, topologyData, topologyFromData } from './topology.ts';
export { failoverQuorumReporter, QUORUM_METRIC, QUORUM_REASON } from './quorum-report.ts';
export { laggingReporter, LAGGING_METRIC, LAGGING_STATE } from './lag-report.ts';
export { carryOutStep, type StepActions } from './steps.ts';
export { applyRoleLabels, deleteObservedPod } from './pods.ts';
export {
  reachabilityCondition,
  reachabilityReporter,
  replicationUnsettled,
  REACHABLE_CONDITION,
  UNREACHABLE_METRIC,
} from './reachability.ts';
export {
  claimPrimaryLease,
  ensurePrimaryLease,
  PrimaryLeaseView,
  primaryLeaseName,
  PRIMARY_LEASE_SECONDS,
  transferPrimaryLease,
  type LeaseJudgement,
  type LeaseOwner,
  type LeaseTransfer,
  type PrimaryLease,
} from './primary-lease.ts';
