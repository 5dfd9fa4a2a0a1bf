// A controller's Manager in a process of its own, for a test that cuts the
// manager off from the Pods: the partition matches a process's group (see
// @regulon/testenv's cutOffFromPods), so the manager runs apart from the
// test's samplers. The test starts an app's entry module with
// startManagerProcess(); that module calls runManagerProcess() with its setup.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { loadKubeConfig } from '@regulon/client';
import { testManager, type LeaderElectionConfig, type Manager } from '@regulon/runtime';

const ENV = 'REGULON_TEST_MANAGER_PROCESS';

export interface ManagerProcessConfig {
  kubeconfigPath: string;
  /** The one namespace the manager watches. */
  namespace: string;
  /** What the entry module's setup needs (JSON), such as an image catalog's document. */
  options: unknown;
  /** Leader election among the processes started with the same Lease (none by default). */
  leaderElection?: LeaderElectionConfig | undefined;
}

/** Starts `entry` (a module URL) as a process of this user in group `gid`, so it reads the same files. */
export function startManagerProcess(entry: URL, config: ManagerProcessConfig, gid: number): ChildProcess {
  return spawn(process.execPath, [fileURLToPath(entry)], {
    gid,
    env: { ...process.env, [ENV]: JSON.stringify(config) },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

/** Stops it (SIGTERM: the manager stops its controllers) and waits for its exit. */
export async function stopManagerProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** In the entry module: a test Manager over the configured namespace, set up by `setup`, until SIGTERM. */
export async function runManagerProcess(setup: (mgr: Manager, options: unknown) => void): Promise<void> {
  const raw = process.env[ENV];
  if (!raw) throw new Error(`${ENV} is not set: start this module with startManagerProcess()`);
  const config = JSON.parse(raw) as ManagerProcessConfig;
  const mgr = testManager(loadKubeConfig({ kubeconfigPath: config.kubeconfigPath }), {
    namespace: config.namespace,
    ...(config.leaderElection ? { leaderElection: config.leaderElection } : {}),
  });
  setup(mgr, config.options);
  process.once('SIGTERM', () => mgr.stop());
  await mgr.start();
}
