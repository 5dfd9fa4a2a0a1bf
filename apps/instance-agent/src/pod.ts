// What a Pod needs to run its engine under the agent, for the controllers
// that write engine Pods: the agent comes from the manager image (the Node
// binary and the agent's one-file bundle, bundle.ts), copied by an init
// container into a volume the engine container mounts, so an engine image
// needs only glibc and libstdc++ (README, "How it gets into the Pod").
import type { V1Container, V1EnvVar, V1PolicyRule, V1Volume, V1VolumeMount } from '@kubernetes/client-node';

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
  /** The primary Lease's name (in the Pod's namespace). */
  lease: string;
  /** Prints `primary` or `replica` (see AgentConfig). */
  roleCommand: string;
  /** Prints "IN_TOUCH MEMBERS" (see AgentConfig); without it, a lost Lease always fences. */
  quorumCommand?: string | undefined;
  /** The engine's start command, the agent's child. */
  engine: string[];
}

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
    '--lease',
    o.lease,
    '--identity',
    '$(POD_NAME)',
    '--pod-uid',
    '$(POD_UID)',
    '--role-command',
    literal(o.roleCommand),
    ...(o.quorumCommand ? ['--quorum-command', literal(o.quorumCommand)] : []),
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
