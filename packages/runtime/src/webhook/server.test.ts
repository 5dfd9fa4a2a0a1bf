// The webhook server over real HTTPS, without a cluster: the manager is
// never started, the server runnable is. What the API server sends is
// AdmissionReview JSON; the integration test sends it through the real one.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { KubeClient, type KubeObject } from '@regulon/client';
import { eventually } from '../testing/wait.ts';
import { Registry } from 'prom-client';
import { createLogger } from '../observability/logging.ts';
import { Manager } from '../manager/manager.ts';
import { fieldErrors, type AdmissionResponse } from './admission.ts';
import { FileCertificates } from './certificates.ts';
import { ConversionError, type ConversionResponse } from './conversion.ts';
import { generateCA, generateServingCert, type KeyPair } from './generate.ts';
import { applyJsonPatch, type JsonPatchOperation } from './patch.ts';
import { WebhookServer } from './server.ts';

const Widget = Object.freeze({
  group: 'example.com',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  namespaced: true,
});
type WidgetObject = KubeObject & { spec: { size?: number; color?: string } };
/** Widget v2: `size` moved under `dimensions`; v1 is the hub here. */
const WidgetV2 = Object.freeze({ ...Widget, version: 'v2' });
type WidgetV2Object = KubeObject & { spec: { dimensions: { size?: number }; color?: string } };
const spans = new InMemorySpanExporter();
const names = { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] };

let ca: KeyPair;
let certDir: string;
let registry: Registry;
let server: WebhookServer;
const stop = new AbortController();
let running: Promise<void>;

function writePair(pair: KeyPair) {
  // As the kubelet does: new files appear whole, by rename.
  writeFileSync(join(certDir, 'tls.crt.tmp'), pair.cert);
  writeFileSync(join(certDir, 'tls.key.tmp'), pair.key);
  renameSync(join(certDir, 'tls.key.tmp'), join(certDir, 'tls.key'));
  renameSync(join(certDir, 'tls.crt.tmp'), join(certDir, 'tls.crt'));
}

before(async () => {
  ca = await generateCA('test-ca', 3600_000);
  certDir = mkdtempSync(join(tmpdir(), 'webhook-certs-'));
  writePair(await generateServingCert(ca, names, 3600_000));
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  registry = new Registry();
  const mgr = new Manager({
    client: KubeClient.fromKubeConfig(kc),
    logger: createLogger({ level: 'silent' }),
    registry,
    tracer: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }).getTracer('test'),
  });
  server = new WebhookServer(mgr, {
    bindAddress: '127.0.0.1:0',
    certificates: new FileCertificates({ certDir, pollIntervalMs: 100 }),
  });
  server
    .for<WidgetObject>(Widget)
    .withDefaulter(
      (w) => {
        w.spec.size ??= 3;
        return w.spec.color ? [] : ['spec.color is unset: widgets are grey'];
      },
      { failurePolicy: 'Fail' },
    )
    .withValidator(
      {
        validateCreate: (w) =>
          w.spec.size! > 10 ? [fieldErrors.invalid('spec.size', w.spec.size, 'at most 10')] : undefined,
        validateUpdate: (w) => {
          if (w.spec.color === 'boom') throw new TypeError('a bug');
          return { warnings: ['updated'] };
        },
      },
      { failurePolicy: 'Ignore' },
    );
  server.conversion<WidgetObject>(Widget).spoke<WidgetV2Object>(WidgetV2, {
    toHub: ({ spec: { dimensions, ...rest }, ...v2 }) => ({
      ...v2,
      spec: { ...rest, size: dimensions.size },
    }),
    fromHub: ({ spec: { size, ...rest }, ...v1 }) => {
      if (rest.color === 'infrared') throw new ConversionError('v2 has no infrared widgets');
      return { ...v1, spec: { ...rest, dimensions: { size } } };
    },
  });
  running = server.start(stop.signal);
  await eventually('the server listens', () => server.port !== undefined, 10_000);
});
after(async () => {
  stop.abort();
  await running;
  rmSync(certDir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  body: string;
  peerSerial: string;
}
function post(
  path: string,
  body: string,
  opts: { method?: string; contentType?: string; ca?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        method: opts.method ?? 'POST',
        ca: opts.ca ?? ca.cert,
        agent: false,
        headers: { 'content-type': opts.contentType ?? 'application/json' },
      },
      (res) => {
        const peerSerial = (res.socket as TLSSocket).getPeerCertificate().serialNumber;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: text, peerSerial }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The response of an answered review. */
const responseOf = (answer: Answer) => (JSON.parse(answer.body) as { response: AdmissionResponse }).response;

const widget = (spec: WidgetObject['spec']) => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w', namespace: 'ns' },
  spec,
});
const review = (operation: string, object: unknown, oldObject?: unknown) =>
  JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `uid-${operation}`,
      kind: { group: 'example.com', version: 'v1', kind: 'Widget' },
      resource: { group: 'example.com', version: 'v1', resource: 'widgets' },
      name: 'w',
      namespace: 'ns',
      operation,
      userInfo: { username: 'alice' },
      object,
      oldObject,
    },
  });

test('defaulting answers the JSON patch from the object to its defaulted form, and the warnings', async () => {
  const object = widget({});
  const answer = await post('/mutate-example-com-v1-widget', review('CREATE', object));
  assert.equal(answer.status, 200);
  const response = responseOf(answer);
  assert.equal(response.uid, 'uid-CREATE');
  assert.equal(response.allowed, true);
  assert.equal(response.patchType, 'JSONPatch');
  const patch = JSON.parse(Buffer.from(response.patch!, 'base64').toString()) as JsonPatchOperation[];
  assert.deepEqual(patch, [{ op: 'add', path: '/spec/size', value: 3 }]);
  assert.deepEqual(applyJsonPatch(object, patch), widget({ size: 3 }));
  assert.deepEqual(response.warnings, ['spec.color is unset: widgets are grey']);
});

test('validation refuses with 422 Invalid and a cause per field; an update passes with its warning', async () => {
  const refused = responseOf(
    await post('/validate-example-com-v1-widget', review('CREATE', widget({ size: 11 }))),
  );
  assert.equal(refused.allowed, false);
  assert.equal(refused.status?.code, 422);
  assert.equal(
    refused.status?.message,
    'Widget.example.com "w" is invalid: spec.size: Invalid value: 11: at most 10',
  );
  assert.deepEqual(refused.status?.details?.causes, [
    { reason: 'FieldValueInvalid', message: 'Invalid value: 11: at most 10', field: 'spec.size' },
  ]);
  const updated = responseOf(
    await post('/validate-example-com-v1-widget', review('UPDATE', widget({ size: 1 }), widget({}))),
  );
  assert.deepEqual([updated.allowed, updated.warnings], [true, ['updated']]);
  assert.deepEqual(
    server.definitions().map((d) => [d.name, d.operations, d.failurePolicy]),
    [
      ['mwidget.example.com', ['CREATE', 'UPDATE'], 'Fail'],
      ['vwidget.example.com', ['CREATE', 'UPDATE'], 'Ignore'],
    ],
  );
});

test('malformed requests get a 400-style answer and never reach a handler; a throwing handler refuses with 500 and the server keeps serving', async () => {
  const bad = await post(
    '/validate-example-com-v1-widget',
    '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}',
  );
  assert.equal(bad.status, 400);
  assert.equal(responseOf(bad).status?.code, 400);
  assert.equal((await post('/validate-example-com-v1-widget', 'not json')).status, 400);
  assert.equal(
    (
      await post('/validate-example-com-v1-widget', review('CREATE', widget({})), {
        contentType: 'text/plain',
      })
    ).status,
    415,
  );
  assert.equal((await post('/validate-example-com-v1-widget', '', { method: 'GET' })).status, 405);
  assert.equal((await post('/nowhere', review('CREATE', widget({})))).status, 404);
  const crashed = responseOf(
    await post('/validate-example-com-v1-widget', review('UPDATE', widget({ color: 'boom' }), widget({}))),
  );
  assert.equal(crashed.allowed, false);
  assert.equal(crashed.status?.code, 500);
  assert.doesNotMatch(crashed.status?.message ?? '', /a bug/);
  assert.equal(
    (await post('/validate-example-com-v1-widget', review('CREATE', widget({ size: 1 })))).status,
    200,
  );
});

test("metrics use controller-runtime's names, per path and code", async () => {
  const text = await registry.metrics();
  assert.match(
    text,
    /controller_runtime_webhook_requests_total\{webhook="\/validate-example-com-v1-widget",code="400"\} 2/,
  );
  assert.match(
    text,
    /controller_runtime_webhook_requests_total\{webhook="\/mutate-example-com-v1-widget",code="200"\} 1/,
  );
  assert.match(
    text,
    /controller_runtime_webhook_latency_seconds_count\{webhook="\/validate-example-com-v1-widget"\} \d+/,
  );
  assert.match(
    text,
    /controller_runtime_webhook_requests_in_flight\{webhook="\/validate-example-com-v1-widget"\} 0/,
  );
});

test('a mounted certificate that changes is served from the next connection, without a restart', async () => {
  const before = (await post('/validate-example-com-v1-widget', review('CREATE', widget({})))).peerSerial;
  const next = await generateServingCert(ca, names, 3600_000);
  writePair(next);
  const serial = new X509Certificate(next.cert).serialNumber;
  await eventually(
    'the new certificate is served',
    async () =>
      (await post('/validate-example-com-v1-widget', review('CREATE', widget({})))).peerSerial === serial,
    10_000,
  );
  assert.notEqual(before, serial);
});

const conversionReview = (desiredAPIVersion: string, objects: unknown[]) =>
  JSON.stringify({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'ConversionReview',
    request: { uid: 'conv-1', desiredAPIVersion, objects },
  });
const conversionOf = (answer: Answer) =>
  JSON.parse(answer.body) as { apiVersion: string; kind: string; response: ConversionResponse };

test('/convert answers a ConversionReview: the converted objects, or a Failure with its message; a malformed review gets 400, counted and traced under its path', async () => {
  spans.reset();
  const converted = await post(
    '/convert',
    conversionReview('example.com/v2', [widget({ size: 4, color: 'red' })]),
  );
  assert.equal(converted.status, 200);
  const review = conversionOf(converted);
  assert.equal(review.kind, 'ConversionReview');
  assert.deepEqual(review.response, {
    uid: 'conv-1',
    convertedObjects: [
      {
        apiVersion: 'example.com/v2',
        kind: 'Widget',
        metadata: { name: 'w', namespace: 'ns' },
        spec: { color: 'red', dimensions: { size: 4 } },
      },
    ],
    result: { status: 'Success' },
  });
  const refused = await post('/convert', conversionReview('example.com/v2', [widget({ color: 'infrared' })]));
  assert.equal(refused.status, 200);
  assert.deepEqual(conversionOf(refused).response, {
    uid: 'conv-1',
    convertedObjects: [],
    result: {
      status: 'Failure',
      message: 'converting Widget "ns/w" from v1 to v2: v2 has no infrared widgets',
    },
  });
  const malformed = await post(
    '/convert',
    '{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}',
  );
  assert.equal(malformed.status, 400);
  assert.deepEqual(conversionOf(malformed).response?.result, {
    status: 'Failure',
    message: 'ConversionReview has no request',
    code: 400,
    reason: 'BadRequest',
  });
  assert.equal((await post('/convert', '', { method: 'GET' })).status, 405);
  assert.deepEqual(
    server.conversions().map((c) => [c.crdName, c.hub, c.versions]),
    [['widgets.example.com', 'v1', ['v1', 'v2']]],
  );

  const text = await registry.metrics();
  assert.match(text, /controller_runtime_webhook_requests_total\{webhook="\/convert",code="200"\} 2/);
  assert.match(text, /controller_runtime_webhook_requests_total\{webhook="\/convert",code="400"\} 1/);
  assert.match(text, /controller_runtime_webhook_latency_seconds_count\{webhook="\/convert"\} 4/);
  assert.match(text, /controller_runtime_webhook_requests_in_flight\{webhook="\/convert"\} 0/);

  const finished = spans.getFinishedSpans();
  assert.deepEqual(
    finished.map((s) => [s.name, s.attributes['url.path'], s.status.code]),
    [
      ['conversion', '/convert', 1],
      ['conversion', '/convert', 2],
      ['conversion', '/convert', 2],
      ['conversion', '/convert', 2],
    ],
  );
  assert.deepEqual(
    [
      finished[0]!.attributes['regulon.conversion.uid'],
      finished[0]!.attributes['regulon.conversion.desired_api_version'],
      finished[0]!.attributes['regulon.conversion.objects'],
    ],
    ['conv-1', 'example.com/v2', 1],
  );
  assert.equal(
    finished[1]!.status.message,
    'converting Widget "ns/w" from v1 to v2: v2 has no infrared widgets',
  );
});
