import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './paths.ts';

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
 * Returns the control-plane binaries, building them from the Go module proxy
 * the first time (tools/control-plane/build.sh; a cold build takes tens of
 * minutes, later calls return at once from the versioned cache).
 * REGULON_CONTROL_PLANE_BIN points at a prebuilt directory instead.
 */
export async function ensureBinaries(log: (line: string) => void = () => {}): Promise<Binaries> {
  const override = process.env['REGULON_CONTROL_PLANE_BIN'];
  if (override) return layout(override);
  return layout(await runBuildScript(['tools', 'control-plane', 'build.sh'], log));
}

export interface NodeBinaries {
  kubelet: string;
  kubeProxy: string;
  coredns: string;
}

/**
 * Returns what a real node runs from the Go module proxy: kubelet and
 * kube-proxy of the control plane's Kubernetes version, and CoreDNS
 * (tools/control-plane/build-node.sh, cached beside the control plane).
 * REGULON_NODE_BIN points at a prebuilt directory instead.
 */
export async function ensureNodeBinaries(log: (line: string) => void = () => {}): Promise<NodeBinaries> {
  const dir =
    process.env['REGULON_NODE_BIN'] ??
    (await runBuildScript(['tools', 'control-plane', 'build-node.sh'], log));
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

/** Runs one of the repository's cached-build scripts; its last line of output is the bin dir. */
export async function runBuildScript(path: string[], log: (line: string) => void): Promise<string> {
  return (await runScript(join(repoRoot(), ...path), [], log)).pop() ?? '';
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
      else reject(new Error(`${script} ${args.join(' ')} exited with ${code}:\n${tail.join('\n')}`));
    });
  });
}
