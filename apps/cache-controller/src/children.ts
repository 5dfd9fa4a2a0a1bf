import {
  contentHash,
  restrictedContainerSecurityContext,
  restrictedPodSecurityContext,
} from '@regulon/conventions';
import type {
  V1ConfigMap,
  V1Container,
  V1Deployment,
  V1EnvVar,
  V1PodDisruptionBudget,
  V1PodTemplateSpec,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1Service,
  V1ServiceAccount,
  V1StatefulSet,
  V1Volume,
} from '@kubernetes/client-node';
import {
  agentGrant,
  agentRole,
  agentRoleBinding,
  underAgent,
  type AgentGrant,
} from '@regulon/instance-agent/pod';
import type { KubeObject } from '@regulon/client';
import type { CacheObject } from './api.ts';
import { CONFIG_DIR, CONFIG_FILE, DATA_DIR, renderConfig, RUN_DIR } from './config.ts';
import {
  authEnabled,
  authSecretName,
  childNames,
  labels,
  MAX_REPLICAS,
  persistent,
  replicated,
  ROLE_LABEL,
  selector,
  stateful,
} from './names.ts';
import { replicatedRedisScript, TOPOLOGY_MOUNT } from './replication/start-script.ts';
import { MEMBERS_KEY, topologyData, type Topology } from '@regulon/conventions';
import { ENGINE_METRICS } from './metrics.ts';
import { REDIS_QUORUM_COMMAND, REDIS_ROLE_COMMAND } from './replication/agent.ts';
import { DEFAULT_MEMCACHED_USER, ENGINE_DEFAULTS, OFFICIAL_IMAGES } from './versions.ts';
import type { ImageCatalog } from '@regulon/image-catalog';

export const CONFIG_HASH_ANNOTATION = 'regulon.dev/config-hash';

/** The kubelet's limit on a readiness probe; the redis probe gives up a second before it. */
const PROBE_TIMEOUT_SECONDS = 3;

/**
 * The image of the Cache's engine version in `catalog` (the manager's, or the
 * official images); undefined when the catalog lacks the version, which the
 * reconciler reports instead of running anything.
 */
export function image(cache: CacheObject, catalog: ImageCatalog = OFFICIAL_IMAGES): string | undefined {
  return catalog.imageFor(cache.spec.engine, cache.spec.version);
}

/** Quantities as the API types spell them (strings); the CRD also accepts integers. */
function memory(cache: CacheObject): string {
  return String(cache.spec.memory);
}

export function desiredConfigMap(cache: CacheObject): V1ConfigMap {
  const { file, content } = renderConfig(cache);
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: childNames(cache).config, labels: labels(cache) },
    data: { [file]: content },
  };
}

/** The topology ConfigMap of a replicated redis (see replication/replication.ts): which instance may be writable. */
export function desiredTopology(cache: CacheObject, t: Topology): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: childNames(cache).topology, labels: labels(cache) },
    // The instance count beside the topology: the agents' quorum answer counts a majority of it.
    data: { ...topologyData(t), [MEMBERS_KEY]: String(cache.spec.replicas) },
  };
}

export function desiredServices(cache: CacheObject): {
  client: V1Service;
  headless: V1Service;
  readOnly: V1Service | undefined;
} {
  const n = childNames(cache);
  const port = ENGINE_DEFAULTS[cache.spec.engine].port;
  const svc = (
    name: string,
    extra: Partial<NonNullable<V1Service['spec']>> = {},
    role?: 'primary' | 'replica',
  ): V1Service => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, labels: labels(cache) },
    spec: {
      selector: { ...selector(cache), ...(role ? { [ROLE_LABEL]: role } : {}) },
      ports: [{ name: cache.spec.engine, port, targetPort: port, protocol: 'TCP' }],
      ...extra,
    },
  });
  const roles = replicated(cache);
  return {
    // Replicated: the primary only (the manager moves the role label), so every write reaches the one writable instance.
    client: svc(n.clientService, { type: 'ClusterIP' }, roles ? 'primary' : undefined),
    // Replicas linked to the primary within the lag bound.
    readOnly: roles ? svc(n.readOnlyService, { type: 'ClusterIP' }, 'replica') : undefined,
    // Every ready Pod's address: what clients that shard keys across instances (memcached's way) resolve,
    // and the StatefulSet's governing Service for stable Pod DNS.
    headless: svc(n.headlessService, { clusterIP: 'None' }),
  };
}

export function desiredDisruptionBudget(cache: CacheObject): V1PodDisruptionBudget | undefined {
  if (cache.spec.replicas <= 1) return undefined;
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: childNames(cache).disruptionBudget, labels: labels(cache) },
    spec: { maxUnavailable: 1, selector: { matchLabels: selector(cache) } },
  };
}

/**
 * The start scripts. The password comes from a secretKeyRef env var and is
 * written to a file on a memory-backed emptyDir that the config includes, so
 * it is never in a ConfigMap and never on a command line (where `ps` shows it).
 */
function redisCommand(cache: CacheObject): string[] {
  const conf = `${CONFIG_DIR.redis}/${CONFIG_FILE.redis}`;
  if (replicated(cache))
    return [
      'sh',
      '-c',
      replicatedRedisScript({
        conf,
        runDir: RUN_DIR.redis,
        port: ENGINE_DEFAULTS.redis.port,
        persistent: persistent(cache),
        auth: authEnabled(cache),
      }),
    ];
  if (!authEnabled(cache)) return ['redis-server', conf];
  // redis.conf double-quoted strings take \\ and \" escapes.
  const script = [
    'set -e',
    'umask 077',
    `escaped=$(printf '%s' "$REDISCLI_AUTH" | sed 's/[\\\\"]/\\\\&/g')`,
    `printf 'requirepass "%s"\\n' "$escaped" > ${RUN_DIR.redis}/auth.conf`,
    'unset escaped REDISCLI_AUTH',
    `exec redis-server ${conf}`,
  ].join('\n');
  return ['sh', '-c', script];
}

function memcachedCommand(cache: CacheObject): string[] {
  const args = `$(cat ${CONFIG_DIR.memcached}/${CONFIG_FILE.memcached})`;
  const script = authEnabled(cache)
    ? [
        'set -e',
        'umask 077',
        `printf '%s:%s\\n' "\${MEMCACHED_USERNAME:-${DEFAULT_MEMCACHED_USER}}" "$MEMCACHED_PASSWORD" > ${RUN_DIR.memcached}/auth`,
        'unset MEMCACHED_PASSWORD',
        `exec memcached ${args}`,
      ]
    : [`exec memcached ${args}`];
  return ['sh', '-c', script.join('\n')];
}

/** What a replicated instance's start script reads: its Pod name, where the primary and its peers are. */
function replicationEnv(cache: CacheObject): V1EnvVar[] {
  if (!replicated(cache)) return [];
  const n = childNames(cache);
  const ns = cache.metadata.namespace!;
  return [
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'PRIMARY_HOST', value: primaryHost(cache) },
    { name: 'PEERS_HOST', value: `${n.headlessService}.${ns}.svc` },
  ];
}

/** What replicas follow: the client Service, which selects the primary only, wherever the manager moves it. */
export function primaryHost(cache: CacheObject): string {
  return `${childNames(cache).clientService}.${cache.metadata.namespace!}.svc`;
}

function env(cache: CacheObject): V1EnvVar[] {
  return [...replicationEnv(cache), ...authEnv(cache)];
}

function authEnv(cache: CacheObject): V1EnvVar[] {
  const secret = authSecretName(cache);
  if (!secret) return [];
  const ref = (name: string, key: string, optional = false): V1EnvVar => ({
    name,
    valueFrom: { secretKeyRef: { name: secret, key, ...(optional ? { optional: true } : {}) } },
  });
  // REDISCLI_AUTH is also what redis-cli in the readiness probe authenticates with.
  return cache.spec.engine === 'redis'
    ? [ref('REDISCLI_AUTH', 'password')]
    : [ref('MEMCACHED_USERNAME', 'username', true), ref('MEMCACHED_PASSWORD', 'password')];
}

/** Whether the Cache's Pods run under the instance agent: a replicated redis, and the manager knows the agent's image. */
export function runsAgent(cache: CacheObject, agentImage: string | undefined): agentImage is string {
  return agentImage !== undefined && replicated(cache);
}

/** What the Cache's agents are granted (see agentRole in @regulon/instance-agent). */
function grantOf(cache: CacheObject): AgentGrant {
  const { name, namespace } = cache.metadata;
  return agentGrant({ name: name!, namespace: namespace! }, childNames(cache), MAX_REPLICAS, labels(cache));
}

/**
 * Under the instance agent, the instances' own service account, whose token the agent renews the
 * primary Lease with; its Role (agentRole) allows that and reading the instances' Pods, nothing else.
 */
export function desiredAgentAccess(
  cache: CacheObject,
  agentImage: string | undefined,
): [V1ServiceAccount, V1Role, V1RoleBinding] | [] {
  if (!runsAgent(cache, agentImage)) return [];
  const grant = grantOf(cache);
  return [
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: grant.serviceAccount, labels: labels(cache) },
      automountServiceAccountToken: true,
    },
    agentRole(grant),
    agentRoleBinding(grant),
  ];
}

function podTemplate(
  cache: CacheObject,
  imageRef: string | undefined,
  agentImage?: string,
): V1PodTemplateSpec {
  const ref = imageRef ?? image(cache);
  // Unreachable from the reconciler, which checks the catalog first; a bug otherwise.
  if (!ref) throw new Error(`no image for ${cache.spec.engine} ${cache.spec.version}`);
  const n = childNames(cache);
  const engine = cache.spec.engine;
  const d = ENGINE_DEFAULTS[engine];
  const { content } = renderConfig(cache);
  const tcp = { tcpSocket: { port: d.port } };
  // The probe bounds itself, under the kubelet's timeout: containerd reports an exec probe's timeout only
  // once the exec's output closes, and a redis-cli waiting on a hung server holds it open, so a hung
  // redis (seen with CLIENT PAUSE on the real node) stayed Ready until it answered again.
  const readiness =
    engine === 'redis'
      ? {
          exec: {
            command: [
              'sh',
              '-c',
              `timeout ${PROBE_TIMEOUT_SECONDS - 1} redis-cli -h 127.0.0.1 -p ${d.port} ping | grep -q PONG`,
            ],
          },
        }
      : tcp;
  const container: V1Container = {
    name: engine,
    image: ref,
    command: engine === 'redis' ? redisCommand(cache) : memcachedCommand(cache),
    ports: [{ name: engine, containerPort: d.port, protocol: 'TCP' }],
    env: env(cache),
    resources: {
      // Requests equal the limit for memory: an evicted cache is worse than one that never schedules.
      requests: { cpu: '100m', memory: memory(cache) },
      limits: { memory: memory(cache) },
    },
    // A server that exits at start says why in its last lines: the kubelet keeps them for the status.
    terminationMessagePolicy: 'FallbackToLogsOnError',
    readinessProbe: { ...readiness, periodSeconds: 5, timeoutSeconds: PROBE_TIMEOUT_SECONDS },
    // TCP, not PING: a redis loading a large append-only file answers LOADING and must not be killed for it.
    livenessProbe: { ...tcp, initialDelaySeconds: 15, periodSeconds: 10, timeoutSeconds: 3 },
    securityContext: restrictedContainerSecurityContext(),
    volumeMounts: [
      { name: 'config', mountPath: CONFIG_DIR[engine], readOnly: true },
      { name: 'run', mountPath: RUN_DIR[engine] },
      ...(engine === 'redis' ? [{ name: 'data', mountPath: DATA_DIR }] : []),
      ...(replicated(cache) ? [{ name: 'topology', mountPath: TOPOLOGY_MOUNT, readOnly: true }] : []),
    ],
  };
  const volumes: V1Volume[] = [
    { name: 'config', configMap: { name: n.config } },
    // Memory-backed: the auth file written at start never touches a disk.
    { name: 'run', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
    ...(engine === 'redis' && !persistent(cache) ? [{ name: 'data', emptyDir: {} }] : []),
    ...(replicated(cache) ? [{ name: 'topology', configMap: { name: n.topology } }] : []),
  ];
  // Every instance publishes its engine's metrics through the agent; a replicated redis's agent
  // also holds the primary Lease, and only it needs a token.
  const leased = runsAgent(cache, agentImage);
  const agent = agentImage
    ? underAgent(container, {
        ...(leased
          ? { lease: n.primaryLease, roleCommand: REDIS_ROLE_COMMAND, quorumCommand: REDIS_QUORUM_COMMAND }
          : {}),
        metrics: ENGINE_METRICS[engine],
        image: agentImage,
        securityContext: restrictedContainerSecurityContext(),
      })
    : undefined;
  return {
    metadata: { labels: labels(cache), annotations: { [CONFIG_HASH_ANNOTATION]: contentHash(content) } },
    spec: {
      ...(leased
        ? { serviceAccountName: n.serviceAccount, automountServiceAccountToken: true }
        : { automountServiceAccountToken: false }),
      enableServiceLinks: false,
      securityContext: restrictedPodSecurityContext(d.uid),
      terminationGracePeriodSeconds: 30,
      ...(agent ? { initContainers: [agent.initContainer] } : {}),
      containers: [agent?.container ?? container],
      volumes: agent ? [...volumes, agent.volume] : volumes,
    },
  };
}

/**
 * `imageRef`: the catalog's image for spec.version (default: the official one); `agentImage`: the
 * manager image the instance agent comes from, which publishes each instance's metrics.
 */
export function desiredDeployment(cache: CacheObject, imageRef?: string, agentImage?: string): V1Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: childNames(cache).workload, labels: labels(cache) },
    spec: {
      replicas: cache.spec.replicas,
      selector: { matchLabels: selector(cache) },
      // Surge first: capacity never drops below spec.replicas during a roll.
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      revisionHistoryLimit: 3,
      template: podTemplate(cache, imageRef, agentImage),
    },
  };
}

/**
 * `imageRef`: the catalog's image for spec.version (default: the official one).
 * `instances`: how many Pods (spec.replicas, or more while a replicated primary
 * sits on an ordinal being removed).
 */
export function desiredStatefulSet(
  cache: CacheObject,
  imageRef?: string,
  instances = cache.spec.replicas,
  agentImage?: string,
): V1StatefulSet {
  const n = childNames(cache);
  const p = cache.spec.persistence;
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: n.workload, labels: labels(cache) },
    spec: {
      serviceName: n.headlessService,
      replicas: instances,
      selector: { matchLabels: selector(cache) },
      // Independent instances don't wait for each other; replicas wait for the primary in their start script.
      podManagementPolicy: 'Parallel',
      // Replicated: the manager replaces the Pods itself, replicas first, then the primary after a
      // switchover (the replication plan); the StatefulSet would take them by ordinal, primary or not.
      updateStrategy: { type: replicated(cache) ? 'OnDelete' : 'RollingUpdate' },
      revisionHistoryLimit: 3,
      // A cache's volumes serve warm restarts, not as a system of record: they go with the Cache,
      // and stay on scale-down so that scaling back up finds them warm.
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Retain' },
      template: podTemplate(cache, imageRef, agentImage),
      // Without persistence none: the field is left out rather than empty, which the API server drops.
      ...(persistent(cache)
        ? {
            volumeClaimTemplates: [
              {
                metadata: { name: 'data', labels: selector(cache) },
                spec: {
                  accessModes: ['ReadWriteOnce'],
                  resources: { requests: { storage: String(p?.size ?? '1Gi') } },
                  ...(p?.storageClassName ? { storageClassName: p.storageClassName } : {}),
                },
              },
            ],
          }
        : {}),
    },
  };
}

/**
 * The workload of this Cache: a StatefulSet for a persistent redis (volumes
 * per Pod) or a replicated one (stable Pod names the topology records), a
 * Deployment otherwise. spec.persistence and spec.mode can't change (CEL), so
 * the kind is fixed for the life of the Cache.
 */
export function desiredWorkload(
  cache: CacheObject,
  imageRef: string,
  instances = cache.spec.replicas,
  agentImage?: string,
): V1Deployment | V1StatefulSet {
  return stateful(cache)
    ? desiredStatefulSet(cache, imageRef, instances, agentImage)
    : desiredDeployment(cache, imageRef, agentImage);
}

/**
 * Every child the spec asks for besides the Secrets (those are created once,
 * never applied): what the reconcile applies. `imageRef`: the catalog's
 * image for spec.version.
 */
export function desiredChildren(
  cache: CacheObject,
  imageRef: string,
  instances = cache.spec.replicas,
  agentImage?: string,
): KubeObject[] {
  const services = desiredServices(cache);
  const pdb = desiredDisruptionBudget(cache);
  return [
    desiredConfigMap(cache),
    services.client,
    services.headless,
    ...(services.readOnly ? [services.readOnly] : []),
    // The agents' account and Role before the Pods that use them.
    ...desiredAgentAccess(cache, agentImage),
    desiredWorkload(cache, imageRef, instances, agentImage),
    ...(pdb ? [pdb] : []),
  ];
}

function endpoint(cache: CacheObject): { host: string; port: number } {
  return {
    host: `${childNames(cache).clientService}.${cache.metadata.namespace}.svc`,
    port: ENGINE_DEFAULTS[cache.spec.engine].port,
  };
}

/**
 * The Service Binding Secret without a password (auth off). Created once:
 * host and port derive from the Service name and the engine, which never
 * change for the life of the Cache, so a first write stays correct.
 */
export function bindingSecret(cache: CacheObject): V1Secret {
  const { host, port } = endpoint(cache);
  const engine = cache.spec.engine;
  return {
    metadata: { name: childNames(cache).binding, labels: labels(cache) },
    type: `servicebinding.io/${engine}`,
    stringData: {
      type: engine,
      provider: 'regulon',
      host,
      port: String(port),
      uri: `${ENGINE_DEFAULTS[engine].scheme}://${host}:${port}`,
    },
  };
}

/**
 * Generated credentials, also the binding Secret while auth is on: written
 * once at creation and never applied or replaced, so a password is never
 * regenerated behind the application's back.
 */
export function generatedCredentials(cache: CacheObject, password: string): V1Secret {
  const { host, port } = endpoint(cache);
  const engine = cache.spec.engine;
  const user = engine === 'memcached' ? DEFAULT_MEMCACHED_USER : '';
  return {
    metadata: { name: childNames(cache).credentials, labels: labels(cache) },
    type: `servicebinding.io/${engine}`,
    stringData: {
      type: engine,
      provider: 'regulon',
      host,
      port: String(port),
      ...(user ? { username: user } : {}),
      password,
      // redis: no user name means the default user (redis://:password@host:port).
      uri: `${ENGINE_DEFAULTS[engine].scheme}://${user}:${encodeURIComponent(password)}@${host}:${port}`,
    },
  };
}
