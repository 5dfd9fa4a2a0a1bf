// CRD version conversion through the real API server, with the manager on the
// host (the CRD's conversion webhook names a URL at 127.0.0.1): a kind of two
// versions that differ in shape, read and written through either, its CA
// bundle injected and rotated by the manager while conversions flow.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { after, before, test } from 'node:test';
import { KubeClient, Kinds, isTooManyRequests, type KubeObject } from '@regulon/client';
import { defineKind, versionedCRD, type KindObject } from '@regulon/crd';
import { freePorts, start, type TestEnv } from '@regulon/testenv';
import { Type } from 'typebox';
import { createLogger } from '../observability/logging.ts';
import type { Manager } from '../manager/manager.ts';
import { testManager } from '../manager/test-manager.ts';
import { parsePrometheusText, sampleValue } from '../testing/prometheus.ts';
import { eventually } from '../testing/wait.ts';
import { ManagedCertificates } from './certificates.ts';
import { crdConversion } from './configurations.ts';
import { ConversionError, stashConversionData, takeConversionData } from './conversion.ts';
import { parseBundle } from './generate.ts';
import { WebhookServer } from './server.ts';

const GROUP = 'conversion.test.regulon.dev';
const names = { kind: 'Disk', plural: 'disks', singular: 'disk', scope: 'Namespaced' } as const;
const status = Type.Object({ phase: Type.Optional(Type.String()) });
/** v1: a size in whole Gi, all the first version knew. */
const DiskV1 = defineKind({
  group: GROUP,
  version: 'v1',
  ...names,
  spec: Type.Object({ size: Type.String({ pattern: '^[1-9][0-9]*Gi$' }) }),
  status,
});
/** v2 (stored): the size moved under `storage`, any quantity, and a storage class v1 has no field for. */
const DiskV2 = defineKind({
  group: GROUP,
  version: 'v2',
  ...names,
  spec: Type.Object({
    storage: Type.Object({ size: Type.String(), class: Type.Optional(Type.String()) }),
  }),
  status,
});
type V1Disk = KindObject<typeof DiskV1>;
type V2Disk = KindObject<typeof DiskV2>;
/** Where a v1 Disk keeps v2's storage class, the kubebuilder way. */
const CLASS_ANNOTATION = `${GROUP}/v2-storage-class`;
const WHOLE_GI = /^[1-9][0-9]*Gi$/;

let env: TestEnv;
/** No retries: a conversion that fails once must show, not be retried away. */
let client: KubeClient;
let ns: string;
let mgr: Manager;
let running: Promise<void>;
let certificates: ManagedCertificates;
let port: number;

/** Both versions served, v2 stored, converted by the manager's webhook at `port`. */
function diskCRD(port: number) {
  return versionedCRD({
    storage: DiskV2,
    served: [DiskV1],
    conversion: crdConversion({ url: `https://127.0.0.1:${port}` }),
  });
}

before(async () => {
  env = await start();
  port = (await freePorts(1))[0]!;
  await env.installCRDs([diskCRD(port)]);
  client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 1000, burst: 1000, maxRetries: 0 });
  ns = await env.newNamespace('conversion');
  mgr = testManager(env.kubeConfig, {
    logger: createLogger({ level: 'silent' }),
    namespace: ns,
  });
  certificates = new ManagedCertificates({
    client: mgr.client,
    namespace: ns,
    secretName: 'conversion-certs',
    names: { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] },
    // Short-lived, so that the rotation test sees the CA replaced within seconds
    // (it is replaced when it has less than 4 + 8 s left).
    caValidityMs: 24_000,
    certValidityMs: 8_000,
    rotateBeforeMs: 4_000,
    checkIntervalMs: 500,
  });
  const webhooks = new WebhookServer(mgr, { bindAddress: `127.0.0.1:${port}`, certificates });
  webhooks.conversion(DiskV2).spoke(DiskV1, {
    toHub: (v1) => {
      const storageClass = takeConversionData(v1, CLASS_ANNOTATION);
      return DiskV2.object({
        metadata: v1.metadata,
        spec: {
          storage: {
            size: v1.spec.size,
            ...(typeof storageClass === 'string' ? { class: storageClass } : {}),
          },
        },
        ...(v1.status ? { status: v1.status } : {}),
      });
    },
    fromHub: (v2) => {
      const { size, class: storageClass } = v2.spec.storage;
      if (!WHOLE_GI.test(size))
        throw new ConversionError(
          `spec.storage.size ${size} has no v1 form (v1 sizes are whole Gi); read this Disk as v2`,
        );
      stashConversionData(v2, CLASS_ANNOTATION, storageClass);
      return DiskV1.object({
        metadata: v2.metadata,
        spec: { size },
        ...(v2.status ? { status: v2.status } : {}),
      });
    },
  });
  running = mgr.start();
  // The CRD has no CA bundle until the manager injects it: until then, every write through v1 fails.
  await eventually(
    'the API server converts through the webhook',
    async () => {
      await disksV1().create(v1Disk('probe', '1Gi'), { dryRun: true });
      return true;
    },
    60_000,
  );
});
after(async () => {
  mgr?.stop();
  await running;
  await client
    ?.resource(Kinds.CustomResourceDefinition)
    .delete(DiskV2.crdName)
    .catch(() => undefined);
  client?.close();
  await env?.stop();
});

const disksV1 = () => client.resource(DiskV1);
const disksV2 = () => client.resource(DiskV2);
const v1Disk = (name: string, size: string, meta: Partial<V1Disk['metadata']> = {}): V1Disk =>
  DiskV1.object({ metadata: { name, namespace: ns, ...meta }, spec: { size } });
const v2Disk = (name: string, storage: V2Disk['spec']['storage']): V2Disk =>
  DiskV2.object({ metadata: { name, namespace: ns }, spec: { storage } });
/** What an update through another version changes whatever the conversion: who wrote it, and when. */
const withoutWriteMetadata = (obj: KubeObject) => {
  const { managedFields: _m, resourceVersion: _r, ...metadata } = obj.metadata ?? {};
  return { ...obj, metadata };
};

async function conversionsServed(): Promise<number> {
  const samples = parsePrometheusText(await mgr.registry.metrics());
  return sampleValue(samples, 'controller_runtime_webhook_requests_total', {
    webhook: '/convert',
    code: '200',
  });
}

test('a Disk created as v1 reads as v2 and back as v1, every field the same', async () => {
  const served = await conversionsServed();
  await disksV1().create(
    v1Disk('a', '10Gi', { labels: { tier: 'gold' }, annotations: { 'example.com/note': 'keep me' } }),
  );
  const written = await disksV1().patchStatus('a', { status: { phase: 'Bound' } }, { namespace: ns });
  const asV2 = await disksV2().get('a', { namespace: ns });
  assert.equal(asV2.apiVersion, `${GROUP}/v2`);
  assert.deepEqual(asV2.spec, { storage: { size: '10Gi' } });
  assert.deepEqual(asV2.status, { phase: 'Bound' });
  assert.deepEqual(asV2.metadata, written.metadata);
  assert.deepEqual(await disksV1().get('a', { namespace: ns }), written);
  assert.ok((await conversionsServed()) > served, 'the conversions went through the webhook');
});

test('a field only v2 has survives a round trip through v1, kept in an annotation meanwhile', async () => {
  const created = await disksV2().create(v2Disk('classy', { size: '20Gi', class: 'fast' }));
  const asV1 = await disksV1().get('classy', { namespace: ns });
  assert.deepEqual(asV1.spec, { size: '20Gi' });
  assert.equal(asV1.metadata.annotations?.[CLASS_ANNOTATION], '"fast"');
  // A client of v1 updates the Disk: what it cannot see must not be lost.
  const labels = { owner: 'v1-client' };
  await disksV1().replace({ ...asV1, metadata: { ...asV1.metadata, labels } });
  const after = await disksV2().get('classy', { namespace: ns });
  assert.deepEqual(after.spec, { storage: { size: '20Gi', class: 'fast' } });
  assert.equal(after.metadata.annotations, undefined);
  assert.deepEqual(
    withoutWriteMetadata(after),
    withoutWriteMetadata({ ...created, metadata: { ...created.metadata, labels } }),
  );
});

test('listing through the older version converts every Disk; each reads as it does alone', async () => {
  await disksV2().create(v2Disk('listed-v2', { size: '3Gi', class: 'slow' }));
  await disksV1().create(v1Disk('listed-v1', '4Gi'));
  for (const disks of [disksV1(), disksV2()]) {
    const { items } = await disks.list({ namespace: ns });
    assert.deepEqual(
      items.map((d) => d.metadata.name),
      ['a', 'classy', 'listed-v1', 'listed-v2'],
    );
    for (const item of items)
      assert.deepEqual(item, await disks.get(item.metadata.name!, { namespace: ns }), item.metadata.name);
  }
  const { items } = await disksV1().list({ namespace: ns });
  assert.deepEqual(
    items.map((d) => [d.apiVersion, d.spec.size]),
    [
      [`${GROUP}/v1`, '10Gi'],
      [`${GROUP}/v1`, '20Gi'],
      [`${GROUP}/v1`, '4Gi'],
      [`${GROUP}/v1`, '3Gi'],
    ],
  );
});

/** The CA the Secret signs with (the bundle's first), and whether the served certificate is its. */
async function secretState(): Promise<{ ca: X509Certificate; servingIsCurrent: boolean; bundle: string }> {
  const secret = await client.resource(Kinds.Secret).get('conversion-certs', { namespace: ns });
  const bundle = secret.data?.['ca.crt'] ?? '';
  const ca = parseBundle(Buffer.from(bundle, 'base64').toString())[0]!;
  const serving = new X509Certificate(Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64'));
  return { ca, servingIsCurrent: serving.checkIssued(ca) && serving.verify(ca.publicKey), bundle };
}
async function injectedBundle(): Promise<string | undefined> {
  const crd = await client.resource(Kinds.CustomResourceDefinition).get(DiskV2.crdName);
  return crd.spec.conversion?.webhook?.clientConfig?.caBundle;
}

test('the CA rotates while conversions flow: the CRD gets the new bundle, and no conversion fails', async () => {
  const caBefore = (await secretState()).ca.fingerprint256;
  const failures: string[] = [];
  // A CRD written (the new bundle) makes the API server rebuild the kind's storage, and answer
  // 429 "storage is (re)initializing" meanwhile, which clients retry: its transient, not a conversion's.
  const reinitializing: string[] = [];
  let reads = 0;
  /** 20 gets and a list through v1 at once; true when all of them converted. */
  const readThroughV1 = () =>
    Promise.all([
      ...Array.from({ length: 20 }, () => disksV1().get('classy', { namespace: ns })),
      disksV1().list({ namespace: ns }),
    ]).then(
      () => ((reads += 21), true),
      (err: unknown) => {
        (isTooManyRequests(err) ? reinitializing : failures).push((err as Error).message);
        return false;
      },
    );
  // Until the new CA signs the served certificate and the CRD trusts it, then until reads succeed on it.
  const deadline = Date.now() + 90_000;
  for (;;) {
    await readThroughV1();
    const state = await secretState();
    if (
      state.ca.fingerprint256 !== caBefore &&
      state.servingIsCurrent &&
      (await injectedBundle()) === state.bundle
    )
      break;
    assert.ok(Date.now() < deadline, 'the CA was not replaced and re-injected within 90 s');
  }
  await eventually('reads through v1 convert on the new CA', readThroughV1, 30_000);
  console.log(
    `# ${reads} reads through v1 across a CA rotation; ${certificates.rotations} Secret writes; ${reinitializing.length} batches met a storage re-initialisation`,
  );
  assert.deepEqual(failures, []);
  assert.ok(
    reinitializing.every((m) => m === 'storage is (re)initializing'),
    reinitializing.join('; '),
  );
  assert.ok(reads > 0);
});

test('a CA bundle removed from the CRD is injected again, and conversion works again', async () => {
  await client
    .resource(Kinds.CustomResourceDefinition)
    .patch(
      DiskV2.crdName,
      { spec: { conversion: { webhook: { clientConfig: { caBundle: null } } } } },
      { type: 'merge' },
    );
  assert.equal(await injectedBundle(), undefined);
  const { bundle } = await secretState();
  await eventually('the CA bundle is back', async () => (await injectedBundle()) === bundle, 30_000);
  const disk = await eventually(
    'a read through v1 converts again',
    () => disksV1().get('classy', { namespace: ns }),
    30_000,
  );
  assert.deepEqual(disk.spec, { size: '20Gi' });
});

test('a manager of another installation, whose Service the CRD does not name, injects nothing into it', async () => {
  const other = new ManagedCertificates({
    client: mgr.client,
    namespace: ns,
    secretName: 'other-installation-certs',
    names: { dnsNames: ['regulon-webhook.elsewhere.svc'], ipAddresses: [] },
    service: { namespace: 'elsewhere', name: 'regulon-webhook' },
  });
  const stop = new AbortController();
  try {
    // start() ends with one whole check: certificates made and every bundle injected where it is due.
    await other.start(stop.signal, () => undefined, { conversionCRDs: [DiskV2.crdName] });
    await other.ensure();
  } finally {
    stop.abort();
  }
  const secret = await client.resource(Kinds.Secret).get('other-installation-certs', { namespace: ns });
  const otherCA = parseBundle(Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64').toString())[0]!;
  const injected = parseBundle(Buffer.from((await injectedBundle()) ?? '', 'base64').toString());
  assert.ok(injected.length > 0, 'the CRD keeps a bundle');
  assert.ok(
    injected.every((ca) => ca.fingerprint256 !== otherCA.fingerprint256),
    "the other installation's CA is not in the CRD",
  );
  assert.deepEqual((await disksV1().get('classy', { namespace: ns })).spec, { size: '20Gi' });
});

test('a Disk v1 cannot represent is an API error naming the Disk and why, for a get, a list and kubectl', async () => {
  await disksV2().create(v2Disk('small', { size: '500Mi' }));
  const why =
    /conversion webhook for conversion\.test\.regulon\.dev\/v2, Kind=Disk failed: converting Disk "[^"]+\/small" from v2 to v1: spec\.storage\.size 500Mi has no v1 form \(v1 sizes are whole Gi\); read this Disk as v2/;
  await assert.rejects(disksV1().get('small', { namespace: ns }), why);
  // The API server's watch cache of v1 holds Disks converted to v1, so this one stalls it: a list
  // through v1 waits for the cache (3 s), then reads etcd and fails there too. (The stall outlasts
  // the Disk, until the CRD next changes: this test comes last, not to slow the others.)
  await assert.rejects(disksV1().list({ namespace: ns }), why);
  const kubectl = await env.kubectl(['get', `disks.v1.${GROUP}`, 'small', '-n', ns]);
  assert.notEqual(kubectl.code, 0);
  assert.match(
    kubectl.stderr,
    /^Error from server( \(InternalError\))?: .*conversion webhook .* failed: converting Disk/m,
  );
  assert.match(kubectl.stderr, why);
  // As v2, its own version, it reads; once it is gone, the list through v1 works again.
  assert.equal((await disksV2().get('small', { namespace: ns })).spec.storage.size, '500Mi');
  await disksV2().delete('small', { namespace: ns });
  assert.equal((await disksV1().list({ namespace: ns })).items.length, 4);
});
