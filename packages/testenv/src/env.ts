import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { ControlPlane, type ControlPlaneOptions } from './control-plane.ts';
import { adminRequest } from './http.ts';
import { REAL_NODE_LABEL } from './node-config.ts';
import { isAlive } from './process.ts';
import { stopRealNode } from './real-node.ts';
import { SECOND_NODE, secondNodeDir } from './second-node.ts';

/** Set by `regulon-testenv exec` (and `start()`), read by every test process it runs. */
export const STATE_DIR_ENV = 'REGULON_TESTENV_DIR';

export interface TestEnvOptions extends Partial<ControlPlaneOptions> {
  /** Print control-plane progress to stderr. */
  verbose?: boolean | undefined;
  /**
   * Start a control plane of its own even inside a test run (REGULON_TESTENV_DIR
   * set): for a test that changes what every other test file shares and must
   * not see changed, such as a shipped CRD's stored versions.
   */
  own?: boolean | undefined;
}

/**
 * Whether `options` ask for a control plane unlike the run's shared one: feature gates
 * change what the API server serves to every client, so a plane with any is always
 * its own, never the shared one (whose flags every other test file relies on).
 */
function needsOwnPlane(options: TestEnvOptions): boolean {
  return options.own === true || Object.keys(options.featureGates ?? {}).length > 0;
}

/** What a kubectl run printed, and how it exited. */
export interface KubectlResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CustomResourceDefinition {
  apiVersion?: string | undefined;
  kind?: string | undefined;
  metadata: { name: string };
  spec: unknown;
}

/**
 * A control plane for a test run. `start()` attaches to the one named by
 * REGULON_TESTENV_DIR (one control plane per test run, shared by every test
 * file), or starts its own. `stop()` only stops what this call started.
 */
export class TestEnv {
  readonly controlPlane: ControlPlane;
  readonly kubeConfig: KubeConfig;
  readonly #owned: boolean;
  readonly #ownedDir: string | undefined;
  /** The namespaces newNamespace({ realNode: true }) made: deleted by stop(). */
  readonly #realNodeNamespaces: string[] = [];

  constructor(controlPlane: ControlPlane, owned: boolean, ownedDir?: string) {
    this.controlPlane = controlPlane;
    this.#owned = owned;
    this.#ownedDir = ownedDir;
    this.kubeConfig = new KubeConfig();
    this.kubeConfig.loadFromFile(controlPlane.kubeconfigPath);
  }

  get kubeconfigPath(): string {
    return this.controlPlane.kubeconfigPath;
  }

  get server(): string {
    return this.controlPlane.server;
  }

  /**
   * Stops the second real node and removes its Node object, leaving the
   * first node and the control plane running: a test file that asked for two
   * nodes gives the run's shared control plane back as it found it, so the
   * files after it do not run beside a node (and its kubelet's load) they
   * never asked for; the real-node namespaces it made go too. Stops no node when there is no
   * second one.
   */
  async stopSecondRealNode(): Promise<void> {
    await this.#deleteRealNodeNamespaces();
    const problems = await stopRealNode(secondNodeDir(this.controlPlane.state.dir));
    releaseSecondNode(this.controlPlane.state.dir);
    const removed = await this.kubectl([
      'delete',
      'node',
      SECOND_NODE.name,
      '--ignore-not-found',
      '--wait=false',
    ]);
    if (removed.code !== 0) problems.push(`deleting Node ${SECOND_NODE.name}: ${removed.stderr.trim()}`);
    if (problems.length > 0)
      throw new Error(`testenv: stopping the second real node left problems:\n  ${problems.join('\n  ')}`);
  }

  /**
   * Runs this control plane's kubectl as cluster-admin, with `input` on its
   * stdin (for `-f -`): what a person at a terminal would see, for tests of
   * messages. Resolves with the exit code and both outputs, never rejects on
   * a non-zero exit.
   */
  kubectl(args: string[], input?: string): Promise<KubectlResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.controlPlane.state.kubectl, ['--kubeconfig', this.kubeconfigPath, ...args], {
        stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      });
      if (input !== undefined) child.stdin!.end(input);
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  /**
   * Creates a fresh namespace `<prefix>-<random>` and returns its name. With
   * `realNode`, every Pod in it runs on the real node and nowhere else,
   * whatever its controller renders: the namespace carries the node selector
   * and the toleration of the real node's taint (the API server's
   * PodNodeSelector and PodTolerationRestriction admission plugins add them).
   */
  async newNamespace(prefix = 'test', options: { realNode?: boolean } = {}): Promise<string> {
    if (options.realNode && !this.controlPlane.hasRealNode)
      throw new Error('testenv: newNamespace({ realNode: true }) needs start({ realNodes: 1 })');
    const name = `${prefix
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '-')
      .slice(0, 40)}-${randomBytes(4).toString('hex')}`;
    const res = await adminRequest(this.controlPlane.credentials, 'POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name,
        labels: { 'regulon.dev/testenv': 'true' },
        ...(options.realNode ? { annotations: realNodeNamespaceAnnotations() } : {}),
      },
    });
    if (res.status !== 201) throw new Error(`testenv: creating namespace ${name}: ${res.body}`);
    if (options.realNode) this.#realNodeNamespaces.push(name);
    // The controller-manager fills a new namespace with its default ServiceAccount
    // and the kube-root-ca.crt ConfigMap. Waiting for both hands tests a settled
    // namespace: no Pod rejected for a missing ServiceAccount, no stray ConfigMap
    // event racing a test's own.
    const deadline = Date.now() + 30_000;
    for (const path of [
      `/api/v1/namespaces/${name}/serviceaccounts/default`,
      `/api/v1/namespaces/${name}/configmaps/kube-root-ca.crt`,
    ]) {
      while ((await adminRequest(this.controlPlane.credentials, 'GET', path)).status !== 200) {
        if (Date.now() > deadline)
          throw new Error(`testenv: namespace ${name} not initialised by the controller-manager (${path})`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    return name;
  }

  /**
   * Applies CustomResourceDefinitions (objects, or every YAML file in a
   * directory) with server-side apply, and waits until each is Established
   * and its resource is served.
   */
  async installCRDs(source: string | CustomResourceDefinition[], timeoutMs = 30_000): Promise<string[]> {
    const crds = typeof source === 'string' ? readCRDs(source) : source;
    const creds = this.controlPlane.credentials;
    for (const crd of crds) {
      const body = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', ...crd };
      const res = await adminRequest(
        creds,
        'PATCH',
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}?fieldManager=regulon-testenv&force=true`,
        body,
        'application/apply-patch+yaml',
      );
      if (res.status !== 200 && res.status !== 201)
        throw new Error(`testenv: applying CRD ${crd.metadata.name}: ${res.body}`);
    }
    const deadline = Date.now() + timeoutMs;
    for (const crd of crds) {
      for (;;) {
        const res = await adminRequest(
          creds,
          'GET',
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`,
        );
        const got = JSON.parse(res.body) as CRDStatus;
        if (isServed(got) && (await resourceListed(this, got))) break;
        if (Date.now() > deadline)
          throw new Error(`testenv: CRD ${crd.metadata.name} not Established after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    return crds.map((c) => c.metadata.name);
  }

  async stop(): Promise<void> {
    await this.#deleteRealNodeNamespaces();
    if (!this.#owned) return;
    await this.controlPlane.stop();
    if (this.#ownedDir) rmSync(this.#ownedDir, { recursive: true, force: true });
  }

  /**
   * A file's real Pods would run on after it, probed by the kubelet every few seconds, and slow
   * every later file on the shared node (a CI run's last projects took twice as long beside 43
   * of them): the real-node namespaces it made go when it gives the environment back (stop(),
   * or stopSecondRealNode() on a shared control plane). Their deletion is not waited for.
   */
  async #deleteRealNodeNamespaces(): Promise<void> {
    await Promise.all(
      this.#realNodeNamespaces
        .splice(0)
        .map((ns) =>
          adminRequest(this.controlPlane.credentials, 'DELETE', `/api/v1/namespaces/${ns}`).catch(
            () => undefined,
          ),
        ),
    );
  }
}

interface CRDStatus {
  spec: { group: string; names: { plural: string }; versions: Array<{ name: string; served: boolean }> };
  status?: { conditions?: Array<{ type: string; status: string }> } | undefined;
}

function isServed(crd: CRDStatus): boolean {
  const conds = crd.status?.conditions ?? [];
  return ['Established', 'NamesAccepted'].every((t) =>
    conds.some((c) => c.type === t && c.status === 'True'),
  );
}

async function resourceListed(env: TestEnv, crd: CRDStatus): Promise<boolean> {
  for (const v of crd.spec.versions.filter((x) => x.served)) {
    const res = await adminRequest(env.controlPlane.credentials, 'GET', `/apis/${crd.spec.group}/${v.name}`);
    if (res.status !== 200) return false;
    const list = JSON.parse(res.body) as { resources: Array<{ name: string }> };
    if (!list.resources.some((r) => r.name === crd.spec.names.plural)) return false;
  }
  return true;
}

function readCRDs(dir: string): CustomResourceDefinition[] {
  const files = statSync(dir).isDirectory()
    ? readdirSync(dir)
        .filter((f) => /\.ya?ml$|\.json$/.test(f))
        .sort()
        .map((f) => join(dir, f))
    : [dir];
  const crds: CustomResourceDefinition[] = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const obj = doc.toJS() as (CustomResourceDefinition & { kind?: string }) | null;
      if (obj?.kind === 'CustomResourceDefinition') crds.push(obj);
    }
  }
  return crds;
}

/**
 * Returns a TestEnv: attached to the run's shared control plane when
 * REGULON_TESTENV_DIR is set (unless `own`, or feature gates are asked for),
 * otherwise a new one in a temp directory, stopped by `stop()`.
 */
export async function start(options: TestEnvOptions = {}): Promise<TestEnv> {
  const log = options.verbose ? (l: string) => process.stderr.write(`[testenv] ${l}\n`) : options.log;
  const shared = needsOwnPlane(options) ? undefined : process.env[STATE_DIR_ENV];
  if (shared && ControlPlane.exists(shared)) {
    const cp = ControlPlane.attach(shared, log);
    if (options.realNodes === 2) await takeSecondNode(shared, log);
    if ((options.realNodes ?? 0) > 0) await cp.ensureRealNode(undefined, options.realNodes);
    return new TestEnv(cp, false);
  }
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'regulon-testenv-'));
  const cp = await ControlPlane.start({ ...options, dir, ...(log ? { log } : {}) }).catch((err: unknown) => {
    if (!options.dir) removeIfEmpty(dir);
    throw err;
  });
  return new TestEnv(cp, true, options.dir ? undefined : dir);
}

/**
 * The second real node belongs to one test file of a run at a time: a file
 * that loses it, or stops it at its end, must not pull it from under another
 * file's Pods (the files of different projects run at once). The owner is the
 * process whose pid the file names; a file whose owner has ended is taken
 * over. Given back by `stopSecondRealNode()`.
 */
const SECOND_NODE_OWNER = 'second-node.owner';
const SECOND_NODE_WAIT_MS = 30 * 60_000;

async function takeSecondNode(controlPlaneDir: string, log?: (line: string) => void): Promise<void> {
  const file = join(controlPlaneDir, SECOND_NODE_OWNER);
  const deadline = Date.now() + SECOND_NODE_WAIT_MS;
  let told = false;
  for (;;) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let owner = Number.NaN;
    try {
      owner = Number(readFileSync(file, 'utf8'));
    } catch {
      continue; // given back meanwhile
    }
    if (owner === process.pid) return;
    if (!Number.isInteger(owner) || !isAlive(owner)) {
      rmSync(file, { force: true });
      continue;
    }
    if (Date.now() > deadline)
      throw new Error(
        `testenv: the second real node stayed with process ${owner} for ${SECOND_NODE_WAIT_MS} ms`,
      );
    if (!told) log?.(`waiting for process ${owner} to give the second real node back`);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, 2_000));
  }
}

function releaseSecondNode(controlPlaneDir: string): void {
  const file = join(controlPlaneDir, SECOND_NODE_OWNER);
  try {
    if (Number(readFileSync(file, 'utf8')) === process.pid) rmSync(file, { force: true });
  } catch {
    // Nobody owned it.
  }
}

/**
 * The annotations that pin a namespace's Pods to the real node (see
 * `newNamespace({ realNode: true })`), for a namespace created some other
 * way, e.g. by `kubectl apply` of a manifest.
 */
export function realNodeNamespaceAnnotations(): Record<string, string> {
  return {
    'scheduler.alpha.kubernetes.io/node-selector': `${REAL_NODE_LABEL}=true`,
    'scheduler.alpha.kubernetes.io/defaultTolerations': JSON.stringify([
      { key: REAL_NODE_LABEL, operator: 'Exists', effect: 'NoSchedule' },
    ]),
  };
}

/**
 * The annotations that send the Pods a namespace creates from now on to the
 * second real node alone (its name selected, both nodes' taints tolerated):
 * for a node-loss test that places one instance there. Admission applies a
 * namespace's annotations when a Pod is created; Pods already running stay.
 */
export function secondRealNodeNamespaceAnnotations(): Record<string, string> {
  return {
    'scheduler.alpha.kubernetes.io/node-selector': `${REAL_NODE_LABEL}=true,kubernetes.io/hostname=${SECOND_NODE.name}`,
    'scheduler.alpha.kubernetes.io/defaultTolerations': JSON.stringify([
      { key: REAL_NODE_LABEL, operator: 'Exists', effect: 'NoSchedule' },
      { key: SECOND_NODE.taint, operator: 'Exists', effect: 'NoSchedule' },
    ]),
  };
}

/**
 * A run directory a failed start left empty (it failed before writing
 * anything, e.g. while the binaries were built) says nothing; one with the
 * components' logs is kept for whoever reads the error.
 */
export function removeIfEmpty(dir: string): void {
  try {
    if (readdirSync(dir).length === 0) rmSync(dir, { recursive: true, force: true });
  } catch {
    // already gone
  }
}
