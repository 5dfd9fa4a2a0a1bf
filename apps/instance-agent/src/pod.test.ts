import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAgentArgs } from './config.ts';
import { AGENT_MOUNT, agentCommand } from './pod.ts';

/** The kubelet's expansion of a container's command: `$(NAME)` from its variables, `$$` to `$`. */
function expand(arg: string, vars: Record<string, string>): string {
  return arg.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, name?: string) =>
    m === '$$' ? '$' : (vars[name!] ?? m),
  );
}

test('the command the Pod runs is the agent with its Lease, identity and role command, the engine after --', () => {
  const roleCommand = `psql -tAXc "select case when pg_is_in_recovery() then 'replica' else 'primary' end" $(echo x)`;
  const argv = agentCommand({
    lease: 'shop-db-primary',
    roleCommand,
    quorumCommand: 'echo 2 3',
    engine: ['bash', '/etc/regulon/start.sh'],
  });
  assert.deepEqual(argv.slice(0, 2), [`${AGENT_MOUNT}/node`, `${AGENT_MOUNT}/agent.mjs`]);
  const expanded = argv
    .slice(2)
    .map((a) => expand(a, { POD_NAMESPACE: 'shop', POD_NAME: 'shop-db-1', POD_UID: 'uid-1' }));
  const config = parseAgentArgs(expanded, {});
  assert.equal(config.namespace, 'shop');
  assert.equal(config.identity, 'shop-db-1');
  assert.equal(config.podUid, 'uid-1');
  assert.equal(config.lease, 'shop-db-primary');
  assert.equal(config.roleCommand, roleCommand, "a shell's $( reaches the shell as written");
  assert.equal(config.quorumCommand, 'echo 2 3');
  assert.deepEqual(config.engine, ['bash', '/etc/regulon/start.sh']);
});
