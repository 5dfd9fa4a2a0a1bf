// The sharded benchmark's figures and tables: per cell (N objects, a subject with R
// replicas), the time until every object was reconciled once, and per replica its peak RSS,
// CPU, the objects it cached and reconciled; the medians over the rounds in one table, every
// run with each replica's own figures in another.
import { median } from '../harness/report.ts';

export type ShardedSubject = 'regulon' | 'controller-runtime';
/** Regulon's sharding.shardCaches: owned (on, the owned buckets only) or whole (off). */
export type CacheMode = 'owned' | 'whole';

export interface ReplicaFigures {
  /** Kernel's high-water mark of resident memory (VmHWM) once the buckets settled: the startup included. */
  peakRssMiB: number;
  /** Resident memory (VmRSS) then. */
  rssMiB: number;
  /** CPU (user + system) from spawn until every object had been reconciled once, by any replica. */
  cpuS: number;
  /** Heap after a full collection once settled (Node heapUsed, Go HeapAlloc). */
  heapMiB: number;
  /** Objects in its cache once settled. */
  cached: number;
  /** The objects its owned buckets hold (Regulon with owned caches), else every object. */
  expected: number;
  /** Distinct objects it reconciled until the buckets settled. */
  reconciledObjects: number;
  /** Reconciles it ran until then, repeats included. */
  reconciles: number;
  /** Buckets it owned once settled (controller-runtime: none, it does not shard). */
  buckets: number;
  /** Changes of its owned set, the first acquisition included (each a new informer with owned caches). */
  ownedChanges: number;
}

export interface ShardedRun {
  subject: ShardedSubject;
  /** Regulon only. */
  caches: CacheMode | null;
  replicas: number;
  n: number;
  namespaces: number;
  run: number;
  /** Spawn of the replicas → every object reconciled once by one of them. */
  allReconciledS: number;
  /** Spawn → the owned buckets a partition, each replica within one bucket of its share and its cache holding them (Regulon). */
  settledS: number | null;
  /** Where the API server cut the shards: server, client, or '' (whole caches, or not reported). */
  shardMode: string;
  replicaFigures: ReplicaFigures[];
  /**
   * Once settled, every replica adds every key it caches to its queue at once (the framework
   * benchmark's requeue): from the command until the last replica drained, the reconciles per
   * second of all replicas together, and the CPU each reconcile cost, over all replicas.
   */
  requeue: { s: number; perS: number; cpuUsPerReconcile: number } | null;
  /** One replica killed -9 once settled: its buckets' objects reconciled again by the survivors. */
  takeover: { buckets: number; objects: number; s: number } | null;
  /** The 1-minute load average when the cell started. */
  loadAvg1: number;
}

export const subjectName = (r: Pick<ShardedRun, 'subject' | 'caches' | 'replicas'>) =>
  r.subject === 'controller-runtime'
    ? `controller-runtime × ${r.replicas}`
    : `Regulon × ${r.replicas}${r.caches === 'whole' ? ' (whole caches)' : ''}`;

/** Cells in the order the tables list them: by N, then controller-runtime, then Regulon by caches and replicas. */
export function cellKey(r: Pick<ShardedRun, 'subject' | 'caches' | 'replicas' | 'n'>): string {
  return `${r.n}|${subjectName(r)}`;
}

function order(a: ShardedRun, b: ShardedRun): number {
  const rank = (r: ShardedRun) => (r.subject === 'controller-runtime' ? 0 : r.caches === 'owned' ? 1 : 2);
  return a.n - b.n || rank(a) - rank(b) || a.replicas - b.replicas;
}

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const num = (v: number) =>
  v.toLocaleString('en-US', { maximumFractionDigits: Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2 });
/** Median over the runs, with (min–max) when they differ. */
function spreadOf(values: readonly number[]): string {
  if (!values.length) return '—';
  const m = median(values);
  const [lo, hi] = [num(Math.min(...values)), num(Math.max(...values))];
  return lo !== hi ? `${num(m)} (${lo}–${hi})` : num(m);
}

/** One row per cell: the medians over its rounds. */
export interface CellSummary {
  n: number;
  name: string;
  runs: number;
  allReconciledS: number[];
  /** Per run: the largest peak RSS of its replicas, the sum of them, the mean CPU, the sum of CPU. */
  maxPeakRssMiB: number[];
  sumPeakRssMiB: number[];
  maxRssMiB: number[];
  meanCpuS: number[];
  sumCpuS: number[];
  /** Per run: the largest share of the objects one replica cached, as a fraction of N. */
  maxCachedShare: number[];
  takeoverS: number[];
  requeuePerS: number[];
  requeueCpuUs: number[];
}

export function summarize(runs: readonly ShardedRun[]): CellSummary[] {
  const cells = new Map<string, ShardedRun[]>();
  for (const r of [...runs].sort(order)) {
    const key = cellKey(r);
    cells.set(key, [...(cells.get(key) ?? []), r]);
  }
  return [...cells.values()].map((rs) => {
    const per = (f: (x: ReplicaFigures) => number, agg: (xs: number[]) => number) =>
      rs.map((r) => agg(r.replicaFigures.map(f)));
    return {
      n: rs[0]!.n,
      name: subjectName(rs[0]!),
      runs: rs.length,
      allReconciledS: rs.map((r) => r.allReconciledS),
      maxPeakRssMiB: per(
        (x) => x.peakRssMiB,
        (xs) => Math.max(...xs),
      ),
      sumPeakRssMiB: per((x) => x.peakRssMiB, sum),
      maxRssMiB: per(
        (x) => x.rssMiB,
        (xs) => Math.max(...xs),
      ),
      meanCpuS: per(
        (x) => x.cpuS,
        (xs) => sum(xs) / xs.length,
      ),
      sumCpuS: per((x) => x.cpuS, sum),
      maxCachedShare: rs.map((r) => Math.max(...r.replicaFigures.map((x) => x.cached)) / r.n),
      takeoverS: rs.flatMap((r) => (r.takeover ? [r.takeover.s] : [])),
      requeuePerS: rs.flatMap((r) => (r.requeue ? [r.requeue.perS] : [])),
      requeueCpuUs: rs.flatMap((r) => (r.requeue ? [r.requeue.cpuUsPerReconcile] : [])),
    };
  });
}

/** The summary table: a row per cell, medians with (min–max) over the rounds. */
export function summaryMarkdown(runs: readonly ShardedRun[]): string {
  const lines = [
    '| N | subject | rounds | all reconciled once (s) | peak RSS, largest replica (MiB) | peak RSS, all replicas (MiB) | RSS once settled, largest replica (MiB) | CPU per replica, mean (s) | CPU, all replicas (s) | largest cache (share of N) | requeue all: reconciles/s, all replicas | CPU per reconcile (µs) | takeover after kill -9 (s) |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of summarize(runs))
    lines.push(
      `| ${c.n.toLocaleString('en-US')} | ${c.name} | ${c.runs} | ${spreadOf(c.allReconciledS)} | ${spreadOf(c.maxPeakRssMiB)} | ${spreadOf(c.sumPeakRssMiB)} | ${spreadOf(c.maxRssMiB)} | ${spreadOf(c.meanCpuS)} | ${spreadOf(c.sumCpuS)} | ${spreadOf(c.maxCachedShare)} | ${spreadOf(c.requeuePerS)} | ${spreadOf(c.requeueCpuUs)} | ${spreadOf(c.takeoverS)} |`,
    );
  return `${lines.join('\n')}\n`;
}

const list = (xs: readonly number[]) => xs.map(num).join(' / ');

/** Every run, each replica's figures side by side (replica 1 / replica 2 / …). */
export function runsMarkdown(runs: readonly ShardedRun[]): string {
  const lines = [
    '| N | subject | round | all reconciled once (s) | settled (s) | shard cut by | buckets | objects cached (of their buckets) | objects reconciled (reconciles) | owned-set changes | peak RSS (MiB) | RSS settled (MiB) | heap (MiB) | CPU (s) | takeover | load |',
    '|---:|---|---:|---:|---:|---|---|---|---|---|---|---|---|---|---|---:|',
  ];
  for (const r of [...runs].sort((a, b) => order(a, b) || a.run - b.run)) {
    const f = r.replicaFigures;
    const takeover = r.takeover
      ? `${num(r.takeover.s)} s (${r.takeover.buckets} buckets, ${r.takeover.objects.toLocaleString('en-US')} objects)`
      : '—';
    lines.push(
      `| ${r.n.toLocaleString('en-US')} | ${subjectName(r)} | ${r.run} | ${num(r.allReconciledS)} | ${r.settledS === null ? '—' : num(r.settledS)} | ${r.shardMode || '—'} | ${list(f.map((x) => x.buckets))} | ${f.map((x) => `${num(x.cached)} (${num(x.expected)})`).join(' / ')} | ${f.map((x) => `${num(x.reconciledObjects)} (${num(x.reconciles)})`).join(' / ')} | ${list(f.map((x) => x.ownedChanges))} | ${list(f.map((x) => x.peakRssMiB))} | ${list(f.map((x) => x.rssMiB))} | ${list(f.map((x) => x.heapMiB))} | ${list(f.map((x) => x.cpuS))} | ${takeover} | ${r.loadAvg1.toFixed(1)} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
