import { mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { ensureBinaries, type Binaries } from './binaries.ts';
import { generatePki, type Pki } from './certs.ts';
import { adminRequest, postJson, type AdminCredentials } from './http.ts';
import { freePorts } from './ports.ts';
import { shardVolumeStages } from './kwok-stages.ts';
import { startRealNode, stopRealNode, realNodeState, nodeDir } from './real-node.ts';
import { secondRealNodeState, startSecondRealNode } from './second-node.ts';
import {
  delay,
  isAlive,
  logTail,
  startComponent,
  stopComponent,
  stopRecordedServices,
  type ComponentState,
  type RunningComponent,
} from './process.ts';

/** Defaults, named where they are defined. */
export const DEFAULT_NODES = 3;
export const DEFAULT_START_TIMEOUT_MS = 120_000;
/** A pod CIDR for KWOK's fake pod IPs and a service range; neither is routed anywhere. */
// Room for thousands of ClusterIP Services (benchmarks create one per Database).
const SERVICE_CIDR = '10.0.0.0/16';
const POD_CIDR = '10.244.0.0/16';
/** The annotation KWOK's controller selects its fake nodes by. */
export const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';

export interface ControlPlaneOptions {
  /** Working directory for certificates, etcd data, logs and the kubeconfig. */
  dir: string;
  /** Fake KWOK nodes to register (default 3). */
  nodes?: number | undefined;
  /**
   * Real nodes (0, 1 or 2; default 0): a kubelet with containerd that runs real
   * Pods from the Debian-built images (see real-node.ts), and with 2 a second
   * one in its own network namespace (second-node.ts), for node-loss tests.
   * One control plane per machine may have them.
   */
  realNodes?: number | undefined;
  log?: (line: string) => void;
  /**
   * How long starting may take, from the moment the binaries are at hand: a
   * cold build of them (minutes, the first time on a machine) is not part of it.
   */
  startTimeoutMs?: number | undefined;
  /** Where the binaries come from (default: {@link ensureBinaries}, which builds or reuses the cached ones). */
  binaries?: () => Promise<Binaries>;
  /** The clock the start timeout is measured on (default `Date.now`). */
  now?: () => number;
  /**
   * For load tests: the defaults model a small real cluster, where the
   * controller-manager's 20 QPS and 110 Pods per node would be what a
   * benchmark of thousands of objects measures instead of the code under test.
   */
  scale?: ScaleOptions | undefined;
  /**
   * The API server's feature gates, on top of its defaults, e.g. `{ ShardedListAndWatch: true }`
   * (an alpha gate of 1.36+, off by default): `--feature-gates=ShardedListAndWatch=true`.
   * Only the kube-apiserver gets them, and keeps them across `startAPIServer()`.
   */
  featureGates?: FeatureGates | undefined;
}

/** Feature gate name → on/off, as `--feature-gates` takes them. */
export type FeatureGates = Readonly<Record<string, boolean>>;

export interface ScaleOptions {
  /** Pod capacity of each KWOK node (default 110). */
  podsPerNode?: number | undefined;
  /** Client QPS of the controller-manager and scheduler (defaults 20 and 50); burst is twice this. */
  componentQps?: number | undefined;
  /** The controller-manager's StatefulSet workers (default 5). */
  statefulSetWorkers?: number | undefined;
  /** KWOK processes that provision volumes, each for a share of the claims (default 1; see kwok-stages.ts). */
  volumeShards?: number | undefined;
  /**
   * Serve the API server's /debug/pprof to admins, to find out where a load
   * test spends the server's CPU. Off by default, as in a hardened cluster.
   */
  apiServerProfiling?: boolean | undefined;
}

/** Everything needed to find, use, stop or restart a running control plane, from any process. */
export interface ControlPlaneState {
  dir: string;
  server: string;
  kubeconfigPath: string;
  etcdEndpoint: string;
  pki: Pki;
  binDir: string;
  kubectl: string;
  nodes: number;
  components: Record<string, ComponentState>;
}

const STATE_FILE = 'state.json';
/** The kubelet's default --max-pods. */
const DEFAULT_PODS_PER_NODE = 110;

/**
 * A real Kubernetes control plane on loopback: etcd, kube-apiserver (RBAC,
 * service-account keys), kube-controller-manager (GC, Deployments,
 * StatefulSets, Jobs, namespaces), kube-scheduler, and KWOK simulating nodes
 * so that Pods become Ready and Job Pods complete.
 */
export class ControlPlane {
  readonly state: ControlPlaneState;
  readonly #log: (line: string) => void;
  readonly #now: () => number;

  private constructor(state: ControlPlaneState, log: (line: string) => void, now: () => number = Date.now) {
    this.state = state;
    this.#log = log;
    this.#now = now;
  }

  get kubeconfigPath(): string {
    return this.state.kubeconfigPath;
  }

  get server(): string {
    return this.state.server;
  }

  get credentials(): AdminCredentials {
    const { pki } = this.state;
    return { server: this.state.server, ca: pki.caCert, cert: pki.adminCert, key: pki.adminKey };
  }

  /** Attaches to a control plane that another process started in `dir`. */
  static attach(dir: string, log: (line: string) => void = () => {}): ControlPlane {
    const state = JSON.parse(readFileSync(join(dir, STATE_FILE), 'utf8')) as ControlPlaneState;
    return new ControlPlane(state, log);
  }

  static exists(dir: string): boolean {
    return existsSync(join(dir, STATE_FILE));
  }

  static async start(options: ControlPlaneOptions): Promise<ControlPlane> {
    const log = options.log ?? (() => {});
    const now = options.now ?? Date.now;
    const bins = await (options.binaries ?? (() => ensureBinaries(log)))();
    // Measured from here: the first run on a machine spends many minutes
    // building the binaries above, and that must not eat the time to start.
    const deadline = now() + (options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS);
    const dir = options.dir;
    for (const sub of ['pki', 'etcd', 'logs']) mkdirSync(join(dir, sub), { recursive: true });
    const pki = await generatePki(join(dir, 'pki'));
    const [apiPort, etcdPort, etcdPeerPort] = (await freePorts(3)) as [number, number, number];
    const server = `https://127.0.0.1:${apiPort}`;
    const etcdEndpoint = `http://127.0.0.1:${etcdPort}`;
    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, kubeconfig(server, pki), { mode: 0o600 });
    const scale = options.scale ?? {};
    // KWOK's PersistentVolumes are hostPath directories. Under a real node the
    // kubelet really creates and mounts them, so keep them in the run's
    // directory, removed with it, rather than in the machine's /tmp.
    const stagesYaml = readFileSync(bins.kwokStages, 'utf8').replaceAll(
      '/tmp/kwok-local-path-provisioner/',
      `${join(dir, 'volumes')}/`,
    );
    const stages = shardVolumeStages(stagesYaml, scale.volumeShards ?? 1);
    writeFileSync(join(dir, 'kwok-config.yaml'), stages.main);
    stages.volumeOnly.forEach((yaml, i) => writeFileSync(join(dir, `kwok-volumes-${i + 1}.yaml`), yaml));

    const cp = new ControlPlane(
      {
        dir,
        server,
        kubeconfigPath,
        etcdEndpoint,
        pki,
        binDir: bins.dir,
        kubectl: bins.kubectl,
        nodes: options.nodes ?? DEFAULT_NODES,
        components: {},
      },
      log,
      now,
    );
    try {
      const etcd = cp.#spawn('etcd', bins.etcd, etcdArgs(dir, etcdPort, etcdPeerPort));
      await cp.#waitFor('etcd', etcd, deadline, async () => {
        const res = await postJson(`${etcdEndpoint}/v3/maintenance/status`, {});
        return res.status === 200;
      });
      const apiserver = cp.#spawn('kube-apiserver', bins.kubeApiserver, [
        ...apiserverArgs(dir, pki, apiPort, etcdEndpoint, scale.apiServerProfiling ?? false),
        ...featureGateArgs(options.featureGates),
      ]);
      await cp.#waitFor('kube-apiserver', apiserver, deadline, async () => {
        const res = await adminRequest(cp.credentials, 'GET', '/readyz');
        return res.status === 200;
      });
      cp.#spawn('kube-controller-manager', bins.kubeControllerManager, [
        ...controllerManagerArgs(kubeconfigPath, pki),
        ...controllerManagerScaleArgs(scale),
      ]);
      cp.#spawn('kube-scheduler', bins.kubeScheduler, [
        ...schedulerArgs(kubeconfigPath),
        ...(scale.componentQps ? qpsArgs(scale.componentQps) : []),
      ]);
      cp.#spawn('kwok', bins.kwok, kwokArgs(join(dir, 'kwok-config.yaml'), kubeconfigPath, 'fake'));
      stages.volumeOnly.forEach((_, i) => {
        // Manages no node (no node carries this annotation value): it only plays the volume Stages.
        const config = join(dir, `kwok-volumes-${i + 1}.yaml`);
        cp.#spawn(`kwok-volumes-${i + 1}`, bins.kwok, kwokArgs(config, kubeconfigPath, 'volumes-only'));
      });
      await cp.#registerNodes(cp.state.nodes, scale.podsPerNode ?? DEFAULT_PODS_PER_NODE);
      await cp.#applyStorageClass(bins);
      await cp.#waitFor('kube-controller-manager (default ServiceAccount)', undefined, deadline, async () => {
        const res = await adminRequest(
          cp.credentials,
          'GET',
          '/api/v1/namespaces/default/serviceaccounts/default',
        );
        return res.status === 200;
      });
      await cp.#waitFor(
        'KWOK nodes Ready',
        undefined,
        deadline,
        async () => (await cp.readyNodes()) >= cp.state.nodes,
      );
      if ((options.realNodes ?? 0) > 0) await cp.ensureRealNode(deadline, options.realNodes);
    } catch (err) {
      await cp.stop();
      throw err;
    }
    return cp;
  }

  /** Names of the registered KWOK nodes whose Ready condition is True. */
  async readyNodes(): Promise<number> {
    const res = await adminRequest(this.credentials, 'GET', '/api/v1/nodes');
    if (res.status !== 200) return 0;
    const list = JSON.parse(res.body) as {
      items: Array<{ status?: { conditions?: Array<{ type: string; status: string }> } }>;
    };
    return list.items.filter((n) =>
      n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    ).length;
  }

  /** Whether this control plane has its real node (started by any process). */
  get hasRealNode(): boolean {
    return realNodeState(this.state.dir) !== undefined;
  }

  /** How many real nodes this control plane has (0, 1 or 2). */
  get realNodeCount(): number {
    return (this.hasRealNode ? 1 : 0) + (secondRealNodeState(this.state.dir) ? 1 : 0);
  }

  /**
   * Joins the machine's real node (and with `count` 2 the second one) to this
   * control plane, unless it already has them. Serialised across the
   * processes sharing the control plane (test files run in parallel), so the
   * first to ask starts it and the others wait.
   */
  async ensureRealNode(deadline = this.#now() + DEFAULT_START_TIMEOUT_MS, count = 1): Promise<void> {
    if (count > 2) throw new Error(`testenv: at most 2 real nodes per machine (asked for ${count})`);
    const want = Math.max(1, count);
    if (this.realNodeCount >= want) return;
    const lock = join(this.state.dir, 'real-node.lock');
    for (;;) {
      try {
        mkdirSync(lock);
        break;
      } catch {
        if (this.realNodeCount >= want) return;
        await delay(500);
      }
    }
    try {
      const options = {
        controlPlaneDir: this.state.dir,
        credentials: this.credentials,
        kubeconfigPath: this.state.kubeconfigPath,
        caCert: this.state.pki.caCert,
        log: this.#log,
        // Building binaries and images (minutes on a first run) doesn't count against it.
        deadline: Math.max(deadline, this.#now() + DEFAULT_START_TIMEOUT_MS),
        now: this.#now,
      };
      if (!this.hasRealNode) await startRealNode(options);
      if (want === 2 && !secondRealNodeState(this.state.dir)) await startSecondRealNode(options);
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }

  /**
   * Stops every component: the real node, services started beside the control
   * plane (object stores) and the API server's clients first, etcd last.
   */
  async stop(): Promise<void> {
    const problems = await stopRealNode(nodeDir(this.state.dir));
    await stopRecordedServices(this.state.dir);
    // Another process may have restarted a component since we started it; the state file has its pid.
    this.#reload();
    const kwoks = Object.keys(this.state.components).filter((n) => n.startsWith('kwok'));
    const order = [...kwoks, 'kube-scheduler', 'kube-controller-manager', 'kube-apiserver', 'etcd'];
    for (const name of order) {
      const c = this.state.components[name];
      if (c) await stopComponent(c);
    }
    // Thrown last, after every process is stopped: callers must not delete a
    // directory that still has the node's mounts in it.
    if (problems.length)
      throw new Error(`testenv: the real node left on this machine: ${problems.join('; ')}`);
  }

  /** Whether every component process is still running. */
  alive(): Record<string, boolean> {
    return Object.fromEntries(Object.entries(this.state.components).map(([n, c]) => [n, isAlive(c.pid)]));
  }

  /**
   * Stops the API server (SIGKILL by default, like a crash) and leaves it
   * down until `startAPIServer()`, for tests of what clients do while it is gone.
   */
  async stopAPIServer(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    this.#reload();
    const c = this.state.components['kube-apiserver'];
    if (c) await stopComponent(c, 5000, signal);
  }

  /** Starts the API server again with its original flags and waits until it is ready. */
  async startAPIServer(timeoutMs = 60_000): Promise<void> {
    const c = this.state.components['kube-apiserver'];
    if (!c) throw new Error('testenv: no kube-apiserver in this control plane');
    const running = this.#spawn(c.name, c.bin, c.args);
    await this.#waitFor('kube-apiserver', running, this.#now() + timeoutMs, async () => {
      const res = await adminRequest(this.credentials, 'GET', '/readyz');
      return res.status === 200;
    });
  }

  /**
   * Compacts etcd's history up to its current revision, so that a watch that
   * resumes from an older resourceVersion gets 410 Gone (where the API server's
   * watch cache doesn't serve it).
   */
  async compactEtcd(): Promise<number> {
    const status = await postJson(`${this.state.etcdEndpoint}/v3/kv/range`, {
      key: Buffer.from('/').toString('base64'),
    });
    const revision = Number((JSON.parse(status.body) as { header: { revision: string } }).header.revision);
    const res = await postJson(`${this.state.etcdEndpoint}/v3/kv/compaction`, {
      revision: String(revision),
      physical: true,
    });
    if (res.status !== 200) throw new Error(`etcd compaction failed: ${res.body}`);
    return revision;
  }

  /**
   * The keys and values etcd holds under `prefix` (the API server's keys, such as
   * `/registry/<group>/<plural>/`): for a test that must see how objects are
   * stored, which the API server never shows (it serves every version converted).
   */
  async etcdRead(prefix: string): Promise<Array<{ key: string; value: string }>> {
    if (!prefix) throw new Error('etcdRead: a key prefix is required');
    const last = prefix.charCodeAt(prefix.length - 1);
    const rangeEnd = prefix.slice(0, -1) + String.fromCharCode(last + 1);
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const res = await postJson(`${this.state.etcdEndpoint}/v3/kv/range`, {
      key: b64(prefix),
      range_end: b64(rangeEnd),
    });
    if (res.status !== 200) throw new Error(`etcd range read failed: ${res.body}`);
    const { kvs = [] } = JSON.parse(res.body) as { kvs?: Array<{ key: string; value?: string }> };
    const text = (b: string | undefined) => Buffer.from(b ?? '', 'base64').toString('utf8');
    return kvs.map((kv) => ({ key: text(kv.key), value: text(kv.value) }));
  }

  #reload(): void {
    const file = join(this.state.dir, STATE_FILE);
    if (!existsSync(file)) return;
    const saved = JSON.parse(readFileSync(file, 'utf8')) as ControlPlaneState;
    Object.assign(this.state.components, saved.components);
  }

  #spawn(name: string, bin: string, args: string[]): RunningComponent {
    const running = startComponent(name, bin, args, join(this.state.dir, 'logs', `${name}.log`));
    this.state.components[name] = running.state;
    writeFileSync(join(this.state.dir, STATE_FILE), JSON.stringify(this.state, null, 2));
    this.#log(`started ${name} (pid ${running.state.pid})`);
    return running;
  }

  async #waitFor(
    what: string,
    component: RunningComponent | undefined,
    deadline: number,
    ready: () => Promise<boolean>,
  ): Promise<void> {
    let exitCode: number | null | undefined;
    let exited = false;
    void component?.exited?.then((code) => {
      exited = true;
      exitCode = code;
    });
    let lastError = '';
    while (this.#now() < deadline) {
      if (exited && component) {
        throw new Error(
          `testenv: ${what} exited with ${exitCode} while starting:\n${logTail(component.state.log)}`,
        );
      }
      try {
        if (await ready()) {
          this.#log(`${what} ready`);
          return;
        }
      } catch (err) {
        lastError = (err as Error).message;
      }
      await delay(100);
    }
    const tail = component ? `\n${logTail(component.state.log)}` : '';
    throw new Error(`testenv: timed out waiting for ${what}${lastError ? ` (${lastError})` : ''}${tail}`);
  }

  async #registerNodes(count: number, pods: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const name = `kwok-node-${i}`;
      const node = {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name,
          annotations: { [KWOK_NODE_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
          labels: {
            'kubernetes.io/hostname': name,
            'kubernetes.io/os': 'linux',
            'kubernetes.io/arch': 'amd64',
            'kubernetes.io/role': 'agent',
            'node-role.kubernetes.io/agent': '',
            type: 'kwok',
            'topology.kubernetes.io/zone': `zone-${i % 3}`,
          },
        },
        spec: {},
        status: {
          allocatable: { cpu: '32', memory: '256Gi', pods: String(pods) },
          capacity: { cpu: '32', memory: '256Gi', pods: String(pods) },
          nodeInfo: {
            kubeletVersion: 'fake',
            kubeProxyVersion: 'fake',
            architecture: 'amd64',
            operatingSystem: 'linux',
          },
        },
      };
      const res = await adminRequest(this.credentials, 'POST', '/api/v1/nodes', node);
      if (res.status !== 201 && res.status !== 409)
        throw new Error(`testenv: registering node ${name}: ${res.body}`);
    }
  }

  async #applyStorageClass(bins: Binaries): Promise<void> {
    const yaml = readFileSync(bins.kwokStorageClass, 'utf8');
    const name = /name:\s*(\S+)/.exec(yaml)?.[1] ?? 'kwok-volume';
    // Expansion on, so that controllers that grow PVCs can be tested.
    // WaitForFirstConsumer, as kind's and most clouds' default classes: with
    // KWOK's Immediate, every Pod whose claim KWOK has not yet provisioned
    // fails scheduling and is retried, and at thousands of StatefulSets the
    // scheduler's FailedScheduling Events saturate the API server (measured:
    // ~900 Events/s, 2,673 of 5,000 claims still Pending after 4 minutes).
    const body = `${yaml
      .trimEnd()
      .replace(
        /volumeBindingMode:.*$/m,
        'volumeBindingMode: WaitForFirstConsumer',
      )}\nallowVolumeExpansion: true\n`;
    const res = await adminRequest(
      this.credentials,
      'PATCH',
      `/apis/storage.k8s.io/v1/storageclasses/${name}?fieldManager=regulon-testenv&force=true`,
      body,
      'application/apply-patch+yaml',
    );
    if (res.status !== 200 && res.status !== 201)
      throw new Error(`testenv: applying StorageClass: ${res.body}`);
  }
}

function kubeconfig(server: string, pki: Pki): string {
  const b64 = (path: string) => readFileSync(path).toString('base64');
  // JSON is valid YAML, and kubectl and @kubernetes/client-node both read it.
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'regulon-local', cluster: { server, 'certificate-authority-data': b64(pki.caCert) } },
      ],
      users: [
        {
          name: 'regulon-admin',
          user: { 'client-certificate-data': b64(pki.adminCert), 'client-key-data': b64(pki.adminKey) },
        },
      ],
      contexts: [
        {
          name: 'regulon-local',
          context: { cluster: 'regulon-local', user: 'regulon-admin', namespace: 'default' },
        },
      ],
      'current-context': 'regulon-local',
    },
    null,
    2,
  );
}

function etcdArgs(dir: string, port: number, peerPort: number): string[] {
  const client = `http://127.0.0.1:${port}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  return [
    '--name=default',
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=default=${peer}`,
    // A throwaway test store: durability across power loss buys nothing and costs seconds.
    '--unsafe-no-fsync=true',
    '--log-level=warn',
  ];
}

function apiserverArgs(dir: string, pki: Pki, port: number, etcd: string, profiling: boolean): string[] {
  return [
    `--etcd-servers=${etcd}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    // The kubernetes Service's endpoints can't point at loopback, and nothing in-cluster needs them.
    '--endpoint-reconciler-type=none',
    `--secure-port=${port}`,
    `--cert-dir=${join(dir, 'pki')}`,
    `--tls-cert-file=${pki.servingCert}`,
    `--tls-private-key-file=${pki.servingKey}`,
    `--client-ca-file=${pki.caCert}`,
    `--service-account-key-file=${pki.serviceAccountPub}`,
    `--service-account-signing-key-file=${pki.serviceAccountKey}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--authorization-mode=RBAC',
    // A namespace's annotations pin its Pods to the real node (TestEnv.newNamespace({ realNode })).
    '--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction',
    // For `kubectl logs/exec` on a real node: its kubelet trusts this CA's admin certificate.
    `--kubelet-client-certificate=${pki.adminCert}`,
    `--kubelet-client-key=${pki.adminKey}`,
    '--kubelet-preferred-address-types=InternalIP',
    '--allow-privileged=true',
    // PodTemplates have no watch cache, so a watch resuming from a compacted
    // resourceVersion reaches etcd and gets a real 410 Gone (cache tests use it).
    '--watch-cache-sizes=podtemplates#0',
    `--profiling=${profiling}`,
    '--v=0',
  ];
}

/**
 * `--feature-gates=A=true,B=false`, or nothing. A name the API server does not know makes it
 * exit at once ("unrecognized feature gate"), which start() reports with the log's tail.
 */
export function featureGateArgs(gates: FeatureGates | undefined): string[] {
  const entries = Object.entries(gates ?? {});
  if (entries.length === 0) return [];
  for (const [name] of entries)
    if (!/^[A-Za-z][A-Za-z0-9]*$/.test(name)) throw new Error(`testenv: invalid feature gate name "${name}"`);
  return [`--feature-gates=${entries.map(([name, on]) => `${name}=${on}`).join(',')}`];
}

/** `A=true,B=false`, as `--feature-gates` takes it, into name -> on (for `up --feature-gates=`). */
export function parseFeatureGates(value: string): FeatureGates {
  const gates: Record<string, boolean> = {};
  for (const pair of value.split(',').filter(Boolean)) {
    const m = /^([^=]+)=(true|false)$/.exec(pair);
    if (!m) throw new Error(`--feature-gates: "${pair}" is not NAME=true or NAME=false`);
    gates[m[1]!] = m[2] === 'true';
  }
  featureGateArgs(gates); // refuses a malformed name here rather than from the API server
  return gates;
}

function controllerManagerArgs(kubeconfigPath: string, pki: Pki): string[] {
  return [
    `--kubeconfig=${kubeconfigPath}`,
    '--leader-elect=false',
    '--secure-port=0',
    `--service-account-private-key-file=${pki.serviceAccountKey}`,
    `--root-ca-file=${pki.caCert}`,
    `--cluster-signing-cert-file=${pki.caCert}`,
    `--cluster-signing-key-file=${pki.caKey}`,
    '--allocate-node-cidrs=false',
    `--cluster-cidr=${POD_CIDR}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--controllers=*',
    '--v=0',
  ];
}

function qpsArgs(qps: number): string[] {
  return [`--kube-api-qps=${qps}`, `--kube-api-burst=${2 * qps}`];
}

function controllerManagerScaleArgs(scale: ScaleOptions): string[] {
  return [
    ...(scale.componentQps ? qpsArgs(scale.componentQps) : []),
    ...(scale.statefulSetWorkers ? [`--concurrent-statefulset-syncs=${scale.statefulSetWorkers}`] : []),
  ];
}

function schedulerArgs(kubeconfigPath: string): string[] {
  return [`--kubeconfig=${kubeconfigPath}`, '--leader-elect=false', '--secure-port=0', '--v=0'];
}

function kwokArgs(config: string, kubeconfigPath: string, nodeAnnotation: string): string[] {
  return [
    `--kubeconfig=${kubeconfigPath}`,
    `--config=${config}`,
    '--manage-all-nodes=false',
    `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=${nodeAnnotation}`,
    '--node-lease-duration-seconds=40',
    `--cidr=${POD_CIDR}`,
    '--node-ip=10.244.0.1',
  ];
}
