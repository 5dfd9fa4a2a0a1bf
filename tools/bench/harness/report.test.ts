import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CellResult } from './cell.ts';
import { markdownReport, median, ratios, summaries } from './report.ts';

// Only the figures the report reads; the rest of a run does not matter here.
const cell = (
  subject: CellResult['subject'],
  run: number,
  timeToAllReadyS: number,
  peakRssMiB = 100,
  limits = 'unlimited',
): CellResult => ({
  subject,
  limits,
  n: 1000,
  run,
  timeToAllReadyS,
  latencyP50S: 1,
  latencyP99S: 2,
  reconcilesPerS: 1,
  requests: { reads: 0, writes: 0, detail: {}, readsPerDatabase: 0, writesPerDatabase: 9 },
  clientRequests: null,
  writeTimeMs: { server: 1, client: 1, serverByRequest: {} },
  clusterIpAllocationS: 0,
  workerBusy: null,
  eventLoopDelayMs: null,
  controlPlaneCpuSeconds: {},
  cpuSeconds: 1,
  peakRssMiB,
  peakHeapMiB: null,
  writesCheck: null,
  idle: null,
  restart: null,
});

describe('median', () => {
  test('the middle value, or the mean of the middle two', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.equal(median([7]), 7);
    assert.throws(() => median([]), /no values/);
  });
});

describe('ratios over repeated runs', () => {
  const results = [
    cell('regulon', 1, 150, 270),
    cell('controller-runtime', 1, 137, 120),
    cell('controller-runtime', 2, 170, 125),
    cell('regulon', 2, 152, 280),
    cell('regulon', 3, 149, 275),
    cell('controller-runtime', 3, 160, 118),
    cell('floor', 1, 120),
  ];

  test('groups the runs of each cell and takes the median time', () => {
    const groups = summaries(results);
    assert.deepEqual(
      groups.map((g) => [g.subject, g.runs.map((r) => r.run), g.medianTimeToAllReadyS]),
      [
        ['regulon', [1, 2, 3], 150],
        ['controller-runtime', [1, 2, 3], 160],
        ['floor', [1], 120],
      ],
    );
  });

  test('divides median by median, and lists each round’s pair', () => {
    const [time, rss, floor] = ratios(results);
    assert.equal(time!.against, 'controller-runtime');
    assert.equal(time!.ratio, 150 / 160);
    assert.deepEqual(time!.pairs, [150 / 137, 152 / 170, 149 / 160]);
    assert.equal(rss!.figure, 'peak RSS');
    assert.equal(rss!.ratio, 275 / 120);
    assert.equal(floor!.against, 'floor');
    assert.equal(floor!.ratio, 150 / 120);
    assert.deepEqual(floor!.pairs, [150 / 120]);
  });

  test('the report shows every run, the spread, and whether the median meets the target', () => {
    const md = markdownReport(results);
    assert.match(
      md,
      /\| 1000 \| regulon \(unlimited\) \| 3 \| 150\.0 \| 149\.0 \| 152\.0 \| 150\.0, 152\.0, 149\.0 \|/,
    );
    assert.match(md, /\| 1000 \| controller-runtime \(unlimited\) \| 3 \| 160\.0 \| 137\.0 \| 170\.0 \|/);
    assert.match(
      md,
      /time to all Ready \| 150\.0 \| controller-runtime \| 160\.0 \| 0\.94 \| 1\.09, 0\.89, 0\.93 \| ≤ 1\.0 \| yes \|/,
    );
    // One row per run in the first table (18 columns): 3 + 3 + 1.
    const runRows = md.split('\n').filter((l) => l.startsWith('| 1000 |') && l.split('|').length === 20);
    assert.deepEqual(
      runRows.map((l) =>
        l
          .split('|')
          .slice(2, 4)
          .map((c) => c.trim()),
      ),
      [
        ['controller-runtime (unlimited)', '1'],
        ['controller-runtime (unlimited)', '2'],
        ['controller-runtime (unlimited)', '3'],
        ['floor', '1'],
        ['regulon (unlimited)', '1'],
        ['regulon (unlimited)', '2'],
        ['regulon (unlimited)', '3'],
      ],
    );
  });

  test('a single run per cell needs no spread table', () => {
    const md = markdownReport([cell('regulon', 1, 150), cell('controller-runtime', 1, 140)]);
    assert.doesNotMatch(md, /each run/);
    assert.match(md, /\| 1\.07 \| 1\.07 \| ≤ 1\.0 \| no \|/);
  });
});
