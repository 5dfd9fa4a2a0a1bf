// The machine's second real node, for node-loss tests: its own containerd,
// kubelet and kube-proxy, all in a network namespace of their own, with their
// own Pod subnet, cgroup root, containerd root and state. It joins the same
// control plane as the first node (real-node.ts) and needs it running: node 1
// hangs off node 0's host by a veth pair, routed (no NAT) both ways, and uses
// node 0's cluster DNS. Everything it changes is recorded like node 0's, and
// `stopRealNode` of either node undoes it (node 0's stops node 1 first).
//
//   node 0's Pods 10.245.0.0/24 ── regulon0 (10.245.0.1, host)
//                                        │ host routes 10.245.1.0/24 via 10.245.254.2
//   host regulon1h 10.245.254.1 ══ veth ══ uplink 10.245.254.2 (netns regulon-node-1)
//                                        │
//   node 1's Pods 10.245.1.0/24 ── regulon1 (10.245.1.1, in the namespace)
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { createCgroupRoot, setSysctl, sh, snapshotHost, linkExists, type HostRecord } from './host.ts';
import {
  apiServiceRules,
  kubeletConfig,
  kubeProxyConfig,
  NODE_NETWORK,
  type NodeLayout,
} from './node-config.ts';
import { isAlive } from './process.ts';
import {
  buildNodeParts,
  componentStarter,
  containerdRootDir,
  kubeletArgs,
  startContainerd,
  nodeReady,
  realNodeState,
  realNodeUnsupported,
  SECOND_NODE_DIR,
  stopRealNode,
  type RealNodeOptions,
  type RealNodeState,
  writeNodeConfigs,
} from './real-node.ts';

/** Fixed names and addresses of the machine's second real node. */
export const SECOND_NODE = {
  name: 'real-node-1',
  /** Its network namespace (`/run/netns/<netns>`): its containerd, kubelet, kube-proxy and Pods' bridge. */
  netns: 'regulon-node-1',
  network: { bridge: 'regulon1', podSubnet: '10.245.1.0/24', nodeIP: '10.245.1.1' },
  /** The host's end of the veth pair to the namespace, and the addresses of the pair's two ends. */
  hostLink: 'regulon1h',
  hostLinkIP: '10.245.254.1',
  nodeLinkIP: '10.245.254.2',
  cgroupRoot: 'regulon-node-1',
  /** Every iptables chain it adds on the host is named with this prefix; teardown removes only those. */
  chainPrefix: 'REGULON-NODE1-',
  /** Both nodes' Pods: what each kube-proxy treats as cluster traffic. */
  clusterCIDR: '10.245.0.0/16',
  /**
   * Its own taint (NoSchedule), beside the real node's: Pods of a
   * `newNamespace({ realNode: true })` tolerate only that one, so they keep to
   * node 0 while a node-loss test owns node 1. A Pod for node 1 names it
   * (`nodeName`) or tolerates this key.
   */
  taint: 'node.regulon.dev/second-real-node',
  proxyHealthPort: 10256,
  proxyMetricsPort: 10249,
} as const;

export function secondNodeDir(controlPlaneDir: string): string {
  return join(controlPlaneDir, SECOND_NODE_DIR);
}

export function secondRealNodeState(controlPlaneDir: string): RealNodeState | undefined {
  return realNodeState(controlPlaneDir, SECOND_NODE_DIR);
}

const inNetns = (bin: string, args: string[]): [string, string[]] => [
  'nsenter',
  [`--net=/run/netns/${SECOND_NODE.netns}`, '--', bin, ...args],
];

/**
 * Starts the machine's second real node (`real-node-1`) for the control plane
 * in `controlPlaneDir`, whose first real node must be running, and waits until
 * it is Ready.
 */
export async function startSecondRealNode(options: RealNodeOptions): Promise<RealNodeState> {
  const log = options.log ?? (() => {});
  const now = options.now ?? Date.now;
  const unsupported = realNodeUnsupported();
  if (unsupported) throw new Error(`testenv: ${unsupported}`);
  const first = realNodeState(options.controlPlaneDir);
  if (!first || !Object.values(first.components).every((c) => isAlive(c.pid)))
    throw new Error(
      'testenv: a second real node needs the first one running for the same control plane (start({ realNodes: 2 }))',
    );
  const dir = secondNodeDir(options.controlPlaneDir);
  if (secondRealNodeState(options.controlPlaneDir))
    throw new Error(`testenv: the second real node already runs for ${options.controlPlaneDir}`);
  const { bins, images, pause, deadline } = await buildNodeParts(options, log, now);

  const layout: NodeLayout = {
    dir,
    containerdRoot: containerdRootDir('node1'),
    nodeName: SECOND_NODE.name,
    kubeconfigPath: options.kubeconfigPath,
    caCert: options.caCert,
    pauseImage: pause.ref,
    cgroupRoot: SECOND_NODE.cgroupRoot,
    clusterDomain: 'cluster.local',
    network: SECOND_NODE.network,
    clusterCIDR: SECOND_NODE.clusterCIDR,
    podLogsDirectory: join(dir, 'pod-logs'),
    proxyStatusAddress: SECOND_NODE.network.nodeIP,
    extraTaints: [{ key: SECOND_NODE.taint, value: 'true', effect: 'NoSchedule' }],
  };
  mkdirSync(dir, { recursive: true });
  const state: RealNodeState = {
    dir,
    nodeName: SECOND_NODE.name,
    secondary: true,
    host: {
      ...snapshotHost(SECOND_NODE.hostLink, SECOND_NODE.cgroupRoot, [dir]),
      iptablesChainPrefix: SECOND_NODE.chainPrefix,
    },
    components: {},
  };
  const save = () => writeFileSync(join(dir, 'state.json'), JSON.stringify(state, null, 2));
  try {
    for (const sub of ['logs', 'containerd/certs.d/_default', 'cni/net.d', 'kubelet', 'pod-logs'])
      mkdirSync(join(dir, sub), { recursive: true });
    mkdirSync(layout.containerdRoot, { recursive: true });
    save();
    const apiPort = Number(new URL(options.credentials.server).port);
    configureNetwork(state.host, apiPort);
    save();

    writeNodeConfigs(layout);
    const starter = componentStarter(state, save, { log, now, deadline }, SECOND_NODE.name, inNetns);
    const { spawn, waitFor } = starter;

    // The API server listens on the host's loopback only. In the namespace, its
    // own loopback port forwards to the host's end of the veth, which the host
    // DNATs to its loopback: the kubeconfig (https://127.0.0.1:<port>) and the
    // `kubernetes` Service's endpoint (127.0.0.1:<port>) work unchanged.
    spawn('api-proxy', process.execPath, [
      join(import.meta.dirname, `tcp-forward${extname(import.meta.filename)}`),
      `127.0.0.1:${apiPort}`,
      `${SECOND_NODE.hostLinkIP}:${apiPort}`,
    ]);
    await startContainerd(layout, images, starter, log);

    createCgroupRoot(SECOND_NODE.cgroupRoot);
    // Cluster DNS is node 0's CoreDNS, reached across the nodes' routes as a DNS Service on another node would be.
    writeFileSync(join(dir, 'kubelet', 'config.json'), kubeletConfig(layout, NODE_NETWORK.nodeIP));
    const kubelet = spawn('kubelet', bins.kubelet, kubeletArgs(layout, SECOND_NODE.network.nodeIP));
    writeFileSync(
      join(dir, 'kube-proxy.json'),
      kubeProxyConfig(layout, SECOND_NODE.proxyHealthPort, SECOND_NODE.proxyMetricsPort),
    );
    const proxy = spawn('kube-proxy', bins.kubeProxy, [`--config=${join(dir, 'kube-proxy.json')}`]);
    await waitFor(
      'kube-proxy',
      proxy,
      async () =>
        (await fetch(`http://${SECOND_NODE.network.nodeIP}:${SECOND_NODE.proxyHealthPort}/healthz`)).ok,
    );
    await waitFor('node Ready', kubelet, async () => nodeReady(options.credentials, SECOND_NODE.name));
    return state;
  } catch (err) {
    await stopRealNode(dir);
    throw err;
  }
}

/**
 * The namespace, the veth pair, the routes and the host's rules for them.
 * Recorded in `record` before each change; the namespace (with its bridge,
 * sysctls and kube-proxy's chains) goes as a whole on teardown.
 */
function configureNetwork(record: HostRecord, apiPort: number): void {
  const { netns, hostLink, hostLinkIP, nodeLinkIP, network, chainPrefix } = SECOND_NODE;
  if (!linkExists(NODE_NETWORK.bridge))
    throw new Error(`testenv: no ${NODE_NETWORK.bridge}: node 0 is not up`);
  if (linkExists(hostLink))
    throw new Error(`testenv: ${SECOND_NODE.name}: a network interface named ${hostLink} already exists`);
  const ipn = (...args: string[]) => sh('ip', ['-n', netns, ...args]);
  sh('ip', ['netns', 'add', netns]);
  sh('ip', ['link', 'add', hostLink, 'type', 'veth', 'peer', 'name', 'uplink', 'netns', netns]);
  sh('ip', ['addr', 'add', `${hostLinkIP}/30`, 'dev', hostLink]);
  sh('ip', ['link', 'set', hostLink, 'up']);
  ipn('link', 'set', 'lo', 'up');
  ipn('addr', 'add', `${nodeLinkIP}/30`, 'dev', 'uplink');
  ipn('link', 'set', 'uplink', 'up');
  ipn('link', 'add', network.bridge, 'type', 'bridge');
  ipn('addr', 'add', `${network.nodeIP}/24`, 'dev', network.bridge);
  ipn('link', 'set', network.bridge, 'up');
  ipn('route', 'add', 'default', 'via', hostLinkIP);
  // Goes with the veth.
  sh('ip', ['route', 'add', network.podSubnet, 'via', nodeLinkIP, 'dev', hostLink]);
  // The namespace's own sysctls (they go with it).
  sh(...inNetns('sysctl', ['-qw', 'net.ipv4.ip_forward=1']));
  sh(...inNetns('sysctl', ['-qw', 'net.bridge.bridge-nf-call-iptables=1']));
  // The `kubernetes` Service's endpoint is 127.0.0.1:<port>: kube-proxy DNATs Pods' packets there.
  sh(...inNetns('sysctl', ['-qw', `net.ipv4.conf.${network.bridge}.route_localnet=1`]));
  // As on node 0, Pods' packets for the `kubernetes` Service go to the API port on the
  // namespace's loopback: the forwarder's.
  const nsRules = apiServiceRules(network.bridge, apiPort);
  for (const [table, ...args] of nsRules) sh(...inNetns('iptables', ['-w', '-t', table!, ...args]));
  // On the host: the packets of the namespace's API forwarder reach the loopback-only API server.
  setSysctl(record, `net.ipv4.conf.${hostLink}.route_localnet`, '1');
  const rules = [
    // Between the two nodes' Pods only; node 1's Pods reach nothing else beyond this machine (node 0's rule).
    ['filter', '-N', `${chainPrefix}FORWARD`],
    ['filter', '-A', `${chainPrefix}FORWARD`, '-i', NODE_NETWORK.bridge, '-o', hostLink, '-j', 'ACCEPT'],
    ['filter', '-A', `${chainPrefix}FORWARD`, '-i', hostLink, '-o', NODE_NETWORK.bridge, '-j', 'ACCEPT'],
    ['filter', '-A', `${chainPrefix}FORWARD`, '-i', hostLink, '-j', 'DROP'],
    ['filter', '-A', `${chainPrefix}FORWARD`, '-o', hostLink, '-j', 'DROP'],
    ['filter', '-I', 'FORWARD', '1', '-j', `${chainPrefix}FORWARD`],
    ['nat', '-N', `${chainPrefix}API`],
    [
      'nat',
      '-A',
      `${chainPrefix}API`,
      '-i',
      hostLink,
      '-d',
      `${hostLinkIP}/32`,
      '-p',
      'tcp',
      '--dport',
      String(apiPort),
      '-j',
      'DNAT',
      '--to-destination',
      `127.0.0.1:${apiPort}`,
    ],
    ['nat', '-I', 'PREROUTING', '1', '-j', `${chainPrefix}API`],
  ];
  for (const [table, ...args] of rules) sh('iptables', ['-w', '-t', table!, ...args]);
}

/**
 * The last lines of a container's log on the second node, read from the kubelet's files (no
 * kubelet needed, so it works while the node is paused or lost): the instance agent's lines
 * (JSON, `"name":"instance-agent"`) wherever they are, then the last lines of all.
 */
export function secondNodeContainerLog(
  controlPlaneDir: string,
  pod: { namespace: string; name: string; uid: string; container: string },
  lines = 20,
): string {
  const dir = join(
    secondNodeDir(controlPlaneDir),
    'pod-logs',
    `${pod.namespace}_${pod.name}_${pod.uid}`,
    pod.container,
  );
  try {
    const files = readdirSync(dir)
      .filter((f) => f.endsWith('.log'))
      .sort((a, b) => statSync(join(dir, a)).mtimeMs - statSync(join(dir, b)).mtimeMs);
    const all = files
      .map((f) => readFileSync(join(dir, f), 'utf8'))
      .join('')
      .split('\n');
    const agent = all.filter((l) => l.includes('"name":"instance-agent"')).slice(-lines);
    return [...agent, '…', ...all.slice(-lines)].join('\n');
  } catch (err) {
    return `(no log in ${dir}: ${(err as Error).message})`;
  }
}
