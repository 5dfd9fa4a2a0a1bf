// The agent for an engine without a primary (memcached): no Lease, no role, no API server at all.
// It runs as in a Pod with no service-account token: no KUBECONFIG, no in-cluster variables.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { eventually } from '@regulon/testenv';

const MAIN = join(import.meta.dirname, 'main.ts');
const STATS = join(import.meta.dirname, 'metrics', 'testdata', 'memcached-1.6.txt');

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test('without a Lease: it supervises the engine, publishes its metrics without a role or a Lease series, and exits with its code', async () => {
  const port = await freePort();
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k !== 'KUBECONFIG' && !k.startsWith('KUBERNETES_SERVICE')),
  );
  const child = spawn(
    process.execPath,
    [
      MAIN,
      ...['--namespace', 'shop', '--identity', 'sessions-0'],
      ...[
        '--metrics-port',
        String(port),
        '--metrics-engine',
        'memcached',
        '--metrics-command',
        `cat ${STATS}`,
      ],
      '--',
      ...['sh', '-c', 'trap "exit 7" TERM; while :; do sleep 0.1; done'],
    ],
    { env, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const exited = once(child, 'exit');
  try {
    const body = await eventually(
      'the metrics endpoint answering',
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/metrics`).catch(() => undefined);
        return res?.ok && res.text();
      },
      15_000,
    );
    assert.match(body, /^memcached_up 1$/m);
    assert.match(body, /^memcached_items_evicted_total 130$/m);
    assert.match(body, /^memcached_commands_total\{command="get",status="hit"\} 11$/m);
    assert.doesNotMatch(body, /role=/, 'memcached has no role');
    assert.doesNotMatch(body, /regulon_instance_primary_lease_held/, 'and no Lease');
    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    assert.equal(code, 7, "the engine's exit code, passed on");
  } finally {
    child.kill('SIGKILL');
  }
});
