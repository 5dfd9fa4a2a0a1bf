// --metrics-queries-file, from the Pod spec the manager writes to the agent's configuration.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAgentArgs } from './config.ts';
import { agentCommand } from './pod.ts';

const metrics = { port: 9187, engine: 'postgres', command: 'psql -c "$REGULON_METRICS_QUERY"' };

test('each queries file the Pod mounts is a --metrics-queries-file the agent reads back', () => {
  const files = ['/regulon-metrics-queries/0/queries.yaml', '/regulon-metrics-queries/1/extra.yaml'];
  const argv = agentCommand({
    lease: 'orders-primary',
    roleCommand: 'echo primary',
    engine: ['postgres'],
    metrics: { ...metrics, queriesFiles: files },
  });
  assert.deepEqual(
    argv.flatMap((a, i) => (a === '--metrics-queries-file' ? [argv[i + 1]] : [])),
    files,
  );
  // The kubelet expands $(POD_NAMESPACE) and the like; the agent is given them expanded.
  const expanded = argv
    .slice(2)
    .map((a) => a.replace('$(POD_NAMESPACE)', 'shop').replace(/\$\((POD_NAME|POD_UID)\)/, 'x'));
  const c = parseAgentArgs(expanded, {});
  assert.deepEqual(c.metrics?.queriesFiles, files);
  assert.equal(c.metrics?.engine, 'postgres');
  // Without files, no flag and no queries.
  const plain = agentCommand({ lease: 'l', roleCommand: 'echo primary', engine: ['postgres'], metrics });
  assert.ok(!plain.includes('--metrics-queries-file'));
});

test('queries need the metrics flags and an engine that runs SQL', () => {
  const base = ['--namespace', 'shop', '--lease', 'l', '--role-command', 'echo primary', '--identity', 'p'];
  assert.throws(
    () => parseAgentArgs([...base, '--metrics-queries-file', '/q.yaml', '--', 'postgres']),
    /--metrics-queries-file needs --metrics-port, --metrics-engine and --metrics-command/,
  );
  assert.throws(
    () =>
      parseAgentArgs([
        ...base,
        ...['--metrics-port', '9121', '--metrics-engine', 'redis', '--metrics-command', 'redis-cli info'],
        ...['--metrics-queries-file', '/q.yaml', '--', 'redis-server'],
      ]),
    /--metrics-queries-file: the redis engine runs no user-defined queries \(postgres, mariadb do\)/,
  );
});
