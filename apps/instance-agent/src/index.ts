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
  agentRules,
  agentVolume,
  agentVolumeMount,
  AGENT_MOUNT,
  IMAGE_BUNDLE,
  IMAGE_NODE,
  type AgentCommandOptions,
} from './pod.ts';
