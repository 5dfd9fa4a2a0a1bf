// The MyApp's admission webhook called by the real API server (the manager
// on the host, the configuration naming a URL at 127.0.0.1, scoped to this
// test's namespace): a MyApp whose children's names are taken is refused
// with a message naming what took them.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Cache } from '@regulon/cache-controller';
import { KubeClient, isInvalid, type KubeObject } from '@regulon/client';
import { Database } from '@regulon/database-controller';
import {
  ManagedCertificates,
  WebhookServer,
  applyWebhookConfigurations,
  createLogger,
  deleteWebhookConfigurations,
  testManager,
  type Manager,
} from '@regulon/runtime';
import { eventually, freePorts, start, type TestEnv } from '@regulon/testenv';
import { MyApp, type MyAppObject } from './api.ts';
import { setupMyAppWebhooks } from './webhook.ts';

let env: TestEnv;
let client: KubeClient;
let ns: string;
let mgr: Manager;
let running: Promise<void>;
const names = {
  validating: `myapp-webhook-${process.pid}-validating`,
  mutating: `myapp-webhook-${process.pid}-mutating`,
};

const myapp = (name: string): MyAppObject =>
  ({
    apiVersion: 'regulon.dev/v1alpha1',
    kind: 'MyApp',
    metadata: { name, namespace: ns },
    spec: {
      image: 'ghcr.io/example/shop:1.0',
      database: { engine: 'postgres', version: '16.8', storage: { size: '1Gi' } },
      cache: { engine: 'redis', version: '7.4.11', memory: '256Mi' },
    },
  }) as MyAppObject;

async function kubectlApply(manifest: object): Promise<{ code: number; out: string }> {
  const r = await env.kubectl(['apply', '-f', '-'], JSON.stringify(manifest));
  return { code: r.code ?? -1, out: r.stdout + r.stderr };
}

before(async () => {
  env = await start();
  await env.installCRDs([Database.crd(), Cache.crd(), MyApp.crd()]);
  client = KubeClient.fromKubeConfig(env.kubeConfig);
  ns = await env.newNamespace('myapp-webhook');
  // A person's own Database, and a Cache another MyApp controls. That MyApp exists: the garbage
  // collector deletes a Cache whose owner's uid is nobody's, and the test would race it.
  const other = await client.resource(MyApp).create(myapp('other'));
  await client.resource(Database).create({
    apiVersion: 'regulon.dev/v1beta1',
    kind: 'Database',
    metadata: { name: 'shop-db', namespace: ns },
    spec: { engine: 'postgres', version: '16.8', storage: { size: '1Gi' } },
  } as KubeObject as never);
  await client.resource(Cache).create({
    apiVersion: 'regulon.dev/v1alpha1',
    kind: 'Cache',
    metadata: {
      name: 'blog-cache',
      namespace: ns,
      ownerReferences: [
        {
          apiVersion: 'regulon.dev/v1alpha1',
          kind: 'MyApp',
          name: 'other',
          uid: other.metadata.uid!,
          controller: true,
        },
      ],
    },
    spec: { engine: 'redis', version: '7.4.11', memory: '256Mi' },
  } as KubeObject as never);
  const port = (await freePorts(1))[0]!;
  mgr = testManager(env.kubeConfig, {
    logger: createLogger({ level: 'silent' }),
    namespace: ns,
  });
  const webhooks = new WebhookServer(mgr, {
    bindAddress: `127.0.0.1:${port}`,
    certificates: new ManagedCertificates({
      client,
      namespace: ns,
      secretName: 'webhook-certs',
      names: { dnsNames: [], ipAddresses: ['127.0.0.1'] },
      validatingConfiguration: names.validating,
    }),
  });
  setupMyAppWebhooks(webhooks);
  await applyWebhookConfigurations(client, webhooks.definitions(), {
    names,
    clientConfig: { url: `https://127.0.0.1:${port}` },
    namespaces: [ns],
  });
  running = mgr.start();
  await eventually(
    'the API server calls the webhook',
    async () =>
      client
        .resource(MyApp)
        .create(myapp('shop'), { dryRun: true })
        .then(
          () => false,
          (err: unknown) => isInvalid(err) && /denied the request/.test(err.message),
        ),
    60_000,
  );
});
after(async () => {
  mgr?.stop();
  await running;
  if (client) await deleteWebhookConfigurations(client, names);
  client?.close();
  await env?.stop();
});

test("a MyApp whose Database name is taken by a person's own Database is refused, naming it", async () => {
  const refused = await kubectlApply(myapp('shop'));
  assert.notEqual(refused.code, 0);
  assert.match(
    refused.out,
    /^The MyApp "shop" is invalid: metadata\.name: Invalid value: "shop": its Database would be named shop-db, but Database shop-db already exists and belongs to no MyApp; choose another name for the MyApp, or delete or rename that Database$/m,
  );
});

test("a MyApp whose Cache name is another MyApp's Cache is refused, naming that MyApp", async () => {
  await assert.rejects(
    client.resource(MyApp).create(myapp('blog')),
    (err: unknown) =>
      isInvalid(err) &&
      err.causes.length === 1 &&
      err.causes[0]!.field === 'metadata.name' &&
      /Cache blog-cache already exists and is controlled by MyApp other/.test(err.causes[0]!.message ?? ''),
  );
});

test('a MyApp whose names are free is admitted', async () => {
  const ok = await kubectlApply(myapp('fresh'));
  assert.equal(ok.code, 0, ok.out);
});
