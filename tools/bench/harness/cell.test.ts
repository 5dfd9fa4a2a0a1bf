// The benchmark harness end to end, small: every subject on its own real
// control plane, with the instruments the full benchmark reports. What is
// asserted is what the benchmark's figures rely on, not how fast anything is.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { referenceBinary } from '../reference.ts';
import { runCell, type CellResult } from './cell.ts';
import { LIMITS, type SubjectName } from './subjects.ts';

const root = resolve(import.meta.dirname, '..', '..', '..');
const N = 4;

describe('benchmark harness', () => {
  let reference: string;
  let workDir: string;
  const results = new Map<SubjectName, CellResult>();
  const run = async (subject: SubjectName) => {
    const r = await runCell({
      subject,
      limits: LIMITS['qps50']!,
      n: N,
      concurrency: 2,
      idleMs: 2000,
      root,
      workDir,
      referenceBinary: reference,
      log: () => {},
    });
    results.set(subject, r);
    return r;
  };

  before(async () => {
    reference = await referenceBinary();
    workDir = mkdtempSync(join(tmpdir(), 'regulon-bench-test-'));
  });
  after(() => rmSync(workDir, { recursive: true, force: true }));

  for (const subject of ['regulon', 'controller-runtime'] as const) {
    test(`${subject}: every Database Ready, the writes counted by the API server, none while idle or after a restart`, async () => {
      const r = await run(subject);
      assert.equal(r.n, N);
      assert.ok(
        r.timeToAllReadyS > 0 && r.latencyP50S <= r.latencyP99S && r.latencyP99S <= r.timeToAllReadyS,
      );
      // Per Database at least: the Secret, five applied children, a status, the primary's label.
      assert.ok(
        r.requests.writesPerDatabase >= 8,
        `writes/DB ${r.requests.writesPerDatabase}: ${JSON.stringify(r.requests.detail)}`,
      );
      assert.ok((r.requests.detail['POST secrets'] ?? 0) >= N, JSON.stringify(r.requests.detail));
      assert.ok((r.requests.detail['APPLY statefulsets'] ?? 0) >= N, JSON.stringify(r.requests.detail));
      // The server's attribution and the subject's own count agree, once nothing is in flight.
      assert.ok(r.writesCheck && r.writesCheck.server > 0, JSON.stringify(r.writesCheck));
      assert.equal(
        r.writesCheck.server,
        r.writesCheck.client,
        JSON.stringify({ server: r.requests.detail, client: r.clientRequests?.detail }),
      );
      assert.ok((r.reconcilesPerS ?? 0) > 0);
      assert.ok(r.cpuSeconds > 0 && r.peakRssMiB > 10 && (r.peakHeapMiB ?? 0) > 1);
      // Both clients time their writes, and no write can take less time at the client than at the server.
      assert.ok(
        r.writeTimeMs.server > 0 &&
          r.writeTimeMs.client !== null &&
          r.writeTimeMs.client >= r.writeTimeMs.server,
        JSON.stringify(r.writeTimeMs),
      );
      assert.ok(
        (r.writeTimeMs.serverByRequest['APPLY statefulsets'] ?? 0) > 0,
        JSON.stringify(r.writeTimeMs),
      );
      // One ClusterIP Service per Database.
      assert.ok(r.clusterIpAllocationS > 0, String(r.clusterIpAllocationS));
      assert.ok(r.workerBusy !== null && r.workerBusy > 0 && r.workerBusy <= 1, String(r.workerBusy));
      assert.equal(r.eventLoopDelayMs !== null, subject === 'regulon', JSON.stringify(r.eventLoopDelayMs));
      assert.ok(
        (r.controlPlaneCpuSeconds['kube-apiserver'] ?? 0) > 0,
        JSON.stringify(r.controlPlaneCpuSeconds),
      );
      assert.ok((r.controlPlaneCpuSeconds['kwok'] ?? 0) > 0, JSON.stringify(r.controlPlaneCpuSeconds));
      assert.deepEqual(r.idle && { writes: r.idle.writes, client: r.idle.clientWrites }, {
        writes: 0,
        client: 0,
      });
      assert.ok(r.restart && r.restart.reconciles >= N, JSON.stringify(r.restart));
      assert.equal(r.restart.writes, 0, JSON.stringify(r.restart.detail));
      assert.ok(r.restart.reverifiedS >= r.restart.cacheSyncedS);
    });
  }

  test('floor: the same Databases Ready with no more writes than either manager', async () => {
    const r = await run('floor');
    assert.ok(r.timeToAllReadyS > 0);
    assert.ok((r.requests.detail['APPLY statefulsets'] ?? 0) === N, JSON.stringify(r.requests.detail));
    for (const subject of ['regulon', 'controller-runtime'] as const) {
      const m = results.get(subject);
      if (m)
        assert.ok(
          r.requests.writes <= m.requests.writes,
          `floor ${r.requests.writes} vs ${subject} ${m.requests.writes}`,
        );
    }
    assert.equal(r.idle, null);
    assert.equal(r.restart, null);
  });
});
