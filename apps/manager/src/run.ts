import { KubeClient } from '@regulon/client';
import {
  LeadershipLostError,
  Manager,
  createLogger,
  logUnhandledRejections,
  runCli,
  setupTracing,
  stopOnSignals,
  type ConfigOf,
} from '@regulon/runtime';
import { Registry } from 'prom-client';
import { CONTROLLERS } from './controllers.ts';
import { OPTIONS, inCluster, ownNamespace } from './options.ts';

type Config = ConfigOf<typeof OPTIONS>;

function enabled(config: Config, name: string): { on: boolean; concurrency: number } {
  const key = name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  const c = config as unknown as Record<string, boolean | number>;
  return { on: c[`${key}Enabled`] === true, concurrency: Number(c[`${key}Concurrency`]) };
}

/** Parses the configuration (exit 2 on bad input), wires every enabled controller and runs until stopped. Returns the exit code. */
export async function run(
  argv: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const config = runCli(OPTIONS, {
    program: 'regulon-manager',
    summary: 'Runs the Regulon controllers (Database, Cache, MyApp) in one process.',
    argv,
    env,
  });
  const logger = createLogger({ level: config.logLevel, name: 'regulon-manager' });
  const stopTracing = await setupTracing('regulon-manager', env);
  const registry = new Registry();
  const client = KubeClient.load({
    registry,
    qps: config.kubeApiQps > 0 ? config.kubeApiQps : Infinity,
    burst: config.kubeApiBurst,
    ...(config.kubeconfig ? { kubeconfigPath: config.kubeconfig } : {}),
  });
  const leaderElect = config.leaderElect === 'auto' ? inCluster(env) : config.leaderElect === 'true';
  const mgr = new Manager({
    client,
    registry,
    logger,
    metricsBindAddress: config.metricsBindAddress,
    healthBindAddress: config.healthProbeBindAddress,
    cacheSyncTimeoutMs: config.cacheSyncTimeout,
    gracefulShutdownTimeoutMs: config.gracefulShutdownTimeout,
    ...(config.namespace ? { namespace: config.namespace } : {}),
    leaderElection: {
      enabled: leaderElect,
      namespace: config.leaderElectionNamespace ?? ownNamespace(env),
      name: config.leaderElectionId,
      leaseDurationMs: config.leaseDuration,
      renewDeadlineMs: config.renewDeadline,
      retryPeriodMs: config.retryPeriod,
    },
  });
  const on: string[] = [];
  for (const controller of CONTROLLERS) {
    const { on: isOn, concurrency } = enabled(config, controller.name);
    if (!isOn) continue;
    controller.setup(mgr, { maxConcurrentReconciles: concurrency });
    on.push(controller.name);
  }
  logger.info({ controllers: on, leaderElection: leaderElect, server: client.server }, 'starting');
  const unguard = logUnhandledRejections(logger);
  const unsignal = stopOnSignals(mgr);
  try {
    await mgr.start();
    return 0;
  } catch (err) {
    logger.error(
      { err },
      err instanceof LeadershipLostError
        ? 'lost leadership; exiting so a fresh process can stand again'
        : 'manager failed',
    );
    return 1;
  } finally {
    unsignal();
    unguard();
    client.close();
    await stopTracing();
  }
}
