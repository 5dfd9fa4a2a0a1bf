import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInThisContext } from 'node:vm';
import type { KubeObject } from '@regulon/client';
import { stripManagedFields } from './informer.ts';

// V8's own answer to "is this object still in fast mode?", compiled after the flag is set.
setFlagsFromString('--allow-natives-syntax');
const hasFastProperties = runInThisContext('(o) => %HasFastProperties(o)') as (o: object) => boolean;

type Decoded = KubeObject & { data: Record<string, string> };
const decoded = (): Decoded =>
  JSON.parse(
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'x',
        namespace: 'ns',
        uid: 'u',
        resourceVersion: '7',
        labels: { a: 'b' },
        managedFields: [{ manager: 'kubectl', operation: 'Update', fieldsV1: { 'f:data': {} } }],
      },
      data: { k: 'v' },
    }),
  ) as Decoded;

describe('stripManagedFields', () => {
  it('drops metadata.managedFields and keeps every other field', () => {
    const obj = stripManagedFields(decoded());
    assert.deepEqual(obj.metadata, {
      name: 'x',
      namespace: 'ns',
      uid: 'u',
      resourceVersion: '7',
      labels: { a: 'b' },
    });
    assert.deepEqual(obj.data, { k: 'v' });
  });

  // A `delete` turns the object into a hash table (V8's dictionary mode):
  // measured 1,055 against 679 bytes of heap per cached Widget.
  it('leaves metadata in fast mode, so a cached object stays small', () => {
    const obj = stripManagedFields(decoded());
    assert.equal(hasFastProperties(obj.metadata!), true);
  });

  it('leaves an object without managedFields as it is', () => {
    const obj = decoded();
    delete obj.metadata!.managedFields;
    const metadata = obj.metadata;
    assert.equal(stripManagedFields(obj).metadata, metadata);
  });
});
