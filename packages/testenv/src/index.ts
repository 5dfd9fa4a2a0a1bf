export {
  start,
  TestEnv,
  STATE_DIR_ENV,
  realNodeNamespaceAnnotations,
  secondRealNodeNamespaceAnnotations,
  type TestEnvOptions,
  type CustomResourceDefinition,
  type KubectlResult,
} from './env.ts';
export {
  ControlPlane,
  DEFAULT_NODES,
  DEFAULT_START_TIMEOUT_MS,
  KWOK_NODE_ANNOTATION,
  type ControlPlaneOptions,
  type FeatureGates,
  type ScaleOptions,
  type ControlPlaneState,
} from './control-plane.ts';
export {
  ensureBinaries,
  ensurePrometheus,
  runScript,
  type Binaries,
  type PrometheusBinaries,
} from './binaries.ts';
export { ensureKstatus, kstatus, type KstatusResult } from './kstatus.ts';
export { repoRoot, defaultClusterDir } from './paths.ts';
export { eventually } from './wait.ts';
export { freePorts } from './ports.ts';
export { runPrometheus, type PromSample, type RunningPrometheus } from './prometheus.ts';
export {
  ensureImages,
  localImageCatalog,
  IMAGE_NAMES,
  type ImageArchive,
  type ImageName,
  type EnsureImagesOptions,
} from './images.ts';
export { ensureDebianPackages, missingDebianPackages, type DebianPackagesOptions } from './debian.ts';
export { ensureNodeBinaries, type NodeBinaries } from './binaries.ts';
export {
  cutOffFromPod,
  cutOffFromPods,
  cutOffFromApiServer,
  faultsUnsupported,
  hostAddressesIn,
  REAL_NODE_POD_SUBNETS,
  type HostAddress,
  loseSecondRealNode,
  pauseSecondRealNodeKubelet,
  cutPodOffFrom,
  refusePodConnectionsTo,
  podPids,
  podServerPid,
  podSandboxPid,
  isSandbox,
  containerProcessTrees,
  stopProcess,
  type Partition,
  type PodPartition,
  type NodeLoss,
} from './faults.ts';
export {
  SECOND_NODE,
  startSecondRealNode,
  secondRealNodeState,
  secondNodeContainerLog,
} from './second-node.ts';
export { lastOccurred, eventTimeline, occurrencesSince, reportedBy } from './events.ts';
export {
  startRoleSampler,
  instancePodsOf,
  summarise,
  describeSplitBrain,
  SAMPLE_INTERVAL_MS,
  type RoleSampler,
  type RoleSamplerOptions,
  type RoleSession,
  type OpenSession,
  type Answer,
  type SampledPod,
  type SampleRound,
  type SamplerSummary,
  type InstanceSample,
  type InstanceRole,
} from './role-sampler.ts';
export {
  REAL_NODE_LABEL,
  realNodeUnsupported,
  NODE_PACKAGES,
  loadImagesIntoRealNode,
  SECOND_NODE_DIR,
} from './real-node.ts';
export {
  startObjectStore,
  ensureObjectStoreBinary,
  S3Error,
  DEFAULT_OBJECT_STORE_REGION,
  type ObjectStore,
  type ObjectStoreOptions,
  type ObjectListing,
  type S3Request,
  type S3Response,
} from './object-store.ts';

/** Whether process `pid` exists (signal 0 only asks). */
export { isAlive, resumeUntilExit } from './process.ts';
