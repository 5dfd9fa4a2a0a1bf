import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Database, DatabaseV1alpha1 } from './api.ts';
import { DATABASE_V1ALPHA1_CONVERSION as conversion } from './conversion.ts';

const metadata = { name: 'orders', namespace: 'shop', uid: 'u1', labels: { team: 'shop' } };
const base = { engine: 'mariadb', version: '11.4.4', replicas: 2, storage: { size: '1Gi' } } as const;

test('v1alpha1 maxLagBytes and maxLagTransactions are v1beta1 replication.maxLag, and back', () => {
  const alpha = DatabaseV1alpha1.object({
    metadata,
    spec: { ...base, replication: { synchronous: true, maxLagBytes: 4096, maxLagTransactions: 5 } },
    status: { phase: 'Ready', readyReplicas: 2 },
  });
  const hub = conversion.toHub(structuredClone(alpha));
  assert.deepEqual(hub.spec.replication, { synchronous: true, maxLag: { bytes: 4096, transactions: 5 } });
  assert.deepEqual(hub.status, alpha.status);
  assert.equal(hub.apiVersion, Database.apiVersion);
  assert.deepEqual(conversion.fromHub(structuredClone(hub)), alpha);
});

test('one bound alone, replication without bounds, and no replication convert both ways unchanged', () => {
  for (const replication of [{ maxLagTransactions: 9 }, { failoverDelaySeconds: 3 }, undefined]) {
    const alpha = DatabaseV1alpha1.object({
      metadata,
      spec: { ...base, ...(replication ? { replication } : {}) },
    });
    const hub = conversion.toHub(structuredClone(alpha));
    assert.equal(JSON.stringify(hub.spec.replication ?? {}).includes('maxLagTransactions'), false);
    assert.deepEqual(conversion.fromHub(structuredClone(hub)), alpha, JSON.stringify(replication));
  }
  const hub = Database.object({ metadata, spec: { ...base, replication: { maxLag: { bytes: 1 } } } });
  assert.deepEqual(conversion.fromHub(structuredClone(hub)).spec.replication, { maxLagBytes: 1 });
  assert.deepEqual(conversion.toHub(conversion.fromHub(structuredClone(hub))), hub);
});
