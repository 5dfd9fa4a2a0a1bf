// The time-to-ready chart is a real PNG of the requested size with its title,
// axis titles, legend and one line per series actually drawn; its text comes
// from the packaged font, not the machine's; bad input fails with a clear error.
//   node --test bench/chart.test.ts   (CHART_SAMPLE=path.png also writes the sample)
import { Resvg } from '@resvg/resvg-js';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { crc32, inflateSync } from 'node:zlib';
import {
  FONT_FAMILY,
  FONT_FILES,
  measureText,
  renderTimeToReadyChart,
  renderTimeToReadySvg,
  seriesColors,
  type ChartPoint,
} from './chart.ts';

const SERIES = [
  'Regulon (QPS 50)',
  'controller-runtime (QPS 50)',
  'Regulon (unlimited)',
  'controller-runtime (unlimited)',
  'floor',
];
const sample: ChartPoint[] = [100, 1000, 5000].flatMap((n) => [
  { series: SERIES[0]!, n, seconds: (n / 50) * 1.05 + 1.5 },
  { series: SERIES[1]!, n, seconds: (n / 50) * 1.02 + 1.2 },
  { series: SERIES[2]!, n, seconds: n * 0.004 + 0.8 },
  { series: SERIES[3]!, n, seconds: n * 0.0035 + 0.6 },
  { series: SERIES[4]!, n, seconds: n / 50 },
]);

interface Decoded {
  width: number;
  height: number;
  /** RGBA, 4 bytes a pixel, row by row. */
  rgba: Buffer;
}

/** A PNG decoder for what resvg writes (8-bit RGB or RGBA, not interlaced), checking every chunk's CRC. */
function decodePng(png: Buffer): Decoded {
  assert.deepEqual(
    [...png.subarray(0, 8)],
    [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
    'PNG signature',
  );
  let at = 8;
  let ihdr: Buffer | undefined;
  const idat: Buffer[] = [];
  for (;;) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + length);
    assert.equal(
      png.readUInt32BE(at + 8 + length),
      crc32(png.subarray(at + 4, at + 8 + length)),
      `${type} CRC`,
    );
    at += 12 + length;
    if (type === 'IHDR') ihdr = data;
    else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
  }
  assert.ok(ihdr, 'IHDR chunk');
  const [width, height, depth, colorType, interlace] = [
    ihdr.readUInt32BE(0),
    ihdr.readUInt32BE(4),
    ihdr[8],
    ihdr[9],
    ihdr[12],
  ];
  assert.equal(depth, 8, 'bit depth');
  assert.ok(colorType === 2 || colorType === 6, `colour type ${colorType}`);
  assert.equal(interlace, 0, 'interlace');
  const bpp = colorType === 6 ? 4 : 3;
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * bpp;
  assert.equal(raw.length, height * (stride + 1), 'image data length');
  const out = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    for (let x = 0; x < stride; x++) {
      const v = raw[y * (stride + 1) + 1 + x]!;
      const a = x >= bpp ? out[y * stride + x - bpp]! : 0;
      const b = y > 0 ? out[(y - 1) * stride + x]! : 0;
      const c = x >= bpp && y > 0 ? out[(y - 1) * stride + x - bpp]! : 0;
      const p = a + b - c;
      const paeth =
        Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c)
          ? a
          : Math.abs(p - b) <= Math.abs(p - c)
            ? b
            : c;
      const predictor = [0, a, b, (a + b) >> 1, paeth][filter!];
      assert.notEqual(predictor, undefined, `filter type ${filter}`);
      out[y * stride + x] = (v + predictor!) & 0xff;
    }
  }
  if (bpp === 4) return { width, height, rgba: out };
  const rgba = Buffer.alloc(width * height * 4, 0xff);
  for (let i = 0; i < width * height; i++) out.copy(rgba, i * 4, i * 3, i * 3 + 3);
  return { width, height, rgba };
}

/** Pixels within a box (fractions of the image) that pass a test. */
function count(
  img: Decoded,
  test: (r: number, g: number, b: number) => boolean,
  box = { x0: 0, y0: 0, x1: 1, y1: 1 },
): number {
  let n = 0;
  for (let y = Math.floor(box.y0 * img.height); y < Math.floor(box.y1 * img.height); y++)
    for (let x = Math.floor(box.x0 * img.width); x < Math.floor(box.x1 * img.width); x++) {
      const i = (y * img.width + x) * 4;
      if (test(img.rgba[i]!, img.rgba[i + 1]!, img.rgba[i + 2]!)) n++;
    }
  return n;
}
/** Text is black and nothing else is: lines are coloured or grey, the grid light. */
const inked = (r: number, g: number, b: number) => Math.max(r, g, b) < 50;
const hex = (color: string) =>
  [1, 3, 5].map((i) => parseInt(color.slice(i, i + 2), 16)) as [number, number, number];

describe('renderTimeToReadyChart', () => {
  it('renders a 1000×600 PNG by default, and the size asked for', async () => {
    const png = await renderTimeToReadyChart(sample);
    if (process.env['CHART_SAMPLE']) writeFileSync(process.env['CHART_SAMPLE'], png);
    const img = decodePng(png);
    assert.deepEqual([img.width, img.height], [1000, 600]);
    const small = decodePng(await renderTimeToReadyChart(sample, { width: 640, height: 400 }));
    assert.deepEqual([small.width, small.height], [640, 400]);
  });

  it('draws the title, axis titles and every series in the SVG it rasterizes', async () => {
    const svg = await renderTimeToReadySvg(sample, { title: 'Sample run' });
    const texts = [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
    for (const text of [
      'Sample run',
      'Database objects (N, log scale)',
      'Time until all Ready (seconds, log scale)',
      '100',
      '1,000',
      '5,000',
      ...SERIES,
    ])
      assert.ok(texts.includes(text), `text "${text}" in ${JSON.stringify(texts)}`);
    assert.ok(
      !texts.includes('Time until every Database is Ready'),
      'the default title gives way to opts.title',
    );
    assert.match(svg, new RegExp(`font-family="${FONT_FAMILY}"`));
    // One line per series, in its colour; the floor dashed.
    const lines = [...svg.matchAll(/<path[^>]*aria-roledescription="line mark"[^>]*>/g)].map((m) => m[0]);
    assert.equal(lines.length, SERIES.length);
    for (const [series, color] of seriesColors(sample)) {
      const line = lines.find((l) => l.includes(`series: ${series};`));
      assert.ok(line, `a line for ${series}`);
      assert.ok(line.includes(`stroke="${color}"`), `${series} drawn in ${color}: ${line}`);
      // Three points: a move and two segments.
      assert.equal(/ d="([^"]*)"/.exec(line)?.[1]?.match(/[ML]/g)?.length, 3, `${series} joins 3 points`);
      assert.equal(line.includes('stroke-dasharray="6,4"'), series === 'floor', `${series} dashed iff floor`);
    }
  });

  it('puts text, lines and markers into the PNG itself', async () => {
    const img = decodePng(await renderTimeToReadyChart(sample));
    const colors = new Set<number>();
    for (let i = 0; i < img.rgba.length; i += 4) colors.add(img.rgba.readUInt32BE(i));
    assert.ok(colors.size > 100, `${colors.size} distinct colours: a drawn chart, not a blank image`);
    assert.equal(img.rgba.readUInt32BE(0), 0xffffffff, 'white, opaque background');
    // Each coloured series shows in its own colour: its markers and legend
    // symbol make some 200 pixels of it, its line over 1,000 more.
    for (const [series, color] of seriesColors(sample)) {
      const [r0, g0, b0] = hex(color);
      if (r0 === g0 && g0 === b0) continue; // grey: antialiased text has the same shades
      const n = count(img, (r, g, b) => Math.abs(r - r0) + Math.abs(g - g0) + Math.abs(b - b0) <= 6);
      assert.ok(n >= 600, `${series}: ${n} pixels of ${color}`);
    }
    // Black text where the title, the legend and the x axis title are.
    for (const [where, box] of Object.entries({
      title: { x0: 0, y0: 0, x1: 0.5, y1: 0.07 },
      legend: { x0: 0.7, y0: 0.05, x1: 1, y1: 0.35 },
      'x axis title': { x0: 0.2, y0: 0.93, x1: 0.7, y1: 1 },
      'y axis title': { x0: 0, y0: 0.2, x1: 0.04, y1: 0.8 },
    })) {
      const n = count(img, inked, box);
      assert.ok(n >= 150, `${where}: ${n} black pixels of text`);
    }
  });

  it('draws no black without a font: the black above is text, in the packaged font', async () => {
    // The chart loads no system font, so its black pixels are text drawn with
    // the font it ships: the same SVG rendered with no font has none.
    const svg = await renderTimeToReadySvg(sample);
    const bare = new Resvg(svg, { background: 'white', font: { loadSystemFonts: false } }).render();
    const img = { width: bare.width, height: bare.height, rgba: bare.pixels };
    assert.equal(count(img, inked), 0);
  });

  it('lays text out with the widths resvg draws it at', () => {
    for (const [text, weight] of [
      ['controller-runtime (unlimited)', 'normal'],
      ['Time until every Database is Ready', 'bold'],
    ] as const) {
      const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="4000" height="200"><text x="10" y="150" font-family="${FONT_FAMILY}" font-weight="${weight}" font-size="100">${text}</text></svg>`;
      const drawn = new Resvg(svg, {
        font: { fontFiles: [...FONT_FILES], loadSystemFonts: false, defaultFontFamily: FONT_FAMILY },
      }).innerBBox();
      assert.ok(drawn, `${text} drawn`);
      const measured = measureText(text, weight) * 100;
      assert.ok(
        Math.abs(measured - drawn.width) / drawn.width < 0.03,
        `${text} (${weight}): measured ${measured}px, drawn ${drawn.width}px`,
      );
    }
  });

  describe('rejects bad input with a clear error', () => {
    const good = { series: 'a', n: 100, seconds: 1 };
    const cases: Array<[string, ChartPoint[], RegExp]> = [
      ['an empty list', [], /no points to draw \(the list is empty\)/],
      ['n = 0', [{ ...good, n: 0 }], /point 0 .*: n must be a positive finite number/],
      ['n < 0', [good, { ...good, n: -100 }], /point 1 .*: n must be a positive finite number/],
      ['n = NaN', [{ ...good, n: NaN }], /n must be a positive finite number/],
      ['seconds = 0', [{ ...good, seconds: 0 }], /seconds must be a positive finite number/],
      ['seconds < 0', [{ ...good, seconds: -2 }], /seconds must be a positive finite number/],
      ['seconds = Infinity', [{ ...good, seconds: Infinity }], /seconds must be a positive finite number/],
      ['an empty series name', [{ ...good, series: ' ' }], /series must be a non-empty string/],
      ['two points at one n', [good, { ...good, seconds: 2 }], /a second point for series a at n=100/],
    ];
    for (const [name, points, message] of cases)
      it(name, async () => {
        await assert.rejects(renderTimeToReadyChart(points), message);
      });
    it('a size too small to draw in', async () => {
      await assert.rejects(renderTimeToReadyChart([good], { width: 10 }), /width must be an integer/);
    });
  });
});
