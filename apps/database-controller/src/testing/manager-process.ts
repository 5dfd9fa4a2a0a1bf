// The Database controller in a Manager of its own process, for a test that
// cuts the manager off from the Pods: the partition matches a process's group
// (see cutOffFromPods), so the manager runs apart from the test's samplers.
// Started by startManagerProcess() below; stops on SIGTERM.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { ImageCatalog } from '@regulon/image-catalog';
import { testManager } from '@regulon/runtime';
import { setupDatabaseController } from '../index.ts';

const ENV = 'REGULON_TEST_MANAGER_PROCESS';

interface ManagerProcessConfig {
  kubeconfigPath: string;
  namespace: string;
  /** The image catalog's document (ImageCatalog.fromDocument). */
  catalog: unknown;
}

/** Starts the manager process in group `gid` (this process's user, so it reads the same files). */
export function startManagerProcess(config: ManagerProcessConfig, gid: number): ChildProcess {
  return spawn(process.execPath, [fileURLToPath(import.meta.url)], {
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

if (process.env[ENV] && process.argv[1] === fileURLToPath(import.meta.url)) {
  const config = JSON.parse(process.env[ENV]) as ManagerProcessConfig;
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(config.kubeconfigPath);
  const mgr = testManager(kubeConfig, { namespace: config.namespace });
  setupDatabaseController(mgr, {
    imageCatalog: ImageCatalog.fromDocument(config.catalog, 'the test manager process'),
  });
  process.once('SIGTERM', () => mgr.stop());
  await mgr.start();
}
