// applyStatusIfChanged against the real API server: a status is written only
// when it changed, and with WrittenStatus a cache that has not yet seen the
// controller's own write costs no second write.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { KubeClient, Kinds, retyped } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import { Registry, type Counter } from 'prom-client';
import type { Condition } from './conditions.ts';
import { WrittenStatus, applyStatusIfChanged } from './status.ts';

let env: TestEnv;
let registry: Registry;
let client: KubeClient;
let ns: string;
before(async () => {
  env = await start();
  registry = new Registry();
  client = KubeClient.fromKubeConfig(env.kubeConfig, { registry });
  ns = await env.newNamespace('status');
});
after(async () => {
  client.close();
  await env.stop();
});

const FIELD_MANAGER = 'status-test';

/** A Service's status as JSON carries it (client-node's V1ServiceStatus has Dates where the wire has strings). */
interface ServiceStatus {
  loadBalancer?: object;
  conditions?: Condition[];
}
type Service = Omit<V1Service, 'status'> & { status?: ServiceStatus };
const services = () => client.resource(retyped<Service>(Kinds.Service));

/**
 * A built-in kind with a status subresource that no controller of the test
 * control plane writes: a headless Service (no ClusterIP to allocate, no load
 * balancer to provision). Its status starts as `{ loadBalancer: {} }`.
 */
const newService = (name: string) =>
  services().create({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: ns },
    spec: { clusterIP: 'None', ports: [{ port: 80 }] },
  });

const read = (name: string) => services().get(name, { namespace: ns });

/**
 * A status as a controller computes it: a condition with a fixed transition
 * time (what conditions.ts keeps while the status stays the same), and the
 * empty `loadBalancer` the API server gives every Service.
 */
const ready = (reason: string): ServiceStatus => ({
  loadBalancer: {},
  conditions: [
    {
      type: 'Ready',
      status: 'True',
      reason,
      message: `ready: ${reason}`,
      lastTransitionTime: '2026-01-01T00:00:00Z',
    },
  ],
});

/** Requests this test file's client has sent so far, from rest_client_requests_total. */
async function requestsSent(): Promise<number> {
  const metric = registry.getSingleMetric('rest_client_requests_total') as Counter | undefined;
  return ((await metric?.get())?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

/** What `applyStatusIfChanged` returned, and how many requests it sent. */
async function counting(fn: () => Promise<boolean>): Promise<{ wrote: boolean; sent: number }> {
  const before = await requestsSent();
  const wrote = await fn();
  return { wrote, sent: (await requestsSent()) - before };
}

test('a changed status is written; the same status again, read back, sends nothing', async () => {
  const svc = await newService('changed');
  const first = await counting(() =>
    applyStatusIfChanged(client, Kinds.Service, svc, ready('First'), { fieldManager: FIELD_MANAGER }),
  );
  assert.deepEqual(first, { wrote: true, sent: 1 });
  const stored = await read('changed');
  assert.deepEqual(stored.status, ready('First'));
  assert.notEqual(stored.metadata?.resourceVersion, svc.metadata?.resourceVersion);

  const again = await counting(() =>
    applyStatusIfChanged(client, Kinds.Service, stored, ready('First'), { fieldManager: FIELD_MANAGER }),
  );
  assert.deepEqual(again, { wrote: false, sent: 0 });
  assert.equal((await read('changed')).metadata?.resourceVersion, stored.metadata?.resourceVersion);
});

test('a status equal to the stored one but for undefined members is no change', async () => {
  const svc = await newService('undefined-members');
  assert.deepEqual(svc.status, { loadBalancer: {} });
  const result = await counting(() =>
    applyStatusIfChanged(
      client,
      Kinds.Service,
      svc,
      { loadBalancer: { ingress: undefined }, conditions: undefined },
      { fieldManager: FIELD_MANAGER },
    ),
  );
  assert.deepEqual(result, { wrote: false, sent: 0 });
});

test('a status someone else changed is written back', async () => {
  const svc = await newService('overwritten');
  await applyStatusIfChanged(client, Kinds.Service, svc, ready('First'), {
    fieldManager: FIELD_MANAGER,
  });
  const changed = await services().patchStatus(
    'overwritten',
    { status: ready('SomeoneElse') },
    { namespace: ns },
  );
  assert.deepEqual(changed.status, ready('SomeoneElse'));
  const result = await counting(() =>
    applyStatusIfChanged(client, Kinds.Service, changed, ready('First'), {
      fieldManager: FIELD_MANAGER,
    }),
  );
  assert.deepEqual(result, { wrote: true, sent: 1 });
  assert.deepEqual((await read('overwritten')).status, ready('First'));
});

test('with WrittenStatus, a reconcile whose cache has not seen the write yet writes nothing', async () => {
  const stale = await newService('cache-behind');
  const written = new WrittenStatus<ServiceStatus>();
  const opts = { fieldManager: FIELD_MANAGER, written };
  const first = await counting(() =>
    applyStatusIfChanged(client, Kinds.Service, stale, ready('First'), opts),
  );
  assert.deepEqual(first, { wrote: true, sent: 1 });
  const stored = await read('cache-behind');

  // `stale` is the cache before its watch event arrives.
  const again = await counting(() =>
    applyStatusIfChanged(client, Kinds.Service, stale, ready('First'), opts),
  );
  assert.deepEqual(again, { wrote: false, sent: 0 });
  assert.equal((await read('cache-behind')).metadata?.resourceVersion, stored.metadata?.resourceVersion);

  // The same stale read without that memory writes the same status again.
  const forgetful = await counting(() =>
    applyStatusIfChanged(client, Kinds.Service, stale, ready('First'), { fieldManager: FIELD_MANAGER }),
  );
  assert.deepEqual(forgetful, { wrote: true, sent: 1 });
});

test('with WrittenStatus, a new status is still written while the cache is behind', async () => {
  const stale = await newService('next-change');
  const opts = { fieldManager: FIELD_MANAGER, written: new WrittenStatus<ServiceStatus>() };
  await applyStatusIfChanged(client, Kinds.Service, stale, ready('First'), opts);
  const next = await counting(() =>
    applyStatusIfChanged(client, Kinds.Service, stale, ready('Second'), opts),
  );
  assert.deepEqual(next, { wrote: true, sent: 1 });
  assert.deepEqual((await read('next-change')).status, ready('Second'));
});
