// The options every operator binary has (kubeconfig, namespace, client rate,
// probe addresses, leader election, timeouts, log level), with the flag and
// variable names of controller-runtime's managers, and the settings of a
// Manager they come down to. Plain data: this package knows neither the
// client nor the runtime, so a binary passes the settings on itself.
import { existsSync, readFileSync } from 'node:fs';
import { checkSpec, type ConfigOf, type OptionSpecs } from './spec.ts';

export interface ManagerOptionsDefaults {
  /** Prefix of the environment variables (`<prefix>_NAMESPACE`); default `REGULON`. KUBECONFIG and LOG_LEVEL keep their usual names. */
  envPrefix?: string;
  /** Name of the leader election Lease by default: one per operator, so that two operators never share a leader. */
  leaderElectionId: string;
}

/** The levels `--log-level` accepts (pino's names). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;

/**
 * The standard options of an operator binary, to spread into
 * {@link defineOptions}: `--kubeconfig` (KUBECONFIG), `--namespace`,
 * `--kube-api-qps`, `--kube-api-burst`, `--metrics-bind-address`,
 * `--health-probe-bind-address`, `--leader-elect`,
 * `--leader-election-namespace`, `--leader-election-id`, `--lease-duration`,
 * `--renew-deadline`, `--retry-period`, `--sharding`, `--sharding-buckets`,
 * `--shard-caches`, `--cache-sync-timeout`, `--graceful-shutdown-timeout` (each `<envPrefix>_<FLAG_IN_UPPER_SNAKE_CASE>`)
 * and `--log-level` (LOG_LEVEL). {@link managerSettings} turns their values
 * into a Manager's settings.
 */
export function managerOptions({ envPrefix = 'REGULON', leaderElectionId }: ManagerOptionsDefaults) {
  const options = {
    kubeconfig: {
      flag: 'kubeconfig',
      env: 'KUBECONFIG',
      type: 'string',
      description: 'kubeconfig file; default: in-cluster, or ~/.kube/config',
    },
    namespace: {
      flag: 'namespace',
      env: `${envPrefix}_NAMESPACE`,
      type: 'string',
      description: 'Watch only this namespace (default: all namespaces)',
    },
    kubeApiQps: {
      flag: 'kube-api-qps',
      env: `${envPrefix}_KUBE_API_QPS`,
      type: 'number',
      default: 50,
      description: 'Sustained API requests per second of the shared client; 0 or less: unlimited',
    },
    kubeApiBurst: {
      flag: 'kube-api-burst',
      env: `${envPrefix}_KUBE_API_BURST`,
      type: 'integer',
      default: 100,
      min: 1,
      description: 'API requests the shared client may send at once above that rate',
    },
    metricsBindAddress: {
      flag: 'metrics-bind-address',
      env: `${envPrefix}_METRICS_BIND_ADDRESS`,
      type: 'string',
      default: ':8080',
      description: 'Address of the Prometheus /metrics endpoint; 0 disables it',
    },
    healthProbeBindAddress: {
      flag: 'health-probe-bind-address',
      env: `${envPrefix}_HEALTH_PROBE_BIND_ADDRESS`,
      type: 'string',
      default: ':8081',
      description: 'Address of /healthz and /readyz; 0 disables them',
    },
    leaderElect: {
      flag: 'leader-elect',
      env: `${envPrefix}_LEADER_ELECT`,
      type: 'enum',
      values: ['auto', 'true', 'false'],
      default: 'auto',
      description: 'Leader election over a Lease; auto = on when running in a cluster',
    },
    leaderElectionNamespace: {
      flag: 'leader-election-namespace',
      env: `${envPrefix}_LEADER_ELECTION_NAMESPACE`,
      type: 'string',
      description: "Namespace of the Lease (default: the manager's own namespace)",
    },
    leaderElectionId: {
      flag: 'leader-election-id',
      env: `${envPrefix}_LEADER_ELECTION_ID`,
      type: 'string',
      default: leaderElectionId,
      description: 'Name of the Lease',
    },
    leaseDuration: {
      flag: 'lease-duration',
      env: `${envPrefix}_LEASE_DURATION`,
      type: 'duration',
      default: '15s',
      description: 'How long a Lease is valid without renewal',
    },
    renewDeadline: {
      flag: 'renew-deadline',
      env: `${envPrefix}_RENEW_DEADLINE`,
      type: 'duration',
      default: '10s',
      description: 'How long the leader retries renewing before it gives up leadership',
    },
    retryPeriod: {
      flag: 'retry-period',
      env: `${envPrefix}_RETRY_PERIOD`,
      type: 'duration',
      default: '2s',
      description: 'How often candidates try to acquire or renew',
    },
    sharding: {
      flag: 'sharding',
      env: `${envPrefix}_SHARDING`,
      type: 'boolean',
      description:
        "Active-active replicas: the controllers run on every replica, each on the namespaces of the buckets it owns through a Lease (in the leader election's namespace); leader-only work stays on the elected leader",
    },
    shardingBuckets: {
      flag: 'sharding-buckets',
      env: `${envPrefix}_SHARDING_BUCKETS`,
      type: 'integer',
      default: 16,
      min: 1,
      max: 1024,
      description:
        'How many buckets --sharding divides the namespaces into (every replica must use the same)',
    },
    shardCaches: {
      flag: 'shard-caches',
      env: `${envPrefix}_SHARD_CACHES`,
      type: 'boolean',
      description:
        "With --sharding: each replica caches only its buckets' objects (cut by the API server when it serves ShardedListAndWatch), about 1/N of the memory, but a bucket taken over is listed before its keys are reconciled",
    },
    cacheSyncTimeout: {
      flag: 'cache-sync-timeout',
      env: `${envPrefix}_CACHE_SYNC_TIMEOUT`,
      type: 'duration',
      default: '2m',
      description: 'How long to wait for caches to sync before giving up',
    },
    gracefulShutdownTimeout: {
      flag: 'graceful-shutdown-timeout',
      env: `${envPrefix}_GRACEFUL_SHUTDOWN_TIMEOUT`,
      type: 'duration',
      default: '30s',
      description: 'How long in-flight reconciles may run after SIGTERM',
    },
    logLevel: {
      flag: 'log-level',
      env: 'LOG_LEVEL',
      type: 'enum',
      values: LOG_LEVELS,
      default: 'info',
      description: 'Log level',
    },
  } as const satisfies OptionSpecs;
  // A bad prefix or an empty Lease name is the binary's mistake: say so at startup, not at first use.
  checkSpec(options, {});
  if (leaderElectionId === '') throw new TypeError('leaderElectionId must not be empty');
  return options;
}

/** The specs {@link managerOptions} returns. */
export type ManagerOptions = ReturnType<typeof managerOptions>;

/** The values of the {@link managerOptions} in a loaded configuration (which may hold other options too). */
export type ManagerConfig = ConfigOf<ManagerOptions>;

/** What a binary's Manager, and the client around it, are built with: the fields of their own options. */
export interface ManagerSettings {
  /** The kubeconfig file to load; absent: in-cluster, or ~/.kube/config. */
  kubeconfigPath?: string;
  /** The client's sustained requests per second: Infinity when `--kube-api-qps` is 0 or less. */
  qps: number;
  burst: number;
  metricsBindAddress: string;
  healthBindAddress: string;
  cacheSyncTimeoutMs: number;
  gracefulShutdownTimeoutMs: number;
  /** The one namespace watched; absent: all of them. */
  namespace?: string;
  leaderElection: {
    enabled: boolean;
    namespace: string;
    name: string;
    leaseDurationMs: number;
    renewDeadlineMs: number;
    retryPeriodMs: number;
  };
  /** `--sharding`: the bucket Leases live beside the leader election's, named `<lease>-shards-…`. */
  sharding?: {
    namespace: string;
    name: string;
    buckets: number;
    leaseDurationMs: number;
    renewDeadlineMs: number;
    retryPeriodMs: number;
    shardCaches: boolean;
  };
}

const NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** In a cluster an operator leads by election by default; on a laptop it runs alone. */
export const inCluster = (env: NodeJS.ProcessEnv = process.env): boolean =>
  Boolean(env['KUBERNETES_SERVICE_HOST']);

/** The namespace the binary runs in: POD_NAMESPACE (the downward API), the service account's, or `default`. */
export function ownNamespace(env: NodeJS.ProcessEnv = process.env): string {
  return (
    env['POD_NAMESPACE'] ??
    (existsSync(NAMESPACE_FILE) ? readFileSync(NAMESPACE_FILE, 'utf8').trim() : 'default')
  );
}

/**
 * The settings the {@link managerOptions} come down to: `--leader-elect=auto`
 * resolved by {@link inCluster}, the Lease in {@link ownNamespace} unless
 * `--leader-election-namespace` names one, durations in milliseconds.
 */
export function managerSettings(
  config: ManagerConfig,
  env: NodeJS.ProcessEnv = process.env,
): ManagerSettings {
  const leaderElectionNamespace = config.leaderElectionNamespace ?? ownNamespace(env);
  const timings = {
    leaseDurationMs: config.leaseDuration,
    renewDeadlineMs: config.renewDeadline,
    retryPeriodMs: config.retryPeriod,
  };
  return {
    ...(config.kubeconfig ? { kubeconfigPath: config.kubeconfig } : {}),
    qps: config.kubeApiQps > 0 ? config.kubeApiQps : Infinity,
    burst: config.kubeApiBurst,
    metricsBindAddress: config.metricsBindAddress,
    healthBindAddress: config.healthProbeBindAddress,
    cacheSyncTimeoutMs: config.cacheSyncTimeout,
    gracefulShutdownTimeoutMs: config.gracefulShutdownTimeout,
    ...(config.namespace ? { namespace: config.namespace } : {}),
    leaderElection: {
      enabled: config.leaderElect === 'auto' ? inCluster(env) : config.leaderElect === 'true',
      namespace: leaderElectionNamespace,
      name: config.leaderElectionId,
      ...timings,
    },
    ...(config.sharding
      ? {
          sharding: {
            namespace: leaderElectionNamespace,
            name: `${config.leaderElectionId}-shards`,
            buckets: config.shardingBuckets,
            ...timings,
            shardCaches: config.shardCaches,
          },
        }
      : {}),
  };
}
