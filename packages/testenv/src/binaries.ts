import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './paths.ts';

const packageRoot = join(import.meta.dirname, '..');

/**
 * Whether this is an installed @regulon/testenv rather than the repository's
 * workspace: the tarball carries tools/control-plane, tools/images and
 * tools/lib beside dist/ (tools/scripts/pack.ts), at the paths they have in
 * the repository, so that the same scripts build into the same cache keys
 * from either.
 */
const shipsBuildScripts = existsSync(join(packageRoot, 'tools', 'control-plane', 'build.sh'));

/** The directory whose tools/ holds the build scripts: the installed package's, or the checkout's. */
function toolsRoot(): string {
  return shipsBuildScripts ? packageRoot : repoRoot();
}

/** What `regulon-testenv install` builds or finds, and what `start()` needs of it. */
interface CachedBuild {
  script: string[];
  what: string;
  override: string;
  installCommand: string;
}

const CONTROL_PLANE: CachedBuild = {
  script: ['tools', 'control-plane', 'build.sh'],
  what: 'the control-plane binaries (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok)',
  override: 'REGULON_CONTROL_PLANE_BIN',
  installCommand: 'npx regulon-testenv install',
};

const NODE: CachedBuild = {
  script: ['tools', 'control-plane', 'build-node.sh'],
  what: "the real node's kubelet, kube-proxy and CoreDNS",
  override: 'REGULON_NODE_BIN',
  installCommand: 'npx regulon-testenv install --real-node',
};

/** The build scripts' exit code for "not built" under --check. */
const NOT_BUILT = 3;

/**
 * The bin dir of `build`. A checkout builds what is missing, on first use (a
 * cold control plane takes 8-13 min of both cores). An installed package
 * only looks: building is `regulon-testenv install`'s job, done once, not
 * something to start inside a test's timeout; nothing built fails with the
 * command to run.
 */
async function cachedBinDir(build: CachedBuild, log: (line: string) => void): Promise<string> {
  if (!shipsBuildScripts) return runBuildScript(build.script, log);
  try {
    return await runBuildScript(build.script, log, ['--check']);
  } catch (err) {
    if ((err as ScriptError).exitCode !== NOT_BUILT) throw err;
    throw new Error(
      `testenv: ${build.what} are not installed. Run \`${build.installCommand}\` once: it builds them ` +
        `from the Go module proxy (minutes, once per version) into ` +
        `${process.env['REGULON_CACHE_DIR'] ?? '~/.cache/regulon'}/control-plane; ` +
        `or point ${build.override} at a directory holding them.`,
      { cause: err },
    );
  }
}

/**
 * `regulon-testenv install`: builds `which` from the Go module proxy unless
 * the versioned cache has it already (the cache of the repository's own
 * `bash tools/control-plane/build.sh`, same keys), and returns its bin dir.
 */
export function installBinaries(
  which: 'control-plane' | 'node',
  log: (line: string) => void,
): Promise<string> {
  return runBuildScript((which === 'node' ? NODE : CONTROL_PLANE).script, log);
}

export interface Binaries {
  dir: string;
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  kubectl: string;
  kwok: string;
  /** KWOK Stage objects: node lifecycle, pod lifecycle, volume provisioning. */
  kwokStages: string;
  /** The default StorageClass whose PVCs KWOK provisions. */
  kwokStorageClass: string;
}

function layout(dir: string): Binaries {
  return {
    dir,
    etcd: join(dir, 'etcd'),
    kubeApiserver: join(dir, 'kube-apiserver'),
    kubeControllerManager: join(dir, 'kube-controller-manager'),
    kubeScheduler: join(dir, 'kube-scheduler'),
    kubectl: join(dir, 'kubectl'),
    kwok: join(dir, 'kwok'),
    kwokStages: join(dir, 'kwok-stages.yaml'),
    kwokStorageClass: join(dir, 'kwok-storageclass.yaml'),
  };
}

/**
 * Returns the control-plane binaries from the versioned cache
 * (tools/control-plane/build.sh). A checkout builds them from the Go module
 * proxy the first time; an installed package finds what `npx
 * regulon-testenv install` built. REGULON_CONTROL_PLANE_BIN points at a
 * prebuilt directory instead.
 */
export async function ensureBinaries(log: (line: string) => void = () => {}): Promise<Binaries> {
  const override = process.env[CONTROL_PLANE.override];
  if (override) return layout(override);
  return layout(await cachedBinDir(CONTROL_PLANE, log));
}

export interface NodeBinaries {
  kubelet: string;
  kubeProxy: string;
  coredns: string;
}

/**
 * Returns what a real node runs from the Go module proxy: kubelet and
 * kube-proxy of the control plane's Kubernetes version, and CoreDNS
 * (tools/control-plane/build-node.sh, cached beside the control plane; built
 * on first use in a checkout, by `npx regulon-testenv install --real-node`
 * for an installed package). REGULON_NODE_BIN points at a prebuilt directory
 * instead.
 */
export async function ensureNodeBinaries(log: (line: string) => void = () => {}): Promise<NodeBinaries> {
  const dir = process.env[NODE.override] ?? (await cachedBinDir(NODE, log));
  return { kubelet: join(dir, 'kubelet'), kubeProxy: join(dir, 'kube-proxy'), coredns: join(dir, 'coredns') };
}

export interface PrometheusBinaries {
  prometheus: string;
  promtool: string;
}

/**
 * Returns a current Prometheus server and promtool (the version pinned in
 * tools/prometheus/versions.env), built from the Go module proxy the first
 * time and cached like the control plane: the alert and dashboard checks run
 * against what users run, not against whatever a distribution packages.
 * REGULON_PROMETHEUS_BIN points at a prebuilt directory instead.
 */
export async function ensurePrometheus(log: (line: string) => void = () => {}): Promise<PrometheusBinaries> {
  const dir =
    process.env['REGULON_PROMETHEUS_BIN'] ?? (await runBuildScript(['tools', 'prometheus', 'build.sh'], log));
  return { prometheus: join(dir, 'prometheus'), promtool: join(dir, 'promtool') };
}

/**
 * Runs one of the cached-build scripts under tools/; its last line of output
 * is the bin dir. An installed package ships only the control plane's and the
 * real node's: the others (Prometheus, kstatus, the object store) are the
 * repository's, and their REGULON_*_BIN variables point at prebuilt ones.
 */
export async function runBuildScript(
  path: string[],
  log: (line: string) => void,
  args: string[] = [],
): Promise<string> {
  const script = join(toolsRoot(), ...path);
  if (!existsSync(script))
    throw new Error(
      `testenv: ${path.join('/')} is not shipped in the installed @regulon/testenv; ` +
        `set the REGULON_*_BIN variable of what it builds to a prebuilt directory`,
    );
  return (await runScript(script, args, log)).pop() ?? '';
}

/** A script that exited non-zero, with its exit code. */
export interface ScriptError extends Error {
  exitCode: number | null;
}

/**
 * Runs a bash script of the repository's tools: its stdout lines are the
 * result, its stderr lines go to `log`, and the last of them into the error
 * when it fails, so a failed build says why without a trip to a log file.
 */
export function runScript(script: string, args: string[], log: (line: string) => void): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let partial = '';
    const tail: string[] = [];
    const line = (l: string) => {
      if (!l.trim()) return;
      log(l);
      tail.push(l);
      if (tail.length > 30) tail.shift();
    };
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      const lines = (partial + d.toString()).split('\n');
      partial = lines.pop() ?? '';
      lines.forEach(line);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      line(partial);
      if (code === 0) resolve(out.split('\n').filter((l) => l.trim() !== ''));
      else
        reject(
          Object.assign(new Error(`${script} ${args.join(' ')} exited with ${code}:\n${tail.join('\n')}`), {
            exitCode: code,
          }) satisfies ScriptError,
        );
    });
  });
}
