// What the API server says about a Cache it refuses, with no controller
// running: every input of the admission corpus is rejected with a message
// naming its field, or accepted; and of a refused change, the cause a person
// has to act on comes first, and a rule that only follows from it does not
// speak at all.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { InvalidError, KubeClient } from '@regulon/client';
import { admit, caseTitle, problemWith } from '@regulon/crd/testing';
import { start, type TestEnv } from '@regulon/testenv';
import { Cache, type CacheObject } from './api.ts';
import { CACHE_CORPUS } from './testing/admission-corpus.ts';

describe('Cache admission corpus', () => {
  let env: TestEnv;
  let client: KubeClient;
  let ns: string;

  before(async () => {
    env = await start();
    await env.installCRDs([Cache.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 200, burst: 200 });
    ns = await env.newNamespace('cache-admission');
  });
  after(async () => {
    client?.close();
    await env?.stop();
  });

  for (const [i, c] of CACHE_CORPUS.cases.entries())
    test(caseTitle(c), async () => {
      const admission = await admit(client, CACHE_CORPUS, c, { name: `a${i}`, namespace: ns });
      assert.equal(problemWith(c, admission), undefined);
    });
});

describe('Cache changes the API server refuses', () => {
  let env: TestEnv;
  let client: KubeClient;
  let ns: string;
  let n = 0;
  const caches = () => client.resource<CacheObject>(Cache.type);

  before(async () => {
    env = await start();
    await env.installCRDs([Cache.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig);
    ns = await env.newNamespace('cache-api');
  });
  after(async () => {
    client?.close();
    await env?.stop();
  });

  const stored = async (spec: Partial<CacheObject['spec']>) => {
    const name = `c${++n}`;
    await caches().create(
      Cache.object({
        metadata: { name, namespace: ns },
        spec: {
          engine: 'redis',
          version: '8.0.6',
          replicas: 1,
          memory: '256Mi',
          maxMemoryPercent: 75,
          ...spec,
        },
      }),
    );
    return name;
  };
  /** The causes, in the order the API server reports them, of refusing `spec` as a change to `name`. */
  const refused = async (name: string, spec: Record<string, unknown>) => {
    const err = await caches()
      .patch(name, { spec }, { type: 'merge', namespace: ns })
      .then(
        () => assert.fail(`${JSON.stringify(spec)} was accepted`),
        (e: unknown) => e,
      );
    assert.ok(err instanceof InvalidError, String(err));
    return err.causes.map((c) => `${c.field}: ${c.message}`);
  };

  test('an engine change is reported as one first, before what the other engine would not support', async () => {
    const plain = await stored({ evictionPolicy: 'allkeys-lru' });
    const persistent = await stored({ persistence: { enabled: true, size: '1Gi' } });
    const memcached = await stored({ engine: 'memcached', version: '1.6.45' });
    for (const [name, change] of [
      [plain, { engine: 'memcached' }],
      [plain, { engine: 'memcached', version: '1.6.45' }],
      [persistent, { engine: 'memcached', version: '1.6.45' }],
      [memcached, { engine: 'redis', version: '7.2.15', persistence: { enabled: true } }],
    ] as const) {
      const causes = await refused(name, change);
      assert.match(causes[0] ?? '', /^spec\.engine: .*engine is immutable/, JSON.stringify(change));
      // Transition rules follow from the engine change, so they stay silent.
      assert.deepEqual(
        causes.filter((c) => /downgraded|after creation/.test(c)),
        [],
        JSON.stringify(change),
      );
    }
  });

  test('mode is fixed at creation, both ways, with the reason and the way out', async () => {
    const standalone = await stored({ replicas: 3 });
    const replicated = await stored({ replicas: 3, mode: 'replicated' });
    for (const [name, change, from, to] of [
      [standalone, { mode: 'replicated' }, 'standalone', 'replicated'],
      [replicated, { mode: 'standalone' }, 'replicated', 'standalone'],
    ] as const) {
      const causes = await refused(name, change);
      assert.equal(causes.length, 1, causes.join('; '));
      assert.match(
        causes[0]!,
        new RegExp(
          `^spec\\.mode: .*mode cannot change after creation \\(${from} to ${to}\\): .*Create a new Cache`,
        ),
      );
    }
    // A Cache created without spec.mode is standalone: the API server fills the default in.
    assert.equal((await caches().get(standalone, { namespace: ns })).spec.mode, 'standalone');
  });
});
