// The Database's admission webhook called by the real API server (the
// manager on the host, the configuration naming a URL at 127.0.0.1, scoped
// to this test's namespace): what a user applying a Database sees.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { V1Secret } from '@kubernetes/client-node';
import { KubeClient, Kinds, isInvalid } from '@regulon/client';
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
import { Database, type DatabaseObject } from './api.ts';
import { setupDatabaseWebhooks } from './webhook.ts';

let env: TestEnv;
let client: KubeClient;
let ns: string;
let mgr: Manager;
let running: Promise<void>;
const names = {
  validating: `db-webhook-${process.pid}-validating`,
  mutating: `db-webhook-${process.pid}-mutating`,
};

const database = (name: string, secretName?: string): DatabaseObject =>
  ({
    apiVersion: 'regulon.dev/v1beta1',
    kind: 'Database',
    metadata: { name, namespace: ns },
    spec: {
      engine: 'postgres',
      version: '16.8',
      storage: { size: '1Gi' },
      ...(secretName ? { credentials: { secretName } } : {}),
    },
  }) as DatabaseObject;

async function secret(name: string, data: Record<string, string>): Promise<void> {
  await client.resource<V1Secret>(Kinds.Secret).create({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: ns },
    stringData: data,
  });
}

async function kubectlApply(manifest: object): Promise<{ code: number; out: string }> {
  const r = await env.kubectl(['apply', '-f', '-'], JSON.stringify(manifest));
  return { code: r.code ?? -1, out: r.stdout + r.stderr };
}

before(async () => {
  env = await start();
  await env.installCRDs([Database.crd()]);
  client = KubeClient.fromKubeConfig(env.kubeConfig);
  ns = await env.newNamespace('db-webhook');
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
  setupDatabaseWebhooks(webhooks);
  await applyWebhookConfigurations(client, webhooks.definitions(), {
    names,
    clientConfig: { url: `https://127.0.0.1:${port}` },
    namespaces: [ns],
  });
  running = mgr.start();
  await secret('no-password', { username: 'app' });
  await eventually(
    'the API server calls the webhook',
    async () =>
      client
        .resource(Database)
        .create(database('probe', 'no-password'), { dryRun: true })
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

test('a Database naming a Secret without password is refused, with the field and the missing key named', async () => {
  const refused = await kubectlApply(database('orders', 'no-password'));
  assert.notEqual(refused.code, 0);
  assert.match(
    refused.out,
    /^The Database "orders" is invalid: spec\.credentials\.secretName: Invalid value: "no-password": Secret no-password has no password \(a credentials Secret needs the keys username and password, non-empty\)$/m,
  );
});

test('a complete Secret is admitted; a missing one too, with a warning that the Database waits for it', async () => {
  await secret('complete', { username: 'app', password: 's3cret' });
  const ok = await kubectlApply(database('complete', 'complete'));
  assert.equal(ok.code, 0, ok.out);
  const waiting = await kubectlApply(database('early', 'not-yet'));
  assert.equal(waiting.code, 0, waiting.out);
  assert.match(waiting.out, /Warning: Secret not-yet does not exist yet: the Database waits for it/);
});

test('an update that keeps the reference is admitted even after the Secret lost a key; changing it is checked', async () => {
  await secret('shrinking', { username: 'app', password: 'p' });
  const db = await client.resource(Database).create(database('kept', 'shrinking'));
  await client
    .resource<V1Secret>(Kinds.Secret)
    .patch('shrinking', [{ op: 'remove', path: '/data/password' }], {
      namespace: ns,
      type: 'json',
    });
  const relabelled = await client
    .resource(Database)
    .replace({ ...db, metadata: { ...db.metadata, labels: { tier: 'gold' } } });
  assert.equal(relabelled.metadata.labels?.['tier'], 'gold');
  await assert.rejects(
    client
      .resource(Database)
      .replace({ ...relabelled, spec: { ...relabelled.spec, credentials: { secretName: 'no-password' } } }),
    /spec\.credentials\.secretName: Invalid value: "no-password"/,
  );
});
