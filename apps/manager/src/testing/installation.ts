// One installation of deploy/ on the real node, as the in-cluster tests apply
// it: the image built from apps/manager/Dockerfile, `kubectl apply
// --server-side -k` of an overlay that sets what a user's would:
// - the image (`images:`), the one built here: regulon.local/manager:<version>;
// - `namespace` and `namePrefix`, so this installation lives beside the ones
//   other tests of the run apply (deploy/README.md shows both);
// - REGULON_NAMESPACE: the manager watches one namespace (the test's
//   Databases, on fake nodes) rather than every test's objects;
// - with `engines: 'real'`, deploy/components/image-catalog and a catalog of
//   the testenv's Debian-built engine images (an air-gapped user's overlay
//   does the same with their registry's images);
// plus what only a test needs: the real node's annotations on the manager's
// namespace, so its Pods run there and not on a fake node, and any env the
// test adds (the liveness test's debug hook).
// With `via: 'helm'`, the chart deploy/helm/regulon says the same through its
// values, rendered by `helm template` and applied by `kubectl apply --server-side`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { KubeClient } from '@regulon/client';
import {
  ensureImages,
  eventually,
  loadImagesIntoRealNode,
  localImageCatalog,
  realNodeNamespaceAnnotations,
  type KubectlResult,
  type TestEnv,
} from '@regulon/testenv';
import { parse, stringify } from 'yaml';
import { parsePrometheusText, type Sample } from '../../../../packages/runtime/src/testing/prometheus.ts';
import { ensureManagerImage, type ManagerImage } from '../../../../tools/manager-image/image.ts';
import { ensureHelm } from '../../../../tools/scripts/go-tools.ts';
import { CONTROLLERS } from '../controllers.ts';

export const root = join(import.meta.dirname, '..', '..', '..', '..');
/** --leader-election-id's default: the Lease keeps its name under a namePrefix. */
export const LEASE = 'regulon-manager';
export const SELECTOR = 'app.kubernetes.io/name=regulon-manager';

const API_VERSIONS = new Map(
  CONTROLLERS.flatMap((c) => c.kinds).map((k) => [k.crd().spec.names.plural, k.apiVersion]),
);

/** The path of a Regulon object, at the version the manager reads (`databases` → regulon.dev/v1beta1). */
export function objectPath(namespace: string, plural: string, name = ''): string {
  const apiVersion = API_VERSIONS.get(plural);
  if (!apiVersion) throw new Error(`no Regulon kind is served as ${plural}`);
  return `/apis/${apiVersion}/namespaces/${namespace}/${plural}${name ? `/${name}` : ''}`;
}

export const say = (line: string) => process.stderr.write(`[in-cluster] ${line}\n`);

export interface Pod {
  metadata: {
    name: string;
    uid: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
  };
  spec: { nodeName?: string; containers: Array<{ name: string; image: string }> };
  status: {
    podIP?: string;
    phase?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{
      name: string;
      ready: boolean;
      restartCount: number;
      containerID?: string;
      lastState?: { terminated?: { exitCode: number; reason?: string } };
    }>;
  };
}

export interface Lease {
  spec: { holderIdentity?: string; leaseTransitions?: number };
}

/** kubectl against the test environment's control plane. */
export class Kubectl {
  readonly #env: TestEnv;
  constructor(env: TestEnv) {
    this.#env = env;
  }

  run(...args: string[]): Promise<KubectlResult> {
    return this.runWithInput(undefined, ...args);
  }

  /** kubectl with `input` on its stdin (for `-f -`). */
  runWithInput(input: string | undefined, ...args: string[]): Promise<KubectlResult> {
    return this.#env.kubectl(args, input);
  }

  async ok(...args: string[]): Promise<string> {
    const r = await this.run(...args);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}:\n${r.stderr}${r.stdout}`);
    return r.stdout;
  }

  async json<T>(...args: string[]): Promise<T> {
    return JSON.parse(await this.ok(...args, '-o', 'json')) as T;
  }
}

export const ready = (p: Pod) =>
  p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** The Pod whose name the Lease's holder identity starts with (POD_NAME or the host name, plus a suffix). */
export const holderPod = (pods: Pod[], holder: string | undefined) =>
  pods.find((p) => holder?.startsWith(`${p.metadata.name}_`) || holder === p.metadata.name);

/** A Pod's own /metrics (the host reaches Pod IPs on the bridge), parsed. */
export async function scrape(pod: Pod, signal?: AbortSignal): Promise<Sample[]> {
  const res = await fetch(`http://${pod.status.podIP}:8080/metrics`, signal ? { signal } : {});
  return parsePrometheusText(await res.text());
}

/** Sum of the samples of `name` whose labels include `labels`. */
export const sum = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);

/** Sum of a counter's samples for one controller, as a Pod's own /metrics reports it. */
export async function metric(pod: Pod, name: string, labels: Record<string, string> = {}): Promise<number> {
  return sum(await scrape(pod), name, labels);
}

export interface InstallOptions {
  /** Names the installation's namespace (regulon-<name>-<random>) and prefix. */
  name: string;
  /** Env added to the manager container, after deploy/'s. */
  env?: Array<{ name: string; value: string }>;
  /**
   * Where the workload's engines run. 'simulated' (the default): on fake
   * nodes, with the official images the manager names without a catalog.
   * 'real': on the real node, with the local engine images through the
   * image-catalog component.
   */
  engines?: 'simulated' | 'real';
  /**
   * Also deploy/webhook: the admission webhooks, behind the webhook Service
   * the base installs for conversions. The overlay limits them to the workload
   * namespace (the only one this manager watches), so that other tests'
   * objects elsewhere never reach them.
   */
  webhooks?: boolean;
  /**
   * How deploy/ is applied: 'kustomize' (the default), the overlay above; or
   * 'helm', the chart deploy/helm/regulon rendered by `helm template` with
   * values that say the same (namePrefix, watchNamespace, the image, the
   * catalog, the webhooks and their namespaceSelector, env) and applied by
   * `kubectl apply --server-side`, into a namespace made here with
   * deploy/namespace.yaml's labels and the real node's annotations.
   */
  via?: 'kustomize' | 'helm';
}

/** deploy/ applied through an overlay, in a namespace of its own, on the real node. */
export class Installation {
  readonly kubectl: Kubectl;
  /** For the tests' frequent reads, cheaper than a kubectl process each time. */
  readonly api: KubeClient;
  /** The namespace the overlay moves everything to: the manager's Pods and Lease. */
  readonly namespace: string;
  readonly prefix: string;
  /** The namespace the manager watches (REGULON_NAMESPACE); its Pods land on fake nodes. */
  workload = '';
  image!: ManagerImage;
  /** The catalog the overlay gives the manager, with `engines: 'real'`: engine → its one local version and image. */
  catalog: Record<string, Array<{ version: string; image: string }>> = {};
  readonly #dir: string;

  readonly env: TestEnv;
  readonly options: InstallOptions;

  constructor(env: TestEnv, options: InstallOptions) {
    this.env = env;
    this.options = options;
    this.kubectl = new Kubectl(env);
    this.api = KubeClient.load({ kubeConfig: env.kubeConfig, qps: Infinity });
    const suffix = randomBytes(3).toString('hex');
    this.prefix = `${options.name.slice(0, 4)}${suffix}-`;
    this.namespace = `regulon-${options.name}-${suffix}`;
    this.#dir = mkdtempSync(join(tmpdir(), 'regulon-in-cluster-'));
  }

  get deployment(): string {
    return `${this.prefix}regulon-manager`;
  }

  /** Builds (or reuses) the image, loads it into the real node and applies the overlay. */
  async apply(): Promise<void> {
    const t = Date.now();
    this.image = await ensureManagerImage((l) => say(l));
    say(
      `image ${this.image.ref}: ${(this.image.size / 2 ** 20).toFixed(0)} MiB archive, built in ${this.image.buildSeconds} s; ensured in ${Date.now() - t} ms`,
    );
    loadImagesIntoRealNode(this.env.controlPlane.state.dir, [this.image], say);
    const real = this.options.engines === 'real';
    this.workload = await this.env.newNamespace(`${this.options.name}-work`, { realNode: real });
    const overlayDir = join(this.#dir, 'overlay');
    mkdirSync(overlayDir);
    if (real) {
      this.catalog = await localImageCatalog();
      writeFileSync(join(overlayDir, 'image-catalog.yaml'), stringify(this.catalog));
    }
    const [imageName, imageTag] = this.image.ref.split(':');
    const webhooks = this.options.webhooks === true;
    if (this.options.via === 'helm') {
      await this.#applyChart({ repository: imageName!, tag: imageTag! }, real, webhooks);
      await this.#crdsEstablished();
      return;
    }
    const env = [
      { name: 'REGULON_NAMESPACE', value: this.workload },
      // The names the overlay's namePrefix gave the Service and the configurations (the Secret's
      // name is the manager's to choose, and the RBAC names it unprefixed).
      { name: 'REGULON_WEBHOOK_SERVICE_NAME', value: `${this.prefix}regulon-webhook` },
      { name: 'REGULON_WEBHOOK_CONFIGURATION_PREFIX', value: `${this.prefix}regulon` },
      ...(this.options.env ?? []),
    ];
    const components = [
      ...(real ? [relative(overlayDir, join(root, 'deploy', 'components', 'image-catalog'))] : []),
      ...(webhooks ? [relative(overlayDir, join(root, 'deploy', 'webhook'))] : []),
    ];
    writeFileSync(
      join(overlayDir, 'kustomization.yaml'),
      stringify({
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        namespace: this.namespace,
        namePrefix: this.prefix,
        resources: [relative(overlayDir, join(root, 'deploy'))],
        images: [{ name: 'regulon-manager', newName: imageName, newTag: imageTag }],
        ...(components.length ? { components } : {}),
        ...(real
          ? { configMapGenerator: [{ name: 'regulon-image-catalog', files: ['image-catalog.yaml'] }] }
          : {}),
        patches: [
          {
            target: { kind: 'Namespace' },
            patch: stringify([
              { op: 'add', path: '/metadata/annotations', value: realNodeNamespaceAnnotations() },
            ]),
          },
          ...(webhooks
            ? [
                {
                  target: { kind: 'ValidatingWebhookConfiguration' },
                  patch: stringify(
                    validatingWebhooks().map((_, i) => ({
                      op: 'add',
                      path: `/webhooks/${i}/namespaceSelector`,
                      value: { matchLabels: { 'kubernetes.io/metadata.name': this.workload } },
                    })),
                  ),
                },
              ]
            : []),
          {
            target: { kind: 'Deployment', name: 'regulon-manager' },
            patch: stringify(
              env.map((value) => ({ op: 'add', path: '/spec/template/spec/containers/0/env/-', value })),
            ),
          },
        ],
      }),
    );
    // --force-conflicts: the CRDs are shared with the run's other tests, which install them with their own field manager.
    await this.kubectl.ok('apply', '--server-side', '--force-conflicts', '-k', overlayDir);
    await this.#crdsEstablished();
  }

  /** The chart, rendered with the values that say what the overlay does, applied with kubectl. */
  async #applyChart(
    image: { repository: string; tag: string },
    real: boolean,
    webhooks: boolean,
  ): Promise<void> {
    const namespace = parse(readFileSync(join(root, 'deploy', 'namespace.yaml'), 'utf8')) as {
      metadata: { labels: Record<string, string> };
    };
    await this.kubectl.runWithInput(
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name: this.namespace,
          labels: namespace.metadata.labels,
          annotations: realNodeNamespaceAnnotations(),
        },
      }),
      'apply',
      '-f',
      '-',
    );
    const values = join(this.#dir, 'values.yaml');
    writeFileSync(
      values,
      stringify({
        namePrefix: this.prefix,
        watchNamespace: this.workload,
        image: { ...image, pullPolicy: 'IfNotPresent' },
        imageCatalog: real ? this.catalog : {},
        webhooks: {
          enabled: webhooks,
          namespaceSelector: webhooks
            ? { matchLabels: { 'kubernetes.io/metadata.name': this.workload } }
            : {},
        },
        env: this.options.env ?? [],
      }),
    );
    const helm = await ensureHelm(say);
    const release = this.prefix.replace(/-$/, '');
    const rendered = spawnSync(
      helm,
      ['template', release, join(root, 'deploy', 'helm', 'regulon'), '-n', this.namespace, '-f', values],
      { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 },
    );
    assert.equal(rendered.status, 0, `helm template:\n${rendered.stderr}`);
    const r = await this.kubectl.runWithInput(
      rendered.stdout,
      'apply',
      '--server-side',
      '--force-conflicts',
      '-f',
      '-',
    );
    assert.equal(r.code, 0, `helm template | kubectl apply:\n${r.stderr}${r.stdout}`);
  }

  async #crdsEstablished(): Promise<void> {
    await this.kubectl.ok(
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/databases.regulon.dev',
      'crd/databasebackups.regulon.dev',
      'crd/caches.regulon.dev',
      'crd/myapps.regulon.dev',
    );
  }

  /**
   * A sample of deploy/samples as this installation's user would apply it:
   * unchanged on simulated engines; with real engines, each engine's version
   * is the one its catalog lists (the samples name official versions, which
   * the local images are not) and a MyApp runs the local app image, which
   * proves its injected credentials in /readyz. `spec` overrides the spec.
   */
  async sample(file: string, spec: Record<string, unknown> = {}): Promise<string> {
    const doc = parse(readFileSync(join(root, 'deploy', 'samples', file), 'utf8')) as {
      kind: string;
      spec: Record<string, unknown> & {
        engine?: string;
        database?: { engine: string; version: string };
        cache?: { engine: string; version: string };
      };
    };
    if (this.options.engines === 'real') {
      const local = (engine: string) => {
        const version = this.catalog[engine]?.[0]?.version;
        assert.ok(version, `the local catalog runs ${engine}`);
        return version;
      };
      for (const part of [doc.spec, doc.spec.database, doc.spec.cache])
        if (part?.engine) part.version = local(part.engine);
      if (doc.kind === 'MyApp') doc.spec['image'] = (await ensureImages(['app']))[0]!.ref;
    }
    Object.assign(doc.spec, spec);
    return JSON.stringify(doc);
  }

  /** Applies a sample (see `sample`) into the workload namespace. */
  async applySample(file: string, spec: Record<string, unknown> = {}): Promise<void> {
    const r = await this.kubectl.runWithInput(
      await this.sample(file, spec),
      'apply',
      '-n',
      this.workload,
      '-f',
      '-',
    );
    assert.equal(r.code, 0, `kubectl apply ${file}:\n${r.stderr}${r.stdout}`);
  }

  /** A GET of an API path, as the admin. */
  get<T>(path: string, signal?: AbortSignal): Promise<T> {
    return this.api.request<T>({ method: 'GET', path, ...(signal ? { signal } : {}) });
  }

  /** The manager's Pods that are not being deleted. */
  async pods(): Promise<Pod[]> {
    const list = await this.kubectl.json<{ items: Pod[] }>(
      'get',
      'pods',
      '-n',
      this.namespace,
      '-l',
      SELECTOR,
    );
    return list.items.filter((p) => !p.metadata.deletionTimestamp);
  }

  /** Every manager Pod, those being deleted too. */
  async allPods(): Promise<Pod[]> {
    return (await this.kubectl.json<{ items: Pod[] }>('get', 'pods', '-n', this.namespace, '-l', SELECTOR))
      .items;
  }

  lease(): Promise<Lease> {
    return this.kubectl.json<Lease>('get', 'lease', '-n', this.namespace, LEASE);
  }

  /** Both replicas Ready (the kubelet's /readyz probe), each answering /readyz itself, and one of them holding the Lease. */
  twoReadyOneLeader(timeoutMs = 180_000): Promise<{ leader: Pod; standby: Pod; holder: string }> {
    return eventually(
      'two Ready manager Pods and a leader among them',
      async () => {
        const pods = await this.pods();
        if (pods.length !== 2 || !pods.every(ready)) return false;
        const holder = (await this.lease()).spec.holderIdentity;
        const leader = holderPod(pods, holder);
        if (!leader || !holder) return false;
        for (const p of pods) {
          const res = await fetch(`http://${p.status.podIP}:8081/readyz`);
          if (!res.ok) return false;
        }
        return { leader, standby: pods.find((p) => p !== leader)!, holder };
      },
      timeoutMs,
      500,
    );
  }

  /** Prints the managers' last log lines, then deletes what the overlay made except the CRDs. */
  async remove(): Promise<void> {
    const logs = await this.kubectl.run(
      'logs',
      '-n',
      this.namespace,
      '-l',
      SELECTOR,
      '--tail=30',
      '--prefix',
    );
    if (logs.stdout) say(`manager logs (last lines):\n${logs.stdout}`);
    // Not `delete -k`: that would delete the CRDs every other test of the run uses.
    await this.kubectl.run('delete', 'namespace', this.namespace, '--wait=false');
    if (this.workload) await this.kubectl.run('delete', 'namespace', this.workload, '--wait=false');
    await this.kubectl.run('delete', 'clusterrole,clusterrolebinding', this.deployment, '--ignore-not-found');
    if (this.options.webhooks) {
      await this.kubectl.run(
        'delete',
        'validatingwebhookconfiguration',
        `${this.prefix}regulon-validating`,
        '--ignore-not-found',
      );
      await this.kubectl.run(
        'delete',
        'clusterrole,clusterrolebinding',
        `${this.prefix}regulon-manager-webhook-ca-injection`,
        '--ignore-not-found',
      );
    }
    this.api.close();
    rmSync(this.#dir, { recursive: true, force: true });
  }

  /**
   * Waits for the Lease to name a holder other than `previous`, then for that
   * holder's first Database reconcile on its own /metrics (a fresh leader starts
   * its controllers, which reconcile every object they list). Returns the times
   * from `t0` in ms, and the new leader.
   */
  async takeover(
    t0: number,
    previous: string,
    timeoutMs = 120_000,
  ): Promise<{ leaseMs: number; reconcileMs: number; leader: Pod }> {
    const { leader, holder } = await eventually(
      'a new Lease holder',
      async () => {
        const h = (await this.lease()).spec.holderIdentity;
        if (!h || h === previous) return false;
        const pod = holderPod(await this.pods(), h);
        return pod?.status.podIP ? { leader: pod, holder: h } : false;
      },
      timeoutMs,
      100,
    );
    const leaseMs = Date.now() - t0;
    await eventually(
      `the first reconcile of ${holder}`,
      async () =>
        (await metric(leader, 'controller_runtime_reconcile_total', { controller: 'database' })) > 0,
      60_000,
      100,
    );
    return { leaseMs, reconcileMs: Date.now() - t0, leader };
  }

  /**
   * Sends `signal` to the manager's Node process in `pod` (tini is PID 1, node
   * its child, with the image's Node flags before apps/manager/dist/bundle/main.js;
   * sh, tr and /proc are all the image has for finding it). Returns the PID
   * signalled.
   */
  async signalNode(pod: Pod, signal: 'KILL' | 'USR2'): Promise<number> {
    const out = await this.kubectl.ok(
      'exec',
      '-n',
      this.namespace,
      pod.metadata.name,
      '--',
      'sh',
      '-c',
      `for p in /proc/[0-9]*; do case "$(tr "\\0" " " <"$p/cmdline" 2>/dev/null)" in "node "*"apps/manager/dist/bundle/main.js"*) kill -${signal} "\${p#/proc/}" && echo "\${p#/proc/}" ;; esac; done`,
    );
    assert.match(out, /^\d+\s*$/, `one node process signalled: ${JSON.stringify(out)}`);
    return Number(out.trim());
  }
}

/** Whether an object's status says Ready and was written for its current generation. */
export interface Converged {
  metadata: { name: string; generation?: number };
  status?: {
    observedGeneration?: number;
    phase?: string;
    conditions?: Array<{ type: string; status: string; observedGeneration?: number }>;
  };
}

export const isReady = (o: Converged) =>
  o.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
export const isCurrent = (o: Converged) =>
  o.status?.observedGeneration !== undefined && o.status.observedGeneration === o.metadata.generation;

/** The webhooks of deploy/webhook's ValidatingWebhookConfiguration, as generated. */
function validatingWebhooks(): unknown[] {
  const doc = parse(readFileSync(join(root, 'deploy', 'webhook', 'configurations.yaml'), 'utf8')) as {
    kind: string;
    webhooks: unknown[];
  };
  assert.equal(doc.kind, 'ValidatingWebhookConfiguration');
  return doc.webhooks;
}
