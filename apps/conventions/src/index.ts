export {
  restrictedContainerSecurityContext,
  restrictedPodSecurityContext,
  recommendedLabels,
  contentHash,
  deploymentProblem,
  MANAGED_BY,
} from './workloads.ts';
export { derivePhase } from './phase.ts';
export { podTrouble, type PodTrouble } from './pod-trouble.ts';
export type { Phase } from './phase.ts';
export { rolledOut } from './rollout.ts';
export type { Workload } from './rollout.ts';
export * from './replication/index.ts';
export { apiServerAddresses, EndpointSlices } from './testing/api-server.ts';
export {
  runManagerProcess,
  startManagerProcess,
  stopManagerProcess,
  type ManagerProcessConfig,
} from './testing/manager-process.ts';
