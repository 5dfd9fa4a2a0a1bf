import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAgentArgs } from './config.ts';
import {
  AGENT_MOUNT,
  agentCommand,
  agentGrant,
  agentRole,
  agentRoleBinding,
  METRICS_PORT_NAME,
  underAgent,
} from './pod.ts';

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

test('without a Lease, the command is the agent for the metrics alone: no Lease, role or Pod check', () => {
  const argv = agentCommand({
    metrics: { port: 9150, engine: 'memcached', command: 'sh /metrics.sh' },
    engine: ['memcached', '-p', '11211'],
  });
  assert.ok(!argv.includes('--lease') && !argv.includes('--pod-uid') && !argv.includes('--role-command'));
  const config = parseAgentArgs(
    argv.slice(2).map((a) => expand(a, { POD_NAMESPACE: 'shop', POD_NAME: 'sessions-5d8-x' })),
    {},
  );
  assert.equal(config.lease, undefined);
  assert.equal(config.podUid, undefined);
  assert.deepEqual(config.metrics, { port: 9150, engine: 'memcached', command: 'sh /metrics.sh' });
  assert.deepEqual(config.engine, ['memcached', '-p', '11211']);
});

test("under the agent, the container keeps its engine and volumes, and its memory grows by the agent's 128 MiB where one is set", () => {
  const { container, initContainer, volume } = underAgent(
    {
      name: 'redis',
      command: ['sh', '-c', 'exec redis-server /etc/redis/redis.conf'],
      resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '64Mi' } },
      volumeMounts: [{ name: 'config', mountPath: '/etc/redis' }],
    },
    {
      lease: 'sessions-primary',
      roleCommand: 'echo primary',
      image: 'regulon.local/manager:1',
      securityContext: {},
    },
  );
  assert.deepEqual(container.resources, {
    requests: { cpu: '100m', memory: '192Mi' },
    limits: { memory: '192Mi' },
  });
  assert.deepEqual(container.command!.slice(-3), ['sh', '-c', 'exec redis-server /etc/redis/redis.conf']);
  assert.deepEqual(
    container.volumeMounts!.map((m) => m.mountPath),
    ['/etc/redis', AGENT_MOUNT],
  );
  assert.equal(initContainer.image, 'regulon.local/manager:1');
  assert.equal(volume.name, container.volumeMounts![1]!.name);
  // A container without a memory figure gets none: no limit appears from nowhere.
  const bare = underAgent(
    { name: 'postgres', command: ['bash', 'start.sh'], resources: { requests: { cpu: '1' } } },
    { lease: 'db-primary', roleCommand: 'echo primary', image: 'm', securityContext: {} },
  );
  assert.deepEqual(bare.container.resources, { requests: { cpu: '1' } });
});

test('with metrics, the agent is told the port, engine and command, and the container names the port', () => {
  const { container } = underAgent(
    { name: 'redis', command: ['redis-server'], ports: [{ name: 'redis', containerPort: 6379 }] },
    {
      lease: 'sessions-primary',
      roleCommand: 'echo primary',
      metrics: { port: 9121, engine: 'redis', command: 'redis-cli info $(echo x)' },
      image: 'm',
      securityContext: {},
    },
  );
  const config = parseAgentArgs(
    container.command!.slice(2).map((a) => expand(a, { POD_NAMESPACE: 'n', POD_NAME: 'p', POD_UID: 'u' })),
    {},
  );
  assert.deepEqual(config.metrics, { port: 9121, engine: 'redis', command: 'redis-cli info $(echo x)' });
  assert.deepEqual(
    container.ports?.map((p) => `${p.name}:${p.containerPort}`),
    ['redis:6379', `${METRICS_PORT_NAME}:9121`],
  );
  const none = underAgent(
    { name: 'redis', command: ['redis-server'] },
    { lease: 'l', roleCommand: 'echo primary', image: 'm', securityContext: {} },
  );
  assert.equal(none.container.ports, undefined);
  assert.ok(!none.container.command!.includes('--metrics-port'));
});

test("an owner's grant names every ordinal it may have, its one Lease, and binds its instances' account only", () => {
  const grant = agentGrant(
    { name: 'pg', namespace: 'team' },
    { agentRole: 'pg-instance-agent', serviceAccount: 'pg-instance', primaryLease: 'pg-primary' },
    3,
    { app: 'pg' },
  );
  const role = agentRole(grant);
  const pods = role.rules!.find((r) => r.resources?.includes('pods'));
  assert.deepEqual(pods?.resourceNames, ['pg-0', 'pg-1', 'pg-2']);
  const leases = role.rules!.find((r) => r.resources?.includes('leases'));
  assert.deepEqual(leases?.resourceNames, ['pg-primary']);
  const binding = agentRoleBinding(grant);
  assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'pg-instance', namespace: 'team' }]);
  assert.equal(binding.roleRef.name, 'pg-instance-agent');
});
