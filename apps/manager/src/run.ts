import { ImageCatalog } from '@regulon/image-catalog';
import { KubeClient } from '@regulon/client';
import {
  LeadershipLostError,
  ListenError,
  Manager,
  createLogger,
  logUnhandledRejections,
  setupTracing,
  stopOnSignals,
} from '@regulon/runtime';
import { Registry } from 'prom-client';
import { controllerOptionKeys, runCli } from './config/index.ts';
import { CONTROLLERS } from './controllers.ts';
import { blockOnSignalForDebug } from './debug.ts';
import { OPTIONS, inCluster, ownNamespace } from './options.ts';

/** The controllers `config` switches on, each with its concurrency; found by the one name-to-key conversion. */
export function enabledControllers<C extends { name: string }>(
  config: Readonly<Record<string, unknown>>,
  controllers: readonly C[],
): Array<{ controller: C; concurrency: number }> {
  return controllers.flatMap((controller) => {
    const keys = controllerOptionKeys(controller.name);
    return config[keys.enabled] === true
      ? [{ controller, concurrency: Number(config[keys.concurrency]) }]
      : [];
  });
}

/** Parses the configuration (exit 2 on bad input or an address it cannot listen on), wires every enabled controller and runs until stopped. Returns the exit code. */
export async function run(
  argv: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
  stderr: { write(line: string): unknown } = process.stderr,
): Promise<number> {
  const config = runCli(OPTIONS, {
    program: 'regulon-manager',
    summary: 'Runs the Regulon controllers (Database, Cache, MyApp) in one process.',
    argv,
    env,
  });
  let imageCatalog: ImageCatalog | undefined;
  try {
    imageCatalog = config.imageCatalog ? ImageCatalog.load(config.imageCatalog) : undefined;
  } catch (err) {
    // A bad catalog is a configuration problem like a bad flag: one line saying what, exit 2.
    stderr.write(`${(err as Error).message} (--${OPTIONS.imageCatalog.flag})\n`);
    return 2;
  }
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
  for (const { controller, concurrency } of enabledControllers(config, CONTROLLERS)) {
    controller.setup(mgr, { maxConcurrentReconciles: concurrency, imageCatalog });
    on.push(controller.name);
  }
  logger.info(
    {
      controllers: on,
      leaderElection: leaderElect,
      server: client.server,
      imageCatalog: imageCatalog?.source ?? 'the official images',
    },
    'starting',
  );
  const unguard = logUnhandledRejections(logger);
  const unsignal = stopOnSignals(mgr);
  const undebug = blockOnSignalForDebug(env, (message) => logger.warn(message));
  try {
    await mgr.start();
    return 0;
  } catch (err) {
    if (err instanceof ListenError) {
      // A busy port is a configuration problem like a bad flag: one line saying which flag, exit 2.
      const option = err.role === 'metrics' ? OPTIONS.metricsBindAddress : OPTIONS.healthProbeBindAddress;
      stderr.write(`${err.message}: choose another with --${option.flag}\n`);
      return 2;
    }
    logger.error(
      { err },
      err instanceof LeadershipLostError
        ? 'lost leadership; exiting so a fresh process can stand again'
        : 'manager failed',
    );
    return 1;
  } finally {
    undebug();
    unsignal();
    unguard();
    client.close();
    await stopTracing();
  }
}
