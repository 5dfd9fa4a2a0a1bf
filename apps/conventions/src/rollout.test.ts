import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rolledOut, type Workload } from './rollout.ts';

const desired: Workload = {
  spec: { replicas: 2, template: { spec: { containers: [{ name: 'db', image: 'postgres:16' }] } } },
};
const settled = (over: Partial<Workload> = {}): Workload => ({
  metadata: { generation: 3 },
  spec: {
    replicas: 2,
    template: {
      spec: { containers: [{ name: 'db', image: 'postgres:16', imagePullPolicy: 'IfNotPresent' }] },
    },
  },
  status: {
    observedGeneration: 3,
    replicas: 2,
    updatedReplicas: 2,
    readyReplicas: 2,
    currentRevision: 'r2',
    updateRevision: 'r2',
  },
  ...over,
});

test('a settled workload running the desired template is rolled out; server defaults do not matter', () => {
  assert.equal(rolledOut(settled(), desired), true);
});

test('a workload whose template differs from the desired one is not rolled out, however settled', () => {
  const old = settled();
  old.spec = { replicas: 2, template: { spec: { containers: [{ name: 'db', image: 'postgres:15' }] } } };
  assert.equal(rolledOut(old, desired), false);
});

test('a rollout in progress is not rolled out: generation, revisions, updated and ready replicas', () => {
  const s = settled().status!;
  assert.equal(rolledOut(settled({ status: { ...s, observedGeneration: 2 } }), desired), false);
  assert.equal(rolledOut(settled({ status: { ...s, currentRevision: 'r1' } }), desired), false);
  assert.equal(rolledOut(settled({ status: { ...s, updatedReplicas: 1 } }), desired), false);
  assert.equal(rolledOut(settled({ status: { ...s, readyReplicas: 1 } }), desired), false);
  assert.equal(rolledOut(settled({ status: { ...s, replicas: 3 } }), desired), false);
  assert.equal(rolledOut(undefined, desired), false);
});

test('OnDelete (the manager replaces the Pods): the current revision never catches up, every Pod updated is the end', () => {
  const s = settled().status!;
  const onDelete = (status: Workload['status']) => {
    const w = settled({ status });
    w.spec = { ...w.spec, updateStrategy: { type: 'OnDelete' } };
    return w;
  };
  assert.equal(rolledOut(onDelete({ ...s, currentRevision: 'r1' }), desired), true);
  assert.equal(rolledOut(onDelete({ ...s, currentRevision: 'r1', updatedReplicas: 1 }), desired), false);
});
