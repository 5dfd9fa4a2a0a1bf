// What the API server says about a MyApp it refuses, with no controller
// running: every input of the admission corpus is rejected with a message
// naming its field, or accepted. The Database and Cache templates carry those
// kinds' rules: a change the API server refuses in a template is reported the
// way it is for the kind itself, the cause a person has to act on first.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { InvalidError, KubeClient } from '@regulon/client';
import { admit, caseTitle, problemWith } from '@regulon/crd/testing';
import { start, type TestEnv } from '@regulon/testenv';
import { MyApp, type MyAppObject } from './api.ts';
import { MYAPP_CORPUS } from './testing/admission-corpus.ts';

describe('MyApp admission corpus', () => {
  let env: TestEnv;
  let client: KubeClient;
  let ns: string;

  before(async () => {
    env = await start();
    await env.installCRDs([MyApp.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 200, burst: 200 });
    ns = await env.newNamespace('myapp-admission');
  });
  after(async () => {
    client?.close();
    await env?.stop();
  });

  for (const [i, c] of MYAPP_CORPUS.cases.entries())
    test(caseTitle(c), async () => {
      const admission = await admit(client, MYAPP_CORPUS, c, { name: `a${i}`, namespace: ns });
      assert.equal(problemWith(c, admission), undefined);
    });
});

describe('MyApp template changes the API server refuses', () => {
  let env: TestEnv;
  let client: KubeClient;
  let ns: string;
  const apps = () => client.resource<MyAppObject>(MyApp.type);

  before(async () => {
    env = await start();
    await env.installCRDs([MyApp.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig);
    ns = await env.newNamespace('myapp-api');
    await apps().create(
      MyApp.object({
        metadata: { name: 'shop', namespace: ns },
        spec: {
          image: 'ghcr.io/example/shop:1.0',
          replicas: 1,
          port: 8080,
          database: { engine: 'postgres', version: '16.8', replicas: 1, storage: { size: '1Gi' } },
          cache: { engine: 'redis', version: '8.0.6', replicas: 1, memory: '256Mi', maxMemoryPercent: 75 },
        },
      }),
    );
  });
  after(async () => {
    client?.close();
    await env?.stop();
  });

  const refused = async (spec: Record<string, unknown>) => {
    const err = await apps()
      .patch('shop', { spec }, { type: 'merge', namespace: ns })
      .then(
        () => assert.fail(`${JSON.stringify(spec)} was accepted`),
        (e: unknown) => e,
      );
    assert.ok(err instanceof InvalidError, String(err));
    return err.causes.map((c) => `${c.field}: ${c.message}`);
  };

  test('an engine change in a template is reported as one first, and not as a version problem', async () => {
    for (const [template, change] of [
      ['database', { engine: 'mysql' }],
      ['database', { engine: 'mysql', version: '8.4.4' }],
      ['cache', { engine: 'memcached', version: '1.6.45' }],
    ] as const) {
      const causes = await refused({ [template]: change });
      assert.match(
        causes[0] ?? '',
        new RegExp(`^spec\\.${template}\\.engine: .*engine is immutable`),
        JSON.stringify(change),
      );
      assert.deepEqual(
        causes.filter((c) => /major version|downgrade/.test(c)),
        [],
        JSON.stringify(change),
      );
    }
  });
});
