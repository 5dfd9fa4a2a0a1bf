import { KubeClient, type ClientOptions, type KubeConfigSource } from '@regulon/client';
import { Registry } from 'prom-client';
import { createLogger } from '../observability/logging.ts';
import { Manager, type ManagerOptions } from './manager.ts';

export interface TestManagerOptions extends Omit<ManagerOptions, 'client' | 'registry'> {
  /** For the manager's client, beside the shared registry (qps, burst). */
  clientOptions?: Omit<ClientOptions, 'registry'> | undefined;
}

/**
 * A Manager for a test against a control plane (testenv's `env.kubeConfig`):
 * its own metrics registry, which its client records into too, so that two
 * managers in one process never share a metric and a test reads
 * `mgr.registry`; no metrics or health listener; logs at `LOG_LEVEL`
 * (default warn). `options` override any of these.
 */
export function testManager(kubeConfig: KubeConfigSource, options: TestManagerOptions = {}): Manager {
  const { clientOptions, ...managerOptions } = options;
  const registry = new Registry();
  return new Manager({
    client: KubeClient.fromKubeConfig(kubeConfig, { ...clientOptions, registry }),
    registry,
    logger: createLogger({ level: process.env['LOG_LEVEL'] ?? 'warn' }),
    metricsBindAddress: '0',
    healthBindAddress: '0',
    ...managerOptions,
  });
}
