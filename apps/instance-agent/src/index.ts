export { parseAgentArgs, DEFAULT_TIMINGS, USAGE, type AgentConfig } from './config.ts';
export { runAgent, parseRole, parseQuorum, FENCED_EXIT_CODE, type AgentRun } from './agent.ts';
export {
  PrimaryGuard,
  type Campaign,
  type CampaignCallbacks,
  type PrimaryGuardOptions,
} from './primary-guard.ts';
export { EngineProcess, type EngineExit } from './supervisor.ts';
export {
  agentCommand,
  agentEnv,
  agentInstallContainer,
  agentRole,
  agentRoleBinding,
  agentRules,
  agentVolume,
  agentVolumeMount,
  AGENT_MANAGER_RULES,
  AGENT_MEMORY_BYTES,
  AGENT_MOUNT,
  ENGINE_STARTING_MARKER,
  FENCED_POD_ANNOTATION,
  IMAGE_BUNDLE,
  IMAGE_NODE,
  METRICS_PORT_NAME,
  METRICS_QUERY_ENV,
  underAgent,
  type AgentCommandOptions,
  type AgentGrant,
} from './pod.ts';
export {
  CUSTOM_QUERIES_BUDGET_MS,
  CUSTOM_QUERY_ROW_LIMIT,
  CUSTOM_QUERY_TIMEOUT_MS,
  MAX_CUSTOM_QUERIES,
  parseCustomQueries,
  type CustomQueriesSource,
  type CustomQuery,
  type ParsedCustomQueries,
} from './metrics/custom-queries.ts';
