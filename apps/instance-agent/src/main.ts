// The agent's process: PID 1 of an engine container.
//   regulon-instance-agent --namespace NS --lease NAME --role-command CMD -- ENGINE [ARGS...]
// It talks to the API server with the Pod's service account (or KUBECONFIG).
import { KubeClient } from '@regulon/client';
import { createLogger } from '@regulon/runtime';
import { parseAgentArgs } from './config.ts';
import { runAgent } from './agent.ts';

const log = createLogger({ name: 'instance-agent' });
let config;
try {
  config = parseAgentArgs(process.argv.slice(2));
} catch (err) {
  log.error(err instanceof Error ? err.message : String(err));
  process.exit(2);
}
// Only the primary Lease needs the API: an agent for metrics alone runs in a Pod with no token.
const client = config.lease
  ? KubeClient.load({ userAgent: `regulon-instance-agent/${config.identity}` })
  : undefined;
const agent = runAgent(config, client, log);
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => agent.stop());
process.exitCode = await agent.done;
// Open sockets to the API server must not keep a finished agent alive.
process.exit();
