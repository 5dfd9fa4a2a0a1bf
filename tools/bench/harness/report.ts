import type { CellResult } from './cell.ts';

const fmt = (v: number | null | undefined, digits = 1) =>
  v === null || v === undefined || Number.isNaN(v)
    ? '—'
    : v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

// Older results.json rows predate these figures.
const writeTimes = (r: CellResult) =>
  r.writeTimeMs ? `${fmt(r.writeTimeMs.server, 0)}, ${fmt(r.writeTimeMs.client, 0)}` : '—';

const label = (r: CellResult) => (r.subject === 'floor' ? 'floor' : `${r.subject} (${r.limits})`);

export interface Ratio {
  n: number;
  limits: string;
  figure: string;
  regulon: number;
  other: number;
  against: 'controller-runtime' | 'floor';
  ratio: number;
  target: number;
}

/** Regulon against controller-runtime (same limits) and against the floor, for each N. */
export function ratios(results: readonly CellResult[]): Ratio[] {
  const out: Ratio[] = [];
  const find = (subject: string, limits: string | undefined, n: number) =>
    results.find((r) => r.subject === subject && r.n === n && (limits === undefined || r.limits === limits));
  for (const reg of results.filter((r) => r.subject === 'regulon')) {
    const cr = find('controller-runtime', reg.limits, reg.n);
    const floor = find('floor', undefined, reg.n);
    if (cr) {
      out.push({
        n: reg.n,
        limits: reg.limits,
        figure: 'time to all Ready',
        regulon: reg.timeToAllReadyS,
        other: cr.timeToAllReadyS,
        against: 'controller-runtime',
        ratio: reg.timeToAllReadyS / cr.timeToAllReadyS,
        target: 1.0,
      });
      out.push({
        n: reg.n,
        limits: reg.limits,
        figure: 'peak RSS',
        regulon: reg.peakRssMiB,
        other: cr.peakRssMiB,
        against: 'controller-runtime',
        ratio: reg.peakRssMiB / cr.peakRssMiB,
        target: 2.0,
      });
    }
    if (floor) {
      out.push({
        n: reg.n,
        limits: reg.limits,
        figure: 'time to all Ready',
        regulon: reg.timeToAllReadyS,
        other: floor.timeToAllReadyS,
        against: 'floor',
        ratio: reg.timeToAllReadyS / floor.timeToAllReadyS,
        target: 1.5,
      });
    }
  }
  return out;
}

/** The results as Markdown tables: one row per run, then the ratios against the targets. */
export function markdownReport(results: readonly CellResult[]): string {
  const rows = [...results].sort((a, b) => a.n - b.n || label(a).localeCompare(label(b)));
  const lines = [
    '| N | subject | all Ready (s) | p50 (s) | p99 (s) | reconciles/s | reads/DB | writes/DB | client reads, writes | CPU (s) | peak RSS (MiB) | peak heap (MiB) | write ms: server, client | API server CPU (s) | idle writes | restart: synced, re-verified (s) | restart writes |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.n} | ${label(r)} | ${fmt(r.timeToAllReadyS)} | ${fmt(r.latencyP50S, 2)} | ${fmt(r.latencyP99S, 2)} | ${fmt(r.reconcilesPerS)} | ${fmt(r.requests.readsPerDatabase, 2)} | ${fmt(r.requests.writesPerDatabase, 2)} | ${r.clientRequests ? `${r.clientRequests.reads}, ${r.clientRequests.writes}` : '—'} | ${fmt(r.cpuSeconds)} | ${fmt(r.peakRssMiB, 0)} | ${fmt(r.peakHeapMiB, 0)} | ${writeTimes(r)} | ${fmt(r.controlPlaneCpuSeconds?.['kube-apiserver'])} | ${r.idle ? `${r.idle.writes} in ${r.idle.seconds} s` : '—'} | ${r.restart ? `${fmt(r.restart.cacheSyncedS, 2)}, ${fmt(r.restart.reverifiedS, 2)}` : '—'} | ${r.restart ? r.restart.writes : '—'} |`,
    );
  }
  const rs = ratios(results);
  if (rs.length) {
    lines.push(
      '',
      '| N | limits | figure | Regulon | vs | other | ratio | target | met |',
      '|---:|---|---|---:|---|---:|---:|---:|---|',
    );
    for (const r of rs)
      lines.push(
        `| ${r.n} | ${r.limits} | ${r.figure} | ${fmt(r.regulon)} | ${r.against} | ${fmt(r.other)} | ${fmt(r.ratio, 2)} | ≤ ${fmt(r.target, 1)} | ${r.ratio <= r.target ? 'yes' : 'no'} |`,
      );
  }
  return `${lines.join('\n')}\n`;
}
