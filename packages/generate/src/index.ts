export {
  generate,
  syncGenerated,
  LAYOUT,
  type GenerateConfig,
  type GeneratedFiles,
  type KindLike,
  type StaleFile,
  type SyncOptions,
  type SyncResult,
} from './generate.ts';
export {
  ALLOWED_VERBS,
  LEADER_ELECTION_RULES,
  RbacRuleError,
  bindingsYaml,
  leaderElectionRole,
  mergeRules,
  rolesYaml,
  validateRules,
  type BindingsOptions,
  type MergedRule,
  type PolicyRule,
  type RolesOptions,
  type RuleSource,
} from './rbac.ts';
export {
  DEFAULT_HEALTH_PORT,
  DEFAULT_METRICS_PORT,
  MANAGER_CONTAINER,
  deploymentYaml,
  kustomizationYaml,
  managerLabels,
  metricsServiceYaml,
  namespaceYaml,
  serviceAccountYaml,
  type KustomizationOptions,
  type ManagerSettings,
} from './kustomize.ts';
export { CONFIG_FILES, defineConfig, loadConfig, type LoadedConfig } from './config.ts';
export { yamlDocument, yamlDocuments } from './yaml.ts';
