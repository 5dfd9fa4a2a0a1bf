import { ImageCatalog } from '@regulon/image-catalog';
import { KubeClient, loadKubeConfig } from '@regulon/client';
import {
  applyWebhookConfigurations,
  FileCertificates,
  LeadershipLostError,
  ListenError,
  ManagedCertificates,
  Manager,
  StorageVersionMigrator,
  WebhookListenError,
  WebhookServer,
  configurationNames,
  createLogger,
  logUnhandledRejections,
  setupTracing,
  stopOnSignals,
} from '@regulon/runtime';
import { Registry } from 'prom-client';
import {
  enabledControllers,
  inCluster,
  managerSettings,
  ownNamespace,
  runCli,
  type ConfigOf,
} from '@regulon/options';
import { CONTROLLERS } from './controllers.ts';
import { blockOnSignalForDebug } from './debug.ts';
import { OPTIONS } from './options.ts';
import { OWN_IMAGE, ownImage } from './own-image.ts';

/**
 * The admission webhook server: a mounted certificate when --webhook-cert-dir
 * names one, otherwise certificates the manager makes, keeps in a Secret of
 * its namespace and injects the CA of into the webhook configurations.
 */
function webhookServer(
  mgr: Manager,
  config: ConfigOf<typeof OPTIONS>,
  env: NodeJS.ProcessEnv,
  client: KubeClient,
): WebhookServer {
  const log = mgr.logger.child({ component: 'webhook-certificates' });
  const namespace = ownNamespace(env);
  const service = config.webhookServiceName;
  const names = configurationNames(config.webhookConfigurationPrefix);
  const certificates = config.webhookCertDir
    ? new FileCertificates({ certDir: config.webhookCertDir, logger: log })
    : new ManagedCertificates({
        client,
        namespace,
        secretName: config.webhookSecretName,
        names: {
          dnsNames: [
            service,
            `${service}.${namespace}`,
            `${service}.${namespace}.svc`,
            `${service}.${namespace}.svc.cluster.local`,
          ],
          // On the host the API server dials the manager by URL, at 127.0.0.1.
          ipAddresses: inCluster(env) ? [] : ['127.0.0.1'],
        },
        validatingConfiguration: names.validating,
        mutatingConfiguration: names.mutating,
        // On the host the API server dials a URL, through no Service.
        ...(inCluster(env) ? { service: { namespace, name: service } } : {}),
        logger: log,
      });
  return new WebhookServer(mgr, { bindAddress: config.webhookBindAddress, certificates });
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
  const { kubeconfigPath, qps, burst, ...settings } = managerSettings(config, env);
  // One kubeconfig for the client and for what goes around it (exec into Pods).
  const kubeConfig = loadKubeConfig(kubeconfigPath ? { kubeconfigPath } : {});
  const client = KubeClient.load({ registry, qps, burst, kubeConfig });
  // Empty (an overlay's opt-out, deploy/README.md) is no agent, like unset.
  let instanceAgentImage = config.instanceAgentImage || undefined;
  if (instanceAgentImage === OWN_IMAGE) {
    try {
      instanceAgentImage = await ownImage(client, env, AbortSignal.timeout(30_000));
      logger.info({ image: instanceAgentImage }, 'the instance agent comes from the manager’s own image');
    } catch (err) {
      // Without the image it was told to use, the manager does not start: engines run without
      // their agent would fail over by other rules than the ones this installation chose.
      logger.error({ err }, `could not resolve --${OPTIONS.instanceAgentImage.flag}=${OWN_IMAGE}`);
      client.close();
      await stopTracing();
      return 1;
    }
  }
  const mgr = new Manager({ client, registry, logger, ...settings });
  const on: string[] = [];
  const enabled = enabledControllers(config, CONTROLLERS);
  for (const { controller, concurrency } of enabled) {
    controller.setup(mgr, {
      maxConcurrentReconciles: concurrency,
      imageCatalog,
      kubeConfig,
      instanceAgentImage,
    });
    on.push(controller.name);
  }
  const webhooks =
    config.webhookBindAddress !== '0' && config.webhookBindAddress !== ''
      ? webhookServer(mgr, config, env, client)
      : undefined;
  if (webhooks) {
    for (const { controller } of enabled) controller.webhooks?.(webhooks);
    // The kinds it converts: objects an earlier version stored move to the storage version.
    const crdNames = webhooks.conversions().map((c) => c.crdName);
    if (crdNames.length > 0)
      mgr.add(
        new StorageVersionMigrator({
          client,
          crdNames,
          logger: mgr.logger.child({ component: 'storage-version-migrator' }),
        }),
      );
  }
  if (webhooks && config.webhookUrl) {
    // The host case: no deploy/ manifest knows this URL, so the manager registers it.
    try {
      await applyWebhookConfigurations(client, webhooks.definitions(), {
        names: configurationNames(config.webhookConfigurationPrefix),
        clientConfig: { url: config.webhookUrl },
        ...(config.namespace ? { namespaces: [config.namespace] } : {}),
        fieldManager: 'regulon-manager',
      });
    } catch (err) {
      logger.error({ err }, 'could not apply the webhook configurations');
      client.close();
      await stopTracing();
      return 1;
    }
  }
  logger.info(
    {
      controllers: on,
      leaderElection: settings.leaderElection.enabled,
      ...(settings.sharding
        ? { sharding: { buckets: settings.sharding.buckets, shardCaches: settings.sharding.shardCaches } }
        : {}),
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
    if (webhooks?.failure) {
      // Like a busy metrics port: a configuration problem, one line, exit 2.
      const flag =
        webhooks.failure instanceof WebhookListenError ? ` (--${OPTIONS.webhookBindAddress.flag})` : '';
      stderr.write(`${webhooks.failure.message}${flag}\n`);
      return 2;
    }
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
