// The review handling, without HTTP: one test per rule of ConversionRegistry
// (server.test.ts sends reviews over HTTPS; the integration test through the
// real API server).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject, ResourceType } from '@regulon/client';
import { silentLogger, type Logger } from '@regulon/util';
import { MalformedReviewError } from './admission.ts';
import {
  ConversionBuilder,
  ConversionError,
  ConversionRegistry,
  parseConversionReview,
  stashConversionData,
  takeConversionData,
  type ConversionResponse,
} from './conversion.ts';

const GROUP = 'example.com';
type DiskV1 = KubeObject & { spec: { size: string }; status?: { phase?: string } };
type DiskV1beta1 = KubeObject & { spec: { capacity: string }; status?: { phase?: string } };
type DiskV2 = KubeObject & {
  spec: { storage: { size: string; class?: string } };
  status?: { phase?: string };
};
const kind = <T extends KubeObject>(version: string): ResourceType<T> => ({
  group: GROUP,
  version,
  kind: 'Disk',
  plural: 'disks',
  namespaced: true,
});
const V1 = kind<DiskV1>('v1');
const V1beta1 = kind<DiskV1beta1>('v1beta1');
const V2 = kind<DiskV2>('v2');
const CLASS_ANNOTATION = 'example.com/v2-storage-class';

/** Converters counted by direction, and made to fail on demand. */
function registry(calls: string[] = []): ConversionRegistry {
  const r = new ConversionRegistry();
  new ConversionBuilder(r, V2)
    .spoke(V1, {
      toHub: (v1) => {
        calls.push('v1→v2');
        const stashed = takeConversionData(v1, CLASS_ANNOTATION);
        const { size, ...rest } = v1.spec;
        return {
          ...v1,
          spec: {
            ...rest,
            storage: { size, ...(typeof stashed === 'string' ? { class: stashed } : {}) },
          },
        };
      },
      fromHub: (v2) => {
        calls.push('v2→v1');
        if (v2.spec.storage.size === 'boom')
          throw new TypeError("Cannot read properties of undefined (reading 'x')");
        if (!/^\d+Gi$/.test(v2.spec.storage.size))
          throw new ConversionError(
            `spec.storage.size ${v2.spec.storage.size} is not whole Gi, which v1 requires`,
          );
        const { storage, ...rest } = v2.spec;
        stashConversionData(v2, CLASS_ANNOTATION, storage.class);
        return { ...v2, spec: { ...rest, size: storage.size } };
      },
    })
    .spoke(V1beta1, {
      toHub: (b) => {
        calls.push('v1beta1→v2');
        return { ...b, spec: { storage: { size: b.spec.capacity } } };
      },
      fromHub: (v2) => {
        calls.push('v2→v1beta1');
        return { ...v2, spec: { capacity: v2.spec.storage.size } };
      },
    });
  return r;
}

const metadata = () => ({
  name: 'd',
  namespace: 'ns',
  uid: '6f1c9a52-0d3e-4b8e-9a57-1c2d3e4f5a6b',
  resourceVersion: '42',
  generation: 3,
  creationTimestamp: '2025-01-01T00:00:00Z' as unknown as Date,
  labels: { app: 'db' },
  annotations: { 'example.com/owner': 'alice' },
  finalizers: ['example.com/cleanup'],
  managedFields: [{ manager: 'kubectl', operation: 'Apply', apiVersion: `${GROUP}/v1` }],
});
const v1 = (spec: DiskV1['spec'] = { size: '10Gi' }): DiskV1 => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'Disk',
  metadata: metadata(),
  spec,
  status: { phase: 'Bound' },
});
const v2 = (storage: DiskV2['spec']['storage']): DiskV2 => ({
  apiVersion: `${GROUP}/v2`,
  kind: 'Disk',
  metadata: metadata(),
  spec: { storage },
  status: { phase: 'Bound' },
});

function convert(r: ConversionRegistry, desired: string, objects: KubeObject[], log = silentLogger) {
  return r.review({ uid: 'u1', desiredAPIVersion: `${GROUP}/${desired}`, objects }, log);
}
function converted(response: ConversionResponse): KubeObject[] {
  assert.deepEqual(response.result, { status: 'Success' }, response.result.message);
  assert.equal(response.uid, 'u1');
  return response.convertedObjects;
}

test('spoke → hub → spoke round-trips every field, status and metadata included', () => {
  const r = registry();
  const original = v1();
  const [hub] = converted(convert(r, 'v2', [structuredClone(original)]));
  assert.deepEqual(hub, { ...v2({ size: '10Gi' }) });
  const [back] = converted(convert(r, 'v1', [hub]));
  assert.deepEqual(back, original);
});

test('a field only the hub has is kept in an annotation on the spoke and restored from it', () => {
  const r = registry();
  const original = v2({ size: '20Gi', class: 'fast' });
  const [spoke] = converted(convert(r, 'v1', [structuredClone(original)]));
  assert.deepEqual((spoke as DiskV1).spec, { size: '20Gi' });
  assert.equal(spoke!.metadata?.annotations?.[CLASS_ANNOTATION], '"fast"');
  const [hub] = converted(convert(r, 'v2', [spoke!]));
  assert.deepEqual(hub, original);
});

test('an object whose only annotation is the stash has no annotations after the round trip', () => {
  const r = registry();
  const { annotations: _a, ...bare } = metadata();
  const original: DiskV2 = { ...v2({ size: '20Gi', class: 'fast' }), metadata: bare };
  const [spoke] = converted(convert(r, 'v1', [structuredClone(original)]));
  assert.deepEqual(spoke!.metadata?.annotations, { [CLASS_ANNOTATION]: '"fast"' });
  const [hub] = converted(convert(r, 'v2', [spoke!]));
  assert.deepEqual(hub, original);
  // Read as v1 without a class: no annotation appears.
  const [plain] = converted(convert(r, 'v1', [{ ...v2({ size: '1Gi' }), metadata: bare }]));
  assert.equal(plain!.metadata?.annotations, undefined);
});

test('a spoke converts to another spoke through the hub', () => {
  const calls: string[] = [];
  const r = registry(calls);
  const [beta] = converted(convert(r, 'v1beta1', [v1({ size: '5Gi' })]));
  assert.deepEqual(calls, ['v1→v2', 'v2→v1beta1']);
  assert.equal(beta!.apiVersion, `${GROUP}/v1beta1`);
  assert.deepEqual((beta as DiskV1beta1).spec, { capacity: '5Gi' });
  assert.deepEqual(beta!.metadata, metadata());
});

test('objects already at the desired version come back unchanged, in order, and reach no converter', () => {
  const calls: string[] = [];
  const r = registry(calls);
  const atV2 = v2({ size: '1Gi', class: 'slow' });
  const out = converted(
    convert(r, 'v2', [structuredClone(atV2), v1({ size: '2Gi' }), structuredClone(atV2)]),
  );
  assert.deepEqual(calls, ['v1→v2']);
  assert.deepEqual(out, [atV2, v2({ size: '2Gi' }), atV2]);
  // At a spoke too: a v1 object asked for as v1 is not taken through the hub and back.
  calls.length = 0;
  const atV1 = { ...v1({ size: '7Gi' }), spec: { size: '7Gi', extra: 'unknown to the converters' } };
  const spokes = converted(convert(r, 'v1', [structuredClone(atV1), v2({ size: '8Gi' })]));
  assert.deepEqual(calls, ['v2→v1']);
  assert.deepEqual(spokes, [atV1, v1({ size: '8Gi' })]);
});

test('an empty request converts to an empty list', () => {
  assert.deepEqual(converted(convert(registry(), 'v1', [])), []);
});

test('a version, kind or group nothing is registered for fails the review, naming it and what is registered', () => {
  const r = registry();
  const cases: Array<[string, KubeObject, RegExp]> = [
    [
      'v3',
      v1(),
      /^cannot convert Disk "ns\/d" from v1 to v3: Disk\.example\.com has no version v3 registered for conversion \(registered: v2, v1, v1beta1\)$/,
    ],
    ['v2', { ...v1(), apiVersion: `${GROUP}/v9` }, /from v9 to v2: Disk\.example\.com has no version v9/],
    [
      'v2',
      { ...v1(), kind: 'Tape' },
      /^no conversion of Tape\.example\.com is registered with this webhook \(it converts Disk\.example\.com\)$/,
    ],
  ];
  for (const [desired, obj, message] of cases) {
    const response = convert(r, desired, [obj]);
    assert.equal(response.result.status, 'Failure');
    assert.match(response.result.message ?? '', message);
    assert.deepEqual(response.convertedObjects, []);
    assert.equal(response.uid, 'u1');
  }
  const otherGroup = r.review(
    { uid: 'u2', desiredAPIVersion: 'other.com/v2', objects: [v1()] },
    silentLogger,
  );
  assert.match(otherGroup.result.message ?? '', /a conversion keeps the group/);
});

test('one object that cannot be converted fails the whole review with its ConversionError message, naming the object', () => {
  const response = convert(registry(), 'v1', [v2({ size: '1Gi' }), v2({ size: '500Mi' })]);
  assert.deepEqual(response.result, {
    status: 'Failure',
    message:
      'converting Disk "ns/d" from v2 to v1: spec.storage.size 500Mi is not whole Gi, which v1 requires',
  });
  assert.deepEqual(response.convertedObjects, []);
});

test('a converter that throws anything else fails the review without internals in the message, and the error is logged', () => {
  const logged: unknown[] = [];
  const log: Logger = { ...silentLogger, error: (obj) => void logged.push(obj) };
  const response = convert(registry(), 'v1', [v2({ size: 'boom' })], log);
  assert.equal(response.result.status, 'Failure');
  assert.equal(
    response.result.message,
    `converting Disk "ns/d" from v2 to v1 failed: internal error in the converter; the manager's log has the details`,
  );
  assert.equal(logged.length, 1);
  assert.ok((logged[0] as { err: unknown }).err instanceof TypeError);
});

test("metadata is the source's: only the labels and annotations a converter returns are kept, an empty map removes them", () => {
  const r = new ConversionRegistry();
  new ConversionBuilder(r, V2).spoke(V1, {
    toHub: (o) => ({
      apiVersion: 'wrong/v0',
      kind: 'Wrong',
      metadata: { name: 'renamed', uid: 'other', resourceVersion: '1', labels: {}, annotations: { a: 'b' } },
      spec: { storage: { size: o.spec.size } },
    }),
    fromHub: (o) => ({ spec: { size: o.spec.storage.size } }),
  });
  const [hub] = converted(convert(r, 'v2', [v1()]));
  const { labels: _labels, ...rest } = metadata();
  assert.deepEqual(hub, {
    apiVersion: `${GROUP}/v2`,
    kind: 'Disk',
    metadata: { ...rest, annotations: { a: 'b' } },
    spec: { storage: { size: '10Gi' } },
  });
  // A converter that returns no metadata at all keeps the source's whole.
  const [spoke] = converted(convert(r, 'v1', [v2({ size: '3Gi' })]));
  assert.deepEqual(spoke, {
    apiVersion: `${GROUP}/v1`,
    kind: 'Disk',
    metadata: metadata(),
    spec: { size: '3Gi' },
  });
});

test('a converter never changes the object it was given', () => {
  const r = registry();
  const original = v2({ size: '20Gi', class: 'fast' });
  const input = structuredClone(original);
  converted(convert(r, 'v1', [input]));
  assert.deepEqual(input, original);
});

test('registration refuses a second hub of a kind, a spoke of another kind or group, and a version twice', () => {
  const r = new ConversionRegistry();
  const b = new ConversionBuilder(r, V2);
  const noop = {
    toHub: (o: DiskV1) => o as unknown as DiskV2,
    fromHub: (o: DiskV2) => o as unknown as DiskV1,
  };
  b.spoke(V1, noop);
  assert.throws(
    () => new ConversionBuilder(r, V1),
    /conversions of Disk\.example\.com are already registered \(hub v2\)/,
  );
  assert.throws(() => b.spoke(V1, noop), /Disk\.example\.com v1 is already registered/);
  assert.throws(() => b.spoke({ ...V1, version: 'v2' }, noop), /v2 is already registered/);
  assert.throws(
    () => b.spoke({ ...V1, kind: 'Tape', version: 'v3' }, noop),
    /Tape\.example\.com v3 is no version of Disk\.example\.com/,
  );
  assert.throws(
    () => b.spoke({ ...V1, group: 'other.com', version: 'v3' }, noop),
    /a conversion keeps the group and kind/,
  );
  assert.deepEqual(r.definitions(), [
    {
      crdName: 'disks.example.com',
      group: GROUP,
      kind: 'Disk',
      plural: 'disks',
      hub: 'v2',
      versions: ['v2', 'v1'],
    },
  ]);
});

test('each malformed review is refused with a message saying what is wrong', () => {
  const review = (request: unknown) =>
    JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request });
  const good = { uid: 'u1', desiredAPIVersion: `${GROUP}/v2`, objects: [v1()] };
  assert.deepEqual(parseConversionReview(review(good)), good);
  const cases: Array<[string, RegExp]> = [
    ['{', /not JSON/],
    ['[]', /not a JSON object/],
    [
      JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1beta1', kind: 'ConversionReview' }),
      /expected an apiextensions\.k8s\.io\/v1 ConversionReview/,
    ],
    [review(undefined), /no request/],
    [review({ ...good, uid: '' }), /request\.uid/],
    [review({ ...good, desiredAPIVersion: 7 }), /desiredAPIVersion/],
    [review({ ...good, objects: {} }), /objects is not a list/],
    [review({ ...good, objects: [v1(), { metadata: {} }] }), /objects\[1\] has no apiVersion and kind/],
  ];
  for (const [body, message] of cases)
    assert.throws(
      () => parseConversionReview(body),
      (err: unknown) => err instanceof MalformedReviewError && message.test(err.message),
      body,
    );
});

test('stashed data is taken back once, leaving the annotations map empty; an annotation that is no JSON is a ConversionError', () => {
  const obj: KubeObject = { metadata: { name: 'x' } };
  stashConversionData(obj, 'k', { class: 'fast' });
  assert.deepEqual(obj.metadata?.annotations, { k: '{"class":"fast"}' });
  assert.deepEqual(takeConversionData(obj, 'k'), { class: 'fast' });
  assert.deepEqual(obj.metadata, { name: 'x', annotations: {} });
  assert.equal(takeConversionData(obj, 'k'), undefined);
  stashConversionData(obj, 'k', 1);
  stashConversionData(obj, 'k', undefined);
  assert.deepEqual(obj.metadata, { name: 'x', annotations: {} });
  const bad: KubeObject = { metadata: { annotations: { k: 'not json', other: 'kept' } } };
  assert.throws(
    () => takeConversionData(bad, 'k'),
    (e: unknown) => e instanceof ConversionError && /annotation k/.test(e.message),
  );
  assert.deepEqual(bad.metadata?.annotations, { other: 'kept' });
});
