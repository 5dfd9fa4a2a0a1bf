import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONFIGMAP_DATA_BYTES, inParallel, objectFor, objectName } from './population.ts';

describe('inParallel', () => {
  it('runs every index once, never more than `concurrency` at a time', async () => {
    const seen: number[] = [];
    let inFlight = 0;
    let most = 0;
    await inParallel(3, 40, 4, async (i) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((r) => setImmediate(r));
      seen.push(i);
      inFlight--;
    });
    assert.deepEqual(
      seen.sort((a, b) => a - b),
      Array.from({ length: 37 }, (_, k) => k + 3),
    );
    assert.equal(most, 4);
  });

  it('refuses a concurrency that is not a positive integer', async () => {
    await assert.rejects(
      inParallel(0, 1, 0, async () => {}),
      /concurrency/,
    );
  });

  it('does nothing for an empty range', async () => {
    let calls = 0;
    await inParallel(5, 5, 8, () => Promise.resolve(void calls++));
    assert.equal(calls, 0);
  });
});

describe('objectFor', () => {
  it('gives ConfigMaps 4 KiB of data and the phase the reconcile checks', () => {
    const cm = objectFor('configmaps', 'ns', 7) as {
      data: Record<string, string>;
      metadata: { name: string };
    };
    assert.equal(cm.data['payload']!.length, CONFIGMAP_DATA_BYTES);
    assert.equal(cm.data['phase'], 'Ready');
    assert.equal(cm.metadata.name, objectName(7));
  });

  it('gives Widgets a small spec and a Ready status', () => {
    const w = objectFor('widgets', 'ns', 7) as { spec: unknown; status: unknown; kind: string };
    assert.equal(w.kind, 'Widget');
    assert.deepEqual(w.spec, { size: 7, owner: 'bench' });
    assert.deepEqual(w.status, { phase: 'Ready' });
  });

  it('names objects so that they sort in creation order', () => {
    assert.ok(objectName(9) < objectName(10) && objectName(99_999) < objectName(100_000));
  });
});
