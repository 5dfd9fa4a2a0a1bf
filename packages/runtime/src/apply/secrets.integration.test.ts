// createSecretOnce against the real API server: a Secret is created once, a
// lost one is never replaced while data set up with its password exists, and
// one the owner did not create is never used.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { KubeClient, Kinds, isNotFound, type KubeObject } from '@regulon/client';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import { Registry, type Counter } from 'prom-client';
import { ChildConflictError, type Owner } from './ownership.ts';
import { ChildRejectedError } from '../status/problems.ts';
import { createSecretOnce, generatePassword } from './secrets.ts';

let env: TestEnv;
let registry: Registry;
let client: KubeClient;
let ns: string;
let owner: Owner;
before(async () => {
  env = await start();
  registry = new Registry();
  client = KubeClient.fromKubeConfig(env.kubeConfig, { registry });
  ns = await env.newNamespace('secrets');
  // Any object with a uid can own the Secret.
  const cm = await client
    .resource<V1ConfigMap>(Kinds.ConfigMap)
    .create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owner', namespace: ns } });
  owner = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'owner', namespace: ns, uid: cm.metadata!.uid! },
  };
});
after(async () => {
  client.close();
  await env.stop();
});

const secrets = () => client.resource<V1Secret>(Kinds.Secret);
const read = (name: string) =>
  secrets()
    .get(name, { namespace: ns })
    .catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
const credentials = (name: string) => () => ({
  metadata: { name },
  stringData: { password: generatePassword() },
});
const opts = { fieldManager: 'test', existing: undefined };

/** Requests this test file's client has sent so far, from rest_client_requests_total. */
async function requestsSent(): Promise<number> {
  const metric = registry.getSingleMetric('rest_client_requests_total') as Counter | undefined;
  return ((await metric?.get())?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

test('a missing Secret is created once, owned; a second call (cache behind) writes nothing', async () => {
  assert.equal(await createSecretOnce(client, credentials('fresh'), { ...opts, owner }), 'created');
  const created = await read('fresh');
  assert.equal(created?.metadata?.ownerReferences?.[0]?.uid, owner.metadata.uid);
  assert.equal(await createSecretOnce(client, credentials('fresh'), { ...opts, owner }), 'exists');
  assert.equal((await read('fresh'))?.metadata?.resourceVersion, created?.metadata?.resourceVersion);
});

test('a Secret the cache shows is never touched again: exists, without a request, even when nothing uses it', async () => {
  await createSecretOnce(client, credentials('cached'), { ...opts, owner });
  // The cache's view of Secrets is metadata only.
  const cached = await secrets().get('cached', { namespace: ns, metadataOnly: true });
  const before = await requestsSent();
  const outcome = await createSecretOnce(client, credentials('cached'), {
    ...opts,
    owner,
    existing: cached,
    inUse: () => false,
  });
  assert.equal(outcome, 'exists');
  assert.equal((await requestsSent()) - before, 0);
  assert.equal((await read('cached'))?.metadata?.resourceVersion, cached.metadata?.resourceVersion);
});

test('no data depends on it (inUse false): a missing Secret is created', async () => {
  const outcome = await createSecretOnce(client, credentials('unused'), {
    ...opts,
    owner,
    inUse: () => false,
  });
  assert.equal(outcome, 'created');
  assert.ok(await read('unused'));
});

test('data depends on it (inUse true): a missing Secret is lost, and nothing is created', async () => {
  const outcome = await createSecretOnce(client, credentials('lost'), {
    ...opts,
    owner,
    inUse: () => Promise.resolve(true),
  });
  assert.equal(outcome, 'lost');
  assert.equal(await read('lost'), undefined, 'no new password was created');
});

test('data depends on it but the cache has not seen the Secret yet: the API server says it exists, nothing is written', async () => {
  await createSecretOnce(client, credentials('lagging'), { ...opts, owner });
  const stored = await read('lagging');
  // `existing: undefined` is a cache that has not caught up with the create.
  const outcome = await createSecretOnce(client, credentials('lagging'), {
    ...opts,
    owner,
    inUse: () => true,
  });
  assert.equal(outcome, 'exists');
  const after = await read('lagging');
  assert.equal(after?.metadata?.resourceVersion, stored?.metadata?.resourceVersion);
  assert.equal(after?.data?.['password'], stored?.data?.['password']);
});

test('a Secret of that name the owner did not create is never used or adopted: ChildConflictError, nothing written', async () => {
  const theirs = await secrets().create({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'users-own', namespace: ns },
    stringData: { password: 'not generated here' },
  });
  await assert.rejects(
    createSecretOnce(client, credentials('users-own'), { ...opts, owner, existing: theirs }),
    (err: unknown) =>
      err instanceof ChildConflictError &&
      /Secret .*\/users-own already exists and was not created by it/.test(err.message),
  );
  const after = await read('users-own');
  assert.equal(after?.metadata?.resourceVersion, theirs.metadata?.resourceVersion);
  assert.equal(after?.metadata?.ownerReferences, undefined);
});

test('a Secret of that name the cache has not shown yet is still never used: ChildConflictError, nothing written', async () => {
  const theirs = await secrets().create({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'users-own-uncached', namespace: ns },
    stringData: { password: 'not generated here' },
  });
  await assert.rejects(
    createSecretOnce(client, credentials('users-own-uncached'), { ...opts, owner }),
    (err: unknown) => err instanceof ChildConflictError,
  );
  const after = await read('users-own-uncached');
  assert.equal(after?.metadata?.resourceVersion, theirs.metadata?.resourceVersion);
  assert.equal(after?.metadata?.ownerReferences, undefined);
});

test('a Secret another owner controls is never used: ChildConflictError naming that owner, nothing written', async () => {
  const cm = await client
    .resource<V1ConfigMap>(Kinds.ConfigMap)
    .create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other-owner', namespace: ns } });
  const otherOwner: Owner = {
    ...owner,
    metadata: { name: 'other-owner', namespace: ns, uid: cm.metadata!.uid! },
  };
  await createSecretOnce(client, credentials('theirs'), { ...opts, owner: otherOwner });
  const theirs = await read('theirs');
  assert.ok(theirs);
  await assert.rejects(
    createSecretOnce(client, credentials('theirs'), { ...opts, owner, existing: theirs, inUse: () => true }),
    (err: unknown) =>
      err instanceof ChildConflictError &&
      err.existingOwner?.uid === otherOwner.metadata.uid &&
      /Secret .*\/theirs already exists and is controlled by ConfigMap other-owner, not by ConfigMap owner/.test(
        err.message,
      ),
  );
  const after = await read('theirs');
  assert.equal(after?.metadata?.resourceVersion, theirs.metadata?.resourceVersion);
  assert.equal(after?.data?.['password'], theirs.data?.['password']);
});

test("a create the API server refuses for good (a quota on Secrets) throws ChildRejectedError with the server's message", async () => {
  const quotaNs = await env.newNamespace('secrets-quota');
  const quotas = {
    group: '',
    version: 'v1',
    kind: 'ResourceQuota',
    plural: 'resourcequotas',
    namespaced: true,
  };
  await client.resource(quotas).create({
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: 'no-secrets', namespace: quotaNs },
    spec: { hard: { secrets: '0' } },
  } as KubeObject);
  await eventually('quota in effect', async () => {
    const q = await client
      .resource<KubeObject & { status?: { hard?: object } }>(quotas)
      .get('no-secrets', { namespace: quotaNs });
    return q.status?.hard !== undefined;
  });
  const cm = await client
    .resource<V1ConfigMap>(Kinds.ConfigMap)
    .create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owner', namespace: quotaNs } });
  const quotaOwner: Owner = {
    ...owner,
    metadata: { name: 'owner', namespace: quotaNs, uid: cm.metadata!.uid! },
  };
  await assert.rejects(
    createSecretOnce(client, credentials('refused'), { ...opts, owner: quotaOwner }),
    (err: unknown) =>
      err instanceof ChildRejectedError &&
      /^Secret refused was rejected by the API server: secrets "refused" is forbidden: exceeded quota: no-secrets/.test(
        err.message,
      ),
  );
});
