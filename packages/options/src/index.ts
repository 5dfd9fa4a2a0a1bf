// Declarative flag/env/file configuration for an operator binary: one spec
// per option (spec.ts) is read from flags (flags.ts), environment variables
// and a YAML or JSON file (file.ts), in that precedence (load.ts), checked
// against TypeBox schemas (schema.ts), explained by `--help` (help.ts), and
// turned into an exit status by runCli (cli.ts). The options every operator
// has, and the Manager settings they give, are in manager-options.ts.
export { runCli, type RunCliOptions, type Writable } from './cli.ts';
export {
  MAX_CONTROLLER_CONCURRENCY,
  camelCaseKey,
  controllerOptionKeys,
  controllerOptions,
  enabledControllers,
  type ControllerOptions,
  type ControllerOptionsDefaults,
} from './controller-options.ts';
export { ConfigError } from './errors.ts';
export { helpText, type HelpOptions } from './help.ts';
export { loadConfig, type LoadOptions, type LoadResult } from './load.ts';
export {
  LOG_LEVELS,
  inCluster,
  managerOptions,
  managerSettings,
  ownNamespace,
  type ManagerConfig,
  type ManagerOptions,
  type ManagerOptionsDefaults,
  type ManagerSettings,
} from './manager-options.ts';
export {
  defineOptions,
  type ConfigFileOptions,
  type ConfigOf,
  type OptionSource,
  type OptionSpec,
  type OptionSpecs,
  type OptionType,
  type SourcesOf,
} from './spec.ts';
