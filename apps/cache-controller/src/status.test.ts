import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { V1Deployment } from '@kubernetes/client-node';
import { findCondition } from '@regulon/runtime';
import { Cache, type CacheObject } from './api.ts';
import { desiredWorkload } from './children.ts';
import { computeStatus } from './status.ts';

const cache = (spec: Partial<CacheObject['spec']> = {}, currentVersion?: string): CacheObject => ({
  ...Cache.object({
    metadata: { name: 'c', namespace: 'ns', uid: 'u', generation: 2 },
    spec: { engine: 'redis', version: '7.4.11', replicas: 2, memory: '512Mi', maxMemoryPercent: 75, ...spec },
  }),
  ...(currentVersion ? { status: { currentVersion } } : {}),
});

/** The Deployment `c` asks for, as the API server reports it once its controller has rolled it out. */
function settled(c: CacheObject, image: string): V1Deployment {
  const d = structuredClone<V1Deployment>(desiredWorkload(c, image));
  return {
    ...d,
    metadata: { ...d.metadata, generation: 5, ownerReferences: [] },
    status: { observedGeneration: 5, replicas: 2, updatedReplicas: 2, readyReplicas: 2 },
  };
}

const ready = (c: CacheObject, live: V1Deployment) => {
  const status = computeStatus(c, { workload: live, desired: desiredWorkload(c, 'redis:7.4.11') }, undefined);
  return { status, ready: findCondition(status.conditions, 'Ready') };
};

describe('Cache status', () => {
  test('a workload that rolled out the desired template is Ready, and currentVersion moves to spec.version', () => {
    const c = cache({}, '7.4.10');
    const { status, ready: r } = ready(c, settled(c, 'redis:7.4.11'));
    assert.equal(r?.status, 'True');
    assert.equal(r?.reason, 'AllReplicasReady');
    assert.equal(status.currentVersion, '7.4.11');
  });

  test('a settled copy of the previous template (older image, older config hash) is not Ready, and currentVersion stays', () => {
    const c = cache({}, '7.4.10');
    const oldImage = ready(c, settled(c, 'redis:7.4.10'));
    assert.equal(oldImage.ready?.status, 'False');
    assert.equal(oldImage.ready?.reason, 'ReplicasNotReady');
    assert.equal(oldImage.status.currentVersion, '7.4.10');
    // Same image, the config of another maxMemoryPercent: the Pods still run the old redis.conf.
    const oldConfig = ready(c, settled(cache({ maxMemoryPercent: 50 }), 'redis:7.4.11'));
    assert.equal(oldConfig.ready?.status, 'False');
    assert.equal(oldConfig.status.currentVersion, '7.4.10');
  });

  test('quantities as the API server stores them (0.5Gi as 512Mi, 1024Mi as 1Gi) are the desired template', () => {
    for (const [memory, stored] of [
      ['0.5Gi', '512Mi'],
      ['1024Mi', '1Gi'],
    ] as const) {
      const c = cache({ memory });
      const live = settled(c, 'redis:7.4.11');
      const container = live.spec!.template.spec!.containers[0]!;
      container.resources = { requests: { cpu: '100m', memory: stored }, limits: { memory: stored } };
      assert.equal(ready(c, live).ready?.status, 'True', `memory ${memory} stored as ${stored}`);
    }
  });
});
