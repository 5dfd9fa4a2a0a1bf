import type { CellResult } from './cell.ts';

const fmt = (v: number | null | undefined, digits = 1) =>
  v === null || v === undefined || Number.isNaN(v)
    ? '—'
    : v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

// Older results.json rows predate these figures.
const writeTimes = (r: CellResult) =>
  r.writeTimeMs ? `${fmt(r.writeTimeMs.server, 0)}, ${fmt(r.writeTimeMs.client, 0)}` : '—';

const label = (r: Pick<CellResult, 'subject' | 'limits'>) =>
  r.subject === 'floor' ? 'floor' : `${r.subject} (${r.limits})`;

export interface Ratio {
  n: number;
  limits: string;
  figure: string;
  /** Regulon's median over its runs. */
  regulon: number;
  /** The other subject's median over its runs. */
  other: number;
  against: 'controller-runtime' | 'floor';
  /** Median ÷ median. */
  ratio: number;
  /** Regulon's run k ÷ the other's run k, for each k both have: each round's pair. */
  pairs: number[];
  target: number;
}

const key = (r: Pick<CellResult, 'subject' | 'limits' | 'n'>) => `${r.n}|${r.subject}|${r.limits}`;

/** The median: with an even count, the mean of the middle two. */
export function median(values: readonly number[]): number {
  if (!values.length) throw new Error('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export interface Summary {
  subject: CellResult['subject'];
  limits: string;
  n: number;
  runs: CellResult[];
  medianTimeToAllReadyS: number;
}

/**
 * The repeated runs of each (subject, limits, N) and their median time to all
 * Ready. One run of the same code can differ from the next by 10–25 % on this
 * machine (the control plane sets the pace), so a claim rests on the median
 * of several runs, not on one.
 */
export function summaries(results: readonly CellResult[]): Summary[] {
  const groups = new Map<string, CellResult[]>();
  for (const r of results) groups.set(key(r), [...(groups.get(key(r)) ?? []), r]);
  return [...groups.values()].map((runs) => ({
    subject: runs[0]!.subject,
    limits: runs[0]!.limits,
    n: runs[0]!.n,
    runs: [...runs].sort((a, b) => (a.run ?? 1) - (b.run ?? 1)),
    medianTimeToAllReadyS: median(runs.map((r) => r.timeToAllReadyS)),
  }));
}

/** Regulon against controller-runtime (same limits) and against the floor, for each N, on the medians. */
export function ratios(results: readonly CellResult[]): Ratio[] {
  const out: Ratio[] = [];
  const runsOf = (subject: string, limits: string | undefined, n: number) =>
    results.filter(
      (r) => r.subject === subject && r.n === n && (limits === undefined || r.limits === limits),
    );
  const pairs = (a: readonly CellResult[], b: readonly CellResult[], figure: (r: CellResult) => number) =>
    a.flatMap((x) => {
      const y = b.find((r) => (r.run ?? 1) === (x.run ?? 1));
      return y ? [figure(x) / figure(y)] : [];
    });
  for (const reg of summaries(results).filter((r) => r.subject === 'regulon')) {
    const regulonRuns = reg.runs;
    const versus = (
      against: Ratio['against'],
      others: readonly CellResult[],
      figure: string,
      of: (r: CellResult) => number,
      target: number,
    ) => {
      if (!others.length) return;
      const regulon = median(regulonRuns.map(of));
      const other = median(others.map(of));
      out.push({
        n: reg.n,
        limits: reg.limits,
        figure,
        regulon,
        other,
        against,
        ratio: regulon / other,
        pairs: pairs(regulonRuns, others, of),
        target,
      });
    };
    const cr = runsOf('controller-runtime', reg.limits, reg.n);
    versus('controller-runtime', cr, 'time to all Ready', (r) => r.timeToAllReadyS, 1.0);
    versus('controller-runtime', cr, 'peak RSS', (r) => r.peakRssMiB, 2.0);
    versus('floor', runsOf('floor', undefined, reg.n), 'time to all Ready', (r) => r.timeToAllReadyS, 1.5);
  }
  // By N, then limits; within each, the order above.
  return out.sort((a, b) => a.n - b.n || a.limits.localeCompare(b.limits));
}

/**
 * The results as Markdown tables: one row per run, the spread of the repeated
 * runs, then the ratios of the medians against the targets.
 */
export function markdownReport(results: readonly CellResult[]): string {
  const rows = [...results].sort(
    (a, b) => a.n - b.n || label(a).localeCompare(label(b)) || (a.run ?? 1) - (b.run ?? 1),
  );
  const lines = [
    '| N | subject | run | all Ready (s) | p50 (s) | p99 (s) | reconciles/s | reads/DB | writes/DB | client reads, writes | CPU (s) | peak RSS (MiB) | peak heap (MiB) | write ms: server, client | API server CPU (s) | idle writes | restart: synced, re-verified (s) | restart writes |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.n} | ${label(r)} | ${r.run ?? 1} | ${fmt(r.timeToAllReadyS)} | ${fmt(r.latencyP50S, 2)} | ${fmt(r.latencyP99S, 2)} | ${fmt(r.reconcilesPerS)} | ${fmt(r.requests.readsPerDatabase, 2)} | ${fmt(r.requests.writesPerDatabase, 2)} | ${r.clientRequests ? `${r.clientRequests.reads}, ${r.clientRequests.writes}` : '—'} | ${fmt(r.cpuSeconds)} | ${fmt(r.peakRssMiB, 0)} | ${fmt(r.peakHeapMiB, 0)} | ${writeTimes(r)} | ${fmt(r.controlPlaneCpuSeconds?.['kube-apiserver'])} | ${r.idle ? `${r.idle.writes} in ${r.idle.seconds} s` : '—'} | ${r.restart ? `${fmt(r.restart.cacheSyncedS, 2)}, ${fmt(r.restart.reverifiedS, 2)}` : '—'} | ${r.restart ? r.restart.writes : '—'} |`,
    );
  }
  const repeated = summaries(results).filter((g) => g.runs.length > 1);
  if (repeated.length) {
    lines.push(
      '',
      '| N | subject | runs | all Ready (s): median | min | max | each run |',
      '|---:|---|---:|---:|---:|---:|---|',
    );
    for (const g of repeated.sort((a, b) => a.n - b.n || label(a).localeCompare(label(b)))) {
      const times = g.runs.map((r) => r.timeToAllReadyS);
      lines.push(
        `| ${g.n} | ${label(g)} | ${times.length} | ${fmt(g.medianTimeToAllReadyS)} | ${fmt(Math.min(...times))} | ${fmt(Math.max(...times))} | ${times.map((t) => fmt(t)).join(', ')} |`,
      );
    }
  }
  const rs = ratios(results);
  if (rs.length) {
    lines.push(
      '',
      '| N | limits | figure | Regulon (median) | vs | other (median) | ratio | each pair | target | met |',
      '|---:|---|---|---:|---|---:|---:|---|---:|---|',
    );
    for (const r of rs)
      lines.push(
        `| ${r.n} | ${r.limits} | ${r.figure} | ${fmt(r.regulon)} | ${r.against} | ${fmt(r.other)} | ${fmt(r.ratio, 2)} | ${r.pairs.map((p) => fmt(p, 2)).join(', ')} | ≤ ${fmt(r.target, 1)} | ${r.ratio <= r.target ? 'yes' : 'no'} |`,
      );
  }
  return `${lines.join('\n')}\n`;
}
