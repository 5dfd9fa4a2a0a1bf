// The framework benchmark's tables: each cell's figures per subject as the
// median and spread of the rounds, and Regulon's ratio to controller-runtime
// and to client-node's informer, median ÷ median with each round's pair.
import { median } from '../harness/report.ts';
import type { FrameworkRun, FrameworkSubject } from './run.ts';

export interface Figure {
  name: string;
  unit: string;
  /** Which way is better: a ratio above 1 is worse for 'lower', better for 'higher'. */
  better: 'lower' | 'higher';
  of: (r: FrameworkRun) => number | null;
}

export const SYNC_FIGURES: readonly Figure[] = [
  { name: 'time to synced', unit: 's', better: 'lower', of: (r) => r.syncS },
  { name: 'cold start to /readyz', unit: 's', better: 'lower', of: (r) => r.coldStartS },
  { name: 'peak RSS', unit: 'MiB', better: 'lower', of: (r) => r.peakRssMiB },
  { name: 'heap per object', unit: 'bytes', better: 'lower', of: (r) => r.heapPerObjectBytes },
  { name: 'CPU to synced and reconciled once', unit: 's', better: 'lower', of: (r) => r.syncCpuS },
];
export const WATCH_FIGURES: readonly Figure[] = [
  { name: 'events handled per second', unit: '/s', better: 'higher', of: (r) => r.watch?.eventsPerS ?? null },
  { name: 'CPU per event', unit: 'µs', better: 'lower', of: (r) => r.watch?.cpuUsPerEvent ?? null },
];
export const RECONCILE_FIGURES: readonly Figure[] = [
  { name: 'reconciles per second', unit: '/s', better: 'higher', of: (r) => r.reconcile?.perS ?? null },
  {
    name: 'CPU per reconcile',
    unit: 'µs',
    better: 'lower',
    of: (r) => r.reconcile?.cpuUsPerReconcile ?? null,
  },
];

export const cellName = (r: Pick<FrameworkRun, 'kind' | 'n'>) =>
  `${r.kind === 'widgets' ? 'Widgets' : 'ConfigMaps 4 KiB'} × ${r.n.toLocaleString('en-US')}`;

export interface Spread {
  median: number;
  min: number;
  max: number;
  runs: number;
}

export interface FigureRow {
  cell: string;
  figure: Figure;
  bySubject: Partial<Record<FrameworkSubject, Spread>>;
  /** Regulon's median ÷ the other's, with each round's pair (Regulon's run k ÷ the other's run k). */
  versus: Partial<Record<Exclude<FrameworkSubject, 'regulon'>, { ratio: number; pairs: number[] }>>;
}

function spread(values: number[]): Spread | undefined {
  if (!values.length) return undefined;
  return { median: median(values), min: Math.min(...values), max: Math.max(...values), runs: values.length };
}

/** Every (cell, figure) the runs have, in cell order of first appearance. */
export function figureRows(runs: readonly FrameworkRun[]): FigureRow[] {
  const cells = [...new Set(runs.map(cellName))];
  const rows: FigureRow[] = [];
  for (const cell of cells) {
    const inCell = runs.filter((r) => cellName(r) === cell);
    for (const figure of [...SYNC_FIGURES, ...WATCH_FIGURES, ...RECONCILE_FIGURES]) {
      const valued = inCell.flatMap((r) => {
        const v = figure.of(r);
        return v === null || !Number.isFinite(v) ? [] : [{ r, v }];
      });
      if (!valued.length) continue;
      const of = (s: FrameworkSubject) => valued.filter((x) => x.r.subject === s);
      const bySubject: FigureRow['bySubject'] = {};
      for (const s of ['regulon', 'controller-runtime', 'client-node'] as const) {
        const sp = spread(of(s).map((x) => x.v));
        if (sp) bySubject[s] = sp;
      }
      const versus: FigureRow['versus'] = {};
      const regulon = of('regulon');
      for (const other of ['controller-runtime', 'client-node'] as const) {
        const theirs = of(other);
        if (!regulon.length || !theirs.length) continue;
        versus[other] = {
          ratio: bySubject.regulon!.median / bySubject[other]!.median,
          pairs: regulon.flatMap((x) => {
            const y = theirs.find((t) => t.r.run === x.r.run);
            return y ? [x.v / y.v] : [];
          }),
        };
      }
      rows.push({ cell, figure, bySubject, versus });
    }
  }
  return rows;
}

const num = (v: number) =>
  v.toLocaleString('en-US', { maximumFractionDigits: Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2 });
const cellOf = (s: Spread | undefined) =>
  s ? (s.runs > 1 ? `${num(s.median)} (${num(s.min)}–${num(s.max)})` : num(s.median)) : '—';
const ratioOf = (v: { ratio: number; pairs: number[] } | undefined) =>
  v
    ? `**${v.ratio.toFixed(2)}**${v.pairs.length > 1 ? ` (${v.pairs.map((p) => p.toFixed(2)).join(', ')})` : ''}`
    : '—';

/** The Markdown table: medians with (min–max) over the rounds, and Regulon's ratios with each pair. */
export function frameworkMarkdown(runs: readonly FrameworkRun[]): string {
  const lines = [
    '| cell | figure | Regulon | controller-runtime | client-node informer | Regulon ÷ controller-runtime (each round) | Regulon ÷ client-node (each round) |',
    '|---|---|---:|---:|---:|---:|---:|',
  ];
  for (const row of figureRows(runs)) {
    const f = row.figure;
    lines.push(
      `| ${row.cell} | ${f.name} (${f.unit}, ${f.better} is better) | ${cellOf(row.bySubject.regulon)} | ${cellOf(row.bySubject['controller-runtime'])} | ${cellOf(row.bySubject['client-node'])} | ${ratioOf(row.versus['controller-runtime'])} | ${ratioOf(row.versus['client-node'])} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
