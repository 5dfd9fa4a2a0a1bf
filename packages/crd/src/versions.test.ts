import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from 'typebox';
import { defineKind } from './kind.ts';
import { SchemaError } from './schema.ts';
import { versionedCRD, type CrdConversion } from './versions.ts';

const names = {
  group: 'example.regulon.dev',
  kind: 'Disk',
  plural: 'disks',
  singular: 'disk',
  shortNames: ['dk'],
  scope: 'Namespaced' as const,
  status: Type.Object({ phase: Type.Optional(Type.String()) }),
};
// A real change between versions: v1's flat size became v2's storage.size.
const V1 = defineKind({
  ...names,
  version: 'v1',
  spec: Type.Object({ size: Type.String({ maxLength: 16 }) }),
  printerColumns: [{ name: 'Size', type: 'string', jsonPath: '.spec.size' }],
});
const V2 = defineKind({
  ...names,
  version: 'v2',
  spec: Type.Object({ storage: Type.Object({ size: Type.String({ maxLength: 16 }) }) }),
  printerColumns: [{ name: 'Size', type: 'string', jsonPath: '.spec.storage.size' }],
});
const WEBHOOK: CrdConversion = {
  strategy: 'Webhook',
  webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: 'https://127.0.0.1:9443/convert' } },
};

test('one CRD with every version: each its own schema and columns, one stored, the conversion given', () => {
  const crd = versionedCRD({ storage: V2, served: [V1], conversion: WEBHOOK });
  assert.equal(crd.metadata.name, 'disks.example.regulon.dev');
  assert.deepEqual(crd.spec.names, V2.crd().spec.names);
  assert.deepEqual(
    crd.spec.versions.map((v) => [v.name, v.served, v.storage]),
    [
      ['v2', true, true],
      ['v1', true, false],
    ],
  );
  const v1 = crd.spec.versions.find((v) => v.name === 'v1')!;
  assert.deepEqual(v1.schema.openAPIV3Schema, V1.schema());
  assert.equal(v1.additionalPrinterColumns[0]!.jsonPath, '.spec.size');
  assert.equal(
    crd.spec.versions.find((v) => v.name === 'v2')!.additionalPrinterColumns[0]!.jsonPath,
    '.spec.storage.size',
  );
  assert.deepEqual(crd.spec.conversion, WEBHOOK);
});

test('a deprecated version carries its warning; the stored one cannot be deprecated', () => {
  const crd = versionedCRD({
    storage: V2,
    served: [V1],
    deprecated: [{ version: 'v1', warning: 'example.regulon.dev/v1 Disk is deprecated; use v2' }],
    conversion: WEBHOOK,
  });
  const v1 = crd.spec.versions.find((v) => v.name === 'v1')!;
  assert.equal(v1.deprecated, true);
  assert.equal(v1.deprecationWarning, 'example.regulon.dev/v1 Disk is deprecated; use v2');
  assert.equal(crd.spec.versions.find((v) => v.name === 'v2')!.deprecated, undefined);
  assert.throws(
    () => versionedCRD({ storage: V2, served: [V1], deprecated: [{ version: 'v2' }], conversion: WEBHOOK }),
    /the stored version v2 cannot be deprecated/,
  );
  assert.throws(
    () => versionedCRD({ storage: V2, served: [V1], deprecated: [{ version: 'v3' }], conversion: WEBHOOK }),
    /deprecated version v3 is not one of the versions/,
  );
});

test('versions that disagree on what one CRD holds once are refused, naming what differs', () => {
  const Other = defineKind({
    ...names,
    version: 'v1',
    plural: 'drives',
    singular: 'drive',
    spec: V1.definition.spec,
  });
  assert.throws(
    () => versionedCRD({ storage: V2, served: [Other], conversion: WEBHOOK }),
    (err: unknown) => {
      assert.ok(err instanceof SchemaError);
      assert.match(err.message, /Disk v1 has names .*drives.* but the stored version v2 has .*disks/);
      return true;
    },
  );
  assert.throws(
    () => versionedCRD({ storage: V2, served: [V2], conversion: WEBHOOK }),
    /version v2 is given twice/,
  );
});

test("strategy None only for versions of the same schema: it would serve one version's fields as the other's", () => {
  assert.throws(
    () => versionedCRD({ storage: V2, served: [V1], conversion: { strategy: 'None' } }),
    /different schemas: conversion strategy None/,
  );
  const V1beta1 = defineKind({ ...V2.definition, version: 'v1beta1' });
  const crd = versionedCRD({ storage: V2, served: [V1beta1], conversion: { strategy: 'None' } });
  assert.deepEqual(crd.spec.conversion, { strategy: 'None' });
});
