// deploy/'s kustomizations read as objects, the way `kubectl kustomize` builds
// them, for the Helm chart and the OLM bundle (chart.ts, bundle.ts): both are
// made from these objects, so neither can say something deploy/ does not.
// Only what deploy/'s own kustomizations use is done here (a namespace, the
// part-of label on metadata, the strategic-merge flags patch of the manager's
// env, a configMapGenerator without a hash, the image-catalog component's JSON
// patch); the chart test compares the result with kubectl's own rendering.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, normalize } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';

/** A Kubernetes object, loosely typed: the generators walk and change it. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [key: string]: unknown;
}

const CLUSTER_SCOPED = new Set([
  'Namespace',
  'CustomResourceDefinition',
  'ClusterRole',
  'ClusterRoleBinding',
  'ValidatingWebhookConfiguration',
  'MutatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
]);

export const isClusterScoped = (o: K8sObject) => CLUSTER_SCOPED.has(o.kind);

interface Kustomization {
  namespace?: string;
  labels?: Array<{ pairs: Record<string, string> }>;
  resources?: string[];
  patches?: Array<{ path: string }>;
  configMapGenerator?: Array<{
    name: string;
    files: string[];
    options?: { labels?: Record<string, string> };
  }>;
}

/** Reads deploy/ files: from `generated` (what generate.ts is about to write) first, then the disk. */
export class DeployReader {
  readonly #root: string;
  readonly #generated: ReadonlyMap<string, string>;
  constructor(root: string, generated: ReadonlyMap<string, string>) {
    this.#root = root;
    this.#generated = generated;
  }

  /** A file by its path from the repository root. */
  text(path: string): string {
    const p = normalize(path);
    const g = this.#generated.get(p);
    if (g !== undefined) return g;
    const abs = join(this.#root, p);
    if (!existsSync(abs)) throw new Error(`${p}: neither generated nor in the repository`);
    return readFileSync(abs, 'utf8');
  }

  /** Every object of a YAML file. */
  objects(path: string): K8sObject[] {
    return parseAllDocuments(this.text(path))
      .map((d) => d.toJS() as K8sObject | null)
      .filter((o): o is K8sObject => o !== null && typeof o === 'object');
  }

  /** The objects of a kustomization directory (deploy, deploy/monitoring, ...), built as kustomize would. */
  kustomize(dir: string): K8sObject[] {
    const k = parse(this.text(join(dir, 'kustomization.yaml'))) as Kustomization;
    const objects: K8sObject[] = [];
    for (const r of k.resources ?? []) {
      const path = join(dir, r);
      if (!r.endsWith('.yaml')) objects.push(...this.kustomize(path));
      else objects.push(...this.objects(path));
    }
    for (const g of k.configMapGenerator ?? [])
      objects.push({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: g.name, ...(g.options?.labels ? { labels: { ...g.options.labels } } : {}) },
        data: Object.fromEntries(g.files.map((f) => [basename(f), this.text(join(dir, f))])),
      });
    for (const p of k.patches ?? []) {
      for (const patch of this.objects(join(dir, p.path))) {
        const target = objects.find((o) => o.kind === patch.kind && o.metadata.name === patch.metadata.name);
        if (!target) throw new Error(`${dir}: the patch ${p.path} targets no object`);
        strategicMerge(target, patch);
      }
    }
    for (const o of objects) {
      if (k.namespace && !isClusterScoped(o)) o.metadata.namespace = k.namespace;
      for (const l of k.labels ?? []) o.metadata.labels = { ...o.metadata.labels, ...l.pairs };
    }
    return objects;
  }

  /**
   * The JSON-patch `add`s of a kustomize Component that appends to the
   * manager's pod spec (deploy/components/image-catalog): each list path's tail
   * (volumes, containers/0/volumeMounts, containers/0/env) and the value added.
   */
  componentAdditions(dir: string): Array<{ list: 'volumes' | 'volumeMounts' | 'env'; value: unknown }> {
    const k = parse(this.text(join(dir, 'kustomization.yaml'))) as {
      patches: Array<{ target: { kind: string }; patch: string }>;
    };
    return k.patches.flatMap((p) =>
      (parse(p.patch) as Array<{ op: string; path: string; value: unknown }>).map((op) => {
        const list = basename(dirname(`${op.path}`.replace(/\/-$/, '/x')));
        if (op.op !== 'add' || !['volumes', 'volumeMounts', 'env'].includes(list))
          throw new Error(`${dir}: a patch the chart does not know how to carry over: ${op.op} ${op.path}`);
        return { list: list as 'volumes' | 'volumeMounts' | 'env', value: op.value };
      }),
    );
  }
}

/** Kubernetes' strategic merge, as far as a Deployment patch of containers and env by name needs. */
function strategicMerge(target: Record<string, unknown>, patch: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(patch)) {
    const current = target[key];
    if (Array.isArray(value) && Array.isArray(current)) {
      // Items the target lacks go first, in the patch's order, as kustomize puts them.
      const added: unknown[] = [];
      for (const item of value as Array<Record<string, unknown>>) {
        const same = (current as Array<Record<string, unknown>>).find(
          (c) => item['name'] !== undefined && c['name'] === item['name'],
        );
        if (same) strategicMerge(same, item);
        else added.push(item);
      }
      current.unshift(...added);
    } else if (value && typeof value === 'object' && current && typeof current === 'object') {
      strategicMerge(current as Record<string, unknown>, value as Record<string, unknown>);
    } else {
      target[key] = value;
    }
  }
}
