export { start, TestEnv, STATE_DIR_ENV, type TestEnvOptions, type CustomResourceDefinition } from './env.ts';
export {
  ControlPlane,
  DEFAULT_NODES,
  DEFAULT_START_TIMEOUT_MS,
  KWOK_NODE_ANNOTATION,
  type ControlPlaneOptions,
  type ScaleOptions,
  type ControlPlaneState,
} from './control-plane.ts';
export { ensureBinaries, ensurePrometheus, type Binaries, type PrometheusBinaries } from './binaries.ts';
export { repoRoot, defaultClusterDir } from './paths.ts';
export { eventually } from './wait.ts';
export { freePorts } from './ports.ts';
