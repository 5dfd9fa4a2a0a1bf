// Finalizer helpers against a real API server: writes are guarded by the
// resourceVersion they were computed from, a concurrent writer forces a
// re-read and retry, and nobody else's finalizer is ever lost.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  KubeClient,
  Kinds,
  isConflict,
  isNotFound,
  type KubeObject,
  type ResourceClient,
} from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import { Registry, type Counter } from 'prom-client';
import { addFinalizer, hasFinalizer, removeFinalizer, type ResourceClientSource } from './finalizers.ts';

const MINE = 'regulon.dev/test-cleanup';
const OTHER = 'other.example.com/keep';
const THIRD = 'third.example.com/keep';

describe('finalizers', () => {
  let env: TestEnv;
  let registry: Registry;
  let client: KubeClient;
  // A second writer, as another controller would be.
  let other: KubeClient;
  let ns: string;

  before(async () => {
    env = await start();
    registry = new Registry();
    client = KubeClient.fromKubeConfig(env.kubeConfig, { registry });
    other = KubeClient.fromKubeConfig(env.kubeConfig);
    ns = await env.newNamespace('finalizers');
  });
  after(async () => {
    client.close();
    other.close();
    await env.stop();
  });

  const configMaps = (c: ResourceClientSource = client): ResourceClient<KubeObject> =>
    c.resource(Kinds.ConfigMap);

  /** Requests this test's client made, by method and code, from its rest_client_requests_total. */
  async function requests(method: string, code?: string): Promise<number> {
    const metric = registry.getSingleMetric('rest_client_requests_total') as Counter | undefined;
    const values = (await metric?.get())?.values ?? [];
    return values
      .filter((v) => v.labels['method'] === method && (code === undefined || v.labels['code'] === code))
      .reduce((sum, v) => sum + v.value, 0);
  }

  async function create(name: string, finalizers?: string[]): Promise<KubeObject> {
    return configMaps(other).create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: ns, ...(finalizers ? { finalizers } : {}) },
    });
  }

  async function otherAdds(name: string, finalizer: string): Promise<void> {
    const fresh = await configMaps(other).get(name, { namespace: ns });
    await configMaps(other).patch(
      name,
      {
        metadata: {
          resourceVersion: fresh.metadata?.resourceVersion,
          finalizers: [...(fresh.metadata?.finalizers ?? []), finalizer],
        },
      },
      { type: 'merge', namespace: ns },
    );
  }

  test('add then remove; each is a no-op without any request when already done', async () => {
    const cm = await create('plain');
    const added = await addFinalizer(client, Kinds.ConfigMap, cm, MINE);
    assert.deepEqual(added.metadata?.finalizers, [MINE]);
    assert.equal(hasFinalizer(added, MINE), true);
    assert.notEqual(added.metadata?.resourceVersion, cm.metadata?.resourceVersion);

    const patchesBefore = await requests('PATCH');
    const getsBefore = await requests('GET');
    assert.equal(
      await addFinalizer(client, Kinds.ConfigMap, added, MINE),
      added,
      'already there: the same object back',
    );
    const removedNothing = await removeFinalizer(client, Kinds.ConfigMap, cm, MINE);
    assert.equal(removedNothing, cm, 'the stale copy has no finalizer: nothing to do');
    assert.equal(await requests('PATCH'), patchesBefore);
    assert.equal(await requests('GET'), getsBefore);

    const removed = await removeFinalizer(client, Kinds.ConfigMap, added, MINE);
    assert.equal(hasFinalizer(removed, MINE), false);
    assert.equal((await configMaps().get('plain', { namespace: ns })).metadata?.finalizers, undefined);
  });

  test('a concurrent writer between read and patch forces a retry; its finalizer survives', async () => {
    const stale = await create('race-add');
    await otherAdds('race-add', OTHER);
    const conflictsBefore = await requests('PATCH', '409');
    const result = await addFinalizer(client, Kinds.ConfigMap, stale, MINE);
    assert.equal(
      await requests('PATCH', '409'),
      conflictsBefore + 1,
      'the stale patch was refused exactly once',
    );
    assert.deepEqual(result.metadata?.finalizers, [OTHER, MINE]);
    const server = await configMaps().get('race-add', { namespace: ns });
    assert.deepEqual(server.metadata?.finalizers, [OTHER, MINE]);
  });

  test('removing from a stale copy keeps a finalizer added concurrently', async () => {
    const cm = await create('race-remove', [MINE, OTHER]);
    await otherAdds('race-remove', THIRD);
    const result = await removeFinalizer(client, Kinds.ConfigMap, cm, MINE);
    assert.deepEqual(result.metadata?.finalizers, [OTHER, THIRD]);
  });

  test('a writer that wins every round exhausts the bounded retries with a ConflictError', async () => {
    await create('always-loses');
    // A real second writer that changes the object right before each of our
    // patches, so that every patch carries a stale resourceVersion.
    let round = 0;
    const racing: ResourceClientSource = {
      resource<T extends KubeObject>(type: typeof Kinds.ConfigMap): ResourceClient<T> {
        const real = client.resource(type) as unknown as ResourceClient<T>;
        return new Proxy(real, {
          get(target, prop) {
            if (prop === 'patch') {
              return async (...args: Parameters<ResourceClient<T>['patch']>) => {
                await otherAdds('always-loses', `round${round++}.example.com/x`);
                return target.patch(...args);
              };
            }
            const value: unknown = Reflect.get(target, prop, target);
            return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
          },
        });
      },
    };
    const stale = await configMaps().get('always-loses', { namespace: ns });
    await assert.rejects(addFinalizer(racing, Kinds.ConfigMap, stale, MINE, { maxAttempts: 3 }), (err) =>
      isConflict(err),
    );
    assert.equal(round, 3, 'one patch per attempt');
    const server = await configMaps().get('always-loses', { namespace: ns });
    assert.equal(hasFinalizer(server, MINE), false);
    assert.equal(
      server.metadata?.finalizers?.length,
      3,
      "every one of the other writer's finalizers is there",
    );
  });

  test('an object given without resourceVersion is read first, so the write is still guarded', async () => {
    await create('no-rv', [OTHER]);
    const result = await addFinalizer<KubeObject>(
      client,
      Kinds.ConfigMap,
      { metadata: { name: 'no-rv', namespace: ns } },
      MINE,
    );
    assert.deepEqual(result.metadata?.finalizers, [OTHER, MINE]);
  });

  test('removing the last finalizer of a deleted object lets it go', async () => {
    const cm = await addFinalizer(client, Kinds.ConfigMap, await create('deleting'), MINE);
    await configMaps().delete('deleting', { namespace: ns });
    const terminating = await configMaps().get('deleting', { namespace: ns });
    assert.ok(terminating.metadata?.deletionTimestamp, 'held by the finalizer');
    await removeFinalizer(client, Kinds.ConfigMap, cm, MINE);
    await assert.rejects(configMaps().get('deleting', { namespace: ns }), (err) => isNotFound(err));
  });

  test('works on cluster-scoped objects', async () => {
    const name = `${ns}-scoped`;
    const namespaces = client.resource(Kinds.Namespace);
    const created = await namespaces.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    const added = await addFinalizer(client, Kinds.Namespace, created, MINE);
    assert.deepEqual(added.metadata?.finalizers, [MINE]);
    const removed = await removeFinalizer(client, Kinds.Namespace, added, MINE);
    assert.equal(hasFinalizer(removed, MINE), false);
    await namespaces.delete(name);
  });

  test('rejects a malformed finalizer name before any request', async () => {
    const obj = { metadata: { name: 'x', namespace: ns, resourceVersion: '1' } };
    const patchesBefore = await requests('PATCH');
    await assert.rejects(addFinalizer(client, Kinds.ConfigMap, obj, 'not a name'), TypeError);
    await assert.rejects(removeFinalizer(client, Kinds.ConfigMap, obj, 'a/b/c'), TypeError);
    assert.equal(await requests('PATCH'), patchesBefore);
    assert.equal(hasFinalizer({}, MINE), false);
  });
});
