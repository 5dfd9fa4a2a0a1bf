// The configuration files of the real node's daemons, as pure functions of
// its layout, so that what each setting is for sits beside it.

/** Fixed addresses of the one real node a machine can run. */
export const NODE_NETWORK = {
  bridge: 'regulon0',
  /** Outside the control plane's POD_CIDR, whose addresses KWOK hands to fake Pods. */
  podSubnet: '10.245.0.0/24',
  /** The bridge's address: the node's InternalIP, the Pods' gateway and cluster DNS. */
  nodeIP: '10.245.0.1',
  /** The `kubernetes` Service: the first address of the control plane's service range. */
  apiServiceIP: '10.0.0.1',
} as const;

/** A real node's own network: its bridge, Pod subnet and address (node 0's is {@link NODE_NETWORK}). */
export interface NodeNetwork {
  bridge: string;
  podSubnet: string;
  nodeIP: string;
}

/** The label every real node carries, and the key of its taint. */
export const REAL_NODE_LABEL = 'node.regulon.dev/real';

export interface NodeLayout {
  /** This run's node directory: configs, sockets, state, logs. */
  dir: string;
  /** containerd's root: its content store and snapshots, kept between runs so images load once. */
  containerdRoot: string;
  nodeName: string;
  kubeconfigPath: string;
  caCert: string;
  pauseImage: string;
  cgroupRoot: string;
  clusterDomain: string;
  /** The node's bridge, Pod subnet and address; default {@link NODE_NETWORK} (node 0). */
  network?: NodeNetwork | undefined;
  /** kube-proxy's cluster CIDR (what it treats as Pod traffic); default the node's Pod subnet. */
  clusterCIDR?: string | undefined;
  /**
   * Where the kubelet keeps its containers' logs; default /var/log/pods. A
   * second kubelet on the machine needs its own: a kubelet's garbage collector
   * removes the log directories of Pods it does not know, the other node's too.
   */
  podLogsDirectory?: string | undefined;
  /** Taints the kubelet registers with besides the real node's own. */
  extraTaints?: Array<{ key: string; value: string; effect: string }> | undefined;
  /** Address kube-proxy's health and metrics ports bind to; default 127.0.0.1. */
  proxyStatusAddress?: string | undefined;
}

const network = (l: Pick<NodeLayout, 'network'>): NodeNetwork => l.network ?? NODE_NETWORK;

export const containerdSocket = (l: NodeLayout) => `${l.dir}/containerd/containerd.sock`;

export function containerdConfig(l: NodeLayout): string {
  return `version = 2
root = "${l.containerdRoot}"
state = "${l.dir}/containerd/state"
[grpc]
  address = "${containerdSocket(l)}"
[ttrpc]
  address = "${l.dir}/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${l.pauseImage}"
  # The machine lacks CAP_SYS_RESOURCE: without this every sandbox fails to lower its oom_score_adj.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # runc's state in the node's directory, not the machine's /run/containerd/runc.
        Root = "${l.dir}/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${l.dir}/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    # Every registry resolves to a port nothing listens on: an image that was
    # not loaded fails at once (ErrImagePull), and nothing ever tries the network.
    config_path = "${l.dir}/containerd/certs.d"
`;
}

/** hosts.toml for `_default`: where containerd would pull from, if it ever tried. */
export const REFUSING_REGISTRY = `server = "http://127.0.0.1:9"
[host."http://127.0.0.1:9"]
  capabilities = ["pull", "resolve"]
`;

export function cniConfig(l: NodeLayout): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'regulon',
      plugins: [
        {
          type: 'bridge',
          bridge: network(l).bridge,
          isGateway: true,
          // The default route through the bridge: Service IPs are reached by kube-proxy's DNAT on this machine.
          isDefaultGateway: true,
          // No masquerade: Pods talk only to each other and to this machine, never beyond it.
          ipMasq: false,
          // A Pod reaching itself through its own Service.
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: network(l).podSubnet, gateway: network(l).nodeIP }]],
            dataDir: `${l.dir}/cni/ipam`,
          },
        },
      ],
    },
    null,
    2,
  );
}

export function kubeletConfig(l: NodeLayout, clusterDns: string): string {
  return JSON.stringify(
    {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      address: network(l).nodeIP,
      // Loopback only: the health port is for testenv's readiness wait.
      healthzBindAddress: '127.0.0.1',
      // The read-only port serves Pod specs without authentication; off, as in any hardened cluster.
      readOnlyPort: 0,
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: false },
        // The API server presents the control plane's admin certificate for logs and exec.
        x509: { clientCAFile: l.caCert },
      },
      authorization: { mode: 'AlwaysAllow' },
      containerRuntimeEndpoint: `unix://${containerdSocket(l)}`,
      // This machine kind has cgroup v1 hierarchies; kubelet 1.35+ refuses them unless told.
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      // Everything the node's Pods use lives under one cgroup, which teardown removes.
      cgroupRoot: `/${l.cgroupRoot}`,
      // Without CAP_SYS_RESOURCE the kubelet can't lower its own score.
      oomScoreAdj: 0,
      failSwapOn: false,
      clusterDomain: l.clusterDomain,
      clusterDNS: [clusterDns],
      // An empty resolv.conf: Pods get cluster DNS and nothing of the host's resolvers or search domains.
      resolvConf: `${l.dir}/resolv.conf`,
      // The machine's disk is shared with everything else; don't evict test Pods for it.
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
      imageGCHighThresholdPercent: 100,
      registerWithTaints: [
        { key: REAL_NODE_LABEL, value: 'true', effect: 'NoSchedule' },
        ...(l.extraTaints ?? []),
      ],
      maxPods: 110,
      serializeImagePulls: false,
      // Faster status for tests, still well within real clusters' ranges.
      nodeStatusUpdateFrequency: '10s',
      syncFrequency: '10s',
      fileCheckFrequency: '10s',
      staticPodPath: '',
      // KubeletConfiguration's field is podLogsDir; the kubelet ignores a field it does not know,
      // which left both kubelets on /var/log/pods, each removing the other's Pods' logs.
      ...(l.podLogsDirectory ? { podLogsDir: l.podLogsDirectory } : {}),
    },
    null,
    2,
  );
}

export function kubeProxyConfig(l: NodeLayout, healthzPort: number, metricsPort: number): string {
  return JSON.stringify(
    {
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      mode: 'iptables',
      clientConnection: { kubeconfig: l.kubeconfigPath },
      hostnameOverride: l.nodeName,
      clusterCIDR: l.clusterCIDR ?? network(l).podSubnet,
      bindAddress: network(l).nodeIP,
      healthzBindAddress: `${l.proxyStatusAddress ?? '127.0.0.1'}:${healthzPort}`,
      metricsBindAddress: `${l.proxyStatusAddress ?? '127.0.0.1'}:${metricsPort}`,
      // Leave the machine's conntrack table size alone (a global sysctl).
      conntrack: { maxPerCore: 0, min: 0 },
    },
    null,
    2,
  );
}

/**
 * Cluster DNS: names of the cluster domain from the API; every other name
 * NXDOMAIN at once. Nothing is forwarded to an upstream resolver, so Pods
 * cannot reach outside this machine by name.
 */
export function corefile(l: NodeLayout, readyPort: number): string {
  return `${l.clusterDomain}:53 in-addr.arpa:53 ip6.arpa:53 {
  bind ${NODE_NETWORK.nodeIP}
  errors
  ready 127.0.0.1:${readyPort}
  kubernetes ${l.clusterDomain} in-addr.arpa ip6.arpa {
    kubeconfig ${l.kubeconfigPath}
    pods insecure
  }
  cache 5
}
.:53 {
  bind ${NODE_NETWORK.nodeIP}
  errors
  template ANY ANY {
    rcode NXDOMAIN
  }
}
`;
}

/**
 * iptables rules (table first) that send Pods' packets for the `kubernetes`
 * Service (from `bridge`) to the API server's port on 127.0.0.1, which the
 * bridge's `route_localnet` allows. kube-proxy leaves that Service alone: its
 * only endpoint is the API server's loopback address.
 */
export function apiServiceRules(bridge: string, apiPort: number | string): string[][] {
  return [
    ['nat', '-N', 'REGULON-NODE-API'],
    [
      'nat',
      '-A',
      'REGULON-NODE-API',
      '-i',
      bridge,
      '-d',
      `${NODE_NETWORK.apiServiceIP}/32`,
      '-p',
      'tcp',
      '--dport',
      '443',
      '-j',
      'DNAT',
      '--to-destination',
      `127.0.0.1:${apiPort}`,
    ],
    ['nat', '-I', 'PREROUTING', '1', '-j', 'REGULON-NODE-API'],
  ];
}
