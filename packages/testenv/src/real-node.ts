// A real node joined to the local control plane: containerd + runc from
// Debian, kubelet and kube-proxy of the control plane's version, a bridge for
// Pods, CoreDNS for cluster DNS, and the Debian-built images loaded into
// containerd. It changes the machine (bridge, iptables, sysctls, cgroups,
// mounts), so it records each change before making it and `stopRealNode`
// undoes them from that record, also from another process after a crash.
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { extname, join } from 'node:path';
import { ensureNodeBinaries, type NodeBinaries } from './binaries.ts';
import { ensureDebianPackages } from './debian.ts';
import {
  cgroupPids,
  createCgroupRoot,
  linkExists,
  restoreHost,
  setSysctl,
  sh,
  snapshotHost,
  type HostRecord,
} from './host.ts';
import { adminRequest, type AdminCredentials } from './http.ts';
import { ensureImages, type ImageArchive } from './images.ts';
import {
  apiServiceRules,
  cniConfig,
  containerdConfig,
  containerdSocket,
  corefile,
  kubeletConfig,
  kubeProxyConfig,
  NODE_NETWORK,
  REAL_NODE_LABEL,
  REFUSING_REGISTRY,
  type NodeLayout,
} from './node-config.ts';
import { freePorts } from './ports.ts';
import { delay, isAlive, logTail, startComponent, stopComponent, type ComponentState } from './process.ts';

export { REAL_NODE_LABEL } from './node-config.ts';

/** Debian packages the node runs. */
export const NODE_PACKAGES = [
  'containerd',
  'runc',
  'containernetworking-plugins',
  'iptables',
  'iproute2',
  'conntrack',
] as const;

/**
 * One control plane per machine may have real nodes: node 0's bridge, kubelet
 * ports and cgroup root are machine-wide. (Its second node, second-node.ts,
 * lives beside it under the same lock.)
 */
export const REAL_NODE_LOCK = '/run/regulon-real-node.lock';
const CGROUP_ROOT = 'regulon-node';
const NODE_NAME = 'real-node-0';
const STATE_FILE = 'state.json';
/** The second node's directory beside the first's (`<control plane dir>/node`). */
export const SECOND_NODE_DIR = 'node1';

export interface RealNodeState {
  dir: string;
  nodeName: string;
  /**
   * Set for the machine's second node (second-node.ts): its own network
   * namespace, whose kube-proxy chains go with it, so the machine-wide
   * `kube-proxy --cleanup` (which would clear the first node's) is not run.
   */
  secondary?: boolean | undefined;
  host: HostRecord;
  components: Record<string, ComponentState>;
}

export interface RealNodeOptions {
  /** The control plane's directory; the node lives in `<dir>/node`. */
  controlPlaneDir: string;
  credentials: AdminCredentials;
  kubeconfigPath: string;
  caCert: string;
  log?: (line: string) => void;
  /** Deadline (epoch ms) for the node to be Ready once everything is built. */
  deadline: number;
  now?: () => number;
}

/** Why this machine can't run a real node, or undefined when it can. */
export function realNodeUnsupported(): string | undefined {
  if (process.platform !== 'linux') return `a real node needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0)
    return 'a real node needs root: it creates a bridge, iptables rules and cgroups (run the tests as root, or without real-node tests)';
  if (!existsSync('/sys/fs/cgroup/memory/cgroup.procs') || !existsSync('/sys/fs/cgroup/cpu/cgroup.procs'))
    return 'a real node needs cgroup v1 memory and cpu hierarchies mounted at /sys/fs/cgroup/{memory,cpu} (the machine kind this project runs on); this machine has none';
  if (!existsSync('/proc/sys/net/bridge/bridge-nf-call-iptables'))
    return "a real node needs the kernel's br_netfilter (/proc/sys/net/bridge/bridge-nf-call-iptables), so that Services work between Pods on one bridge";
  return undefined;
}

/**
 * What a node runs, built on first use (Debian packages, binaries, images: minutes on an empty
 * cache), and the deadline for it to be Ready, moved on by the time that took: options.deadline
 * counts from once everything is built. Counted from before, a first run spent it all building
 * and timed out waiting for a containerd it had not yet started.
 */
export async function buildNodeParts(
  options: RealNodeOptions,
  log: (line: string) => void,
  now: () => number,
): Promise<{ bins: NodeBinaries; images: ImageArchive[]; pause: ImageArchive; deadline: number }> {
  const building = now();
  await ensureDebianPackages(NODE_PACKAGES, 'a real node', { log });
  const bins = await ensureNodeBinaries(log);
  const images = await ensureImages(undefined, { log });
  const pause = images.find((i) => i.name === 'pause');
  if (!pause) throw new Error('testenv: no pause image among the built images');
  return { bins, images, pause, deadline: options.deadline + (now() - building) };
}

export function nodeDir(controlPlaneDir: string): string {
  return join(controlPlaneDir, 'node');
}

export function realNodeState(controlPlaneDir: string, node = 'node'): RealNodeState | undefined {
  const file = join(controlPlaneDir, node, STATE_FILE);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as RealNodeState) : undefined;
}

/** Starts the machine's real node for the control plane in `controlPlaneDir` and waits until it is Ready. */
export async function startRealNode(options: RealNodeOptions): Promise<RealNodeState> {
  const log = options.log ?? (() => {});
  const now = options.now ?? Date.now;
  const unsupported = realNodeUnsupported();
  if (unsupported) throw new Error(`testenv: ${unsupported}`);
  const { bins, images, pause, deadline } = await buildNodeParts(options, log, now);

  const dir = nodeDir(options.controlPlaneDir);
  await takeLock(dir);
  clearOrphanKubeProxyChains(bins.kubeProxy, log);
  const layout: NodeLayout = {
    dir,
    containerdRoot: containerdRootDir(),
    nodeName: NODE_NAME,
    kubeconfigPath: options.kubeconfigPath,
    caCert: options.caCert,
    pauseImage: pause.ref,
    cgroupRoot: CGROUP_ROOT,
    clusterDomain: 'cluster.local',
  };
  const state: RealNodeState = {
    dir,
    nodeName: NODE_NAME,
    host: snapshotHost(NODE_NETWORK.bridge, CGROUP_ROOT, [dir]),
    components: {},
  };
  const save = () => writeFileSync(join(dir, STATE_FILE), JSON.stringify(state, null, 2));
  try {
    for (const sub of ['logs', 'containerd/certs.d/_default', 'cni/net.d', 'kubelet'])
      mkdirSync(join(dir, sub), { recursive: true });
    mkdirSync(layout.containerdRoot, { recursive: true });
    save();
    configureHost(state.host, options.credentials);
    save();

    writeNodeConfigs(layout);
    const starter = componentStarter(state, save, { log, now, deadline }, 'real node');
    const { spawn, waitFor } = starter;
    await startContainerd(layout, images, starter, log);

    const [dnsReadyPort, proxyHealthPort, proxyMetricsPort] = (await freePorts(3)) as [
      number,
      number,
      number,
    ];
    writeFileSync(join(dir, 'Corefile'), corefile(layout, dnsReadyPort));
    const coredns = spawn('coredns', bins.coredns, ['-conf', join(dir, 'Corefile')]);
    await waitFor('coredns', coredns, async () => (await fetch(`http://127.0.0.1:${dnsReadyPort}/ready`)).ok);

    // Before the kubelet: volume directories must be writable by the engines' uids from the first mount.
    spawn('volume-permissions', process.execPath, [
      // The sibling module as this one runs: .ts in the repository, .js from a published tarball.
      join(import.meta.dirname, `volume-permissions${extname(import.meta.filename)}`),
      join(options.controlPlaneDir, 'volumes'),
    ]);

    createCgroupRoot(CGROUP_ROOT);
    writeFileSync(join(dir, 'kubelet', 'config.json'), kubeletConfig(layout, NODE_NETWORK.nodeIP));
    const kubelet = spawn('kubelet', bins.kubelet, kubeletArgs(layout, NODE_NETWORK.nodeIP));
    writeFileSync(join(dir, 'kube-proxy.json'), kubeProxyConfig(layout, proxyHealthPort, proxyMetricsPort));
    const proxy = spawn('kube-proxy', bins.kubeProxy, [`--config=${join(dir, 'kube-proxy.json')}`]);
    await waitFor(
      'kube-proxy',
      proxy,
      async () => (await fetch(`http://127.0.0.1:${proxyHealthPort}/healthz`)).ok,
    );
    await waitFor(`node ${NODE_NAME} Ready`, kubelet, async () => nodeReady(options.credentials, NODE_NAME));
    return state;
  } catch (err) {
    await stopRealNode(dir);
    throw err;
  }
}

/** The config files of containerd, its registry stub and CNI, and the kubelet's empty resolv.conf. */
export function writeNodeConfigs(layout: NodeLayout): void {
  const { dir } = layout;
  writeFileSync(join(dir, 'containerd', 'config.toml'), containerdConfig(layout));
  writeFileSync(join(dir, 'containerd', 'certs.d', '_default', 'hosts.toml'), REFUSING_REGISTRY);
  writeFileSync(join(dir, 'cni', 'net.d', '10-regulon.conflist'), cniConfig(layout));
  writeFileSync(join(dir, 'resolv.conf'), '');
}

/**
 * `spawn` starts a node's component (through `wrap`, e.g. into a network
 * namespace) with its log in the node's directory and records it in the state
 * before anything waits on it; `waitFor` polls a readiness check until the
 * deadline, failing at once with the log's tail if the component exits.
 */
export function componentStarter(
  state: RealNodeState,
  save: () => void,
  o: { log: (line: string) => void; now: () => number; deadline: number },
  label: string,
  wrap?: (bin: string, args: string[]) => [string, string[]],
) {
  const spawn = (name: string, bin: string, args: string[]) => {
    const [cmd, argv] = wrap ? wrap(bin, args) : [bin, args];
    const running = startComponent(name, cmd, argv, join(state.dir, 'logs', `${name}.log`));
    state.components[name] = running.state;
    save();
    o.log(`${label}: started ${name} (pid ${running.state.pid})`);
    return running.state;
  };
  const waitFor = async (
    what: string,
    c: ComponentState | undefined,
    ready: () => Promise<boolean> | boolean,
  ) => {
    while (o.now() < o.deadline) {
      if (c && !isAlive(c.pid))
        throw new Error(`testenv: ${label}: ${what} exited while starting:\n${logTail(c.log)}`);
      try {
        if (await ready()) return o.log(`${label}: ${what} ready`);
      } catch {
        // not yet
      }
      await delay(200);
    }
    throw new Error(`testenv: ${label}: timed out waiting for ${what}${c ? `\n${logTail(c.log)}` : ''}`);
  };
  return { spawn, waitFor };
}

/** Starts the node's containerd, waits for it, and loads the images into it. */
export async function startContainerd(
  layout: NodeLayout,
  images: Array<Pick<ImageArchive, 'ref' | 'archive'>>,
  { spawn, waitFor }: ReturnType<typeof componentStarter>,
  log: (line: string) => void,
): Promise<void> {
  const containerd = spawn('containerd', 'containerd', [
    '--config',
    join(layout.dir, 'containerd', 'config.toml'),
  ]);
  const ctr = (...args: string[]) =>
    sh('ctr', ['--address', containerdSocket(layout), '-n', 'k8s.io', ...args]);
  await waitFor('containerd', containerd, () => (ctr('version'), true));
  forgetPreviousRun(ctr);
  loadImages(ctr, images, layout, log);
}

/** The kubelet's command line: its config, root and certificates in the node's directory. */
export function kubeletArgs(layout: NodeLayout, nodeIP: string): string[] {
  return [
    `--config=${join(layout.dir, 'kubelet', 'config.json')}`,
    `--kubeconfig=${layout.kubeconfigPath}`,
    `--root-dir=${join(layout.dir, 'kubelet')}`,
    `--hostname-override=${layout.nodeName}`,
    `--node-ip=${nodeIP}`,
    `--node-labels=${REAL_NODE_LABEL}=true`,
    `--cert-dir=${join(layout.dir, 'kubelet', 'pki')}`,
    '--v=1',
  ];
}

/**
 * Stops the node in `dir` and undoes its changes to the machine. Safe to
 * call from any process, after a crash, and more than once. Returns what
 * could not be undone.
 */
export async function stopRealNode(dir: string, bins?: NodeBinaries): Promise<string[]> {
  const file = join(dir, STATE_FILE);
  if (!existsSync(file)) return [];
  const state = JSON.parse(readFileSync(file, 'utf8')) as RealNodeState;
  // The second node first: it routes through the first one's bridge, and its record was taken on top of the first's.
  const problems = state.secondary ? [] : await stopRealNode(join(dir, '..', SECOND_NODE_DIR));
  const c = state.components;
  // The kubelet first, so nothing restarts what is stopped next.
  if (c['kubelet']) await stopComponent(c['kubelet']);
  for (let i = 0; i < 3; i++) {
    const pods = [...cgroupPids(state.host.cgroupRoot), ...shimPids(dir)];
    if (pods.length === 0) break;
    for (const pid of pods) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await delay(200);
  }
  for (const name of ['kube-proxy', 'coredns', 'containerd', 'volume-permissions', 'api-proxy'])
    if (c[name]) await stopComponent(c[name]);
  const proxyBin = state.secondary ? undefined : (bins?.kubeProxy ?? c['kube-proxy']?.bin);
  if (proxyBin && existsSync(proxyBin)) {
    try {
      // kube-proxy's own teardown of its chains; what it misses, restoreHost's diff removes.
      execFileSync(proxyBin, ['--cleanup'], { stdio: 'ignore' });
    } catch {
      // restoreHost reports what is left
    }
  }
  problems.push(...restoreHost(state.host));
  if (problems.length === 0) rmSync(dir, { recursive: true, force: true });
  releaseLock(dir);
  return problems;
}

function configureHost(record: HostRecord, credentials: AdminCredentials): void {
  const { bridge, nodeIP, podSubnet } = NODE_NETWORK;
  if (linkExists(bridge))
    throw new Error(`testenv: real node: a network interface named ${bridge} already exists`);
  sh('ip', ['link', 'add', bridge, 'type', 'bridge']);
  sh('ip', ['addr', 'add', `${nodeIP}/${podSubnet.split('/')[1]}`, 'dev', bridge]);
  sh('ip', ['link', 'set', bridge, 'up']);
  setSysctl(record, 'net.ipv4.ip_forward', '1');
  setSysctl(record, 'net.bridge.bridge-nf-call-iptables', '1');
  // The API server listens on loopback only; Pods reach it by a DNAT to 127.0.0.1 from the bridge.
  setSysctl(record, `net.ipv4.conf.${bridge}.route_localnet`, '1');
  const apiPort = new URL(credentials.server).port;
  const rules = [
    // Pods reach each other and this machine, nothing beyond it: the workplace's network rule.
    ['filter', '-N', 'REGULON-NODE-FORWARD'],
    ['filter', '-A', 'REGULON-NODE-FORWARD', '-i', bridge, '-o', bridge, '-j', 'ACCEPT'],
    ['filter', '-A', 'REGULON-NODE-FORWARD', '-i', bridge, '-j', 'DROP'],
    ['filter', '-A', 'REGULON-NODE-FORWARD', '-o', bridge, '-j', 'DROP'],
    ['filter', '-I', 'FORWARD', '1', '-j', 'REGULON-NODE-FORWARD'],
    // The `kubernetes` Service in Pods: in-cluster config works unchanged.
    ...apiServiceRules(bridge, apiPort),
  ];
  for (const [table, ...args] of rules) sh('iptables', ['-t', table!, ...args]);
}

/** A previous run's sandboxes and containers in the kept containerd root: the kubelet must not find them. */
function forgetPreviousRun(ctr: (...args: string[]) => string): void {
  for (const id of ctr('containers', 'ls', '-q').split('\n').filter(Boolean)) {
    try {
      ctr('containers', 'rm', id);
    } catch {
      // removed with its sandbox
    }
  }
}

/** containerd's root, kept between runs (content store and snapshots) so that images load once. */
export function containerdRootDir(node: 'node' | 'node1' = 'node'): string {
  return join(process.env['REGULON_CACHE_DIR'] ?? join(homedir(), '.cache', 'regulon'), node, 'containerd');
}

/**
 * Imports more images into every running real node of the control plane in
 * `controlPlaneDir` (the second one too, when it runs): archives built outside
 * tools/images, such as the manager image. An archive already loaded under its
 * ref is not imported again.
 */
export function loadImagesIntoRealNode(
  controlPlaneDir: string,
  images: Array<Pick<ImageArchive, 'ref' | 'archive'>>,
  log: (line: string) => void = () => {},
): void {
  if (!realNodeState(controlPlaneDir)) throw new Error(`testenv: no real node runs for ${controlPlaneDir}`);
  for (const node of ['node', SECOND_NODE_DIR] as const) {
    if (!realNodeState(controlPlaneDir, node)) continue;
    const socket = join(controlPlaneDir, node, 'containerd', 'containerd.sock');
    const ctr = (...args: string[]) => sh('ctr', ['--address', socket, '-n', 'k8s.io', ...args]);
    loadImages(ctr, images, { containerdRoot: containerdRootDir(node) }, log);
  }
}

/** Imports each image whose archive (named by its content hash) is not the one already loaded. */
export function loadImages(
  ctr: (...args: string[]) => string,
  images: Array<Pick<ImageArchive, 'ref' | 'archive'>>,
  layout: Pick<NodeLayout, 'containerdRoot'>,
  log: (line: string) => void,
): void {
  const markerFile = join(layout.containerdRoot, 'regulon-imported.json');
  const loaded = existsSync(markerFile)
    ? (JSON.parse(readFileSync(markerFile, 'utf8')) as Record<string, string>)
    : {};
  const present = new Set(ctr('images', 'ls', '-q').split('\n').filter(Boolean));
  for (const img of images) {
    if (loaded[img.ref] === img.archive && present.has(img.ref)) continue;
    const t = Date.now();
    ctr('images', 'import', '--no-unpack', img.archive);
    loaded[img.ref] = img.archive;
    writeFileSync(markerFile, JSON.stringify(loaded, null, 2));
    log(`loaded image ${img.ref} in ${Date.now() - t} ms`);
  }
}

export async function nodeReady(credentials: AdminCredentials, name: string): Promise<boolean> {
  const res = await adminRequest(credentials, 'GET', `/api/v1/nodes/${name}`);
  if (res.status !== 200) return false;
  const node = JSON.parse(res.body) as { status?: { conditions?: Array<{ type: string; status: string }> } };
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** containerd-shim processes serving this node's containerd: they outlive it, reparented to init. */
export function shimPids(dir: string): number[] {
  const pids: number[] = [];
  for (const pid of readdirSafe('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      // `${dir}/`: the first node's directory `node` must not match the second's `node1`.
      if (cmd.includes('containerd-shim') && cmd.includes(`${dir}/`)) pids.push(Number(pid));
    } catch {
      // exited
    }
  }
  return pids;
}

function readdirSafe(path: string): string[] {
  try {
    return execFileSync('ls', [path], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * Removes kube-proxy chains that no recorded node owns, before the host is
 * snapshotted. With the lock held no real node of this machine runs, so such
 * chains are a node's whose record was deleted by hand (its directory removed
 * without `down`). Kept, they would enter the snapshot as the machine's own,
 * and this node's `kube-proxy --cleanup` at `down` would then remove them too:
 * the machine would not end as the snapshot says it began.
 */
export function clearOrphanKubeProxyChains(
  kubeProxyBin: string,
  log: (line: string) => void = () => {},
): void {
  const orphan = ['iptables-save', 'ip6tables-save'].filter((save) => {
    try {
      // kube-proxy's own chains; the kubelet's (KUBE-FIREWALL, KUBE-KUBELET-CANARY) outlive any node and are left be.
      return /^:KUBE-(SERVICES|NODEPORTS|POSTROUTING|PROXY-CANARY|FORWARD)\b/m.test(
        execFileSync(save, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }),
      );
    } catch {
      return false;
    }
  });
  if (orphan.length === 0) return;
  log(
    `testenv: kube-proxy chains no node owns (${orphan.join(', ')}); removing them with kube-proxy --cleanup`,
  );
  try {
    execFileSync(kubeProxyBin, ['--cleanup'], { stdio: 'ignore' });
  } catch {
    // --cleanup exits non-zero when a chain it knows is absent; what it removed stays removed.
  }
}

async function takeLock(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(REAL_NODE_LOCK, 'wx');
      writeFileSync(fd, JSON.stringify({ dir, pid: process.pid }));
      closeSync(fd);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    await reclaimCrashedRealNode();
  }
  throw new Error(`testenv: could not take ${REAL_NODE_LOCK}`);
}

/**
 * Undoes what a crashed run's real node left on the machine (bridge, iptables
 * chains, mounts, cgroups) and releases its lock. Throws when that node still
 * runs: one control plane per machine can have real nodes. Does nothing when no lock is held.
 */
export async function reclaimCrashedRealNode(): Promise<void> {
  let holder: { dir: string; pid: number };
  try {
    holder = JSON.parse(readFileSync(REAL_NODE_LOCK, 'utf8')) as { dir: string; pid: number };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const running = realNodeState(join(holder.dir, '..'));
  if (running && Object.values(running.components).some((c) => isAlive(c.pid))) {
    throw new Error(
      `testenv: this machine already runs a real node (for ${join(holder.dir, '..')}); one control plane per machine can have real nodes. ` +
        `Stop it with \`REGULON_CLUSTER_DIR=${join(holder.dir, '..')} npm run cluster -- down\`, or wait for its run to end.`,
    );
  }
  await stopRealNode(holder.dir);
  rmSync(REAL_NODE_LOCK, { force: true });
}

function releaseLock(dir: string): void {
  try {
    const holder = JSON.parse(readFileSync(REAL_NODE_LOCK, 'utf8')) as { dir: string };
    if (holder.dir === dir) rmSync(REAL_NODE_LOCK, { force: true });
  } catch {
    // not held
  }
}
