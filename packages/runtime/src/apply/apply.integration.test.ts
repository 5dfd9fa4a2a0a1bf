// applyChild and deleteChildIfControlled against the real API server: a child
// is never adopted or deleted unless its owner controls it, a converged child
// costs no request, drift is reverted, and a refused apply says why.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { KubeClient, Kinds, isNotFound } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import { Registry, type Counter } from 'prom-client';
import { applyChild, deleteChildIfControlled } from './apply.ts';
import { APPLIED_HASH_ANNOTATION } from './converged.ts';
import { ChildConflictError, controllerReference, type Owner } from './ownership.ts';
import { ChildRejectedError } from '../status/problems.ts';

let env: TestEnv;
let registry: Registry;
let client: KubeClient;
let ns: string;
let owner: Owner;
let otherOwner: Owner;
before(async () => {
  env = await start();
  registry = new Registry();
  client = KubeClient.fromKubeConfig(env.kubeConfig, { registry });
  ns = await env.newNamespace('apply');
  owner = await ownerNamed('owner');
  otherOwner = await ownerNamed('other-owner');
});
after(async () => {
  client.close();
  await env.stop();
});

const FIELD_MANAGER = 'apply-test';
const configMaps = () => client.resource<V1ConfigMap>(Kinds.ConfigMap);

/** Any object with a uid can own a child: a ConfigMap keeps the test free of CRDs. */
async function ownerNamed(name: string): Promise<Owner> {
  const cm = await configMaps().create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: ns },
  });
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, uid: cm.metadata!.uid! } };
}

const child = (name: string, data: Record<string, string>): V1ConfigMap => ({ metadata: { name }, data });

const read = (name: string) =>
  configMaps()
    .get(name, { namespace: ns })
    .catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });

/** Requests this test file's client has sent so far (every method, every answer), from rest_client_requests_total. */
async function requestsSent(): Promise<number> {
  const metric = registry.getSingleMetric('rest_client_requests_total') as Counter | undefined;
  return ((await metric?.get())?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

/** How many requests `fn` sent, with its result (or the error it threw). */
async function counting<R>(
  fn: () => Promise<R>,
): Promise<{ sent: number; result: R | undefined; error: unknown }> {
  const before = await requestsSent();
  try {
    const result = await fn();
    return { sent: (await requestsSent()) - before, result, error: undefined };
  } catch (error) {
    return { sent: (await requestsSent()) - before, result: undefined, error };
  }
}

test('a new child is created in the owner namespace, controlled by the owner, carrying the applied hash', async () => {
  const applied = await applyChild(client, Kinds.ConfigMap, child('fresh', { a: '1' }), {
    fieldManager: FIELD_MANAGER,
    owner,
  });
  const stored = await read('fresh');
  assert.equal(stored?.metadata?.namespace, ns);
  assert.deepEqual(stored?.metadata?.ownerReferences, [controllerReference(owner)]);
  assert.deepEqual(stored?.data, { a: '1' });
  assert.match(stored?.metadata?.annotations?.[APPLIED_HASH_ANNOTATION] ?? '', /^[0-9a-f]{16}$/);
  assert.equal(
    applied.metadata?.resourceVersion,
    stored?.metadata?.resourceVersion,
    'returns what the server stored',
  );
});

test('a same-named object nobody controls is never adopted: ChildConflictError, no request, object unchanged', async () => {
  const theirs = await configMaps().create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'persons-own', namespace: ns },
    data: { a: 'theirs' },
  });
  const { sent, error } = await counting(() =>
    applyChild(client, Kinds.ConfigMap, child('persons-own', { a: 'ours' }), {
      fieldManager: FIELD_MANAGER,
      owner,
      existing: theirs,
    }),
  );
  assert.ok(error instanceof ChildConflictError, `expected ChildConflictError, got ${String(error)}`);
  assert.equal(error.existingOwner, undefined);
  assert.equal(error.childName, 'persons-own');
  assert.match(
    error.message,
    new RegExp(`^ConfigMap ${ns}/persons-own already exists and was not created by it`),
  );
  assert.equal(sent, 0);
  const after = await read('persons-own');
  assert.equal(after?.metadata?.resourceVersion, theirs.metadata?.resourceVersion);
  assert.equal(after?.metadata?.ownerReferences, undefined);
  assert.deepEqual(after?.data, { a: 'theirs' });
});

test('an object the cache has not shown yet is looked up first, and still never adopted: one list by name, no write', async () => {
  const theirs = await configMaps().create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'not-cached-yet', namespace: ns },
    data: { a: 'theirs' },
  });
  const { sent, error } = await counting(() =>
    applyChild(client, Kinds.ConfigMap, child('not-cached-yet', { a: 'ours' }), {
      fieldManager: FIELD_MANAGER,
      owner,
      existing: undefined,
    }),
  );
  assert.ok(error instanceof ChildConflictError, `expected ChildConflictError, got ${String(error)}`);
  assert.equal(sent, 1);
  const after = await read('not-cached-yet');
  assert.equal(after?.metadata?.resourceVersion, theirs.metadata?.resourceVersion);
  assert.deepEqual(after?.data, { a: 'theirs' });
});

test('a child another owner controls is never taken over: ChildConflictError naming that owner, object unchanged', async () => {
  const theirs = await applyChild(client, Kinds.ConfigMap, child('contested', { a: 'theirs' }), {
    fieldManager: 'other-controller',
    owner: otherOwner,
  });
  const { sent, error } = await counting(() =>
    applyChild(client, Kinds.ConfigMap, child('contested', { a: 'ours' }), {
      fieldManager: FIELD_MANAGER,
      owner,
      existing: theirs,
    }),
  );
  assert.ok(error instanceof ChildConflictError, `expected ChildConflictError, got ${String(error)}`);
  assert.equal(error.existingOwner?.uid, otherOwner.metadata.uid);
  assert.match(
    error.message,
    /already exists and is controlled by ConfigMap other-owner, not by ConfigMap owner/,
  );
  assert.equal(sent, 0);
  const after = await read('contested');
  assert.equal(after?.metadata?.resourceVersion, theirs.metadata?.resourceVersion);
  assert.deepEqual(after?.metadata?.ownerReferences, [controllerReference(otherOwner)]);
  assert.deepEqual(after?.data, { a: 'theirs' });
});

test('a converged child costs no request: the cached object is returned as it is', async () => {
  const desired = () => child('converged', { a: '1', b: '2' });
  const first = await applyChild(client, Kinds.ConfigMap, desired(), { fieldManager: FIELD_MANAGER, owner });
  // A restarted manager: its cache holds the object as the server lists it, not the apply's response.
  const cached = await read('converged');
  const { sent, result } = await counting(() =>
    applyChild(client, Kinds.ConfigMap, desired(), { fieldManager: FIELD_MANAGER, owner, existing: cached }),
  );
  assert.equal(sent, 0);
  assert.equal(result, cached);
  assert.equal((await read('converged'))?.metadata?.resourceVersion, first.metadata?.resourceVersion);
});

test('a field dropped from the desired state is removed, though every remaining field still matches', async () => {
  await applyChild(client, Kinds.ConfigMap, child('shrinks', { a: '1', b: '2' }), {
    fieldManager: FIELD_MANAGER,
    owner,
  });
  const cached = await read('shrinks');
  const { sent, result } = await counting(() =>
    applyChild(client, Kinds.ConfigMap, child('shrinks', { a: '1' }), {
      fieldManager: FIELD_MANAGER,
      owner,
      existing: cached,
    }),
  );
  assert.equal(sent, 1);
  assert.deepEqual(result?.data, { a: '1' });
  assert.deepEqual((await read('shrinks'))?.data, { a: '1' });
});

test('drift in a field the controller applies is reverted; a field someone else added is left alone', async () => {
  await applyChild(client, Kinds.ConfigMap, child('drifted', { a: '1' }), {
    fieldManager: FIELD_MANAGER,
    owner,
  });
  // A person edits the child: changes the controller's field and adds one of their own.
  const edited = await configMaps().patch(
    'drifted',
    { data: { a: 'edited', note: 'mine' } },
    { type: 'merge', namespace: ns, fieldManager: 'person' },
  );
  assert.equal(edited.data?.['a'], 'edited');
  await applyChild(client, Kinds.ConfigMap, child('drifted', { a: '1' }), {
    fieldManager: FIELD_MANAGER,
    owner,
    existing: edited,
  });
  assert.deepEqual((await read('drifted'))?.data, { a: '1', note: 'mine' });
});

test("an apply the API server refuses for good throws ChildRejectedError with the server's message", async () => {
  // A ConfigMap data key may hold only alphanumerics, '-', '_' and '.'.
  const { error } = await counting(() =>
    applyChild(client, Kinds.ConfigMap, child('invalid', { 'not a key!': 'x' }), {
      fieldManager: FIELD_MANAGER,
      owner,
    }),
  );
  assert.ok(error instanceof ChildRejectedError, `expected ChildRejectedError, got ${String(error)}`);
  assert.equal(error.childName, 'invalid');
  assert.equal(error.cause.code, 422);
  assert.match(
    error.message,
    /^ConfigMap invalid was rejected by the API server: ConfigMap "invalid" is invalid: data\[not a key!\]/,
  );
  assert.equal(await read('invalid'), undefined);
});

test('deleteChildIfControlled deletes a child its owner controls', async () => {
  const mine = await applyChild(client, Kinds.ConfigMap, child('unwanted', { a: '1' }), {
    fieldManager: FIELD_MANAGER,
    owner,
  });
  assert.equal(await deleteChildIfControlled(client, Kinds.ConfigMap, mine, owner), true);
  assert.equal(await read('unwanted'), undefined);
});

test('deleteChildIfControlled never deletes what its owner does not control: no request, object unchanged', async () => {
  const nobodys = await configMaps().create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'keep-nobodys', namespace: ns },
  });
  const others = await applyChild(client, Kinds.ConfigMap, child('keep-others', { a: '1' }), {
    fieldManager: 'other-controller',
    owner: otherOwner,
  });
  for (const theirs of [nobodys, others]) {
    const name = theirs.metadata!.name!;
    const { sent, result } = await counting(() =>
      deleteChildIfControlled(client, Kinds.ConfigMap, theirs, owner),
    );
    assert.equal(result, false, name);
    assert.equal(sent, 0, name);
    assert.equal((await read(name))?.metadata?.resourceVersion, theirs.metadata?.resourceVersion, name);
  }
  assert.equal(await deleteChildIfControlled(client, Kinds.ConfigMap, undefined, owner), false);
});

test('deleteChildIfControlled treats a child already gone (the cache is behind) as deleted', async () => {
  const mine = await applyChild(client, Kinds.ConfigMap, child('already-gone', { a: '1' }), {
    fieldManager: FIELD_MANAGER,
    owner,
  });
  await configMaps().delete('already-gone', { namespace: ns });
  // The cache still shows the child: the delete is sent and answered 404.
  const { sent, result, error } = await counting(() =>
    deleteChildIfControlled(client, Kinds.ConfigMap, mine, owner),
  );
  assert.equal(error, undefined);
  assert.equal(result, true);
  assert.equal(sent, 1);
});
