// `npm start`: the main job on the embedded local control plane.
//  1. bring up (or reuse) the control plane in .cluster/
//  2. install the CRDs from deploy/crds
//  3. run the manager with every controller, in the foreground
//  4. apply deploy/samples once the manager is ready, and show them becoming Ready
// Ctrl-C stops the manager; the control plane keeps running (npm run cluster -- down).
//   --exit-when-ready   stop the manager once every sample is Ready (used by tests)
import { spawn } from 'node:child_process';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ControlPlane, defaultClusterDir } from '@regulon/testenv';
import { run } from './run.ts';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const exitWhenReady = process.argv.includes('--exit-when-ready');
const metrics = process.env['REGULON_METRICS_BIND_ADDRESS'] ?? '127.0.0.1:8080';
const health = process.env['REGULON_HEALTH_PROBE_BIND_ADDRESS'] ?? '127.0.0.1:8081';

if ((await run('regulon-testenv', ['up'])) !== 0) process.exit(1);
const cp = ControlPlane.attach(defaultClusterDir());
const kubectl = (...args: string[]) => exec(cp.state.kubectl, ['--kubeconfig', cp.kubeconfigPath, ...args]);

await kubectl('apply', '--server-side', '--force-conflicts', '-f', join(root, 'deploy', 'crds'));
await kubectl('wait', '--for=condition=Established', '--timeout=60s', '-f', join(root, 'deploy', 'crds'));
console.log('CRDs installed');

const manager = spawn(
  process.execPath,
  [
    join(root, 'apps', 'manager', 'src', 'main.ts'),
    '--kubeconfig',
    cp.kubeconfigPath,
    '--metrics-bind-address',
    metrics,
    '--health-probe-bind-address',
    health,
  ],
  { stdio: 'inherit' },
);
const exited = new Promise<number>((resolve) => manager.on('exit', (code) => resolve(code ?? 1)));
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => manager.kill(sig));

// Whatever fails from here on, the manager this script started must not outlive it.
try {
  const deadline = Date.now() + 120_000;
  const healthUrl = `http://${health.startsWith(':') ? `127.0.0.1${health}` : health}/readyz`;
  for (;;) {
    const ok = await fetch(healthUrl).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline || manager.exitCode !== null) {
      console.error('the manager did not become ready');
      manager.kill('SIGTERM');
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 250));
  }

  const samples = readdirSync(join(root, 'deploy', 'samples')).filter((f) => f.endsWith('.yaml'));
  for (const file of samples)
    await kubectl('apply', '--server-side', '-f', join(root, 'deploy', 'samples', file));
  console.log(`applied ${samples.join(', ')}; waiting for them to be Ready`);
  const kinds = samples.map((f) => f.replace(/\.yaml$/, ''));
  for (;;) {
    const { stdout } = await kubectl(
      'get',
      kinds.join(','),
      '-o',
      'jsonpath={range .items[*]}{.kind}/{.metadata.name}={.status.phase}{"\\n"}{end}',
    );
    const phases = stdout.trim().split('\n').filter(Boolean);
    if (phases.length >= samples.length && phases.every((l) => l.endsWith('=Ready'))) break;
    if (Date.now() > deadline) {
      console.error(`samples not Ready: ${phases.join(', ')}`);
      manager.kill('SIGTERM');
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  console.log((await kubectl('get', kinds.join(','))).stdout);
  console.log(
    `Everything is Ready. Try:\n  ${cp.state.kubectl} --kubeconfig ${cp.kubeconfigPath} get ${kinds.join(',')}\nCtrl-C stops the manager; npm run cluster -- down stops the control plane.`,
  );
} catch (err) {
  console.error(`npm start failed: ${err instanceof Error ? err.message : String(err)}`);
  manager.kill('SIGTERM');
  await exited;
  process.exit(1);
}
if (exitWhenReady) manager.kill('SIGTERM');
process.exit(await exited);
