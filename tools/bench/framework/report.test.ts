import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { figureRows, frameworkMarkdown } from './report.ts';
import type { FrameworkRun, FrameworkSubject } from './run.ts';

const run = (
  subject: FrameworkSubject,
  round: number,
  syncS: number,
  extra: Partial<FrameworkRun> = {},
): FrameworkRun => ({
  subject,
  kind: 'widgets',
  n: 10_000,
  run: round,
  coldStartS: 1,
  syncS,
  initialReconcileS: 2,
  heapPerObjectBytes: 1000,
  peakRssMiB: 100,
  syncCpuS: 1,
  watch: null,
  reconcile: null,
  ...extra,
});

describe('figureRows', () => {
  const runs = [
    run('regulon', 1, 2),
    run('controller-runtime', 1, 1),
    run('client-node', 1, 4),
    run('client-node', 2, 8),
    run('controller-runtime', 2, 3),
    run('regulon', 2, 3),
  ];
  const sync = figureRows(runs).find((r) => r.figure.name === 'time to synced')!;

  it('gives each subject the median and spread of its rounds', () => {
    assert.deepEqual(sync.bySubject.regulon, { median: 2.5, min: 2, max: 3, runs: 2 });
    assert.deepEqual(sync.bySubject['controller-runtime'], { median: 2, min: 1, max: 3, runs: 2 });
  });

  it('gives Regulon median ÷ median against each other subject, with each round as a pair', () => {
    assert.equal(sync.versus['controller-runtime']!.ratio, 2.5 / 2);
    assert.deepEqual(sync.versus['controller-runtime']!.pairs, [2 / 1, 3 / 3]);
    assert.equal(sync.versus['client-node']!.ratio, 2.5 / 6);
    assert.deepEqual(sync.versus['client-node']!.pairs, [2 / 4, 3 / 8]);
  });

  it('leaves out the figures of cells no run measured', () => {
    assert.equal(
      figureRows(runs).some((r) => r.figure.name === 'CPU per event'),
      false,
    );
    const watched = figureRows([
      run('regulon', 1, 1, { watch: { updates: 10, writeS: 1, seenS: 2, eventsPerS: 5, cpuUsPerEvent: 30 } }),
    ]);
    assert.equal(watched.find((r) => r.figure.name === 'CPU per event')!.bySubject.regulon!.median, 30);
  });

  it('keeps cells apart', () => {
    const rows = figureRows([run('regulon', 1, 1), run('regulon', 1, 5, { n: 50_000 })]);
    assert.deepEqual(
      rows
        .filter((r) => r.figure.name === 'time to synced')
        .map((r) => [r.cell, r.bySubject.regulon!.median]),
      [
        ['Widgets × 10,000', 1],
        ['Widgets × 50,000', 5],
      ],
    );
  });
});

describe('frameworkMarkdown', () => {
  it('prints the medians with their range and the ratios with each pair', () => {
    const md = frameworkMarkdown([
      run('regulon', 1, 2),
      run('controller-runtime', 1, 1),
      run('regulon', 2, 4),
      run('controller-runtime', 2, 2),
    ]);
    const line = md.split('\n').find((l) => l.includes('time to synced'))!;
    assert.match(line, /\| 3 \(2–4\) \| 1\.5 \(1–2\) \| — \| \*\*2\.00\*\* \(2\.00, 2\.00\) \| — \|/);
  });
});
