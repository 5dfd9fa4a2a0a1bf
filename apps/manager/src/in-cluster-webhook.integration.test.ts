// The admission webhooks as users deploy them: deploy/ plus its webhook
// component, applied through an overlay (testing/installation.ts), the
// manager's two replicas in their Pods on the real node. The API server calls
// them through their Service (kube-proxy on the real node routes the Service
// address to a ready manager Pod); the manager made its CA and serving
// certificate and injected the CA itself. The workload's Pods are simulated:
// what is tested is admission.
//
//   npx regulon-testenv exec -- npx node --test --test-timeout=600000 apps/manager/src/in-cluster-webhook.integration.test.ts
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { after, before, test } from 'node:test';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import { Installation, metric, say } from './testing/installation.ts';

let env: TestEnv;
let inst: Installation;

interface WebhookConfiguration {
  webhooks: Array<{
    name: string;
    failurePolicy: string;
    clientConfig: { caBundle?: string; service?: { name: string; namespace: string } };
  }>;
}

before(async () => {
  env = await start({ realNodes: 1 });
  inst = new Installation(env, { name: 'wh', webhooks: true });
  await inst.apply();
  await inst.twoReadyOneLeader();
  await inst.kubectl.ok(
    'create',
    'secret',
    'generic',
    'no-password',
    '-n',
    inst.workload,
    '--from-literal=username=app',
  );
});

after(async () => {
  if (inst) await inst.remove();
});

const configuration = () =>
  inst.get<WebhookConfiguration>(
    `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${inst.prefix}regulon-validating`,
  );

/** `kubectl apply` of a sample Database into the workload namespace, as a user would run it. */
async function applyDatabase(name: string, spec: Record<string, unknown> = {}) {
  const doc = JSON.parse(await inst.sample('database.yaml', spec)) as { metadata: { name: string } };
  doc.metadata.name = name;
  const r = await inst.kubectl.runWithInput(JSON.stringify(doc), 'apply', '-n', inst.workload, '-f', '-');
  return { code: r.code, out: `${r.stdout}${r.stderr}` };
}

test('the API server calls the webhooks through their Service, with the CA the manager made and injected: a Database naming a Secret without password is refused with the field and the key named', async () => {
  const injected = await eventually(
    'the CA bundle injected into the validating configuration',
    async () => {
      const c = await configuration();
      return c.webhooks.every((w) => w.clientConfig.caBundle) ? c : undefined;
    },
    60_000,
    500,
  );
  for (const w of injected.webhooks) {
    assert.deepEqual(w.clientConfig.service, {
      ...w.clientConfig.service,
      name: `${inst.prefix}regulon-webhook`,
      namespace: inst.namespace,
    });
    const ca = new X509Certificate(Buffer.from(w.clientConfig.caBundle!, 'base64'));
    assert.ok(ca.ca, `${w.name}: the bundle is a CA certificate`);
  }

  const refused = await eventually(
    'the webhook answers through its Service',
    async () => {
      const r = await applyDatabase('orders', { credentials: { secretName: 'no-password' } });
      // Until a manager Pod's endpoint is ready the call fails (failurePolicy Fail): retried.
      return /failed calling webhook/.test(r.out) ? undefined : r;
    },
    60_000,
    500,
  );
  assert.notEqual(refused.code, 0);
  assert.match(
    refused.out,
    /spec\.credentials\.secretName: Invalid value: "no-password": Secret no-password has no password \(a credentials Secret needs the keys username and password, non-empty\)/,
  );

  const admitted = await applyDatabase('orders');
  assert.equal(admitted.code, 0, admitted.out);
  // Every replica serves the webhooks (not only the leader): the calls are counted on their own /metrics.
  const pods = await inst.pods();
  const served = await Promise.all(
    pods.map((p) => metric(p, 'controller_runtime_webhook_requests_total').catch(() => 0)),
  );
  assert.ok(
    served.reduce((a, b) => a + b, 0) >= 2,
    `webhook requests counted on the manager Pods: ${served.join(', ')}`,
  );
  say(`webhook requests per manager Pod: ${served.join(', ')}`);
});

test('the manager scaled to zero: a Database is refused (failurePolicy Fail), a MyApp admitted (Ignore), v1alpha1 reads fail while v1beta1 reads work; scaled back, Databases are admitted again', async () => {
  const policies = Object.fromEntries((await configuration()).webhooks.map((w) => [w.name, w.failurePolicy]));
  assert.deepEqual(policies, { 'vdatabase.regulon.dev': 'Fail', 'vmyapp.regulon.dev': 'Ignore' });

  // A Database to read at both versions: v1alpha1 needs the conversion webhook, v1beta1 (stored) nothing.
  const readAt = (version: string) =>
    inst.kubectl.run('get', `databases.${version}.regulon.dev`, 'stored', '-n', inst.workload, '-o', 'name');
  assert.equal((await applyDatabase('stored')).code, 0);
  await eventually(
    'stored read as v1alpha1 through the conversion webhook',
    async () => (await readAt('v1alpha1')).code === 0,
    60_000,
    500,
  );

  await inst.kubectl.ok('scale', 'deployment', inst.deployment, '-n', inst.namespace, '--replicas=0');
  await eventually('no manager Pod left', async () => (await inst.allPods()).length === 0, 120_000, 500);

  // No manager, no conversions: the stored version still reads, the other is an error that says why.
  assert.equal((await readAt('v1beta1')).code, 0, 'v1beta1 reads without the manager');
  const unconverted = await eventually(
    'a v1alpha1 read fails while no manager runs',
    async () => {
      const r = await readAt('v1alpha1');
      return r.code !== 0 ? r : undefined;
    },
    30_000,
    500,
  );
  assert.match(unconverted.stderr, /conversion webhook for regulon\.dev\/v1beta1, Kind=Database failed/);

  const refused = await eventually(
    'a Database refused while no manager runs',
    async () => {
      const r = await applyDatabase('ledger');
      return r.code !== 0 ? r : undefined;
    },
    30_000,
    500,
  );
  assert.match(refused.out, /failed calling webhook "vdatabase\.regulon\.dev"/);

  const app = JSON.parse(await inst.sample('myapp.yaml')) as object;
  const myapp = await inst.kubectl.runWithInput(JSON.stringify(app), 'apply', '-n', inst.workload, '-f', '-');
  assert.equal(myapp.code, 0, `a MyApp is admitted without its webhook:\n${myapp.stderr}`);

  await inst.kubectl.ok('scale', 'deployment', inst.deployment, '-n', inst.namespace, '--replicas=2');
  await inst.twoReadyOneLeader();
  const back = await eventually(
    'a Database admitted once the managers serve again',
    async () => {
      const r = await applyDatabase('ledger');
      return r.code === 0 ? r : undefined;
    },
    60_000,
    500,
  );
  assert.match(back.out, /database\.regulon\.dev\/ledger created/);
});
