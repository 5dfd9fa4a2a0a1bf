import { existsSync, readFileSync } from 'node:fs';
import { controllerOptions, defineOptions } from './config/index.ts';
import { CONTROLLERS } from './controllers.ts';

const NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** In a cluster the manager leads by election by default; on a laptop it runs alone. */
export const inCluster = (env: NodeJS.ProcessEnv = process.env) => Boolean(env['KUBERNETES_SERVICE_HOST']);

export function ownNamespace(env: NodeJS.ProcessEnv = process.env): string {
  return (
    env['POD_NAMESPACE'] ??
    (existsSync(NAMESPACE_FILE) ? readFileSync(NAMESPACE_FILE, 'utf8').trim() : 'default')
  );
}

export const OPTIONS = defineOptions({
  kubeconfig: {
    flag: 'kubeconfig',
    env: 'KUBECONFIG',
    type: 'string',
    description: 'kubeconfig file; default: in-cluster, or ~/.kube/config',
  },
  namespace: {
    flag: 'namespace',
    env: 'REGULON_NAMESPACE',
    type: 'string',
    description: 'Watch only this namespace (default: all namespaces)',
  },
  kubeApiQps: {
    flag: 'kube-api-qps',
    env: 'REGULON_KUBE_API_QPS',
    type: 'number',
    default: 50,
    description: 'Sustained API requests per second of the shared client; 0 or less: unlimited',
  },
  kubeApiBurst: {
    flag: 'kube-api-burst',
    env: 'REGULON_KUBE_API_BURST',
    type: 'integer',
    default: 100,
    min: 1,
    description: 'API requests the shared client may send at once above that rate',
  },
  metricsBindAddress: {
    flag: 'metrics-bind-address',
    env: 'REGULON_METRICS_BIND_ADDRESS',
    type: 'string',
    default: ':8080',
    description: 'Address of the Prometheus /metrics endpoint; 0 disables it',
  },
  healthProbeBindAddress: {
    flag: 'health-probe-bind-address',
    env: 'REGULON_HEALTH_PROBE_BIND_ADDRESS',
    type: 'string',
    default: ':8081',
    description: 'Address of /healthz and /readyz; 0 disables them',
  },
  leaderElect: {
    flag: 'leader-elect',
    env: 'REGULON_LEADER_ELECT',
    type: 'enum',
    values: ['auto', 'true', 'false'],
    default: 'auto',
    description: 'Leader election over a Lease; auto = on when running in a cluster',
  },
  leaderElectionNamespace: {
    flag: 'leader-election-namespace',
    env: 'REGULON_LEADER_ELECTION_NAMESPACE',
    type: 'string',
    description: "Namespace of the Lease (default: the manager's own namespace)",
  },
  leaderElectionId: {
    flag: 'leader-election-id',
    env: 'REGULON_LEADER_ELECTION_ID',
    type: 'string',
    default: 'regulon-manager',
    description: 'Name of the Lease',
  },
  leaseDuration: {
    flag: 'lease-duration',
    env: 'REGULON_LEASE_DURATION',
    type: 'duration',
    default: '15s',
    description: 'How long a Lease is valid without renewal',
  },
  renewDeadline: {
    flag: 'renew-deadline',
    env: 'REGULON_RENEW_DEADLINE',
    type: 'duration',
    default: '10s',
    description: 'How long the leader retries renewing before it gives up leadership',
  },
  retryPeriod: {
    flag: 'retry-period',
    env: 'REGULON_RETRY_PERIOD',
    type: 'duration',
    default: '2s',
    description: 'How often candidates try to acquire or renew',
  },
  cacheSyncTimeout: {
    flag: 'cache-sync-timeout',
    env: 'REGULON_CACHE_SYNC_TIMEOUT',
    type: 'duration',
    default: '2m',
    description: 'How long to wait for caches to sync before giving up',
  },
  gracefulShutdownTimeout: {
    flag: 'graceful-shutdown-timeout',
    env: 'REGULON_GRACEFUL_SHUTDOWN_TIMEOUT',
    type: 'duration',
    default: '30s',
    description: 'How long in-flight reconciles may run after SIGTERM',
  },
  imageCatalog: {
    flag: 'image-catalog',
    env: 'REGULON_IMAGE_CATALOG',
    type: 'string',
    description:
      "Image catalog file: which image runs which engine version (default: each engine's official images; see @regulon/image-catalog)",
  },
  logLevel: {
    flag: 'log-level',
    env: 'LOG_LEVEL',
    type: 'enum',
    values: ['trace', 'debug', 'info', 'warn', 'error', 'fatal'],
    default: 'info',
    description: 'Log level',
  },
  ...controllerOptions(CONTROLLERS.map((c) => c.name)),
});
