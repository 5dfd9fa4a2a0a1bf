// deploy/ against the real control plane and a real Prometheus:
//   1. the kustomize base passes a server-side dry run, applies, and the
//      manager Deployment is what the README promises;
//   2. the manager, run here with nothing but its ServiceAccount's token
//      (generated RBAC), leader election on, reconciles every sample
//      to Ready and exercises every kind of write it declares, with no 403;
//   3. SubjectAccessReviews show what that ServiceAccount may not do;
//   4. an overlay renames everything (kustomize namePrefix and namespace), and
//      a real Prometheus scrapes the manager under the job name that overlay's
//      ServiceMonitor gives it, next to a Go operator that exports the same
//      controller-runtime metrics: the overlay's dashboard finds the manager's
//      job by default and every panel has data, its alert rules load and none
//      is pending or firing on the healthy manager, and RegulonManagerDown is
//      once the manager stops.
// Prometheus and promtool come from ensurePrometheus() (built once, cached).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import type { V1StatefulSet } from '@kubernetes/client-node';
import {
  ENGINE_VERSIONS as CACHE_VERSIONS,
  OFFICIAL_IMAGES as CACHE_IMAGES,
} from '@regulon/cache-controller';
import {
  childNames,
  desiredChildren,
  ENGINE_VERSIONS as DATABASE_VERSIONS,
  OFFICIAL_IMAGES as DATABASE_IMAGES,
  type DatabaseObject,
} from '@regulon/database-controller';
import { Cache } from '@regulon/cache-controller';
import { ImageCatalog } from '@regulon/image-catalog';
import { CONTROLLERS } from '@regulon/manager';
import { ensurePrometheus, start, type TestEnv } from '@regulon/testenv';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { desiredDeployment, desiredStatefulSet } from '../../apps/cache-controller/src/children.ts';
import { parsePrometheusText } from '../../packages/runtime/src/testing/prometheus.ts';
import { freePort } from '../../packages/testenv/src/ports.ts';
import { ALERTS, INSTANCE_ALERTS } from './alerts.ts';
import { checkPanels, type GrafanaDashboard } from './dashboard-queries.ts';
import { ALL_VALUE } from './dashboards.ts';
import { ENGINE_DASHBOARDS } from './engine-dashboards.ts';
import { controllerEnv } from './manifests.ts';
import { MANAGER, NAMESPACE } from './rbac.ts';

const root = join(import.meta.dirname, '..', '..');
const deployDir = join(root, 'deploy');
const SERVICE_ACCOUNT = `system:serviceaccount:${NAMESPACE}:${MANAGER}`;
/** The overlay the monitoring checks run on: every name and the namespace changed, as deploy/README.md invites. */
const OVERLAY_PREFIX = 'acme-';
const OVERLAY_NAMESPACE = 'acme-operators';
/** The `pod` label the local scrape gets, standing in for what the ServiceMonitor adds in a cluster. */
const LOCAL_POD = `${OVERLAY_PREFIX}regulon-manager-7d4f9c8b6-x2kqp`;
/**
 * A Go controller-runtime operator in the same Prometheus, with a `database`
 * controller too: same metric names and labels, from another job. It fails
 * every reconcile, its queue grows and it has no leader, so an alert or panel
 * that picked it up would show. Its job sorts before the manager's.
 */
const OTHER_JOB = `${OVERLAY_PREFIX}database-operator`;

const dir = mkdtempSync(join(tmpdir(), 'regulon-deploy-'));
let env: TestEnv;
let kubectlBin: string;
let ns: string;
let manager: ChildProcess | undefined;
let managerLog = '';
let managerExit: Promise<number | null> | undefined;
let prometheus: ChildProcess | undefined;
let prometheusLog = '';
let promUrl = '';
let otherOperator: Server | undefined;
/** What the overlay renders to, as Prometheus and Grafana would get it (set by the overlay test). */
let overlay: Overlay | undefined;
let metricsPort = 0;
let healthPort = 0;
const leaseName = `regulon-manager-test-${randomBytes(3).toString('hex')}`;

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], input?: string): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    // 'close': once stdout and stderr are read to the end ('exit' can come first).
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

const kubectl = (...args: string[]) => run(kubectlBin, ['--kubeconfig', env.kubeconfigPath, ...args]);
async function ok(...args: string[]): Promise<string> {
  const r = await kubectl(...args);
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}\n${r.stderr}`);
  return r.stdout;
}
async function getJson<T>(...args: string[]): Promise<T | undefined> {
  const r = await kubectl('get', ...args, '-o', 'json');
  if (r.code !== 0) {
    if (/NotFound/.test(r.stderr)) return undefined;
    assert.fail(`kubectl get ${args.join(' ')}: ${r.stderr}`);
  }
  return JSON.parse(r.stdout) as T;
}

/** Polls until `check` returns a value other than undefined/false, or fails with what it last saw. */
async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 120_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      assert.fail(
        `timed out after ${timeoutMs} ms waiting for ${what}; last: ${String(last)}\nmanager log tail:\n${managerLog.slice(-3000)}`,
      );
    await new Promise((r) => setTimeout(r, 500));
  }
}

before(async () => {
  env = await start();
  kubectlBin = env.controlPlane.state.kubectl;
  ns = await env.newNamespace('deploy');
});

after(async () => {
  await stopManager();
  if (prometheus && prometheus.exitCode === null) {
    const exited = new Promise((r) => prometheus!.once('exit', r));
    prometheus.kill('SIGTERM');
    await exited;
  }
  if (otherOperator) await new Promise((r) => otherOperator!.close(r));
  if (env) {
    await kubectl('delete', 'lease', leaseName, '-n', NAMESPACE, '--ignore-not-found');
    if (ns) await kubectl('delete', 'namespace', ns, '--wait=false');
    await env.stop(); // stops the control plane only if this file started it
  }
  rmSync(dir, { recursive: true, force: true });
});

async function stopManager(): Promise<number | null | undefined> {
  if (!manager || !managerExit) return undefined;
  if (manager.exitCode === null && manager.signalCode === null) manager.kill('SIGTERM');
  const timer = setTimeout(() => manager?.kill('SIGKILL'), 40_000);
  const code = await managerExit;
  clearTimeout(timer);
  return code;
}

interface Container {
  name: string;
  image: string;
  env?: Array<{ name: string; value?: string; valueFrom?: unknown }>;
  ports?: Array<{ name: string; containerPort: number }>;
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
}
interface Deployment {
  spec: {
    replicas: number;
    template: {
      spec: {
        serviceAccountName: string;
        securityContext?: Record<string, unknown>;
        containers: Container[];
      };
    };
  };
  status?: { readyReplicas?: number };
}

test('deploy/: a server-side dry run passes, it applies, and the manager Deployment is as specified', async () => {
  // A server dry run can't create the namespace its objects go in; on a fresh cluster it must exist first.
  await ok('apply', '--server-side', '--force-conflicts', '-f', join(deployDir, 'namespace.yaml'));
  const dry = await ok('apply', '--dry-run=server', '-k', deployDir);
  assert.match(dry, /deployment\.apps\/regulon-manager (created|configured|unchanged) \(server dry run\)/);
  assert.match(dry, /clusterrole\.rbac\.authorization\.k8s\.io\/regulon-manager .*\(server dry run\)/);
  // Server-side apply for real: no last-applied annotation to outgrow as the CRDs grow.
  await ok('apply', '--server-side', '--force-conflicts', '-k', deployDir);

  const d = (await getJson<Deployment>('deployment', MANAGER, '-n', NAMESPACE))!;
  assert.equal(d.spec.replicas, 2);
  const pod = d.spec.template.spec;
  assert.equal(pod.serviceAccountName, MANAGER);
  assert.equal(pod.securityContext?.['runAsNonRoot'], true);
  assert.deepEqual(pod.securityContext?.['seccompProfile'], { type: 'RuntimeDefault' });
  const c = pod.containers.find((x) => x.name === 'manager')!;
  assert.deepEqual(c.livenessProbe?.httpGet, { path: '/healthz', port: 'health', scheme: 'HTTP' });
  assert.deepEqual(c.readinessProbe?.httpGet, { path: '/readyz', port: 'health', scheme: 'HTTP' });
  assert.equal(c.ports?.find((p) => p.name === 'health')?.containerPort, 8081);
  assert.equal(c.ports?.find((p) => p.name === 'metrics')?.containerPort, 8080);
  assert.ok(
    c.resources?.requests?.['cpu'] && c.resources.requests['memory'] && c.resources.limits?.['memory'],
  );
  assert.equal(c.securityContext?.['readOnlyRootFilesystem'], true);
  assert.equal(c.securityContext?.['allowPrivilegeEscalation'], false);
  assert.equal(c.securityContext?.['runAsNonRoot'], true);
  assert.deepEqual(c.securityContext?.['capabilities'], { drop: ['ALL'] });
  const envOf = (name: string) => c.env?.find((e) => e.name === name)?.value;
  assert.equal(envOf('REGULON_LEADER_ELECT'), 'true');
  for (const controller of CONTROLLERS)
    for (const e of controllerEnv(controller.name))
      assert.equal(envOf(e.name), e.value, `${e.name} in the Deployment`);
  assert.equal(envOf('REGULON_DATABASE_ENABLED'), 'true');
  // The engines run under the instance agent, copied from the manager's own image, found through its Pod.
  assert.equal(envOf('REGULON_INSTANCE_AGENT_IMAGE'), 'self');
  assert.deepEqual(c.env?.find((e) => e.name === 'POD_NAME')?.valueFrom, {
    fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' },
  });

  // The restricted Pod Security level is enforced on the namespace: Pods being admitted shows the spec meets it.
  await waitFor('both manager Pods admitted and Ready (KWOK runs them)', async () => {
    const now = await getJson<Deployment>('deployment', MANAGER, '-n', NAMESPACE);
    return now?.status?.readyReplicas === 2;
  });
  const pdb = await getJson<{ spec: { maxUnavailable: number } }>('pdb', MANAGER, '-n', NAMESPACE);
  assert.equal(pdb?.spec.maxUnavailable, 1);
});

test('deploy/grafana passes a server dry run; deploy/monitoring builds and its ServiceMonitor selects the metrics Service', async () => {
  const dry = await ok('apply', '--dry-run=server', '-k', join(deployDir, 'grafana'));
  assert.match(dry, /configmap\/regulon-dashboard .*\(server dry run\)/);
  const cm = parse(await ok('kustomize', join(deployDir, 'grafana'))) as {
    metadata: { labels: Record<string, string> };
    data: Record<string, string>;
  };
  assert.equal(cm.metadata.labels['grafana_dashboard'], '1');
  // The manager's dashboard and each engine's, as generated.
  for (const file of ['regulon.json', ...Object.keys(ENGINE_DASHBOARDS)])
    assert.equal(cm.data[file], readFileSync(join(deployDir, 'grafana', file), 'utf8'), file);

  const objs = parseAllDocuments(await ok('kustomize', join(deployDir, 'monitoring'))).map(
    (d) => d.toJS() as { kind: string; spec: Record<string, unknown>; metadata: { namespace?: string } },
  );
  assert.deepEqual(objs.map((o) => o.kind).sort(), [
    'ConfigMap',
    'PodMonitor',
    'PrometheusRule',
    'ServiceMonitor',
  ]);
  // The PodMonitor finds an engine Pod as the manager writes it: by a label it carries and the
  // port its agent publishes on, in whatever namespace the Cache lives.
  const pm = objs.find((o) => o.kind === 'PodMonitor')!.spec as {
    namespaceSelector: { any?: boolean };
    selector: { matchLabels: Record<string, string> };
    podMetricsEndpoints: Array<{ port: string }>;
  };
  assert.equal(pm.namespaceSelector.any, true);
  const cache = Cache.object({
    metadata: { name: 'sessions', namespace: 'shop', uid: 'u', generation: 1 },
    spec: {
      engine: 'redis',
      version: '7.0.15',
      mode: 'replicated',
      replicas: 3,
      memory: '256Mi',
      maxMemoryPercent: 75,
      auth: { enabled: true },
    },
  });
  const memcached = Cache.object({
    metadata: { name: 'pages', namespace: 'shop', uid: 'u2', generation: 1 },
    spec: {
      engine: 'memcached',
      version: '1.6.18',
      replicas: 2,
      memory: '64Mi',
      maxMemoryPercent: 75,
      auth: { enabled: true },
    },
  });
  const templates = [
    desiredStatefulSet(cache, 'regulon.local/redis:7.0', 3, 'regulon.local/manager:1').spec!.template,
    desiredDeployment(memcached, 'regulon.local/memcached:1.6', 'regulon.local/manager:1').spec!.template,
    // A Database's, of each engine whose Pods run under the agent.
    ...(['postgres', 'mariadb'] as const).map((engine) => {
      const db = {
        apiVersion: 'regulon.dev/v1beta1',
        kind: 'Database',
        metadata: { name: 'orders', namespace: 'shop', uid: 'u1', generation: 1 },
        spec: { engine, version: DATABASE_VERSIONS[engine][0], replicas: 3, storage: { size: '1Gi' } },
      } as unknown as DatabaseObject;
      const sts = desiredChildren(
        db,
        undefined,
        `regulon.local/${engine}:1`,
        3,
        'regulon.local/manager:1',
      ).find((c) => c.type.kind === 'StatefulSet')!.object as V1StatefulSet;
      return sts.spec!.template;
    }),
  ];
  for (const template of templates) {
    const who = template.metadata?.labels?.['app.kubernetes.io/name'] ?? '?';
    for (const [k, v] of Object.entries(pm.selector.matchLabels))
      assert.equal(template.metadata?.labels?.[k], v, `${who}: engine Pod label ${k}`);
    assert.ok(
      template.spec!.containers.some((c) => c.ports?.some((p) => p.name === pm.podMetricsEndpoints[0]!.port)),
      `${who}: an engine container names the port ${pm.podMetricsEndpoints[0]!.port}`,
    );
  }
  const sm = objs.find((o) => o.kind === 'ServiceMonitor')!.spec as {
    selector: { matchLabels: Record<string, string> };
    endpoints: Array<{ port: string }>;
  };
  const svc = (await getJson<{
    metadata: { name: string; labels: Record<string, string> };
    spec: { ports: Array<{ name: string }> };
  }>('service', 'regulon-manager-metrics', '-n', NAMESPACE))!;
  for (const [k, v] of Object.entries(sm.selector.matchLabels))
    assert.equal(svc.metadata.labels[k], v, `Service label ${k}`);
  assert.ok(svc.spec.ports.some((p) => p.name === sm.endpoints[0]!.port));
});

interface Rendered {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}
interface ServiceMonitorSpec {
  jobLabel?: string;
  selector: { matchLabels: Record<string, string> };
  namespaceSelector?: { matchNames?: string[]; any?: boolean };
  endpoints: Array<{ port: string }>;
}
interface Overlay {
  /** The `job` label the Prometheus operator gives the selected Service's targets. */
  job: string;
  namespace: string;
  /** The PrometheusRule's spec: a Prometheus rules file. */
  rules: { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
  dashboard: GrafanaDashboard;
}

test("the image-catalog component: its example file is the official images; an overlay's catalog is mounted and named for the manager", async () => {
  const shipped = join(deployDir, 'components', 'image-catalog', 'image-catalog.yaml');
  const official = ImageCatalog.load(shipped);
  for (const [engine, versions, images] of [
    ['postgres', DATABASE_VERSIONS.postgres, DATABASE_IMAGES],
    ['mysql', DATABASE_VERSIONS.mysql, DATABASE_IMAGES],
    ['redis', CACHE_VERSIONS.redis, CACHE_IMAGES],
    ['memcached', CACHE_VERSIONS.memcached, CACHE_IMAGES],
  ] as const) {
    assert.deepEqual(official.versions(engine), [...versions], engine);
    for (const v of versions) assert.equal(official.imageFor(engine, v), images.imageFor(engine, v));
  }
  const overlayDir = join(dir, 'catalog-overlay');
  mkdirSync(overlayDir);
  const mine = 'postgres:\n  - { version: "16.8", image: registry.example/mirror/postgres:16.8 }\n';
  writeFileSync(join(overlayDir, 'image-catalog.yaml'), mine);
  writeFileSync(
    join(overlayDir, 'kustomization.yaml'),
    stringify({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      namespace: 'regulon-system',
      resources: [relative(overlayDir, deployDir)],
      components: [relative(overlayDir, join(deployDir, 'components', 'image-catalog'))],
      configMapGenerator: [{ name: 'regulon-image-catalog', files: ['image-catalog.yaml'] }],
    }),
  );
  const objs = parseAllDocuments(await ok('kustomize', overlayDir)).map((d) => d.toJS() as Rendered);
  const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('regulon-image-catalog-'));
  assert.ok(cm, 'a ConfigMap named with its content hash');
  assert.equal(cm.data?.['image-catalog.yaml'], mine);
  const deployment = objs.find((o) => o.kind === 'Deployment') as unknown as {
    spec: {
      template: {
        spec: {
          volumes: Array<{ name: string; configMap?: { name: string } }>;
          containers: Array<{
            env: Array<{ name: string; value?: string }>;
            volumeMounts: Array<{ name: string; mountPath: string }>;
          }>;
        };
      };
    };
  };
  const pod = deployment.spec.template.spec;
  assert.equal(pod.volumes.find((v) => v.name === 'image-catalog')?.configMap?.name, cm.metadata.name);
  const container = pod.containers[0]!;
  const mount = container.volumeMounts.find((m) => m.name === 'image-catalog')!.mountPath;
  assert.equal(
    container.env.find((e) => e.name === 'REGULON_IMAGE_CATALOG')?.value,
    `${mount}/image-catalog.yaml`,
  );
});

test('an overlay with a namePrefix and a namespace renames the metrics Service, and its ServiceMonitor still selects it', async () => {
  const overlayDir = join(dir, 'overlay');
  mkdirSync(overlayDir);
  writeFileSync(
    join(overlayDir, 'kustomization.yaml'),
    stringify({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      namePrefix: OVERLAY_PREFIX,
      namespace: OVERLAY_NAMESPACE,
      resources: [relative(overlayDir, deployDir), relative(overlayDir, join(deployDir, 'monitoring'))],
    }),
  );
  const objs = parseAllDocuments(await ok('kustomize', overlayDir)).map((d) => d.toJS() as Rendered);
  const only = (kind: string) => {
    const found = objs.filter((o) => o.kind === kind);
    assert.equal(found.length, 1, `one ${kind}`);
    return found[0]!;
  };
  const monitor = only('ServiceMonitor');
  const sm = monitor.spec as unknown as ServiceMonitorSpec;
  // The operator's rules: Services in the namespaceSelector's namespaces (without one, the
  // ServiceMonitor's own) that carry every matchLabels label.
  const nsel = sm.namespaceSelector;
  const inNamespace = (n: string | undefined) =>
    nsel?.any || (nsel?.matchNames?.length ? nsel.matchNames : [monitor.metadata.namespace]).includes(n);
  const selected = objs.filter(
    (o) =>
      o.kind === 'Service' &&
      inNamespace(o.metadata.namespace) &&
      Object.entries(sm.selector.matchLabels).every(([k, v]) => o.metadata.labels?.[k] === v),
  );
  assert.deepEqual(
    selected.map((o) => `${o.metadata.namespace}/${o.metadata.name}`),
    [`${OVERLAY_NAMESPACE}/${OVERLAY_PREFIX}regulon-manager-metrics`],
  );
  const svc = selected[0]!;
  const ports = (svc.spec as { ports: Array<{ name: string }> }).ports;
  assert.ok(
    ports.some((p) => p.name === sm.endpoints[0]!.port),
    'the endpoint port is a port of the Service',
  );

  const dashboard = objs.find((o) => o.kind === 'ConfigMap' && o.data?.['regulon.json']);
  assert.ok(dashboard, 'the dashboard ConfigMap');
  overlay = {
    // The operator's default: the Service's name, or the value of its label named by jobLabel.
    job: sm.jobLabel ? svc.metadata.labels![sm.jobLabel]! : svc.metadata.name,
    namespace: svc.metadata.namespace!,
    rules: only('PrometheusRule').spec as unknown as Overlay['rules'],
    dashboard: JSON.parse(dashboard.data!['regulon.json']!) as GrafanaDashboard,
  };
  assert.notEqual(overlay.job, 'regulon-manager-metrics', 'the job is not the base one');
});

interface Db {
  status?: {
    phase?: string;
    readyReplicas?: number;
    conditions?: Array<{ type: string; status: string; reason: string }>;
  };
}
const phase = async (name: string) => (await getJson<Db>('database', name, '-n', ns))?.status?.phase;

test('the manager with only its ServiceAccount token reconciles every sample to Ready, leader election on, no 403', async () => {
  // Credentials: a token for the ServiceAccount (TokenRequest API), and the cluster's CA from the admin kubeconfig.
  const token = (await ok('create', 'token', MANAGER, '-n', NAMESPACE, '--duration=1h')).trim();
  const admin = parse(readFileSync(env.kubeconfigPath, 'utf8')) as {
    clusters: Array<{ cluster: { server: string; 'certificate-authority-data': string } }>;
  };
  const saKubeconfig = join(dir, 'sa-kubeconfig');
  writeFileSync(
    saKubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: admin.clusters[0]!.cluster }],
      users: [{ name: MANAGER, user: { token } }],
      contexts: [{ name: 'sa', context: { cluster: 'c', user: MANAGER } }],
      'current-context': 'sa',
    }),
    { mode: 0o600 },
  );

  [metricsPort, healthPort] = [await freePort(), await freePort()];
  await startPrometheus(metricsPort);

  const main = join(root, 'apps', 'manager', 'src', 'main.ts');
  const childEnv = { ...process.env };
  delete childEnv['KUBECONFIG'];
  manager = spawn(
    process.execPath,
    [
      main,
      `--kubeconfig=${saKubeconfig}`,
      '--leader-elect=true',
      `--leader-election-namespace=${NAMESPACE}`,
      // A Lease of its own: the run's control plane may be shared with another run of this test.
      `--leader-election-id=${leaseName}`,
      // Only the test namespace: other tests' Databases in the same control plane are theirs to reconcile.
      `--namespace=${ns}`,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      `--health-probe-bind-address=127.0.0.1:${healthPort}`,
    ],
    { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  manager.stdout!.on('data', (d: Buffer) => (managerLog += d.toString()));
  manager.stderr!.on('data', (d: Buffer) => (managerLog += d.toString()));
  managerExit = new Promise((resolve) => manager!.once('exit', (code) => resolve(code)));

  await waitFor('/readyz', async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`)).ok);
  await waitFor('the Lease', async () => {
    const lease = await getJson<{ spec: { holderIdentity?: string } }>('lease', leaseName, '-n', NAMESPACE);
    return lease?.spec.holderIdentity;
  });

  // Prometheus applies new targets only every few seconds: wait for its first scrape, so
  // the reconciles below show as increases (rates, quantiles) rather than as a starting value.
  await waitFor(
    'Prometheus scraping the manager',
    async () => (await query(`up{job="${overlay!.job}"} == 1`)).length > 0,
    30_000,
  );

  // The sample, as shipped; then with replicas > 1, so that every optional child exists. (The dump
  // CronJob is made only for a Database stored before the CRD refused backups with nowhere to go,
  // which this shared control plane's CRD cannot create: database-controller's
  // backup-destination.integration.test.ts makes one on a control plane of its own.)
  const sample = parse(readFileSync(join(deployDir, 'samples', 'database.yaml'), 'utf8')) as DatabaseObject;
  const db = sample.metadata.name!;
  const n = childNames(sample);
  await ok('apply', '-n', ns, '-f', join(deployDir, 'samples', 'database.yaml'));
  await waitFor(`${db} Ready`, async () => (await phase(db)) === 'Ready');
  await ok(
    'patch',
    'database',
    db,
    '-n',
    ns,
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { replicas: 2 } }),
  );
  // KWOK's Pods run no server: the manager asks both instances over SQL (reading its replication
  // Secret and the topology as its ServiceAccount), gets no answer, and says so.
  await waitFor(`${db} observed with two instances, neither reachable`, async () => {
    const got = await getJson<DatabaseObject>('database', db, '-n', ns);
    const reach = got?.status?.conditions?.find((c) => c.type === 'InstancesReachable');
    return (
      got?.status?.observedGeneration === got?.metadata.generation &&
      got?.status?.instances?.length === 2 &&
      reach?.status === 'False' &&
      /cannot reach \S+-0, \S+-1;/.test(reach.message)
    );
  });
  for (const [kind, name] of [
    ['service', n.readOnlyService],
    ['pdb', n.disruptionBudget],
    ['secret', n.credentials],
    ['configmap', n.config],
    ['configmap', n.topology],
    ['secret', n.replicationCredentials],
    ['serviceaccount', n.serviceAccount],
  ] as const)
    assert.ok(await getJson(kind, name, '-n', ns), `${kind}/${name} created`);
  const roles = async (ordinal: number) =>
    (
      await getJson<{ metadata: { labels: Record<string, string> } }>(
        'pod',
        `${n.statefulSet}-${ordinal}`,
        '-n',
        ns,
      )
    )?.metadata.labels['regulon.dev/role'];
  // The single instance's role stays (the kubelet reports it Ready; the manager, which may be the
  // one cut off, changes nothing it cannot see), and the new instance gains none without an answer.
  assert.equal(await roles(0), 'primary', 'the role it had is kept');
  assert.equal(await roles(1), undefined, 'no role without an answer over SQL');

  // A Database naming a missing Secret: Degraded, and a Warning Event (events.k8s.io create).
  const orphan = stringify({
    apiVersion: sample.apiVersion,
    kind: 'Database',
    metadata: { name: 'orphan-db', namespace: ns },
    spec: {
      engine: sample.spec.engine,
      version: sample.spec.version,
      replicas: 1,
      storage: { size: '1Gi' },
      backup: { enabled: false },
      credentials: { secretName: 'does-not-exist' },
    },
  });
  const applied = await run(kubectlBin, ['--kubeconfig', env.kubeconfigPath, 'apply', '-f', '-'], orphan);
  assert.equal(applied.code, 0, applied.stderr);
  await waitFor('orphan-db Degraded with a Warning Event', async () => {
    const events = await getJson<{
      items: Array<{ type: string; reason: string; regarding: { name: string } }>;
    }>('events.v1.events.k8s.io', '-n', ns);
    return events?.items.some(
      (e) =>
        e.type === 'Warning' && e.reason === 'CredentialsSecretMissing' && e.regarding.name === 'orphan-db',
    );
  });
  assert.equal(await phase('orphan-db'), 'Degraded');

  // Scale down, grow storage: deletes the read-only Service and the PDB; patches the PVC.
  const size = /^(\d+)Gi$/.exec(String(sample.spec.storage.size));
  assert.ok(size, `the sample's storage.size (${sample.spec.storage.size}) is in Gi`);
  const grown = `${Number(size[1]) + 1}Gi`;
  await ok(
    'patch',
    'database',
    db,
    '-n',
    ns,
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { replicas: 1, storage: { size: grown } } }),
  );
  await waitFor('read-only Service and PDB deleted', async () => {
    for (const [kind, name] of [
      ['service', n.readOnlyService],
      ['pdb', n.disruptionBudget],
    ] as const)
      if (await getJson(kind, name, '-n', ns)) return false;
    return true;
  });
  await waitFor(`data volume grown to ${grown}`, async () => {
    const pvc = await getJson<{ spec: { resources: { requests: { storage: string } } } }>(
      'pvc',
      `data-${n.statefulSet}-0`,
      '-n',
      ns,
    );
    return pvc?.spec.resources.requests.storage === grown;
  });
  await waitFor(`${db} Ready with one replica`, async () => {
    const got = await getJson<Db>('database', db, '-n', ns);
    return got?.status?.phase === 'Ready' && got.status.readyReplicas === 1;
  });

  // The other samples: Cache, and MyApp (which writes Database and Cache resources itself).
  for (const [kind, file] of [
    ['cache', 'cache.yaml'],
    ['myapp', 'myapp.yaml'],
  ] as const) {
    const obj = parse(readFileSync(join(deployDir, 'samples', file), 'utf8')) as {
      metadata: { name: string };
    };
    await ok('apply', '-n', ns, '-f', join(deployDir, 'samples', file));
    await waitFor(`${kind} ${obj.metadata.name} Ready`, async () => {
      const got = await getJson<{ status?: { phase?: string } }>(kind, obj.metadata.name, '-n', ns);
      return got?.status?.phase === 'Ready';
    });
  }

  // Not one request was refused: every verb used is granted.
  const samples = parsePrometheusText(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());
  const refused = samples.filter(
    (s) => s.name === 'rest_client_requests_total' && /^40[13]$/.test(s.labels['code'] ?? ''),
  );
  assert.deepEqual(
    refused.filter((s) => s.value > 0),
    [],
    `requests refused:\n${managerLog
      .split('\n')
      .filter((l) => /forbidden/i.test(l))
      .slice(0, 5)
      .join('\n')}`,
  );
  assert.ok(!/forbidden/i.test(managerLog), 'no "forbidden" in the manager log');
  const leading = samples.find(
    (s) => s.name === 'leader_election_master_status' && s.labels['name'] === leaseName,
  );
  assert.equal(leading?.value, 1, 'the manager leads');
});

interface AccessCheck {
  verb: string;
  resource: string;
  group?: string;
  subresource?: string;
  namespace?: string;
}

async function allowed(check: AccessCheck): Promise<boolean> {
  const review = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user: SERVICE_ACCOUNT,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${NAMESPACE}`, 'system:authenticated'],
      resourceAttributes: {
        verb: check.verb,
        resource: check.resource,
        group: check.group ?? '',
        ...(check.subresource ? { subresource: check.subresource } : {}),
        ...(check.namespace ? { namespace: check.namespace } : {}),
      },
    },
  };
  const r = await run(
    kubectlBin,
    ['--kubeconfig', env.kubeconfigPath, 'create', '-f', '-', '-o', 'json'],
    JSON.stringify(review),
  );
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { status: { allowed: boolean } }).status.allowed;
}

test('SubjectAccessReviews: the ServiceAccount can do what the controllers need and nothing more', async () => {
  const app = ns;
  const must: AccessCheck[] = [
    { verb: 'list', resource: 'databases', group: 'regulon.dev' },
    // MyApp writes its child Database and Cache resources, and removes one its spec drops.
    { verb: 'create', resource: 'databases', group: 'regulon.dev', namespace: app },
    { verb: 'patch', resource: 'databases', group: 'regulon.dev', namespace: app },
    { verb: 'delete', resource: 'caches', group: 'regulon.dev', namespace: app },
    // Cache deletes its password-less binding Secret when auth is turned on, and a
    // StatefulSet it no longer wants.
    { verb: 'delete', resource: 'secrets', namespace: app },
    { verb: 'delete', resource: 'statefulsets', group: 'apps', namespace: app },
    { verb: 'watch', resource: 'secrets' },
    { verb: 'create', resource: 'secrets', namespace: app },
    { verb: 'patch', resource: 'databases', group: 'regulon.dev', subresource: 'status', namespace: app },
    { verb: 'patch', resource: 'statefulsets', group: 'apps', namespace: app },
    { verb: 'get', resource: 'persistentvolumeclaims', namespace: app },
    // Database replication: the replication password, the topology read fresh, fencing a
    // former primary by deleting its Pod, and removing a carried-out switchover request.
    { verb: 'get', resource: 'secrets', namespace: app },
    { verb: 'get', resource: 'configmaps', namespace: app },
    { verb: 'delete', resource: 'pods', namespace: app },
    { verb: 'patch', resource: 'databases', group: 'regulon.dev', namespace: app },
    // The rolling update of several instances: the StatefulSet's update revision, read fresh.
    { verb: 'get', resource: 'statefulsets', group: 'apps', namespace: app },
    // Backups to an object store: pgBackRest runs in the postgres container, next to the data.
    { verb: 'create', resource: 'pods', subresource: 'exec', namespace: app },
    { verb: 'create', resource: 'databasebackups', group: 'regulon.dev', namespace: app },
    {
      verb: 'patch',
      resource: 'databasebackups',
      group: 'regulon.dev',
      subresource: 'status',
      namespace: app,
    },
    { verb: 'create', resource: 'events', group: 'events.k8s.io', namespace: app },
    { verb: 'update', resource: 'leases', group: 'coordination.k8s.io', namespace: NAMESPACE },
    { verb: 'create', resource: 'leases', group: 'coordination.k8s.io', namespace: NAMESPACE },
    // --sharding: who else is a member, and its own member Lease removed on the way out.
    { verb: 'list', resource: 'leases', group: 'coordination.k8s.io', namespace: NAMESPACE },
    { verb: 'delete', resource: 'leases', group: 'coordination.k8s.io', namespace: NAMESPACE },
    // The instance agents: each owner's primary Lease, and a Role and RoleBinding for its agents,
    // wherever it lives (the admission policy narrows these: the next test).
    { verb: 'create', resource: 'leases', group: 'coordination.k8s.io', namespace: app },
    { verb: 'update', resource: 'leases', group: 'coordination.k8s.io', namespace: app },
    { verb: 'create', resource: 'roles', group: 'rbac.authorization.k8s.io', namespace: app },
    { verb: 'create', resource: 'rolebindings', group: 'rbac.authorization.k8s.io', namespace: app },
    { verb: 'get', resource: 'pods', namespace: app },
  ];
  const mustNot: AccessCheck[] = [
    // The cluster itself.
    { verb: 'delete', resource: 'namespaces' },
    { verb: 'create', resource: 'namespaces' },
    { verb: 'get', resource: 'nodes' },
    { verb: 'create', resource: 'customresourcedefinitions', group: 'apiextensions.k8s.io' },
    { verb: 'update', resource: 'customresourcedefinitions', group: 'apiextensions.k8s.io' },
    // No way to more privileges.
    { verb: 'escalate', resource: 'clusterroles', group: 'rbac.authorization.k8s.io' },
    { verb: 'bind', resource: 'clusterroles', group: 'rbac.authorization.k8s.io' },
    { verb: 'create', resource: 'clusterrolebindings', group: 'rbac.authorization.k8s.io' },
    { verb: 'create', resource: 'clusterroles', group: 'rbac.authorization.k8s.io' },
    { verb: 'impersonate', resource: 'users' },
    { verb: 'impersonate', resource: 'serviceaccounts', namespace: app },
    { verb: 'create', resource: 'serviceaccounts', subresource: 'token', namespace: app },
    { verb: 'create', resource: 'pods', namespace: app },
    // Secrets: created once, never rewritten or deleted (read one by one only for the
    // replication password the manager connects to database instances with).
    { verb: 'update', resource: 'secrets', namespace: app },
    { verb: 'patch', resource: 'secrets', namespace: app },
    { verb: 'deletecollection', resource: 'secrets', namespace: app },
    // Its own kind: the spec is the user's.
    { verb: 'update', resource: 'databases', group: 'regulon.dev', namespace: app },
    { verb: 'update', resource: 'databasebackups', group: 'regulon.dev', namespace: app },
    { verb: 'delete', resource: 'databasebackups', group: 'regulon.dev', namespace: app },
    { verb: 'update', resource: 'caches', group: 'regulon.dev', namespace: app },
    { verb: 'update', resource: 'myapps', group: 'regulon.dev', namespace: app },
    { verb: 'create', resource: 'myapps', group: 'regulon.dev', namespace: app },
    // Children it never deletes or replaces.
    { verb: 'update', resource: 'statefulsets', group: 'apps', namespace: app },
    { verb: 'delete', resource: 'persistentvolumeclaims', namespace: app },
    { verb: 'create', resource: 'jobs', group: 'batch', namespace: app },
    // Leases: deleted in its own namespace only, where --sharding removes its member Leases
    // (which ones it writes elsewhere, the admission policy says).
    { verb: 'delete', resource: 'leases', group: 'coordination.k8s.io', namespace: app },
    { verb: 'delete', resource: 'leases', group: 'coordination.k8s.io', namespace: 'kube-system' },
    // Core/v1 Events are not used (events.k8s.io/v1 only).
    { verb: 'create', resource: 'events', namespace: app },
  ];
  for (const c of must) assert.equal(await allowed(c), true, `may ${JSON.stringify(c)}`);
  const granted: AccessCheck[] = [];
  for (const c of mustNot) if (await allowed(c)) granted.push(c);
  assert.deepEqual(granted, [], 'none of these is allowed');
});

test("the admission policy holds the manager to its instance agents' Leases, Roles and RoleBindings; anyone else's requests pass", async () => {
  const app = ns;
  // The Role and RoleBinding the Database controller writes for a Database's agents, as it writes them.
  const db = {
    apiVersion: 'regulon.dev/v1beta1',
    kind: 'Database',
    metadata: { name: 'orders', namespace: app, uid: 'u1' },
    spec: { engine: 'postgres', version: '16.6', replicas: 3, storage: { size: '1Gi' } },
  } as unknown as DatabaseObject;
  const agentObjects = desiredChildren(db, undefined, 'postgres:16.6', 3, 'regulon-manager:0.1.0')
    .filter((c) => c.type.kind === 'Role' || c.type.kind === 'RoleBinding')
    .map((c) => ({ ...c.object, metadata: { ...c.object!.metadata, namespace: app } }));
  assert.equal(agentObjects.length, 2);
  const lease = (namespace: string, name: string) => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name, namespace },
    spec: {},
  });
  // As the manager (or, without `as`, the test's admin). What must be refused is tried as a server-side
  // dry run (admission runs, nothing is kept); what must pass is created, since a RoleBinding needs its Role.
  const create = async (obj: unknown, as?: string, dryRun = true) => {
    const r = await run(
      kubectlBin,
      [
        '--kubeconfig',
        env.kubeconfigPath,
        ...(as ? ['--as', as] : []),
        'create',
        ...(dryRun ? ['--dry-run=server'] : []),
        '-f',
        '-',
      ],
      JSON.stringify(obj),
    );
    return r.code === 0 ? 'admitted' : r.stderr;
  };
  const refusedBy = /denied request: (.+)/;
  // The policy takes effect once the API server has read it: the first refusal says so.
  await waitFor('the policy refuses a Lease in kube-system to the manager', async () =>
    refusedBy.test(await create(lease('kube-system', 'kube-scheduler'), SERVICE_ACCOUNT)),
  );
  for (const obj of [
    lease(app, 'orders-primary'),
    lease(NAMESPACE, `${MANAGER}-policy-test`),
    ...agentObjects,
  ])
    assert.equal(await create(obj, SERVICE_ACCOUNT, false), 'admitted', JSON.stringify(obj));
  const refused = [
    lease('kube-node-lease', 'orders-primary'),
    lease(app, 'someone-elses'),
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'orders-instance-agent', namespace: app },
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'reader', namespace: app },
      rules: [{ apiGroups: [''], resources: ['pods'], resourceNames: ['orders-0'], verbs: ['get'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'orders-instance-agent', namespace: app },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'orders-instance-agent' },
      subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: 'kube-system' }],
    },
  ];
  for (const obj of refused) assert.match(await create(obj, SERVICE_ACCOUNT), refusedBy, JSON.stringify(obj));
  // Not the manager: the policy does not look (RBAC decides, and the test's admin may).
  assert.equal(await create(lease('kube-system', 'someone-elses')), 'admitted');
});

/**
 * Scrapes the manager as the overlay's ServiceMonitor would have the Prometheus
 * operator scrape it (its job label, and the target labels the operator adds),
 * and the other operator; loads the overlay's alert rules.
 */
async function startPrometheus(target: number): Promise<void> {
  assert.ok(overlay, 'the overlay test rendered the overlay');
  const { prometheus: prometheusBin } = await ensurePrometheus();
  writeFileSync(join(dir, 'rules.yaml'), stringify(overlay.rules));
  writeFileSync(
    join(dir, 'prometheus.yml'),
    stringify({
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: [join(dir, 'rules.yaml')],
      scrape_configs: [
        {
          job_name: overlay.job,
          static_configs: [
            {
              targets: [`127.0.0.1:${target}`],
              labels: {
                namespace: overlay.namespace,
                service: overlay.job,
                endpoint: 'metrics',
                pod: LOCAL_POD,
              },
            },
          ],
        },
        {
          job_name: OTHER_JOB,
          static_configs: [
            { targets: [`127.0.0.1:${await startOtherOperator()}`], labels: { namespace: 'databases' } },
          ],
        },
      ],
    }),
  );
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  prometheus = spawn(
    prometheusBin,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  prometheus.stdout!.on('data', (d: Buffer) => (prometheusLog += d.toString()));
  prometheus.stderr!.on('data', (d: Buffer) => (prometheusLog += d.toString()));
  await waitFor(
    `Prometheus ready (${prometheusLog.slice(-500)})`,
    async () => {
      if (prometheus!.exitCode !== null) assert.fail(`prometheus exited: ${prometheusLog}`);
      return (await fetch(`${promUrl}/-/ready`)).ok;
    },
    30_000,
  );
}

/** Serves OTHER_JOB's metrics; its counters and queue grow with every scrape. Returns the port. */
async function startOtherOperator(): Promise<number> {
  let scrapes = 0;
  otherOperator = createServer((_req, res) => {
    scrapes++;
    const c = 'controller="database"';
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
    res.end(
      [
        'go_info{version="go1.25.4"} 1',
        `controller_runtime_max_concurrent_reconciles{${c}} 1`,
        `controller_runtime_active_workers{${c}} 1`,
        `controller_runtime_reconcile_total{${c},result="success"} 0`,
        `controller_runtime_reconcile_total{${c},result="error"} ${10 * scrapes}`,
        `controller_runtime_reconcile_time_seconds_bucket{${c},le="60"} 0`,
        `controller_runtime_reconcile_time_seconds_bucket{${c},le="+Inf"} ${10 * scrapes}`,
        `controller_runtime_reconcile_time_seconds_sum{${c}} ${900 * scrapes}`,
        `controller_runtime_reconcile_time_seconds_count{${c}} ${10 * scrapes}`,
        `workqueue_depth{${c},name="database"} ${scrapes}`,
        'leader_election_master_status{name="database-operator"} 0',
        '',
      ].join('\n'),
    );
  });
  await new Promise<void>((resolve) => otherOperator!.listen(0, '127.0.0.1', resolve));
  return (otherOperator.address() as AddressInfo).port;
}

interface Series {
  metric: Record<string, string>;
  value: [number, string];
}
async function query(expr: string): Promise<Series[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as {
    status: string;
    error?: string;
    data?: { resultType: string; result: Series[] };
  };
  assert.equal(body.status, 'success', `${expr}: ${body.error}`);
  return body.data!.result;
}

test("Prometheus: the overlay's dashboard offers the manager's job alone, by default, and every panel query has data", async () => {
  assert.ok(promUrl && overlay, 'Prometheus was started by an earlier test');
  const targets = (await (await fetch(`${promUrl}/api/v1/targets`)).json()) as {
    data: { activeTargets: Array<{ labels: Record<string, string>; health: string; lastError: string }> };
  };
  for (const t of targets.data.activeTargets)
    assert.equal(t.health, 'up', `${t.labels['job']}: ${t.lastError}`);

  const { options, values, queries, empty, notFinite } = await checkPanels(promUrl, overlay.dashboard);
  assert.deepEqual(
    options['job'],
    [overlay.job],
    'the job offered is the manager’s, not the other operator’s',
  );
  assert.deepEqual(options['instance'], [`127.0.0.1:${metricsPort}`]);
  assert.deepEqual(options['controller'], CONTROLLERS.map((c) => c.name).sort());
  assert.equal(values['instance'], ALL_VALUE);
  assert.ok(queries >= 25, `${queries} panel queries`);
  assert.deepEqual(empty, [], 'every panel query returns series');
  assert.deepEqual(notFinite, [], 'every panel query returns a number');
});

interface ActiveAlert {
  labels: Record<string, string>;
  state: string;
}

/**
 * The alerts pending or firing once every rule has been evaluated again after
 * this call, and evaluated without error.
 */
async function alertsAfterNextEvaluation(): Promise<ActiveAlert[]> {
  const since = Date.now();
  await waitFor(
    'every rule evaluated again',
    async () => {
      const res = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as {
        data: {
          groups: Array<{
            lastEvaluation: string;
            rules: Array<{ name: string; health: string; lastError?: string }>;
          }>;
        };
      };
      const rules = res.data.groups.flatMap((g) => g.rules);
      assert.equal(rules.length, ALERTS.length + INSTANCE_ALERTS.length, 'every rule loaded');
      for (const r of rules) assert.notEqual(r.health, 'err', `${r.name}: ${r.lastError}`);
      return res.data.groups.every((g) => Date.parse(g.lastEvaluation) > since);
    },
    30_000,
  );
  const res = (await (await fetch(`${promUrl}/api/v1/alerts`)).json()) as { data: { alerts: ActiveAlert[] } };
  return res.data.alerts;
}

test('alerts: none is pending or firing on the healthy manager; once it stops, RegulonManagerDown is, and no other', async () => {
  assert.ok(promUrl && overlay, 'Prometheus was started by an earlier test');
  await waitFor('the work queue drained', async () => {
    const depth = await query(`sum(workqueue_depth{job="${overlay!.job}"})`);
    return depth[0]?.value[1] === '0';
  });
  const rules = overlay.rules.groups.flatMap((g) => g.rules);
  for (const r of rules)
    assert.deepEqual(await query(r.expr), [], `${r.alert} is not true on a healthy manager`);
  const show = (alerts: ActiveAlert[]) => alerts.map((a) => `${a.labels['alertname']} ${a.state}`).sort();
  assert.deepEqual(show(await alertsAfterNextEvaluation()), [], 'no alert pending or firing');

  const code = await stopManager();
  assert.equal(code, 0, `graceful stop exits 0\n${managerLog.slice(-2000)}`);
  // Pending: it fires after its `for` (5 min), which alerts.test.ts checks with promtool.
  await waitFor(
    'RegulonManagerDown pending',
    async () => show(await alertsAfterNextEvaluation()).includes('RegulonManagerDown pending'),
    30_000,
  );
  assert.deepEqual(show(await alertsAfterNextEvaluation()), ['RegulonManagerDown pending']);
});
