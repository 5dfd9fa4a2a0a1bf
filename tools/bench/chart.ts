// The benchmark's headline chart: time until every Database is Ready against the
// number of Database objects, one line per series, as a PNG.
//
// Vega-Lite describes the chart, Vega lays it out and draws it to SVG (no canvas
// needed: the 'none' renderer), and resvg rasterizes the SVG. Text uses DejaVu
// Sans from the dejavu-fonts-ttf package, never the machine's fonts, so the PNG
// is the same on a machine without any fonts installed (a fresh CI machine).
// Without a canvas Vega would guess text widths (0.8 em a character, far too
// wide); it measures them here with fontkit from the font's own metrics instead.
import { renderAsync } from '@resvg/resvg-js';
import * as fontkit from 'fontkit';
import { fileURLToPath } from 'node:url';
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

export interface ChartPoint {
  series: string;
  n: number;
  seconds: number;
}

export interface ChartOptions {
  title?: string;
  /** Width of the whole image in pixels (default 1000). */
  width?: number;
  /** Height of the whole image in pixels (default 600). */
  height?: number;
  /** Axis titles (defaults: the end-to-end benchmark's Databases and time until all Ready). */
  xTitle?: string;
  yTitle?: string;
}

/** The family Vega names in the SVG; resvg finds it in FONT_FILES. */
export const FONT_FAMILY = 'DejaVu Sans';
const [REGULAR, BOLD] = ['DejaVuSans.ttf', 'DejaVuSans-Bold.ttf'].map((file) =>
  fileURLToPath(import.meta.resolve(`dejavu-fonts-ttf/ttf/${file}`)),
) as [string, string];
/** FONT_FAMILY regular and bold, the only fonts resvg loads. */
export const FONT_FILES: readonly string[] = [REGULAR, BOLD];

/** The width of a text in em, from the font's own advance widths (and kerning). */
function advanceWidths(file: string): (text: string) => number {
  const font = fontkit.openSync(file) as fontkit.Font;
  return (text) => font.layout(text).advanceWidth / font.unitsPerEm;
}

interface TextItem {
  font?: string;
  fontSize?: number;
  fontWeight?: string | number;
}
type TextWidth = (item: TextItem, text: string | number | null | undefined) => number;

/**
 * The width of a text in FONT_FAMILY in em, regular or bold. Vega calls it
 * through its textMetrics hook (the one vl-convert uses); text in any other
 * font is measured as before.
 */
export const measureText = (() => {
  const regular = advanceWidths(REGULAR);
  const bold = advanceWidths(BOLD);
  return (text: string, weight: string | number = 'normal'): number =>
    (weight === 'bold' || weight === 'bolder' || Number(weight) >= 600 ? bold : regular)(text);
})();
const metrics = (vega as unknown as { textMetrics: { width: TextWidth } }).textMetrics;
const vegaWidth = metrics.width;
metrics.width = (item, text) =>
  item.font === FONT_FAMILY
    ? measureText(String(text ?? '').trim(), item.fontWeight) * (item.fontSize ?? 11)
    : vegaWidth(item, text);

/** A series with this name (any case) is the theoretical floor: a dashed grey reference line. */
const FLOOR = 'floor';
const FLOOR_COLOR = '#7f7f7f';
// Tableau 10 without its grey, which the floor uses.
const PALETTE = ['#4c78a8', '#f58518', '#e45756', '#72b7b2', '#54a24b', '#eeca3b', '#b279a2', '#ff9da6'];

/** Series colours in order of first appearance, as the chart draws them. */
export function seriesColors(points: ChartPoint[]): Map<string, string> {
  const colors = new Map<string, string>();
  let next = 0;
  for (const { series } of points) {
    if (colors.has(series)) continue;
    colors.set(series, series.toLowerCase() === FLOOR ? FLOOR_COLOR : PALETTE[next++ % PALETTE.length]!);
  }
  return colors;
}

function validate(points: ChartPoint[], opts: ChartOptions): void {
  if (!Array.isArray(points) || points.length === 0)
    throw new Error('renderTimeToReadyChart: no points to draw (the list is empty)');
  const seen = new Set<string>();
  points.forEach((p, i) => {
    const at = `renderTimeToReadyChart: point ${i} (${JSON.stringify(p)})`;
    if (typeof p?.series !== 'string' || p.series.trim() === '')
      throw new Error(`${at}: series must be a non-empty string`);
    if (typeof p.n !== 'number' || !Number.isFinite(p.n) || p.n <= 0)
      throw new Error(`${at}: n must be a positive finite number (the x axis is logarithmic)`);
    if (typeof p.seconds !== 'number' || !Number.isFinite(p.seconds) || p.seconds <= 0)
      throw new Error(`${at}: seconds must be a positive finite number (the y axis is logarithmic)`);
    const key = JSON.stringify([p.series, p.n]);
    if (seen.has(key)) throw new Error(`${at}: a second point for series ${p.series} at n=${p.n}`);
    seen.add(key);
  });
  for (const key of ['width', 'height'] as const) {
    const v = opts[key];
    if (v !== undefined && (!Number.isInteger(v) || v < 200 || v > 10_000))
      throw new Error(`renderTimeToReadyChart: ${key} must be an integer from 200 to 10000, got ${v}`);
  }
}

/** 1-2-5 steps around [lo, hi]: …, 0.1, 0.2, 0.5, 1, 2, 5, 10, … */
function steps(lo: number, hi: number): Array<{ value: number; decade: boolean }> {
  const out: Array<{ value: number; decade: boolean }> = [];
  for (let e = Math.floor(Math.log10(lo)) - 1; e <= Math.ceil(Math.log10(hi)) + 1; e++)
    for (const m of [1, 2, 5]) out.push({ value: Number((m * 10 ** e).toPrecision(1)), decade: m === 1 });
  return out;
}

/**
 * A log axis over values: from the 1-2-5 step at or below the least to the one
 * at or above the greatest, labelled on those steps, or only on powers of ten
 * when the steps would crowd, so every label is a plain round number.
 */
function logAxis(values: number[]): { domain: [number, number]; ticks: number[] } {
  const min = Math.min(...values);
  const max = Math.max(...values);
  const all = steps(min, max);
  const span = (of: typeof all) => {
    let lo = of.findLastIndex((s) => s.value <= min);
    let hi = of.findIndex((s) => s.value >= max);
    if (lo === hi) [lo, hi] = [lo - 1, hi + 1];
    return of.slice(lo, hi + 1);
  };
  let within = span(all);
  if (within.length > 13) within = span(all.filter((s) => s.decade));
  return { domain: [within[0]!.value, within.at(-1)!.value], ticks: within.map((s) => s.value) };
}

/** The Vega-Lite spec of the chart. */
export function timeToReadySpec(points: ChartPoint[], opts: ChartOptions = {}): TopLevelSpec {
  validate(points, opts);
  const colors = seriesColors(points);
  const domain = [...colors.keys()];
  const ns = [...new Set(points.map((p) => p.n))].sort((a, b) => a - b);
  const y = logAxis(points.map((p) => p.seconds));
  const legend = { title: null, orient: 'right', symbolStrokeWidth: 2.5 } as const;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    width: opts.width ?? 1000,
    height: opts.height ?? 600,
    autosize: { type: 'fit', contains: 'padding' },
    padding: 16,
    background: 'white',
    title: { text: opts.title ?? 'Time until every Database is Ready', fontSize: 20, anchor: 'start' },
    data: { values: points },
    mark: { type: 'line', strokeWidth: 2.5, point: { filled: true, size: 70 } },
    encoding: {
      x: {
        field: 'n',
        type: 'quantitative',
        title: opts.xTitle ?? 'Database objects (N, log scale)',
        scale: { type: 'log', nice: false, padding: 24 },
        // Labelled at each N measured, or on round numbers when there are many.
        axis: {
          values: ns.length <= 10 ? ns : logAxis(ns).ticks.filter((t) => t >= ns[0]! && t <= ns.at(-1)!),
          format: ',~g',
          grid: true,
        },
      },
      y: {
        field: 'seconds',
        type: 'quantitative',
        title: opts.yTitle ?? 'Time until all Ready (seconds, log scale)',
        scale: { type: 'log', domain: y.domain, nice: false },
        axis: { values: y.ticks, format: ',~g', grid: true },
      },
      color: { field: 'series', type: 'nominal', scale: { domain, range: [...colors.values()] }, legend },
      shape: { field: 'series', type: 'nominal', scale: { domain }, legend },
      strokeDash: {
        field: 'series',
        type: 'nominal',
        scale: { domain, range: domain.map((s) => (s.toLowerCase() === FLOOR ? [6, 4] : [1, 0])) },
        legend,
      },
      order: { field: 'n', type: 'quantitative' },
    },
    config: {
      font: FONT_FAMILY,
      axis: {
        labelFontSize: 13,
        titleFontSize: 14,
        titlePadding: 12,
        labelColor: '#000',
        titleColor: '#000',
      },
      legend: { labelFontSize: 13, labelLimit: 400, fillColor: 'white', padding: 8, strokeColor: '#ccc' },
      view: { stroke: '#888' },
    },
  };
}

/** The chart as SVG text, with text in FONT_FAMILY. */
export async function renderTimeToReadySvg(points: ChartPoint[], opts: ChartOptions = {}): Promise<string> {
  const { spec } = compile(timeToReadySpec(points, opts));
  const view = new vega.View(vega.parse(spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/**
 * The chart as a PNG of opts.width × opts.height pixels (default 1000 × 600):
 * one line with markers per series, in order of first appearance, on log-log
 * axes. A series named "floor" is drawn as a dashed grey reference line. Every
 * n and seconds must be positive, and a series has at most one point per n.
 */
export async function renderTimeToReadyChart(points: ChartPoint[], opts: ChartOptions = {}): Promise<Buffer> {
  const svg = await renderTimeToReadySvg(points, opts);
  const image = await renderAsync(svg, {
    background: 'white',
    fitTo: { mode: 'width', value: opts.width ?? 1000 },
    font: { fontFiles: [...FONT_FILES], loadSystemFonts: false, defaultFontFamily: FONT_FAMILY },
  });
  return image.asPng();
}
