// The Helm chart (deploy/helm/regulon) and the OLM bundle (deploy/olm/bundle)
// against deploy/, with the real tools (built from the Go module proxy,
// go-tools.ts) and kubectl's own kustomize:
// - `helm lint` passes with the defaults and with every value changed;
// - `helm template` with the defaults renders exactly `kubectl kustomize deploy/`
//   (Helm's labels aside), and each value does what deploy/'s components and
//   an overlay do: the admission webhooks, the monitoring, an image catalog, a
//   name prefix (compared with kustomize's namePrefix), the controllers' flags,
//   leader election;
// - the bundle passes `bundle validate` with the default validators and the
//   operatorframework suite, and its CSV says what deploy/ says: the manager
//   Deployment, the RBAC bound to its ServiceAccount, the CRDs, the webhooks.
// - the API server accepts what the chart renders with the webhooks and a
//   catalog, and the CSV's Deployment and RBAC (a server-side dry run).
// That the files are current is generate.ts --check's (npm test's first steps).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import { ensureBinaries, start } from '@regulon/testenv';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { BUNDLE_DIR, CAPABILITIES, OLM_CERT_DIR } from './bundle.ts';
import { CHART_DIR } from './chart.ts';
import { ensureBundleValidate, ensureHelm } from './go-tools.ts';
import type { K8sObject } from './kustomize-base.ts';

const root = join(import.meta.dirname, '..', '..');
const chart = join(root, CHART_DIR);
const bundle = join(root, BUNDLE_DIR);
const NS = 'regulon-system';
const dir = mkdtempSync(join(tmpdir(), 'regulon-chart-'));
let helm = '';
let kubectl = '';
let validate = '';

before(async () => {
  [helm, validate, { kubectl }] = await Promise.all([ensureHelm(), ensureBundleValidate(), ensureBinaries()]);
});
after(() => rmSync(dir, { recursive: true, force: true }));

function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}:\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

const objects = (text: string) =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => !!o);

let n = 0;
function valuesFile(values: unknown): string {
  const f = join(dir, `values-${n++}.yaml`);
  writeFileSync(f, stringify(values));
  return f;
}

/** `helm template` of the chart in regulon-system (or `namespace`) with `values`, as objects. */
function template(values: unknown = {}, namespace = NS): K8sObject[] {
  return objects(run(helm, ['template', 'regulon', chart, '-n', namespace, '-f', valuesFile(values)]));
}

/**
 * `kubectl kustomize` of a directory, as objects. Kustomize gives the
 * admission policy and its binding a namespace, which the API server drops
 * (they are cluster-scoped) and the chart does not write.
 */
const kustomize = (path: string) =>
  objects(run(kubectl, ['kustomize', path])).map((o) => {
    if (o.kind.startsWith('ValidatingAdmissionPolicy')) delete o.metadata.namespace;
    return o;
  });

/** An object without what Helm adds to each (its labels, the CRDs' keep policy). */
function withoutHelm(o: K8sObject): K8sObject {
  const c = structuredClone(o);
  const labels = c.metadata.labels ?? {};
  delete labels['helm.sh/chart'];
  delete labels['app.kubernetes.io/instance'];
  if (labels['app.kubernetes.io/managed-by'] === 'Helm') delete labels['app.kubernetes.io/managed-by'];
  if (!Object.keys(labels).length) delete c.metadata.labels;
  if (c.metadata.annotations) {
    delete c.metadata.annotations['helm.sh/resource-policy'];
    if (!Object.keys(c.metadata.annotations).length) delete c.metadata.annotations;
  }
  return c;
}

/**
 * The admission policy with its CEL's runs of white space made one: Go's YAML
 * (kustomize's) and this file's read a folded scalar's more-indented lines with
 * a different number of line breaks, which CEL ignores.
 */
function celSpaces(o: K8sObject): K8sObject {
  if (o.kind !== 'ValidatingAdmissionPolicy') return o;
  return JSON.parse(JSON.stringify(o), (_k, v: unknown) =>
    typeof v === 'string' ? v.replace(/\s+/g, ' ') : v,
  ) as K8sObject;
}

const key = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const byKey = (list: K8sObject[]) => new Map(list.map((o) => [key(o), o]));

/** The same objects, Helm's additions aside, compared one by one so a failure names the object. */
function assertSameObjects(helmObjects: K8sObject[], expected: K8sObject[], what: string): void {
  const got = byKey(helmObjects.map(withoutHelm).map(celSpaces));
  const want = byKey(expected.map(celSpaces));
  assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort(), `${what}: the same objects`);
  for (const [k, o] of want) assert.deepEqual(got.get(k), o, `${what}: ${k}`);
}

function manager(list: K8sObject[], name = 'regulon-manager') {
  const d = list.find((o) => o.kind === 'Deployment' && o.metadata.name === name);
  assert.ok(d, `a Deployment ${name}`);
  const spec = d['spec'] as {
    replicas: number;
    template: { spec: { containers: Array<{ name: string; env: Array<{ name: string; value?: string }> }> } };
  };
  const c = spec.template.spec.containers.find((x) => x.name === 'manager')!;
  return { d, spec, env: (name: string) => c.env.find((e) => e.name === name)?.value };
}

test('helm lint passes with the default values and with every value changed', () => {
  run(helm, ['lint', '--strict', chart]);
  run(helm, [
    'lint',
    '--strict',
    chart,
    '-f',
    valuesFile({
      namePrefix: 'acme-',
      createNamespace: true,
      watchNamespace: 'shop',
      image: { repository: 'registry.example/regulon-manager', tag: '9.9.9', pullPolicy: 'Always' },
      replicas: 3,
      logLevel: 'debug',
      leaderElection: { enabled: false },
      controllers: { myapp: { enabled: false, concurrency: 4 } },
      resources: { requests: { cpu: '1' } },
      imageCatalog: { postgres: [{ version: '16.8', image: 'registry.example/postgres:16.8' }] },
      crds: { install: true, keep: false },
      webhooks: { enabled: true, namespaceSelector: { matchLabels: { team: 'a' } } },
      monitoring: { enabled: true },
      env: [{ name: 'REGULON_DEBUG', value: '1' }],
    }),
  ]);
});

test('helm template with the default values renders what kubectl kustomize deploy/ does, Helm labels aside', () => {
  const base = kustomize(join(root, 'deploy'));
  // The release's namespace is Helm's (`--create-namespace`) unless createNamespace is set.
  assertSameObjects(
    template(),
    base.filter((o) => o.kind !== 'Namespace'),
    'defaults',
  );
  assertSameObjects(template({ createNamespace: true }), base, 'createNamespace');
});

test('the controllers, leader election, image, replicas and resources values set the manager Deployment', () => {
  const { spec, env } = manager(
    template({
      controllers: { myapp: { enabled: false }, database: { concurrency: 3 } },
      leaderElection: { enabled: false },
      image: { repository: 'registry.example/regulon', tag: '1.2.3' },
      replicas: 1,
      resources: { limits: { memory: '1Gi' } },
      watchNamespace: 'shop',
      logLevel: 'debug',
    }),
  );
  assert.equal(env('REGULON_MYAPP_ENABLED'), 'false');
  assert.equal(env('REGULON_MYAPP_CONCURRENCY'), '1', 'the value not set keeps its default');
  assert.equal(env('REGULON_DATABASE_ENABLED'), 'true');
  assert.equal(env('REGULON_DATABASE_CONCURRENCY'), '3');
  assert.equal(env('REGULON_LEADER_ELECT'), 'false');
  assert.equal(env('REGULON_NAMESPACE'), 'shop');
  assert.equal(env('LOG_LEVEL'), 'debug');
  assert.equal(spec.replicas, 1);
  const c = spec.template.spec.containers[0] as unknown as { image: string; resources: unknown };
  assert.equal(c.image, 'registry.example/regulon:1.2.3');
  // Helm merges a map value into the default: the requests stay.
  assert.deepEqual(c.resources, { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '1Gi' } });
});

test('monitoring: off renders no PodMonitor, ServiceMonitor, PrometheusRule or dashboards; on renders deploy/monitoring', () => {
  const kinds = (list: K8sObject[]) => new Set(list.map((o) => o.kind));
  const off = kinds(template());
  for (const k of ['PodMonitor', 'ServiceMonitor', 'PrometheusRule']) assert.ok(!off.has(k), `no ${k}`);
  const monitoring = kustomize(join(root, 'deploy', 'monitoring'));
  const on = template({ monitoring: { enabled: true } });
  assertSameObjects(
    on.filter((o) => monitoring.some((m) => key(m) === key(o))),
    monitoring,
    'monitoring',
  );
  assert.ok(!kinds(template({ monitoring: { enabled: true, podMonitor: false } })).has('PodMonitor'));
});

test('a name prefix, an image catalog and the admission webhooks render what the same kustomize overlay does', () => {
  const overlay = join(dir, 'overlay');
  mkdirSync(overlay);
  const catalog = { postgres: [{ version: '16.8', image: 'registry.example/postgres:16.8' }] };
  writeFileSync(join(overlay, 'image-catalog.yaml'), stringify(catalog));
  const ns = 'acme-operators';
  writeFileSync(
    join(overlay, 'kustomization.yaml'),
    stringify({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      namespace: ns,
      namePrefix: 'acme-',
      resources: [relative(overlay, join(root, 'deploy'))],
      components: [
        relative(overlay, join(root, 'deploy', 'components', 'image-catalog')),
        relative(overlay, join(root, 'deploy', 'webhook')),
      ],
      configMapGenerator: [
        {
          name: 'regulon-image-catalog',
          files: ['image-catalog.yaml'],
          options: {
            disableNameSuffixHash: true,
            labels: { 'app.kubernetes.io/name': 'regulon-manager', 'app.kubernetes.io/part-of': 'regulon' },
          },
        },
      ],
      // What the chart tells the manager besides: the names the prefix gave its webhook Service and configurations.
      patches: [
        {
          target: { kind: 'Deployment', name: 'regulon-manager' },
          patch: stringify(
            [
              { name: 'REGULON_WEBHOOK_SERVICE_NAME', value: 'acme-regulon-webhook' },
              { name: 'REGULON_WEBHOOK_CONFIGURATION_PREFIX', value: 'acme-regulon' },
            ].map((value) => ({ op: 'add', path: '/spec/template/spec/containers/0/env/-', value })),
          ),
        },
      ],
    }),
  );
  const want = kustomize(overlay);
  // The overlay's catalog is a generated ConfigMap: its data is the file as written, the chart's is toYaml's.
  const cm = (list: K8sObject[]) => list.find((o) => o.metadata.name === 'acme-regulon-image-catalog')!;
  const got = template(
    { namePrefix: 'acme-', createNamespace: true, imageCatalog: catalog, webhooks: { enabled: true } },
    ns,
  );
  assert.deepEqual(
    parse((cm(got)['data'] as Record<string, string>)['image-catalog.yaml']!),
    parse((cm(want)['data'] as Record<string, string>)['image-catalog.yaml']!),
  );
  for (const list of [got, want]) delete cm(list)['data'];
  // The chart always writes the webhooks' namespaceSelector (its value, {} by default: every namespace, the API's default).
  for (const o of got.filter((x) => x.kind === 'ValidatingWebhookConfiguration'))
    for (const w of o['webhooks'] as Array<Record<string, unknown>>) {
      assert.deepEqual(w['namespaceSelector'], {});
      delete w['namespaceSelector'];
    }
  assertSameObjects(got, want, 'overlay');
});

interface Csv {
  metadata: { name: string; annotations: Record<string, string> };
  spec: {
    customresourcedefinitions: {
      owned: Array<{ name: string; version: string; kind: string; description: string }>;
    };
    install: {
      strategy: string;
      spec: {
        deployments: Array<{ name: string; spec: unknown }>;
        clusterPermissions: Array<{ serviceAccountName: string; rules: unknown[] }>;
        permissions: Array<{ serviceAccountName: string; rules: unknown[] }>;
      };
    };
    webhookdefinitions: Array<{
      type: string;
      generateName: string;
      webhookPath: string;
      rules?: unknown;
      conversionCRDs?: string[];
      containerPort: number;
    }>;
  };
}

test('the OLM bundle passes bundle validate (default validators and the operatorframework suite)', () => {
  const out = run(validate, [bundle]);
  assert.match(out, /is valid/);
  assert.match(run(validate, ['--suite', 'operatorframework', '--k8s-version', '1.34', bundle]), /is valid/);
});

test("the bundle's CSV says what deploy/ does: the manager Deployment, the RBAC bound to its ServiceAccount, the CRDs, the webhooks", () => {
  const base = kustomize(join(root, 'deploy'));
  const csv = parse(
    readFileSync(join(bundle, 'manifests', 'regulon.clusterserviceversion.yaml'), 'utf8'),
  ) as Csv;
  assert.equal(csv.metadata.annotations['capabilities'], CAPABILITIES);
  assert.equal(CAPABILITIES, 'Deep Insights');
  const crds = base.filter((o) => o.kind === 'CustomResourceDefinition');
  assert.deepEqual(
    csv.spec.customresourcedefinitions.owned.map((o) => o.name).sort(),
    crds.map((c) => c.metadata.name).sort(),
  );
  for (const o of csv.spec.customresourcedefinitions.owned) assert.ok(o.description.length > 20, o.name);
  // Every owned kind has an example, and each example is of an owned kind.
  const examples = JSON.parse(csv.metadata.annotations['alm-examples']!) as K8sObject[];
  assert.deepEqual(
    [...new Set(examples.map((e) => e.kind))].sort(),
    csv.spec.customresourcedefinitions.owned.map((o) => o.kind).sort(),
  );

  const deployment = manager(base);
  const [installed] = csv.spec.install.spec.deployments;
  const expected = structuredClone(deployment.spec);
  expected.template.spec.containers[0]!.env.push({ name: 'REGULON_WEBHOOK_CERT_DIR', value: OLM_CERT_DIR });
  assert.deepEqual(installed?.spec, expected, 'the Deployment, told where OLM mounts its certificate');

  const bound = (roleKind: string, bindingKind: string) => {
    const names = base
      .filter(
        (o) =>
          o.kind === bindingKind &&
          (o['subjects'] as Array<{ name: string }>).some((s) => s.name === 'regulon-manager'),
      )
      .map((o) => (o['roleRef'] as { name: string }).name);
    return base
      .filter((o) => o.kind === roleKind && names.includes(o.metadata.name))
      .flatMap((o) => o['rules']);
  };
  const sorted = (rules: unknown[] | undefined) =>
    (rules ?? []).map((r) => JSON.stringify(r, Object.keys(r as object).sort())).sort();
  assert.deepEqual(
    sorted(csv.spec.install.spec.clusterPermissions[0]?.rules),
    sorted(bound('ClusterRole', 'ClusterRoleBinding')),
  );
  assert.deepEqual(sorted(csv.spec.install.spec.permissions[0]?.rules), sorted(bound('Role', 'RoleBinding')));

  const admission = objects(
    readFileSync(join(root, 'deploy', 'webhook', 'configurations.yaml'), 'utf8'),
  ).flatMap(
    (o) =>
      o['webhooks'] as Array<{ name: string; rules: unknown; clientConfig: { service: { path: string } } }>,
  );
  const defs = csv.spec.webhookdefinitions;
  assert.deepEqual(
    defs.filter((d) => d.type !== 'ConversionWebhook').map((d) => [d.generateName, d.webhookPath, d.rules]),
    admission.map((w) => [w.name, w.clientConfig.service.path, w.rules]),
  );
  const converted = crds
    .filter((c) => (c['spec'] as { conversion?: { strategy: string } }).conversion?.strategy === 'Webhook')
    .map((c) => c.metadata.name);
  assert.ok(converted.length > 0, 'some CRD converts through the webhook');
  assert.deepEqual(
    defs.filter((d) => d.type === 'ConversionWebhook').flatMap((d) => d.conversionCRDs),
    converted,
  );
  for (const d of defs) assert.equal(d.containerPort, 9443);
});

test("the API server accepts the chart's objects (webhooks and a catalog on) and the CSV's Deployment and RBAC (server-side dry run)", async () => {
  const env = await start();
  try {
    const ns = await env.newNamespace('chart');
    const rendered = run(helm, [
      'template',
      'dry',
      chart,
      '-n',
      ns,
      '-f',
      valuesFile({
        namePrefix: 'dry-',
        imageCatalog: { postgres: [{ version: '16.8', image: 'registry.example/postgres:16.8' }] },
        webhooks: { enabled: true },
      }),
    ]);
    const dryRun = (input: string) =>
      env.kubectl(['apply', '--dry-run=server', '--server-side', '--force-conflicts', '-f', '-'], input);
    let r = await dryRun(rendered);
    assert.equal(r.code, 0, `helm template | kubectl apply --dry-run=server:\n${r.stderr}`);

    const csv = parse(
      readFileSync(join(bundle, 'manifests', 'regulon.clusterserviceversion.yaml'), 'utf8'),
    ) as Csv;
    const { install } = csv.spec;
    assert.equal(install.strategy, 'deployment');
    const docs = [
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'csv-regulon-manager', namespace: ns },
        spec: install.spec.deployments[0]!.spec,
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'csv-regulon-manager' },
        rules: install.spec.clusterPermissions[0]!.rules,
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'csv-regulon-manager', namespace: ns },
        rules: install.spec.permissions[0]!.rules,
      },
    ];
    r = await dryRun(docs.map((d) => `---\n${stringify(d)}`).join(''));
    assert.equal(r.code, 0, `the CSV's install strategy, --dry-run=server:\n${r.stderr}`);
  } finally {
    await env.stop();
  }
});
