// What a Pod needs to run its engine under the agent, for the controllers
// that write engine Pods: the agent comes from the manager image (the Node
// binary and the agent's one-file bundle, bundle.ts), copied by an init
// container into a volume the engine container mounts, so an engine image
// needs only glibc and libstdc++ (README, "How it gets into the Pod").
import type {
  V1Container,
  V1EnvVar,
  V1PolicyRule,
  V1Role,
  V1RoleBinding,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import { quantityValue } from '@regulon/runtime';

/** Where the manager image (apps/manager/Dockerfile) holds Node and the agent's bundle. */
export const IMAGE_NODE = '/usr/local/bin/node';
export const IMAGE_BUNDLE = '/app/apps/instance-agent/dist/bundle/agent.mjs';
/** Where the engine container finds them. */
export const AGENT_MOUNT = '/regulon-agent';
const VOLUME = 'instance-agent';

/** The volume the init container fills: Node (about 120 MB) and the bundle. */
export function agentVolume(): V1Volume {
  return { name: VOLUME, emptyDir: { sizeLimit: '256Mi' } };
}

export function agentVolumeMount(): V1VolumeMount {
  return { name: VOLUME, mountPath: AGENT_MOUNT, readOnly: true };
}

/** The init container that copies the agent out of `image` (the manager image). */
export function agentInstallContainer(
  image: string,
  securityContext: V1Container['securityContext'],
): V1Container {
  return {
    name: 'install-agent',
    image,
    command: ['cp', IMAGE_NODE, IMAGE_BUNDLE, `${AGENT_MOUNT}/`],
    volumeMounts: [{ name: VOLUME, mountPath: AGENT_MOUNT }],
    resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } },
    securityContext,
  };
}

/** The engine container's variables the agent's command line refers to (POD_NAME is the caller's). */
export function agentEnv(): V1EnvVar[] {
  return [
    { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    { name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
  ];
}

export interface AgentCommandOptions {
  /**
   * The primary Lease's name (in the Pod's namespace), with the role command; without both, the
   * agent supervises an engine without a primary (memcached) and publishes its metrics only.
   */
  lease?: string | undefined;
  /** Prints `primary` or `replica` (see AgentConfig). */
  roleCommand?: string | undefined;
  /** Prints "IN_TOUCH MEMBERS" (see AgentConfig); without it, a lost Lease always fences. */
  quorumCommand?: string | undefined;
  /** The engine's start command, the agent's child. */
  engine: string[];
  /** Where the agent publishes the engine's metrics (see AgentConfig.metrics); none without it. */
  metrics?:
    | {
        port: number;
        engine: string;
        command: string;
        /** Files of user-defined queries the container mounts (--metrics-queries-file each). */
        queriesFiles?: readonly string[] | undefined;
      }
    | undefined;
}

/**
 * The variable a metrics command finds its engine's SQL in (the agent sets it; see
 * METRICS_ENGINES): `psql -c "$REGULON_METRICS_QUERY"` keeps the query out of the Pod spec.
 */
export const METRICS_QUERY_ENV = 'REGULON_METRICS_QUERY';

/**
 * Set (`"true"`) by the manager on an instance's Pod while a person fences that instance (a
 * Database's `regulon.dev/fenced-instances`): the agent stops its engine and keeps the container
 * running, with the engine stopped, until the annotation goes; then it starts the engine again.
 */
export const FENCED_POD_ANNOTATION = 'regulon.dev/fenced';

/**
 * The file the engines' liveness probes take for "starting, alive" (their start scripts write it
 * while they prepare the data): the agent writes it while the engine is fenced on purpose, so that
 * the kubelet does not restart a container whose engine is stopped by design.
 */
export const ENGINE_STARTING_MARKER = '/tmp/regulon-starting';

/** The name of the container port the agent publishes the engine's metrics on. */
export const METRICS_PORT_NAME = 'metrics';

/**
 * The engine container's command: the agent, then the engine after `--`.
 * The kubelet expands `$(NAME)` from the container's variables, so the
 * namespace and identity come from the Downward API, and a `$(` in a shell
 * command is written `$$(` to reach the shell as it was.
 */
export function agentCommand(o: AgentCommandOptions): string[] {
  const literal = (s: string) => s.replaceAll('$(', '$$(');
  return [
    `${AGENT_MOUNT}/node`,
    `${AGENT_MOUNT}/agent.mjs`,
    '--namespace',
    '$(POD_NAMESPACE)',
    '--identity',
    '$(POD_NAME)',
    ...(o.lease && o.roleCommand
      ? ['--lease', o.lease, '--pod-uid', '$(POD_UID)', '--role-command', literal(o.roleCommand)]
      : []),
    ...(o.quorumCommand ? ['--quorum-command', literal(o.quorumCommand)] : []),
    ...(o.metrics
      ? [
          '--metrics-port',
          String(o.metrics.port),
          '--metrics-engine',
          o.metrics.engine,
          '--metrics-command',
          literal(o.metrics.command),
          ...(o.metrics.queriesFiles ?? []).flatMap((f) => ['--metrics-queries-file', literal(f)]),
        ]
      : []),
    '--',
    ...o.engine.map(literal),
  ];
}

/**
 * What the agent may do, for the Role bound to its Pods' service account:
 * read and renew its own Lease, which the manager creates (RBAC cannot limit
 * `create` to a name), and read the instances' Pods by name (`pods`), each
 * agent its own (see AgentConfig.podUid).
 */
export function agentRules(lease: string, pods: readonly string[]): V1PolicyRule[] {
  return [
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      resourceNames: [lease],
      verbs: ['get', 'update'],
    },
    ...(pods.length
      ? [{ apiGroups: [''], resources: ['pods'], resourceNames: [...pods], verbs: ['get'] }]
      : []),
  ];
}

/** Names of what an owner's (a Database's or a replicated Cache's) agents are given. */
export interface AgentGrant {
  /** The Role's and the RoleBinding's name. */
  role: string;
  /** The instances' service account, in the owner's namespace. */
  serviceAccount: string;
  namespace: string;
  /** The primary Lease's name. */
  lease: string;
  /** Every Pod name an instance may have (each agent reads its own). */
  pods: readonly string[];
  labels: Record<string, string>;
}

/** The names an owner's controller gives its agents' grant (its childNames). */
export interface AgentGrantNames {
  agentRole: string;
  serviceAccount: string;
  primaryLease: string;
}

/**
 * The grant for the instances of `owner`, a StatefulSet's Pods `<owner>-0` to
 * `<owner>-<maxReplicas - 1>`: every ordinal the owner may have, so that each
 * agent reads its own Pod whatever the scale.
 */
export function agentGrant(
  owner: { name: string; namespace: string },
  names: AgentGrantNames,
  maxReplicas: number,
  labels: Record<string, string>,
): AgentGrant {
  return {
    role: names.agentRole,
    serviceAccount: names.serviceAccount,
    namespace: owner.namespace,
    lease: names.primaryLease,
    pods: Array.from({ length: maxReplicas }, (_, i) => `${owner.name}-${i}`),
    labels,
  };
}

/** The Role that lets an owner's agents read and renew its primary Lease and read their Pods (agentRules). */
export function agentRole(g: AgentGrant): V1Role {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: g.role, labels: g.labels },
    rules: agentRules(g.lease, g.pods),
  };
}

/** Binds agentRole to the instances' service account. */
export function agentRoleBinding(g: AgentGrant): V1RoleBinding {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: g.role, labels: g.labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: g.role },
    subjects: [{ kind: 'ServiceAccount', name: g.serviceAccount, namespace: g.namespace }],
  };
}

/**
 * What a manager needs to run its instances under the agent, beyond its own
 * controller's rules. deploy/ runs the agent, so its ClusterRole holds these;
 * Leases granted cluster-wide reach the control plane's own too (kube-system's
 * leader elections, kube-node-lease's heartbeats), which deploy/README.md
 * weighs and says how to narrow.
 * - roles, rolebindings: per owner, the agents' right to read and renew
 *   their one primary Lease (RBAC lets the manager grant only what it holds);
 * - leases: the primary Lease, created without a holder, read each reconcile
 *   (not cached: its renewals every 2 s would be events for nothing), and
 *   rewritten to name each promoted instance;
 * - pods get: granted on to the agents, each of which reads its own Pod
 *   (RBAC again: a Role that grants `get` needs the manager to hold `get`).
 */
export const AGENT_MANAGER_RULES: readonly V1PolicyRule[] = [
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles', 'rolebindings'],
    verbs: ['list', 'watch', 'create', 'patch', 'delete'],
  },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
];

/**
 * An engine container made to run under the agent: the agent becomes its
 * command, the engine's command and arguments follow `--`, and it mounts the
 * volume an init container fills with the agent copied out of `o.image` (the
 * manager image). The caller adds the init container and the volume to the
 * Pod.
 */
export function underAgent(
  container: V1Container,
  o: Omit<AgentCommandOptions, 'engine'> & {
    image: string;
    securityContext: V1Container['securityContext'];
  },
): { container: V1Container; initContainer: V1Container; volume: V1Volume } {
  return {
    container: {
      ...container,
      resources: withAgentMemory(container.resources),
      command: agentCommand({
        lease: o.lease,
        roleCommand: o.roleCommand,
        quorumCommand: o.quorumCommand,
        metrics: o.metrics,
        engine: [...(container.command ?? []), ...(container.args ?? [])],
      }),
      args: undefined,
      ...(o.metrics
        ? {
            ports: [
              ...(container.ports ?? []),
              { name: METRICS_PORT_NAME, containerPort: o.metrics.port, protocol: 'TCP' },
            ],
          }
        : {}),
      env: [...(container.env ?? []), ...agentEnv()],
      volumeMounts: [...(container.volumeMounts ?? []), agentVolumeMount()],
    },
    initContainer: agentInstallContainer(o.image, o.securityContext),
    volume: agentVolume(),
  };
}

/**
 * What the agent adds to its container's memory: Node and the bundle, about
 * 25-45 MiB resident, plus the pages of the Node binary (about 120 MB on disk)
 * that it runs from, which the container's memory cgroup counts too. Below
 * that, the kernel keeps evicting them and the agent crawls. The engine's own
 * figure (a cache's maxmemory, a database's buffers) stays as the user set it.
 */
export const AGENT_MEMORY_BYTES = 128 * 1024 ** 2;

/**
 * The engine's memory request and limit, each raised by AGENT_MEMORY_BYTES
 * where one is set: the agent runs in the same container, and a limit sized
 * for the engine alone starves both (a 64 MiB redis left the agent unable to
 * renew its Lease in time, and it fenced its own engine).
 */
function withAgentMemory(resources: V1Container['resources']): V1Container['resources'] {
  if (!resources) return resources;
  const raise = (list: Record<string, string> | undefined) => {
    const memory = list?.['memory'];
    if (memory === undefined) return list;
    const mib = Math.ceil((quantityValue(memory) + AGENT_MEMORY_BYTES) / 1024 ** 2);
    return { ...list, memory: `${mib}Mi` };
  };
  const requests = raise(resources.requests);
  const limits = raise(resources.limits);
  return {
    ...resources,
    ...(requests ? { requests } : {}),
    ...(limits ? { limits } : {}),
  };
}
