// The README's quick start, simulated, as a test: `npm start --simulated` (what
// `npm start` does where no real node can run) brings up a control plane,
// installs the CRDs, runs the manager, applies deploy/samples and sees them
// Ready on KWOK nodes, having said in one line why and that the Pods are
// simulated. The real start is start-real.test.ts.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePort } from '../../packages/testenv/src/ports.ts';

test('npm start --simulated: control plane, CRDs, manager and samples, all Ready', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'regulon-start-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    REGULON_CLUSTER_DIR: dir,
    REGULON_METRICS_BIND_ADDRESS: `127.0.0.1:${await freePort()}`,
    REGULON_HEALTH_PROBE_BIND_ADDRESS: `127.0.0.1:${await freePort()}`,
  };
  // The start script runs its own control plane in `dir`, apart from the test run's.
  delete env['REGULON_TESTENV_DIR'];
  const run = (args: string[]) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      child.on('close', (code) => resolve({ code, out })); // 'close': output read to the end
    });
  try {
    const started = await run([join(import.meta.dirname, 'start.ts'), '--exit-when-ready', '--simulated']);
    assert.equal(started.code, 0, started.out.slice(-3000));
    assert.match(
      started.out,
      /^Simulated start \(asked for with --simulated\): the samples' Pods are simulated on KWOK nodes, no postgres, redis or app runs\.$/m,
    );
    assert.match(started.out, /Everything is Ready/);
    // kubectl get database,cache,myapp as printed at the end: every sample Ready.
    assert.match(started.out, /orders\s+postgres\s+16\.8\s+1\s+1\s+Ready\s+orders-0/);
    assert.match(started.out, /sessions\s+redis\s+8\.0\.6\s+2\s+2\s+Ready/);
    assert.match(started.out, /shop\s+2\s+2\/2\s+Ready\s+Ready\s+Ready/);
  } finally {
    await run([join(import.meta.dirname, '..', '..', 'packages', 'testenv', 'src', 'cli.ts'), 'down']);
    rmSync(dir, { recursive: true, force: true });
  }
});
