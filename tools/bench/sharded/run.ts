// One cell of the sharded benchmark: R Regulon replicas in sharded mode, or one
// controller-runtime replica, over N Widgets that exist before they start. Spawns the
// processes, follows what they reconcile through the line protocol, and takes each
// replica's CPU and memory from the kernel's accounting (/proc), as the framework benchmark does.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { freePorts } from '@regulon/testenv';
import { SubjectChannel } from '../framework/channel.ts';
import { processStats } from '../harness/process-stats.ts';
import { bucketOfObject } from './population.ts';
import type { CacheMode, ReplicaFigures, ShardedRun } from './report.ts';
import { ReconciledTracker, settled, type ShardView } from './tracking.ts';

const MiB = 2 ** 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Timings {
  leaseMs: number;
  renewMs: number;
  retryMs: number;
}

export interface CellConfig {
  n: number;
  namespaces: number;
  buckets: number;
  /** Objects in each bucket. */
  perBucket: readonly number[];
  run: number;
  kubeconfig: string;
  root: string;
  referenceBinary: string;
  logDir: string;
  concurrency: number;
  /** Longest wait for every object reconciled once, and for the buckets to settle. */
  timeoutMs: number;
  loadAvg1: number;
  log: (line: string) => void;
}

export interface RegulonCellConfig extends CellConfig {
  replicas: number;
  caches: CacheMode;
  leaseNamespace: string;
  timings: Timings;
  /** With 2 replicas or more: kill -9 one once settled, and time its buckets' takeover. */
  takeover: boolean;
}

interface Proc {
  child: ChildProcess;
  channel: SubjectChannel;
  exited: Promise<unknown>;
}

/** Every subject process running now: a harness stopped by a signal kills them (killSubjects). */
const running = new Set<ChildProcess>();
let stopping = false;

/** Kills every subject process still running, and refuses to start another: the harness stops on a signal. */
export function killSubjects(): void {
  stopping = true;
  for (const child of running) child.kill('SIGKILL');
}

function start(command: string, args: string[], logFile: string): Proc {
  if (stopping) throw new Error('stopping: no more subjects');
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', fd] });
    running.add(child);
    const exited = new Promise((r) => child.once('exit', r));
    void exited.then(() => running.delete(child));
    return { child, channel: new SubjectChannel(child), exited };
  } finally {
    closeSync(fd);
  }
}

async function stopAll(procs: readonly Proc[]): Promise<void> {
  await Promise.all(
    procs.map(async ({ child, exited }) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }),
  );
}

/** Polls until `done` says so (true), within `timeoutMs`; false on timeout. */
async function until(done: () => boolean | Promise<boolean>, timeoutMs: number, everyMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await done()) return true;
    await sleep(everyMs);
  }
  return false;
}

/** Every replica requeues every key it caches at once; timed until the last one drained. */
async function requeueAll(
  procs: readonly Proc[],
  log: (line: string) => void,
): Promise<ShardedRun['requeue']> {
  const cpu0 = procs.map((p) => processStats(p.child.pid!).cpuSeconds);
  const t0 = performance.now();
  const drained = await Promise.all(procs.map((p) => p.channel.ask('requeue', 'drained', 120_000)));
  const s = (performance.now() - t0) / 1000;
  const cpu = procs.reduce((a, p, k) => a + processStats(p.child.pid!).cpuSeconds - cpu0[k]!, 0);
  const count = drained.reduce((a, d) => a + d.count, 0);
  const requeue = { s, perS: count / s, cpuUsPerReconcile: (cpu * 1e6) / count };
  log(
    `  requeue of ${count}: ${requeue.perS.toFixed(0)} reconciles/s, ${requeue.cpuUsPerReconcile.toFixed(1)} µs CPU each`,
  );
  return requeue;
}

/** R Regulon replicas, sharded: see the comment at the top of this file. */
export async function runRegulonCell(c: RegulonCellConfig): Promise<ShardedRun> {
  // A group of its own per cell: no Lease of an earlier cell's replicas is in its way.
  const group = `bench-${c.n}-${c.replicas}-${c.caches}-${c.run}-${Date.now().toString(36)}`;
  const script = join(c.root, 'tools', 'bench', 'sharded', 'replica.ts');
  const flags = process.env['REGULON_BENCH_NODE_FLAGS']?.split(' ').filter(Boolean) ?? [];
  const tracker = new ReconciledTracker(c.n, c.replicas);
  const spawnedAt = Date.now();
  const procs = Array.from({ length: c.replicas }, (_, k) =>
    start(
      process.execPath,
      [
        '--expose-gc',
        ...flags,
        script,
        ...['--kubeconfig', c.kubeconfig, '--identity', `${group}-${k}`],
        ...['--lease-namespace', c.leaseNamespace, '--group', group, '--buckets', String(c.buckets)],
        ...['--caches', c.caches, '--concurrency', String(c.concurrency)],
        ...['--lease-ms', String(c.timings.leaseMs), '--renew-ms', String(c.timings.renewMs)],
        ...['--retry-ms', String(c.timings.retryMs)],
      ],
      join(c.logDir, `regulon-${c.replicas}-${k}.log`),
    ),
  );
  let failure: Error | undefined;
  const killed = new Set<number>();
  procs.forEach((p, k) => {
    p.channel.on('reconciled', (m) => tracker.add(k, m.ids, m.at));
    p.child.once('exit', (code, signal) => {
      if (!killed.has(k))
        failure ??= new Error(`replica ${k} exited with ${code ?? signal} (see ${c.logDir})`);
    });
  });
  const alive = () => procs.flatMap((_, k) => (killed.has(k) ? [] : [k]));
  const check = () => {
    if (failure) throw failure;
  };
  try {
    if (!(await until(() => (check(), tracker.allAt !== undefined), c.timeoutMs, 25)))
      throw new Error(
        `not every object reconciled within ${c.timeoutMs / 1000} s (${tracker.reconciled} of ${c.n})`,
      );
    const cpuS = procs.map((p) => processStats(p.child.pid!).cpuSeconds);
    c.log(
      `  all ${c.n} reconciled ${((tracker.allAt! - spawnedAt) / 1000).toFixed(2)} s after spawn; CPU ${cpuS.map((x) => x.toFixed(2)).join(' / ')} s`,
    );

    let views: Array<ShardView & { changes: number; informers: number; mode: string }> = [];
    // Settling takes a few retry periods; a cell that does not settle in 2 minutes will not.
    const settleTimeoutMs = Math.min(c.timeoutMs, 120_000);
    const isSettled = await until(
      async () => {
        check();
        views = await Promise.all(procs.map((p) => p.channel.ask('shard', 'shard', 30_000)));
        return settled(views, c.perBucket, c.caches === 'owned');
      },
      settleTimeoutMs,
      250,
    );
    const settledS = isSettled ? (Date.now() - spawnedAt) / 1000 : null;
    if (!isSettled) c.log(`  the buckets did not settle within ${settleTimeoutMs / 1000} s`);
    const mem = procs.map((p) => processStats(p.child.pid!));
    // One at a time: each collects its garbage in full, and they share 2 cores.
    const stats: Array<{ heap: number }> = [];
    for (const p of procs) stats.push(await p.channel.ask('stats', 'stats', 120_000));
    const replicaFigures: ReplicaFigures[] = procs.map((_, k) => ({
      peakRssMiB: mem[k]!.peakRssBytes / MiB,
      rssMiB: mem[k]!.rssBytes / MiB,
      cpuS: cpuS[k]!,
      heapMiB: stats[k]!.heap / MiB,
      cached: views[k]!.objects,
      expected: c.caches === 'owned' ? views[k]!.buckets.reduce((a, b) => a + c.perBucket[b]!, 0) : c.n,
      reconciledObjects: tracker.distinct(k),
      reconciles: tracker.reconciles(k),
      buckets: views[k]!.buckets.length,
      ownedChanges: views[k]!.changes,
    }));

    const requeue = await requeueAll(procs, c.log);

    let takeover: ShardedRun['takeover'] = null;
    if (c.takeover && c.replicas >= 2 && isSettled) {
      const victim = 0;
      const lost = new Set(views[victim]!.buckets);
      killed.add(victim);
      const killedAt = Date.now();
      procs[victim]!.child.kill('SIGKILL');
      const objects = tracker.watch(
        (i) => lost.has(bucketOfObject(i, c.namespaces, c.buckets)),
        alive(),
        killedAt,
      );
      const limit = c.timings.leaseMs + c.timeoutMs;
      if (await until(() => (check(), tracker.watchedAt !== undefined), limit, 25)) {
        takeover = { buckets: lost.size, objects, s: (tracker.watchedAt! - killedAt) / 1000 };
        c.log(
          `  takeover of ${lost.size} buckets (${objects} objects): ${takeover.s.toFixed(2)} s after kill -9`,
        );
      } else c.log(`  takeover not complete within ${limit / 1000} s`);
    }
    return {
      subject: 'regulon',
      caches: c.caches,
      replicas: c.replicas,
      n: c.n,
      namespaces: c.namespaces,
      run: c.run,
      allReconciledS: (tracker.allAt! - spawnedAt) / 1000,
      settledS,
      shardMode: [...new Set(views.map((v) => v.mode).filter(Boolean))].join(', '),
      replicaFigures,
      requeue,
      takeover,
      loadAvg1: c.loadAvg1,
    };
  } finally {
    await stopAll(procs);
  }
}

/**
 * One controller-runtime replica (`reference-go framework --all-namespaces`): one
 * cluster-wide informer of every Widget, as a one-replica Regulon caches them.
 */
export async function runControllerRuntimeCell(c: CellConfig): Promise<ShardedRun> {
  const [port] = (await freePorts(1)) as [number];
  const spawnedAt = Date.now();
  const p = start(
    c.referenceBinary,
    [
      'framework',
      ...['--kubeconfig', c.kubeconfig, '--kind', 'widgets', '--all-namespaces'],
      ...['--health-probe-bind-address', `127.0.0.1:${port}`, '--concurrency', String(c.concurrency)],
    ],
    join(c.logDir, 'controller-runtime.log'),
  );
  try {
    const initial = await p.channel.next('initial', c.timeoutMs);
    const doneAt = Date.now();
    const mem = processStats(p.child.pid!);
    const stats = await p.channel.ask('stats', 'stats', 120_000);
    if (stats.objects !== c.n)
      throw new Error(`controller-runtime caches ${stats.objects} objects, expected ${c.n}`);
    c.log(`  all ${initial.reconciles} reconciled ${((doneAt - spawnedAt) / 1000).toFixed(2)} s after spawn`);
    const requeue = await requeueAll([p], c.log);
    return {
      subject: 'controller-runtime',
      caches: null,
      replicas: 1,
      n: c.n,
      namespaces: c.namespaces,
      run: c.run,
      allReconciledS: (doneAt - spawnedAt) / 1000,
      settledS: null,
      shardMode: '',
      replicaFigures: [
        {
          peakRssMiB: mem.peakRssBytes / MiB,
          rssMiB: mem.rssBytes / MiB,
          cpuS: mem.cpuSeconds,
          heapMiB: stats.heap / MiB,
          cached: stats.objects,
          expected: c.n,
          reconciledObjects: initial.reconciles,
          reconciles: stats.reconciles,
          buckets: 0,
          ownedChanges: 0,
        },
      ],
      requeue,
      takeover: null,
      loadAvg1: c.loadAvg1,
    };
  } finally {
    await stopAll([p]);
  }
}
