export { parseAgentArgs, DEFAULT_TIMINGS, USAGE, type AgentConfig } from './config.ts';
export { runAgent, askRole, FENCED_EXIT_CODE, type AgentRun } from './agent.ts';
export {
  PrimaryGuard,
  type Campaign,
  type CampaignCallbacks,
  type PrimaryGuardOptions,
} from './primary-guard.ts';
export { EngineProcess, type EngineExit } from './supervisor.ts';
