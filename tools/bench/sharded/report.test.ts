import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  cellKey,
  runsMarkdown,
  subjectName,
  summarize,
  summaryMarkdown,
  type ReplicaFigures,
  type ShardedRun,
} from './report.ts';

const replica = (peakRssMiB: number, cpuS: number, cached: number, extra: Partial<ReplicaFigures> = {}) => ({
  peakRssMiB,
  rssMiB: peakRssMiB - 10,
  cpuS,
  heapMiB: 20,
  cached,
  expected: cached,
  reconciledObjects: cached,
  reconciles: cached,
  buckets: 8,
  ownedChanges: 1,
  ...extra,
});

const run = (over: Partial<ShardedRun>): ShardedRun => ({
  subject: 'regulon',
  caches: 'owned',
  replicas: 2,
  n: 1000,
  namespaces: 64,
  run: 1,
  allReconciledS: 5,
  settledS: 6,
  shardMode: 'server',
  replicaFigures: [replica(100, 2, 600), replica(80, 1, 400)],
  requeue: null,
  takeover: null,
  loadAvg1: 1.5,
  ...over,
});

describe('the sharded report', () => {
  it('names a cell by its subject, replicas and cache mode', () => {
    assert.equal(subjectName(run({})), 'Regulon × 2');
    assert.equal(subjectName(run({ caches: 'whole', replicas: 4 })), 'Regulon × 4 (whole caches)');
    assert.equal(
      subjectName(run({ subject: 'controller-runtime', caches: null, replicas: 1 })),
      'controller-runtime × 1',
    );
    assert.notEqual(cellKey(run({ n: 1000 })), cellKey(run({ n: 2000 })));
  });

  it('summarizes each cell over its rounds: the largest replica, the sum, and the largest share of N', () => {
    const [cell] = summarize([
      run({ run: 1 }),
      run({ run: 2, allReconciledS: 7, replicaFigures: [replica(90, 3, 500), replica(120, 1, 500)] }),
    ]);
    assert.equal(cell!.runs, 2);
    assert.deepEqual(cell!.allReconciledS, [5, 7]);
    assert.deepEqual(cell!.maxPeakRssMiB, [100, 120]);
    assert.deepEqual(cell!.sumPeakRssMiB, [180, 210]);
    assert.deepEqual(cell!.meanCpuS, [1.5, 2]);
    assert.deepEqual(cell!.sumCpuS, [3, 4]);
    assert.deepEqual(cell!.maxCachedShare, [0.6, 0.5]);
    assert.deepEqual(cell!.takeoverS, []);
  });

  it('lists cells by N, controller-runtime first, then Regulon by replicas', () => {
    const names = summarize([
      run({ n: 2000, replicas: 1 }),
      run({ replicas: 4 }),
      run({ subject: 'controller-runtime', caches: null, replicas: 1 }),
      run({ replicas: 1 }),
      run({ replicas: 2, caches: 'whole' }),
    ]).map((c) => `${c.n} ${c.name}`);
    assert.deepEqual(names, [
      '1000 controller-runtime × 1',
      '1000 Regulon × 1',
      '1000 Regulon × 4',
      '1000 Regulon × 2 (whole caches)',
      '2000 Regulon × 1',
    ]);
  });

  it('renders the medians with their spread, and every run with each replica side by side', () => {
    const runs = [
      run({
        run: 1,
        takeover: { buckets: 8, objects: 600, s: 19.5 },
        requeue: { s: 0.1, perS: 30_000, cpuUsPerReconcile: 60 },
      }),
      run({ run: 2, allReconciledS: 7, takeover: { buckets: 8, objects: 400, s: 21.5 } }),
    ];
    const summary = summaryMarkdown(runs);
    assert.match(summary, /\| 1,000 \| Regulon × 2 \| 2 \| 6 \(5–7\) \| 100 \| 180 \|/);
    assert.match(summary, /\| 1\.5 \| 3 \| 0\.6 \| 30,000 \| 60 \| 20\.5 \(19\.5–21\.5\) \|\n$/);
    const detail = runsMarkdown(runs);
    assert.match(detail, /\| 600 \(600\) \/ 400 \(400\) \|/);
    assert.match(detail, /\| 100 \/ 80 \|/);
    assert.match(detail, /19\.5 s \(8 buckets, 600 objects\)/);
    assert.equal(detail.trim().split('\n').length, 4);
  });
});
