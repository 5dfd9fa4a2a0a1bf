// One subject process over one population: spawn it, time it to /readyz, and
// take each figure the cell asks for through the line protocol, with its CPU
// and memory from the kernel's accounting (/proc), the same instrument for
// Node and Go.
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeClient } from '@regulon/client';
import { eventually, freePorts } from '@regulon/testenv';
import { processStats } from '../harness/process-stats.ts';
import { SubjectChannel } from './channel.ts';
import { writeUpdates, type PopulationKind } from './population.ts';

export const FRAMEWORK_SUBJECTS = ['regulon', 'controller-runtime', 'client-node'] as const;
export type FrameworkSubject = (typeof FRAMEWORK_SUBJECTS)[number];

/** Longest wait for a subject's sync or its initial reconciles: 100k objects on a loaded machine. */
const SYNC_TIMEOUT_MS = 15 * 60_000;
const MiB = 2 ** 20;
/** Patches in flight at once in the watch cell: enough to keep the API server busy. */
const WRITER_CONCURRENCY = 64;

export interface FrameworkRunConfig {
  subject: FrameworkSubject;
  kind: PopulationKind;
  namespace: string;
  /** The objects the harness created: the cell's N. */
  n: number;
  /** What the subject should cache: N and whatever else the namespace holds (its kube-root-ca.crt ConfigMap). */
  objects: number;
  run: number;
  kubeconfig: string;
  /** The harness's own client, for the watch cell's writer. */
  client: KubeClient;
  referenceBinary: string;
  root: string;
  logFile: string;
  concurrency: number;
  /** Watch cell: this many updates over the first `watchObjects` objects; 0 skips it. */
  watchUpdates: number;
  watchObjects: number;
  /** Reconcile cell: requeue every key at once and time the drain. */
  requeue: boolean;
}

export interface FrameworkRun {
  subject: FrameworkSubject;
  kind: PopulationKind;
  n: number;
  run: number;
  /** Spawn → /readyz answering 200: process start, module load, list, cache. */
  coldStartS: number;
  /** The subject's own informers start → synced, so without process start and module load. */
  syncS: number;
  /** Informers start → every object reconciled once. */
  initialReconcileS: number;
  /** (heap after sync and the initial reconciles − heap before the client existed) ÷ objects cached, both after a full GC. */
  heapPerObjectBytes: number;
  /** VmHWM after sync and the initial reconciles. */
  peakRssMiB: number;
  /** CPU from spawn until every object was reconciled once. */
  syncCpuS: number;
  watch: {
    updates: number;
    /** The writer's own span: as fast as the API server takes the patches. */
    writeS: number;
    /** First patch sent → the subject's handler has seen the last event. */
    seenS: number;
    eventsPerS: number;
    cpuUsPerEvent: number;
  } | null;
  reconcile: { count: number; drainS: number; perS: number; cpuUsPerReconcile: number } | null;
}

function spawnSubject(c: FrameworkRunConfig, healthAddress: string) {
  const args = [
    '--kubeconfig',
    c.kubeconfig,
    '--kind',
    c.kind,
    '--namespace',
    c.namespace,
    '--health-probe-bind-address',
    healthAddress,
    '--concurrency',
    String(c.concurrency),
  ];
  const fd = openSync(c.logFile, 'a');
  try {
    const stdio = ['pipe', 'pipe', fd] as const;
    if (c.subject === 'controller-runtime')
      return spawn(c.referenceBinary, ['framework', ...args], { stdio: [...stdio] });
    const script = join(c.root, 'tools', 'bench', 'framework', 'subjects', `${c.subject}.ts`);
    // --expose-gc: the heap is measured after a full collection, as Go's is after runtime.GC().
    // REGULON_BENCH_NODE_FLAGS="--cpu-prof --cpu-prof-dir=DIR" profiles the Node subjects.
    const flags = process.env['REGULON_BENCH_NODE_FLAGS']?.split(' ').filter(Boolean) ?? [];
    return spawn(process.execPath, ['--expose-gc', ...flags, script, ...args], { stdio: [...stdio] });
  } finally {
    closeSync(fd);
  }
}

export async function runFrameworkSubject(c: FrameworkRunConfig): Promise<FrameworkRun> {
  const [port] = (await freePorts(1)) as [number];
  const started = performance.now();
  const child = spawnSubject(c, `127.0.0.1:${port}`);
  const channel = new SubjectChannel(child);
  const exited = new Promise((r) => child.once('exit', r));
  try {
    const ready = await eventually(
      `${c.subject} /readyz`,
      async () => {
        if (child.exitCode !== null)
          throw new Error(`${c.subject} exited with ${child.exitCode} (see ${c.logFile})`);
        const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.ok,
          () => false,
        );
        return ok ? performance.now() : false;
      },
      SYNC_TIMEOUT_MS,
      25,
    );
    const synced = await channel.next('synced', SYNC_TIMEOUT_MS);
    const initial = await channel.next('initial', SYNC_TIMEOUT_MS);
    const syncCpuS = processStats(child.pid!).cpuSeconds;
    const stats = await channel.ask('stats', 'stats', 120_000);
    if (stats.objects !== c.objects)
      throw new Error(`${c.subject} caches ${stats.objects} objects, expected ${c.objects}`);
    const peakRssMiB = processStats(child.pid!).peakRssBytes / MiB;
    const result: FrameworkRun = {
      subject: c.subject,
      kind: c.kind,
      n: c.n,
      run: c.run,
      coldStartS: (ready - started) / 1000,
      syncS: synced.ms / 1000,
      initialReconcileS: initial.ms / 1000,
      heapPerObjectBytes: (stats.heap - synced.heapBefore) / c.objects,
      peakRssMiB,
      syncCpuS,
      watch: null,
      reconcile: null,
    };

    if (c.watchUpdates > 0) {
      const cpu0 = processStats(child.pid!).cpuSeconds;
      const seen = channel.next('seen', SYNC_TIMEOUT_MS);
      channel.send(`expect ${c.watchUpdates}`);
      const t0 = performance.now();
      await writeUpdates(c.client, c.namespace, c.watchObjects, c.watchUpdates, WRITER_CONCURRENCY);
      const writeS = (performance.now() - t0) / 1000;
      await seen;
      const seenS = (performance.now() - t0) / 1000;
      const cpu = processStats(child.pid!).cpuSeconds - cpu0;
      result.watch = {
        updates: c.watchUpdates,
        writeS,
        seenS,
        eventsPerS: c.watchUpdates / seenS,
        cpuUsPerEvent: (cpu * 1e6) / c.watchUpdates,
      };
    }

    if (c.requeue) {
      const cpu0 = processStats(child.pid!).cpuSeconds;
      const drained = await channel.ask('requeue', 'drained', SYNC_TIMEOUT_MS);
      const cpu = processStats(child.pid!).cpuSeconds - cpu0;
      result.reconcile = {
        count: drained.count,
        drainS: drained.ms / 1000,
        perS: drained.count / (drained.ms / 1000),
        cpuUsPerReconcile: (cpu * 1e6) / drained.count,
      };
    }
    return result;
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
  }
}
