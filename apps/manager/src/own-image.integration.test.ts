// --instance-agent-image=self against the API server: the manager finds its
// own container's image in its Pod, and says what is missing when it cannot.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import { ownImage } from './own-image.ts';

let env: TestEnv;
let client: KubeClient;
let ns: string;

before(async () => {
  env = await start();
  client = KubeClient.fromKubeConfig(env.kubeConfig);
  ns = await env.newNamespace('own-image');
});

after(async () => {
  client?.close();
  await env?.stop();
});

// Pod objects only: nothing schedules them (no node selector matches), and the test reads them back.
const pod = (name: string, containers: Array<[string, string]>): V1Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: ns },
  spec: {
    nodeSelector: { 'regulon.dev/no-such-node': 'true' },
    containers: containers.map(([n, image]) => ({ name: n, image })),
  },
});

test("the manager container's image, beside another container; the only container's image otherwise", async () => {
  await client.resource(Kinds.Pod).create(
    pod('manager-0', [
      ['proxy', 'example.com/proxy:1'],
      ['manager', 'registry.example.com/regulon-manager:1.2.3'],
    ]),
  );
  assert.equal(
    await ownImage(client, { POD_NAME: 'manager-0', POD_NAMESPACE: ns }),
    'registry.example.com/regulon-manager:1.2.3',
  );
  await client
    .resource(Kinds.Pod)
    .create(pod('renamed-0', [['operator', 'registry.example.com/regulon-manager:1.2.4']]));
  assert.equal(
    await ownImage(client, { POD_NAME: 'renamed-0', POD_NAMESPACE: ns }),
    'registry.example.com/regulon-manager:1.2.4',
  );
});

test('no POD_NAME, no such Pod, or no container to take it from: an error that says which', async () => {
  await assert.rejects(ownImage(client, { POD_NAMESPACE: ns }), /set POD_NAME from the downward API/);
  await assert.rejects(ownImage(client, { POD_NAME: 'gone', POD_NAMESPACE: ns }), /not ?found/i);
  await client.resource(Kinds.Pod).create(
    pod('two-0', [
      ['a', 'example.com/a:1'],
      ['b', 'example.com/b:1'],
    ]),
  );
  await assert.rejects(
    ownImage(client, { POD_NAME: 'two-0', POD_NAMESPACE: ns }),
    /no container named "manager" and more than one container \(a, b\)/,
  );
});
