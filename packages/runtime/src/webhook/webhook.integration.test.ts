// Admission webhooks called by the real API server, with the manager on the
// host (the configurations name a URL at 127.0.0.1): defaulting and
// validation as a user sees them, certificates the manager makes and rotates
// while requests flow, and the failure policies once the manager is stopped.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KubeClient, Kinds, isInvalid, type KubeObject } from '@regulon/client';
import { defineKind } from '@regulon/crd';
import { freePorts, start, type TestEnv } from '@regulon/testenv';
import { Type } from 'typebox';
import { createLogger } from '../observability/logging.ts';
import type { Manager } from '../manager/manager.ts';
import { testManager } from '../manager/test-manager.ts';
import { eventually } from '../testing/wait.ts';
import { fieldErrors } from './admission.ts';
import {
  ManagedCertificates,
  MutatingWebhookConfigurations,
  ValidatingWebhookConfigurations,
} from './certificates.ts';
import { applyWebhookConfigurations, deleteWebhookConfigurations } from './configurations.ts';
import { parseBundle } from './generate.ts';
import { WebhookServer } from './server.ts';

const GROUP = 'webhook.test.regulon.dev';
/** Defaulted (mutating, Ignore) and validated (Fail): refused while the manager is down. */
const Widget = defineKind({
  group: GROUP,
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  singular: 'widget',
  scope: 'Namespaced',
  spec: Type.Object({ size: Type.Optional(Type.Integer()), color: Type.Optional(Type.String()) }),
  status: Type.Object({}),
});
/** Validated with Ignore: admitted unchecked while the manager is down. */
const Gadget = defineKind({
  group: GROUP,
  version: 'v1',
  kind: 'Gadget',
  plural: 'gadgets',
  singular: 'gadget',
  scope: 'Namespaced',
  spec: Type.Object({ size: Type.Integer() }),
  status: Type.Object({}),
});

let env: TestEnv;
let client: KubeClient;
let ns: string;
let mgr: Manager;
let running: Promise<void>;
let certificates: ManagedCertificates;
let port: number;
const configNames = {
  validating: `webhook-test-${process.pid}-validating`,
  mutating: `webhook-test-${process.pid}-mutating`,
};

const atMost10 = (size: number | undefined) =>
  size !== undefined && size > 10 ? [fieldErrors.invalid('spec.size', size, 'at most 10')] : [];

before(async () => {
  env = await start();
  await env.installCRDs([Widget.crd(), Gadget.crd()]);
  client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 1000, burst: 1000 });
  ns = await env.newNamespace('webhooks');
  port = (await freePorts(1))[0]!;
  mgr = testManager(env.kubeConfig, {
    logger: createLogger({ level: 'silent' }),
    namespace: ns,
  });
  certificates = new ManagedCertificates({
    client,
    namespace: ns,
    secretName: 'webhook-certs',
    names: { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] },
    validatingConfiguration: configNames.validating,
    mutatingConfiguration: configNames.mutating,
    // Short-lived, so that the rotation test sees several rotations in seconds, the CA's too
    // (it is replaced when it has less than 4 + 8 s left).
    caValidityMs: 24_000,
    certValidityMs: 8_000,
    rotateBeforeMs: 4_000,
    checkIntervalMs: 500,
  });
  const webhooks = new WebhookServer(mgr, { bindAddress: `127.0.0.1:${port}`, certificates });
  webhooks
    .for(Widget)
    .withDefaulter(
      (w) => {
        w.spec.size ??= 3;
        return w.spec.color ? [] : ['spec.color is unset: the widget is grey'];
      },
      { failurePolicy: 'Ignore' },
    )
    .withValidator(
      {
        validateCreate: (w) => atMost10(w.spec.size),
        validateUpdate: (w) => atMost10(w.spec.size),
      },
      { failurePolicy: 'Fail', timeoutSeconds: 5 },
    );
  webhooks
    .for(Gadget)
    .withValidator({ validateCreate: (g) => atMost10(g.spec.size) }, { failurePolicy: 'Ignore' });
  await applyWebhookConfigurations(client, webhooks.definitions(), {
    names: configNames,
    clientConfig: { url: `https://127.0.0.1:${port}` },
    // Only this test's namespace: other tests of the run never meet these webhooks.
    namespaces: [ns],
  });
  running = mgr.start();
  // The API server sees the injected CA through its own informer: wait until it calls the webhook.
  await eventually(
    'the API server calls the webhook',
    async () => {
      try {
        await widgets().create(widget('probe', { size: 11 }), { dryRun: true });
        return false;
      } catch (err) {
        return isInvalid(err) && /denied the request/.test(err.message);
      }
    },
    60_000,
  );
});
after(async () => {
  mgr?.stop();
  await running;
  if (client) await deleteWebhookConfigurations(client, configNames);
  client?.close();
  await env?.stop();
});

type WidgetObject = KubeObject & { spec: { size?: number; color?: string } };
const widgets = () => client.resource<WidgetObject>(Widget);
const widget = (name: string, spec: WidgetObject['spec']): WidgetObject => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'Widget',
  metadata: { name, namespace: ns },
  spec,
});

/** The fingerprint of the CA the Secret signs with (the bundle's first). */
async function currentCA(): Promise<string | undefined> {
  const secret = await client.resource(Kinds.Secret).get('webhook-certs', { namespace: ns });
  const bundle = Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64').toString();
  return parseBundle(bundle)[0]?.fingerprint256;
}

async function kubectlApply(manifest: object): Promise<{ code: number; out: string }> {
  const r = await env.kubectl(['apply', '-f', '-'], JSON.stringify(manifest));
  return { code: r.code ?? -1, out: r.stdout + r.stderr };
}

test('kubectl apply: a defaulted widget is stored with its default and the warning shows; an invalid one is refused with the field named', async () => {
  const ok = await kubectlApply(widget('plain', {}));
  assert.equal(ok.code, 0, ok.out);
  assert.match(ok.out, /Warning: spec.color is unset: the widget is grey/);
  assert.equal((await widgets().get('plain', { namespace: ns })).spec.size, 3);
  const refused = await kubectlApply(widget('big', { size: 11 }));
  assert.notEqual(refused.code, 0);
  // kubectl words a 422 with causes as it does the API server's own schema errors: the user cannot tell them apart.
  assert.match(refused.out, /^The Widget "big" is invalid: spec\.size: Invalid value: 11: at most 10$/m);
});

test('the typed client: a refusal is an InvalidError whose causes name the field', async () => {
  const err = await widgets()
    .create(widget('big2', { size: 12 }))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  assert.ok(isInvalid(err), String(err));
  assert.deepEqual(err.causes, [
    { reason: 'FieldValueInvalid', message: 'Invalid value: 12: at most 10', field: 'spec.size' },
  ]);
  const updated = await widgets().create(widget('grows', { size: 5 }));
  await assert.rejects(
    widgets().replace({ ...updated, spec: { size: 50 } }),
    /spec\.size: Invalid value: 50/,
  );
});

test('certificates and the CA rotate while 50 concurrent creates flow, and no admission fails', async () => {
  const rotationsBefore = certificates.rotations;
  const caBefore = await currentCA();
  const latencies: number[] = [];
  const failures: string[] = [];
  let n = 0;
  const deadline = Date.now() + 14_000;
  while (Date.now() < deadline) {
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        const name = `flow-${n++}`;
        const t = performance.now();
        try {
          await widgets().create(widget(name, { size: 1 }));
          latencies.push(performance.now() - t);
        } catch (err) {
          failures.push(`${name}: ${(err as Error).message}`);
        }
      }),
    );
  }
  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!.toFixed(1);
  console.log(
    `# ${latencies.length} creates through both webhooks, 50 at a time: p50 ${pct(50)} ms, p99 ${pct(99)} ms; ${certificates.rotations - rotationsBefore} rotations`,
  );
  assert.deepEqual(failures, []);
  assert.ok(
    certificates.rotations - rotationsBefore >= 2,
    `rotations: ${certificates.rotations - rotationsBefore}`,
  );
  assert.notEqual(await currentCA(), caBefore, 'the CA was replaced meanwhile');
});

test('manager stopped: the Fail webhook refuses widgets, deletes still work; the Ignore webhook admits gadgets unchecked', async () => {
  await widgets().create(widget('before-stop', { size: 1 }));
  // The API server keeps idle connections to the webhook open (90 s in Go): stopping must not wait for them.
  const stopping = Date.now();
  mgr.stop();
  await running;
  assert.ok(Date.now() - stopping < 10_000, `stopped in ${Date.now() - stopping} ms`);
  await assert.rejects(
    widgets().create(widget('while-down', { size: 1 })),
    /failed calling webhook "vwidget\.webhook\.test\.regulon\.dev"/,
  );
  await widgets().delete('before-stop', { namespace: ns });
  const gadget = await client.resource<KubeObject & { spec: { size: number } }>(Gadget).create({
    apiVersion: `${GROUP}/v1`,
    kind: 'Gadget',
    metadata: { name: 'unchecked', namespace: ns },
    spec: { size: 99 },
  });
  assert.equal(gadget.spec.size, 99);
});

test('both configurations carry the CA bundle of the certificate Secret', async () => {
  const secret = await client.resource(Kinds.Secret).get('webhook-certs', { namespace: ns });
  const bundle: string = secret.data?.['ca.crt'] ?? '';
  assert.notEqual(bundle, '');
  for (const [type, name] of [
    [ValidatingWebhookConfigurations, configNames.validating],
    [MutatingWebhookConfigurations, configNames.mutating],
  ] as const) {
    const config: { webhooks?: Array<{ clientConfig?: { caBundle?: string } }> } = await client
      .resource(type)
      .get(name);
    assert.deepEqual(
      config.webhooks?.map((w) => w.clientConfig?.caBundle),
      config.webhooks?.map((): string => bundle),
      name,
    );
  }
});
