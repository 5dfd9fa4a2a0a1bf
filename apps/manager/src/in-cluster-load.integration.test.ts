// The manager in the cluster under observation and load (deploy/ applied as
// in in-cluster.integration.test.ts, through testing/installation.ts):
// - a real Prometheus on this machine finds both replicas with Kubernetes
//   service discovery, selecting them the way deploy/monitoring's
//   ServiceMonitor does (its Service labels and port name, the job named after
//   the Service), with a ServiceAccount token that may only list and watch
//   what discovery needs; every panel of deploy/grafana's dashboard has data;
// - N Databases (REGULON_IN_CLUSTER_DATABASES, default 100; the report's
//   figure is 1,000) on fake nodes: the memory limit of deploy/ holds (no OOM
//   kill, no restart), and the peak memory of each replica's container, read
//   from its cgroup on this host, is reported next to the limit.
//
//   REGULON_IN_CLUSTER_DATABASES=1000 npx regulon-testenv exec -- npx node --test --test-timeout=1800000 apps/manager/src/in-cluster-load.integration.test.ts
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { eventually, runPrometheus, start, type RunningPrometheus, type TestEnv } from '@regulon/testenv';
import { parse, stringify } from 'yaml';
import { checkPanels, query, type GrafanaDashboard } from '../../../tools/scripts/dashboard-queries.ts';
import {
  Installation,
  isCurrent,
  isReady,
  objectPath,
  root,
  say,
  type Converged,
} from './testing/installation.ts';
import { fakeNodeForNamespace, type FakeNode } from './testing/fake-node.ts';
import { containerMemory, type MemoryReading } from './testing/memory.ts';

const DATABASES = Number(process.env['REGULON_IN_CLUSTER_DATABASES'] ?? 100);
assert.ok(
  Number.isInteger(DATABASES) && DATABASES > 0,
  `REGULON_IN_CLUSTER_DATABASES must be a positive integer, not ${process.env['REGULON_IN_CLUSTER_DATABASES']}`,
);
const SCRAPE_INTERVAL = '2s';

let env: TestEnv;
let inst: Installation;
const dir = mkdtempSync(join(tmpdir(), 'regulon-in-cluster-load-'));
let prometheus: RunningPrometheus | undefined;
let promUrl = '';
let node: FakeNode | undefined;

interface ServiceMonitor {
  spec: {
    selector: { matchLabels: Record<string, string> };
    endpoints: Array<{ port: string; path?: string }>;
  };
}

const metricsService = () => `${inst.prefix}regulon-manager-metrics`;

before(async () => {
  env = await start({ realNodes: 1 });
  inst = new Installation(env, { name: 'load' });
  await inst.apply();
  await startPrometheus();
});

after(async () => {
  await prometheus?.stop();
  if (inst) await inst.remove();
  await node?.remove();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Prometheus with the scrape config the Prometheus operator generates for
 * deploy/monitoring/servicemonitor.yaml (role endpointslice; keep the Service
 * labels the monitor selects and its port name; namespace, service, pod and
 * container labels; the job named after the Service). Its API credentials: a
 * token of a ServiceAccount bound to a Role that may get, list and watch
 * Services, EndpointSlices and Pods in the manager's namespace, nothing else.
 */
async function startPrometheus(): Promise<void> {
  const monitor = parse(
    readFileSync(join(root, 'deploy', 'monitoring', 'servicemonitor.yaml'), 'utf8'),
  ) as ServiceMonitor;
  const endpoint = monitor.spec.endpoints[0]!;
  const ns = inst.namespace;
  await inst.kubectl.ok('create', 'serviceaccount', '-n', ns, 'prometheus');
  await inst.kubectl.ok(
    'create',
    'role',
    '-n',
    ns,
    'prometheus-discovery',
    '--verb=get,list,watch',
    '--resource=services,pods,endpointslices.discovery.k8s.io',
  );
  await inst.kubectl.ok(
    'create',
    'rolebinding',
    '-n',
    ns,
    'prometheus-discovery',
    '--role=prometheus-discovery',
    `--serviceaccount=${ns}:prometheus`,
  );
  const token = (await inst.kubectl.ok('create', 'token', '-n', ns, 'prometheus', '--duration=2h')).trim();
  const admin = parse(readFileSync(env.kubeconfigPath, 'utf8')) as {
    clusters: Array<{ cluster: { server: string; 'certificate-authority-data': string } }>;
  };
  const kubeconfig = join(dir, 'prometheus-kubeconfig');
  writeFileSync(
    kubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: admin.clusters[0]!.cluster }],
      users: [{ name: 'prometheus', user: { token } }],
      contexts: [{ name: 'p', context: { cluster: 'c', user: 'prometheus' } }],
      'current-context': 'p',
    }),
    { mode: 0o600 },
  );
  const label = (name: string) => name.replace(/[^a-zA-Z0-9_]/g, '_');
  const selected = Object.entries(monitor.spec.selector.matchLabels);
  prometheus = await runPrometheus({
    global: {
      scrape_interval: SCRAPE_INTERVAL,
      scrape_timeout: '1s',
      evaluation_interval: SCRAPE_INTERVAL,
    },
    scrape_configs: [
      {
        // The operator's name for it; the job label is replaced by the Service's name below.
        job_name: `serviceMonitor/${ns}/regulon-manager/0`,
        metrics_path: endpoint.path ?? '/metrics',
        kubernetes_sd_configs: [
          { role: 'endpointslice', kubeconfig_file: kubeconfig, namespaces: { names: [ns] } },
        ],
        relabel_configs: [
          {
            action: 'keep',
            source_labels: selected.flatMap(([k]) => [
              `__meta_kubernetes_service_label_${label(k)}`,
              `__meta_kubernetes_service_labelpresent_${label(k)}`,
            ]),
            regex: selected.map(([, v]) => `${v};true`).join(';'),
          },
          {
            action: 'keep',
            source_labels: ['__meta_kubernetes_endpointslice_port_name'],
            regex: endpoint.port,
          },
          { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
          { source_labels: ['__meta_kubernetes_service_name'], target_label: 'service' },
          { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
          { source_labels: ['__meta_kubernetes_pod_container_name'], target_label: 'container' },
          { source_labels: ['__meta_kubernetes_service_name'], target_label: 'job' },
          { target_label: 'endpoint', replacement: endpoint.port },
        ],
      },
    ],
  });
  promUrl = prometheus.url;
}

test('a real Prometheus finds both replicas by Kubernetes service discovery, as the ServiceMonitor selects them, and every dashboard panel has data', async () => {
  const { leader, standby } = await inst.twoReadyOneLeader();
  const pods = [leader, standby].map((p) => p.metadata.name).sort();
  const up = await eventually(
    'both replicas scraped (up == 1)',
    async () => {
      const r = await query(promUrl, `up{job="${metricsService()}"} == 1`);
      return r.length === 2 ? r : false;
    },
    120_000,
    500,
  );
  assert.deepEqual(up.map((s) => s.metric['pod']).sort(), pods, 'one target per replica, by Pod');
  for (const s of up) {
    assert.equal(s.metric['namespace'], inst.namespace);
    assert.equal(s.metric['service'], metricsService());
  }
  // Something to show, for every controller. A histogram's series appear
  // with its first observation, and a rate needs an increase after that: so
  // the samples twice, the second time once Prometheus has seen the first.
  for (const round of ['', '-again']) {
    for (const [kind, file] of SAMPLE_FILES) await applySample(kind, file, round);
    const t = Date.now();
    await eventually(
      'two scrapes of both replicas since',
      async () => {
        const window = Math.max(1, Math.floor((Date.now() - t) / 1000));
        const r = await query(promUrl, `count_over_time(up{job="${metricsService()}"}[${window}s]) >= 2`);
        return r.length === 2;
      },
      60_000,
      500,
    );
  }

  const dashboard = JSON.parse(
    readFileSync(join(root, 'deploy', 'grafana', 'regulon.json'), 'utf8'),
  ) as GrafanaDashboard;
  const check = await checkPanels(promUrl, dashboard, '5m');
  assert.deepEqual(check.options['job'], [metricsService()], 'the job offered is the Service’s name');
  assert.deepEqual(
    check.options['instance'],
    [leader, standby].map((p) => `${p.status.podIP}:8080`).sort(),
    'both replicas offered',
  );
  assert.ok(check.queries >= 25, `${check.queries} panel queries`);
  assert.deepEqual(check.empty, [], 'every panel query returns series');
  assert.deepEqual(check.notFinite, [], 'every panel query returns a number');
  say(
    `Prometheus (kubernetes_sd, role endpointslice): targets ${up.map((s) => s.metric['pod']).join(', ')}; ${check.queries} panel queries, all with data`,
  );
});

test(`${DATABASES} Databases on fake nodes: the memory limit holds, no OOM kill; peak memory reported against the limit`, async () => {
  const { leader, standby } = await inst.twoReadyOneLeader();
  const replicas = [leader, standby];
  const deployment = await inst.kubectl.json<{
    spec: {
      template: {
        spec: {
          containers: Array<{
            resources: { limits: { memory: string } };
            livenessProbe: { timeoutSeconds: number };
          }>;
        };
      };
    };
  }>('get', 'deployment', '-n', inst.namespace, inst.deployment);
  const container = deployment.spec.template.spec.containers[0]!;

  const peaks = new Map<string, MemoryReading>();
  const sample = () => {
    for (const p of replicas) {
      const r = containerMemory(p);
      const prev = peaks.get(p.metadata.name);
      peaks.set(p.metadata.name, {
        ...r,
        workingSetBytes: Math.max(r.workingSetBytes, prev?.workingSetBytes ?? 0),
      });
    }
  };
  sample();
  for (const r of peaks.values())
    assert.equal(r.limitBytes, quantity(container.resources.limits.memory), 'the kernel enforces the limit');
  const sampler = setInterval(sample, 1000);

  // Room for every Database's Pod (the shared fake nodes hold 330 in all).
  node = await fakeNodeForNamespace(inst, inst.workload, DATABASES + 20);
  const t0 = Date.now();
  const list = {
    apiVersion: 'v1',
    kind: 'List',
    items: Array.from({ length: DATABASES }, (_, i) => ({
      apiVersion: 'regulon.dev/v1beta1',
      kind: 'Database',
      metadata: { name: `load-${i}`, namespace: inst.workload },
      spec: {
        engine: 'postgres',
        version: '16.8',
        replicas: 1,
        storage: { size: '1Gi' },
        backup: { enabled: false },
      },
    })),
  };
  const created = await inst.kubectl.runWithInput(JSON.stringify(list), 'create', '-f', '-', '-o', 'name');
  assert.equal(created.code, 0, created.stderr);
  let readyCount = 0;
  try {
    await eventually(
      `${DATABASES} Databases Ready`,
      async () => {
        const dbs = await inst.get<{ items: Converged[] }>(objectPath(inst.workload, 'databases'));
        readyCount = dbs.items.filter(
          (d) => d.metadata.name.startsWith('load-') && isReady(d) && isCurrent(d),
        ).length;
        return readyCount === DATABASES;
      },
      // About 0.15-0.2 s per Database on 2 cores (tools/bench), with room for a loaded machine.
      300_000 + DATABASES * 600,
      2000,
    );
  } finally {
    clearInterval(sampler);
  }
  sample();
  const readyMs = Date.now() - t0;

  for (const p of await inst.allPods()) {
    const cs = p.status.containerStatuses![0]!;
    assert.equal(cs.restartCount, 0, `${p.metadata.name} never restarted`);
    assert.notEqual(cs.lastState?.terminated?.reason, 'OOMKilled', `${p.metadata.name} not OOM-killed`);
  }
  assert.deepEqual(
    (await inst.pods()).map((p) => p.metadata.uid).sort(),
    replicas.map((p) => p.metadata.uid).sort(),
    'the same two Pods throughout',
  );
  for (const [pod, r] of peaks) assert.ok(r.maxUsageBytes < r.limitBytes, `${pod} below its limit`);

  // The liveness probe's timeout against the worst event-loop lag under this load.
  const lag = await query(
    promUrl,
    `max_over_time(nodejs_eventloop_lag_max_seconds{job="${metricsService()}"}[${Math.ceil(readyMs / 1000) + 10}s])`,
  );
  const maxLag = Math.max(...lag.map((s) => Number(s.value[1])));
  assert.ok(
    lag.length === 2 && Number.isFinite(maxLag),
    `event-loop lag of both replicas: ${JSON.stringify(lag)}`,
  );
  assert.ok(
    maxLag < container.livenessProbe.timeoutSeconds,
    `worst event-loop lag ${maxLag} s stays under the liveness probe's ${container.livenessProbe.timeoutSeconds} s`,
  );

  const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  for (const p of replicas) {
    const r = peaks.get(p.metadata.name)!;
    say(
      `${DATABASES} Databases Ready in ${(readyMs / 1000).toFixed(0)} s; ${p === leader ? 'leader ' : 'standby'} ${p.metadata.name}: ` +
        `peak working set ${mib(r.workingSetBytes)} (sampled each second), cgroup max usage ${mib(r.maxUsageBytes)} (page cache included), limit ${mib(r.limitBytes)}`,
    );
  }
  say(
    `worst event-loop lag (nodejs_eventloop_lag_max_seconds) ${maxLag.toFixed(3)} s; liveness timeout ${container.livenessProbe.timeoutSeconds} s`,
  );
});

const SAMPLE_FILES = [
  ['databases', 'database.yaml'],
  ['caches', 'cache.yaml'],
  ['myapps', 'myapp.yaml'],
] as const;

/** Applies a sample of deploy/samples under its name plus `suffix`, and waits for it to be Ready. */
async function applySample(resource: string, file: string, suffix: string): Promise<void> {
  const obj = parse(readFileSync(join(root, 'deploy', 'samples', file), 'utf8')) as {
    metadata: { name: string; namespace?: string };
  };
  obj.metadata.name += suffix;
  obj.metadata.namespace = inst.workload;
  const r = await inst.kubectl.runWithInput(JSON.stringify(obj), 'apply', '-f', '-');
  assert.equal(r.code, 0, r.stderr);
  await eventually(
    `${resource}/${obj.metadata.name} Ready`,
    async () => isReady(await inst.get<Converged>(objectPath(inst.workload, resource, obj.metadata.name))),
    180_000,
    500,
  );
}

/** A memory quantity (Mi, Gi, or bytes) in bytes. */
function quantity(q: string): number {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(q);
  assert.ok(m, `memory quantity ${q}`);
  return Number(m[1]) * { '': 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 }[m[2] ?? '']!;
}
