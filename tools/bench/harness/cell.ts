import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubeClient, Kinds } from '@regulon/client';
import { SharedInformerFactory } from '@regulon/cache';
import { Database, type DatabaseObject } from '@regulon/database-controller';
import { ControlPlane, eventually, freePorts } from '@regulon/testenv';
import {
  clientRequests,
  clientWriteTime,
  countRequests,
  meanMs,
  serverWriteTimes,
  subtract,
  subtractTimed,
  sumOf,
  totalOf,
  type RequestCounts,
} from './api-requests.ts';
import { processStats } from './process-stats.ts';
import { parsePrometheusText, type Sample } from './prom-text.ts';
import { startFloor, startManager, type Limits, type Subject, type SubjectName } from './subjects.ts';

const exec = promisify(execFile);
/**
 * Databases per namespace, by default. Many thousands in one namespace would
 * measure the controller-manager instead: its StatefulSet controller scans the
 * namespace's Pods and revisions on every sync, which grows with the square of N.
 */
export const DEFAULT_DATABASES_PER_NAMESPACE = 1000;
const CONTROLLER = 'database';
const RECONCILE_SECONDS = 'controller_runtime_reconcile_time_seconds_sum';
const CLUSTER_IP_SECONDS = 'kube_apiserver_clusterip_allocator_allocation_duration_seconds_sum';
/** Creates in flight at once: enough to keep the API server busy, as `kubectl apply` of many files would. */
const CREATE_CONCURRENCY = 32;
/** The floor's writers: as many as keep the API server saturated; it has no queue to protect. */
const FLOOR_WORKERS = 64;
/** An event-loop delay worth a line in the log, with when it happened. */
const STALL_REPORT_MS = 250;
/** A cell fails when no Database has become Ready for this long. */
const STALL_MS = 5 * 60_000;

export interface CellConfig {
  subject: SubjectName;
  limits: Limits;
  n: number;
  concurrency: number;
  idleMs: number;
  /** Databases per namespace (default DEFAULT_DATABASES_PER_NAMESPACE). */
  perNamespace?: number;
  /** Seconds of API server CPU profile to take once the creates are done (0: none). */
  apiServerProfileS?: number;
  root: string;
  workDir: string;
  referenceBinary: string;
  log: (line: string) => void;
}

export interface CellResult {
  subject: SubjectName;
  limits: string;
  n: number;
  /** Which of the repeated runs of this (subject, limits, N) this is, from 1; absent in older results. */
  run?: number;
  timeToAllReadyS: number;
  latencyP50S: number;
  latencyP99S: number;
  reconcilesPerS: number | null;
  /** Attributed from apiserver_request_total, over start → all Ready. */
  requests: RequestCounts & { readsPerDatabase: number; writesPerDatabase: number };
  /** The subject's own rest_client_requests_total over the same span (null for the floor). */
  clientRequests: RequestCounts | null;
  /**
   * Mean time per write over start → all Ready, as the API server and as the
   * subject timed it, and the server's by request (`APPLY services`, ...).
   */
  writeTimeMs: { server: number; client: number | null; serverByRequest: Record<string, number> };
  /**
   * Seconds the API server spent allocating ClusterIPs over start → all Ready.
   * It allocates one at a time (a lock held across the IPAddress create), so
   * at thousands of Databases this sum is most of the time to all Ready.
   */
  clusterIpAllocationS: number;
  /** Time in reconciles over start → all Ready ÷ (workers × that time): how busy the workers were. */
  workerBusy: number | null;
  /** For a Node subject, the event loop's delay (p99 of each 1 s sample): mean and worst sample. */
  eventLoopDelayMs: { meanP99: number; maxP99: number } | null;
  /** CPU seconds of each control-plane process over start → all Ready (KWOK processes summed). */
  controlPlaneCpuSeconds: Record<string, number>;
  cpuSeconds: number;
  peakRssMiB: number;
  peakHeapMiB: number | null;
  /** Writes from start to the end of the idle period, counted by the API server and by the subject. */
  writesCheck: { server: number; client: number } | null;
  idle: {
    seconds: number;
    writes: number;
    clientWrites: number | null;
    detail: Record<string, number>;
  } | null;
  restart: {
    cacheSyncedS: number;
    reverifiedS: number;
    reconciles: number;
    writes: number;
    reads: number;
    detail: Record<string, number>;
  } | null;
}

function databaseFor(name: string, namespace: string): DatabaseObject {
  return {
    apiVersion: Database.apiVersion,
    kind: Database.kind,
    metadata: { name, namespace },
    // The work is the controller's, not KWOK's: one replica, no backup Jobs.
    spec: {
      engine: 'postgres',
      version: '16.6',
      replicas: 1,
      storage: { size: '1Gi' },
      backup: { enabled: false },
    },
  } as DatabaseObject;
}

const isReady = (db: DatabaseObject) =>
  (db.status?.observedGeneration ?? -1) === db.metadata.generation &&
  db.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function apiserverSamples(client: KubeClient): Promise<Sample[]> {
  return parsePrometheusText(
    await client.request<string>({ method: 'GET', path: '/metrics', accept: 'text/plain' }),
  );
}

/** Saves a CPU profile of the API server to DIR/apiserver.pprof; a failure is logged, not fatal. */
async function profileApiServer(cp: ControlPlane, seconds: number, dir: string, log: (line: string) => void) {
  const file = join(dir, 'apiserver.pprof');
  try {
    const { stdout } = await exec(
      cp.state.kubectl,
      ['--kubeconfig', cp.kubeconfigPath, 'get', '--raw', `/debug/pprof/profile?seconds=${seconds}`],
      { encoding: 'buffer', maxBuffer: 256 * 2 ** 20 },
    );
    writeFileSync(file, stdout);
    log(`  API server profile: ${file}`);
  } catch (err) {
    log(`  API server profile failed: ${(err as Error).message}`);
  }
}

/** CPU seconds so far of each control-plane process, KWOK's processes summed as `kwok`. */
/**
 * The writes behind the Events about Databases: one create each, and one
 * update per repeat folded into its series (series.count is the occurrences).
 */
async function databaseEventWrites(client: KubeClient): Promise<number> {
  const events = await client.resource(Kinds.Event).list({});
  return events.items
    .filter((e) => e.regarding?.kind === 'Database')
    .reduce((n, e) => n + (e.series?.count ?? 1), 0);
}

function controlPlaneCpu(cp: ControlPlane): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, component] of Object.entries(cp.state.components)) {
    const key = name.startsWith('kwok') ? 'kwok' : name;
    out[key] = (out[key] ?? 0) + processStats(component.pid).cpuSeconds;
  }
  return out;
}

const heapOf = (subject: SubjectName, s: Sample[]) =>
  subject === 'regulon' ? sumOf(s, 'nodejs_heap_size_used_bytes') : sumOf(s, 'go_memstats_heap_alloc_bytes');

/** What is running now, so that an interrupted benchmark leaves nothing behind. */
const live = { planes: new Set<ControlPlane>(), subjects: new Set<Subject>() };

/** Stops every subject and control plane a cell has started and not yet stopped. */
export async function stopEverything(): Promise<void> {
  for (const s of live.subjects) await s.stop(5_000);
  for (const cp of live.planes) await cp.stop();
}

/** Runs one (subject, limits, N) measurement on a control plane of its own, so no run inherits another's load. */
export async function runCell(c: CellConfig): Promise<CellResult> {
  const perNamespace = c.perNamespace ?? DEFAULT_DATABASES_PER_NAMESPACE;
  const namespaceOf = (i: number) => `bench-${Math.floor(i / perNamespace)}`;
  const dir = join(c.workDir, `${c.subject}-${c.limits.name.replace(/\W+/g, '')}-${c.n}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const cp = await ControlPlane.start({
    dir: join(dir, 'control-plane'),
    scale: {
      podsPerNode: Math.max(110, Math.ceil(c.n / 2)),
      componentQps: 2000,
      statefulSetWorkers: 50,
      // One KWOK worker binds about a claim a second under this load; see testenv's kwok-stages.ts.
      volumeShards: Math.min(8, Math.ceil(c.n / 625)),
      apiServerProfiling: (c.apiServerProfileS ?? 0) > 0,
    },
  });
  live.planes.add(cp);
  const abort = new AbortController();
  const subjects: Subject[] = [];
  try {
    await exec(cp.state.kubectl, [
      '--kubeconfig',
      cp.kubeconfigPath,
      'apply',
      '--server-side',
      '-f',
      join(c.root, 'deploy', 'crds', 'databases.regulon.dev.yaml'),
      // The Database controller watches DatabaseBackups too (a Database's status follows them).
      '-f',
      join(c.root, 'deploy', 'crds', 'databasebackups.regulon.dev.yaml'),
    ]);
    await exec(cp.state.kubectl, [
      '--kubeconfig',
      cp.kubeconfigPath,
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/databases.regulon.dev',
      'crd/databasebackups.regulon.dev',
    ]);
    const client = KubeClient.load({ kubeconfigPath: cp.kubeconfigPath, qps: Infinity });
    for (let i = 0; i < c.n; i += perNamespace) {
      const namespace = namespaceOf(i);
      await client.resource(Kinds.Namespace).create({ metadata: { name: namespace } });
      // The controller-manager writes a default ServiceAccount and the root CA ConfigMap
      // into every new namespace. Those are the same kinds the subjects write, so they
      // must land before the baseline scrape or they are counted as the subject's.
      await eventually(`namespace ${namespace} prepared by the controller-manager`, async () => {
        await client.resource(Kinds.ServiceAccount).get('default', { namespace });
        await client.resource(Kinds.ConfigMap).get('kube-root-ca.crt', { namespace });
        return true;
      });
    }

    // The harness's own view: when each Database was created and first seen Ready.
    const factory = new SharedInformerFactory(client);
    const informer = factory.informerFor<DatabaseObject>(Database.type);
    const createdAt = new Map<string, number>();
    const readyAt = new Map<string, number>();
    const seen = (db: DatabaseObject) => {
      if (!readyAt.has(db.metadata.name!) && isReady(db)) readyAt.set(db.metadata.name!, performance.now());
    };
    informer.addEventHandler({ onAdd: seen, onUpdate: (_, db) => seen(db) });
    factory.start(abort.signal);
    await factory.waitForSync(abort.signal, 60_000);

    const [metricsPort, healthPort] = (await freePorts(2)) as [number, number];
    const options = {
      kubeconfig: cp.kubeconfigPath,
      limits: c.limits,
      concurrency: c.concurrency,
      metricsPort,
      healthPort,
      logFile: join(dir, `${c.subject}.log`),
      referenceBinary: c.referenceBinary,
      root: c.root,
    };
    const launch = async (): Promise<Subject> => {
      const s =
        c.subject === 'floor'
          ? await startFloor({ ...options, concurrency: FLOOR_WORKERS, count: c.n })
          : startManager(c.subject, options);
      subjects.push(s);
      live.subjects.add(s);
      return s;
    };

    const serverBefore = await apiserverSamples(client);
    const apiBefore = countRequests(serverBefore);
    const planeBefore = controlPlaneCpu(cp);
    let subject = await launch();
    await subject.waitReady();
    const clientBefore = await subject.metrics();
    c.log(`${c.subject} (${c.limits.name}) ready; creating ${c.n} Databases`);

    // Sample the subject's heap, queue and (for Node) event-loop delay while it works.
    let peakHeap = 0;
    let queueDepth = 0;
    const loopDelays: number[] = [];
    const sampler = setInterval(() => {
      if (c.subject === 'floor' || !subject.running) return;
      subject.metrics().then(
        (s) => {
          peakHeap = Math.max(peakHeap, heapOf(c.subject, s));
          queueDepth = sumOf(s, 'workqueue_depth', { name: CONTROLLER });
          if (c.subject !== 'regulon') return;
          const delay = sumOf(s, 'nodejs_eventloop_lag_p99_seconds') * 1000;
          loopDelays.push(delay);
          if (delay > STALL_REPORT_MS)
            c.log(
              `  event loop delayed ${delay.toFixed(0)} ms at ${((performance.now() - t0) / 1000).toFixed(0)} s`,
            );
        },
        () => {},
      );
    }, 1000);

    const t0 = performance.now();
    let next = 0;
    const creator = async () => {
      for (let i = next++; i < c.n; i = next++) {
        const name = `db-${String(i).padStart(5, '0')}`;
        await client.resource(Database.type).create(databaseFor(name, namespaceOf(i)));
        createdAt.set(name, performance.now());
      }
    };
    await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, creator));
    const createdIn = performance.now() - t0;
    c.log(`  created in ${(createdIn / 1000).toFixed(1)} s; waiting for Ready`);
    const profile = c.apiServerProfileS ? profileApiServer(cp, c.apiServerProfileS, dir, c.log) : undefined;
    let lastReport = performance.now();
    let progress = { count: 0, at: performance.now() };
    // A dead or stuck subject ends the cell now rather than at the overall timeout.
    const outcome = await eventually(
      `all ${c.n} Databases Ready`,
      (): { failed?: string } | false => {
        const now = performance.now();
        if (!subject.running)
          return {
            failed: `${c.subject} exited with ${subject.child.exitCode ?? subject.child.signalCode} (see ${options.logFile})`,
          };
        if (readyAt.size !== progress.count) progress = { count: readyAt.size, at: now };
        else if (now - progress.at > STALL_MS)
          return {
            failed: `no Database became Ready for ${STALL_MS / 1000} s (${readyAt.size}/${c.n}); see ${options.logFile}`,
          };
        if (now - lastReport > 15_000) {
          lastReport = now;
          const delay = loopDelays.length ? `, event-loop p99 ${loopDelays.at(-1)!.toFixed(0)} ms` : '';
          c.log(
            `  ${readyAt.size}/${c.n} Ready after ${((now - t0) / 1000).toFixed(0)} s (queue ${queueDepth}${delay})`,
          );
        }
        return readyAt.size >= c.n ? {} : false;
      },
      90 * 60_000,
      20,
    );
    if (outcome.failed) throw new Error(outcome.failed);
    await profile;
    const tAll = Math.max(...readyAt.values());
    clearInterval(sampler);
    const serverAfter = await apiserverSamples(client);
    const apiAfter = countRequests(serverAfter);
    const planeAfter = controlPlaneCpu(cp);
    const stats = processStats(subject.pid);
    const clientAfter = await subject.metrics();
    const writesBefore = serverWriteTimes(serverBefore);
    const serverWrites = Object.fromEntries(
      Object.entries(serverWriteTimes(serverAfter)).map(([key, t]) => [
        key,
        subtractTimed(t, writesBefore[key] ?? { count: 0, seconds: 0 }),
      ]),
    );
    const latencies = [...readyAt.entries()]
      .map(([name, t]) => (t - createdAt.get(name)!) / 1000)
      .sort((a, b) => a - b);
    const requests = subtract(apiAfter, apiBefore);
    const reconciles =
      c.subject === 'floor'
        ? null
        : sumOf(clientAfter, 'controller_runtime_reconcile_total', { controller: CONTROLLER }) -
          sumOf(clientBefore, 'controller_runtime_reconcile_total', { controller: CONTROLLER });
    const result: CellResult = {
      subject: c.subject,
      limits: c.limits.name,
      n: c.n,
      timeToAllReadyS: (tAll - t0) / 1000,
      latencyP50S: percentile(latencies, 50),
      latencyP99S: percentile(latencies, 99),
      reconcilesPerS: reconciles === null ? null : reconciles / ((tAll - t0) / 1000),
      requests: {
        ...requests,
        readsPerDatabase: requests.reads / c.n,
        writesPerDatabase: requests.writes / c.n,
      },
      clientRequests:
        c.subject === 'floor' ? null : subtract(clientRequests(clientAfter), clientRequests(clientBefore)),
      writeTimeMs: {
        server: meanMs(totalOf(Object.values(serverWrites))),
        serverByRequest: Object.fromEntries(Object.entries(serverWrites).map(([key, t]) => [key, meanMs(t)])),
        client:
          c.subject === 'floor'
            ? null
            : meanMs(subtractTimed(clientWriteTime(clientAfter), clientWriteTime(clientBefore))),
      },
      clusterIpAllocationS: sumOf(serverAfter, CLUSTER_IP_SECONDS) - sumOf(serverBefore, CLUSTER_IP_SECONDS),
      workerBusy:
        c.subject === 'floor'
          ? null
          : (sumOf(clientAfter, RECONCILE_SECONDS, { controller: CONTROLLER }) -
              sumOf(clientBefore, RECONCILE_SECONDS, { controller: CONTROLLER })) /
            (c.concurrency * ((tAll - t0) / 1000)),
      eventLoopDelayMs: loopDelays.length
        ? {
            meanP99: loopDelays.reduce((a, b) => a + b, 0) / loopDelays.length,
            maxP99: Math.max(...loopDelays),
          }
        : null,
      controlPlaneCpuSeconds: Object.fromEntries(
        Object.entries(planeAfter).map(([name, s]) => [name, s - (planeBefore[name] ?? 0)]),
      ),
      cpuSeconds: stats.cpuSeconds,
      peakRssMiB: stats.peakRssBytes / 2 ** 20,
      peakHeapMiB:
        c.subject === 'floor' ? null : Math.max(peakHeap, heapOf(c.subject, clientAfter)) / 2 ** 20,
      idle: null,
      writesCheck: null,
      restart: null,
    };
    c.log(`  all Ready in ${result.timeToAllReadyS.toFixed(1)} s`);
    if (c.subject === 'floor') return result;

    // Idle: nothing changes, so nothing should be written.
    const idleApi = countRequests(await apiserverSamples(client));
    const idleClient = clientRequests(await subject.metrics());
    await new Promise((r) => setTimeout(r, c.idleMs));
    const idleEndApi = countRequests(await apiserverSamples(client));
    const idleEndClient = clientRequests(await subject.metrics());
    const idleDelta = subtract(idleEndApi, idleApi);
    result.idle = {
      seconds: c.idleMs / 1000,
      writes: idleDelta.writes,
      clientWrites: idleEndClient.writes - idleClient.writes,
      detail: idleDelta.detail,
    };
    // Nothing is in flight now: the server's and the subject's counts since the start must agree.
    // The subject's Events (e.g. Initialized, once per Database) are writes the server's
    // counters can't attribute (the scheduler and the controller-manager write Events too),
    // so they are counted from the Events themselves: those about Databases are the subject's.
    result.writesCheck = {
      server: subtract(idleEndApi, apiBefore).writes + (await databaseEventWrites(client)),
      client: idleEndClient.writes - clientRequests(clientBefore).writes,
    };
    c.log(`  idle ${c.idleMs / 1000} s: ${idleDelta.writes} writes`);

    // Restart: a new process must re-verify every object, and write nothing for converged ones.
    const code = await subject.stop();
    if (code !== 0) c.log(`  ${c.subject} exited with ${code} on SIGTERM`);
    const restartApi = countRequests(await apiserverSamples(client));
    subject = await launch();
    const cacheSynced = await subject.waitReady();
    const reverified = await eventually(
      `${c.subject} to re-verify all ${c.n} Databases`,
      async () => {
        const s = await subject.metrics();
        const done =
          sumOf(s, 'controller_runtime_reconcile_total', { controller: CONTROLLER }) >= c.n &&
          sumOf(s, 'workqueue_depth', { name: CONTROLLER }) === 0 &&
          sumOf(s, 'controller_runtime_active_workers', { controller: CONTROLLER }) === 0;
        return done
          ? {
              at: performance.now(),
              reconciles: sumOf(s, 'controller_runtime_reconcile_total', { controller: CONTROLLER }),
            }
          : false;
      },
      30 * 60_000,
      50,
    );
    const restartDelta = subtract(countRequests(await apiserverSamples(client)), restartApi);
    result.restart = {
      cacheSyncedS: cacheSynced / 1000,
      reverifiedS: (reverified.at - subject.startedAt) / 1000,
      reconciles: reverified.reconciles,
      writes: restartDelta.writes,
      reads: restartDelta.reads,
      detail: restartDelta.detail,
    };
    c.log(
      `  restart: re-verified ${c.n} in ${result.restart.reverifiedS.toFixed(1)} s, ${restartDelta.writes} writes`,
    );
    return result;
  } finally {
    abort.abort();
    for (const s of subjects) {
      await s.stop(5_000);
      live.subjects.delete(s);
    }
    await cp.stop();
    live.planes.delete(cp);
    rmSync(join(dir, 'control-plane'), { recursive: true, force: true });
  }
}
