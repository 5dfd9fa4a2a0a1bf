// The object-first reconcile (builder.reconcile) against the real API server:
// what the runtime guarantees around a controller's own code.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { KubeClient, Kinds, isNotFound, metadataOnly } from '@regulon/client';
import { Conditions, defineKind } from '@regulon/crd';
import { start, type TestEnv } from '@regulon/testenv';
import type { Registry } from 'prom-client';
import { Type } from 'typebox';
import { setCondition } from '../status/conditions.ts';
import { createLogger } from '../observability/logging.ts';
import type { Manager } from '../manager/manager.ts';
import { testManager } from '../manager/test-manager.ts';
import { ProblemError } from '../status/problems.ts';
import { eventually } from '../testing/wait.ts';

const Web = defineKind({
  group: 'runtime.test.regulon.dev',
  version: 'v1',
  kind: 'Web',
  plural: 'webs',
  singular: 'web',
  scope: 'Namespaced',
  spec: Type.Object({
    greeting: Type.String(),
    broken: Type.Optional(Type.Boolean()),
    secretName: Type.Optional(Type.String()),
  }),
  status: Type.Object({
    observedGeneration: Type.Optional(Type.Integer()),
    conditions: Type.Optional(Conditions()),
    pages: Type.Optional(Type.Integer()),
  }),
});

describe('object-first reconcile', () => {
  let env: TestEnv;
  let client: KubeClient;
  const managers: Manager[] = [];

  before(async () => {
    env = await start();
    await env.installCRDs([Web.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 500, burst: 500 });
  });
  after(async () => {
    for (const m of managers) m.stop();
    client.close();
    await env.stop();
  });

  function manager(namespace: string): { mgr: Manager; registry: Registry } {
    const mgr = testManager(env.kubeConfig, {
      logger: createLogger({ level: 'silent' }),
      clientOptions: { qps: 500, burst: 500 },
      namespace,
      gracefulShutdownTimeoutMs: 5000,
    });
    managers.push(mgr);
    return { mgr, registry: mgr.registry };
  }

  /** Writes (not reads) the manager's client sent, by verb, from its request metrics. */
  async function writes(registry: Registry): Promise<number> {
    const metric = await registry.getSingleMetric('rest_client_requests_total')?.get();
    return (metric?.values ?? [])
      .filter((v) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(String(v.labels['method'])))
      .reduce((sum, v) => sum + v.value, 0);
  }

  test('the reconcile gets the typed object, applies owned children, and a converged pass writes nothing', async () => {
    const ns = await env.newNamespace('typed');
    const { mgr, registry } = manager(ns);
    let passes = 0;
    mgr
      .controller('web')
      .for(Web)
      .owns(Kinds.ConfigMap)
      .withStatus((web, problem, ctx) => ({
        observedGeneration: web.metadata.generation ?? 0,
        pages: ctx.list(Kinds.ConfigMap, { labels: { web: web.metadata.name } }).length,
        conditions: setCondition(web.status?.conditions ?? [], {
          type: 'Ready',
          status: problem ? 'False' : 'True',
          reason: problem?.reason ?? 'Serving',
          message: problem?.message ?? 'Serving',
        }),
      }))
      .reconcile(async (web, ctx) => {
        passes++;
        if (web.spec.broken) throw new ProblemError({ reason: 'Broken', message: 'spec.broken is set' });
        await ctx.apply([
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: `${web.metadata.name}-page`, labels: { web: web.metadata.name } },
            data: { greeting: web.spec.greeting },
          } satisfies V1ConfigMap,
        ]);
      });
    const running = mgr.start();
    const webs = client.resource(Web);
    await webs.create(Web.object({ metadata: { name: 'site', namespace: ns }, spec: { greeting: 'hello' } }));
    const page = await eventually('the owned ConfigMap', () =>
      client.resource(Kinds.ConfigMap).get('site-page', { namespace: ns }),
    );
    assert.equal(page.data?.['greeting'], 'hello');
    assert.equal(page.metadata?.ownerReferences?.[0]?.kind, 'Web');
    await eventually('status: one page, Ready', async () => {
      const web = await webs.get('site', { namespace: ns });
      return web.status?.pages === 1 && web.status.conditions?.[0]?.status === 'True';
    });

    // A pass with nothing to change sends no write at all: no apply, no status.
    const before = await writes(registry);
    const passesBefore = passes;
    await webs.patch('site', { metadata: { labels: { poke: '1' } } }, { type: 'merge', namespace: ns });
    await eventually('a reconcile of the poked object', () => passes > passesBefore);
    assert.equal(await writes(registry), before);

    // A ProblemError stops the reconcile and becomes Ready=False with its reason, and a Warning Event.
    await webs.patch('site', { spec: { broken: true } }, { type: 'merge', namespace: ns });
    await eventually('Ready=False, Broken', async () => {
      const web = await webs.get('site', { namespace: ns });
      return web.status?.conditions?.[0]?.reason === 'Broken';
    });
    mgr.stop();
    await running;
  });

  test('a child whose name is taken by a foreign object is never adopted: ChildConflict', async () => {
    const ns = await env.newNamespace('conflict');
    await client.resource(Kinds.ConfigMap).create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'site-page', namespace: ns },
      data: { mine: 'yes' },
    });
    const { mgr } = manager(ns);
    mgr
      .controller('web')
      .for(Web)
      .owns(Kinds.ConfigMap)
      .withStatus((web, problem) => ({
        conditions: setCondition([], {
          type: 'Ready',
          status: problem ? 'False' : 'True',
          reason: problem?.reason ?? 'Serving',
          message: problem?.message ?? 'Serving',
        }),
      }))
      .reconcile(async (web, ctx) => {
        await ctx.apply([
          { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${web.metadata.name}-page` }, data: {} },
        ]);
      });
    const running = mgr.start();
    await client
      .resource(Web)
      .create(Web.object({ metadata: { name: 'site', namespace: ns }, spec: { greeting: 'x' } }));
    await eventually('Ready=False, ChildConflict', async () => {
      const web = await client.resource(Web).get('site', { namespace: ns });
      return web.status?.conditions?.[0]?.reason === 'ChildConflict';
    });
    const cm = await client.resource(Kinds.ConfigMap).get('site-page', { namespace: ns });
    assert.deepEqual(cm.data, { mine: 'yes' });
    assert.equal(cm.metadata?.ownerReferences, undefined);
    mgr.stop();
    await running;
  });

  test('reading a kind the controller did not declare is an error, not an empty answer', async () => {
    const ns = await env.newNamespace('undeclared');
    const { mgr } = manager(ns);
    const seen: unknown[] = [];
    mgr
      .controller('web')
      .for(Web)
      .owns(metadataOnly(Kinds.Secret))
      .reconcile((_web, ctx) => {
        try {
          ctx.get(Kinds.Secret, 'anything'); // declared metadata-only, asked in full
        } catch (err) {
          seen.push(err);
        }
        return Promise.resolve();
      });
    const running = mgr.start();
    await client
      .resource(Web)
      .create(Web.object({ metadata: { name: 'site', namespace: ns }, spec: { greeting: 'x' } }));
    await eventually('a reconcile', () => seen.length >= 1);
    assert.match(String(seen[0]), /does not declare/);
    mgr.stop();
    await running;
  });

  test('a watches() map finds its owners through an index of the cache it is given', async () => {
    const ns = await env.newNamespace('indexed');
    const { mgr } = manager(ns);
    const reconciled: string[] = [];
    mgr
      .controller('web')
      .for(Web)
      .index(Web, 'secretName', (web) => (web.spec.secretName ? [web.spec.secretName] : []))
      .watches(metadataOnly(Kinds.Secret), (secret, cache) =>
        cache
          .list(Web, {
            namespace: secret.metadata.namespace,
            index: { name: 'secretName', value: secret.metadata.name ?? '' },
          })
          .map((web) => ({ namespace: ns, name: web.metadata.name ?? '' })),
      )
      .reconcile((web) => {
        reconciled.push(web.metadata.name);
        return Promise.resolve();
      });
    const running = mgr.start();
    const webs = client.resource(Web);
    await webs.create(
      Web.object({ metadata: { name: 'uses', namespace: ns }, spec: { greeting: 'x', secretName: 'key' } }),
    );
    await webs.create(Web.object({ metadata: { name: 'other', namespace: ns }, spec: { greeting: 'x' } }));
    await eventually('both reconciled once', () => reconciled.length >= 2);
    reconciled.length = 0;
    await client
      .resource(Kinds.Secret)
      .create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'key', namespace: ns } });
    await eventually('the Web naming the Secret reconciled', () => reconciled.includes('uses'));
    // A new Web is the fence: one worker takes keys in order, so anything the Secret woke comes before it.
    await webs.create(Web.object({ metadata: { name: 'fence', namespace: ns }, spec: { greeting: 'x' } }));
    await eventually('the fence', () => reconciled.includes('fence'));
    assert.deepEqual(reconciled, ['uses', 'fence']);
    mgr.stop();
    await running;
  });

  test('finalize runs once, before the object goes, and the finalizer is the runtime’s to add and remove', async () => {
    const ns = await env.newNamespace('finalize');
    const { mgr } = manager(ns);
    const finalized: string[] = [];
    mgr
      .controller('web')
      .for(Web)
      .withFinalizer({
        name: 'runtime.test.regulon.dev/cleanup',
        finalize: (web) => {
          finalized.push(web.metadata.name);
          return Promise.resolve();
        },
      })
      .reconcile(async () => {});
    const running = mgr.start();
    const webs = client.resource(Web);
    await webs.create(Web.object({ metadata: { name: 'site', namespace: ns }, spec: { greeting: 'x' } }));
    await eventually('the finalizer added', async () => {
      const web = await webs.get('site', { namespace: ns });
      return web.metadata.finalizers?.join() === 'runtime.test.regulon.dev/cleanup';
    });
    await webs.delete('site', { namespace: ns });
    await eventually('the object gone', () =>
      webs.get('site', { namespace: ns }).then(
        () => false,
        (err: unknown) => isNotFound(err),
      ),
    );
    // Another object's events keep the controller busy: a late second finalize would show here.
    await webs.create(Web.object({ metadata: { name: 'other', namespace: ns }, spec: { greeting: 'x' } }));
    await eventually('the other object reconciled', async () => {
      const web = await webs.get('other', { namespace: ns });
      return Boolean(web.metadata.finalizers?.length);
    });
    assert.deepEqual(finalized, ['site']);
    mgr.stop();
    await running;
  });
});
