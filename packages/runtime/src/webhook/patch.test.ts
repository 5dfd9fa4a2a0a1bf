import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyJsonPatch, jsonPatch } from './patch.ts';

test('a defaulted field is one add; untouched fields, known or not, are not in the patch', () => {
  const from = { spec: { engine: 'postgres', unknownToUs: { a: 1 } }, metadata: { name: 'x' } };
  const to = structuredClone(from) as typeof from & { spec: { storage?: string } };
  to.spec.storage = '1Gi';
  assert.deepEqual(jsonPatch(from, to), [{ op: 'add', path: '/spec/storage', value: '1Gi' }]);
});

test('replace, remove and keys that need escaping round-trip', () => {
  const from = { metadata: { labels: { 'a/b': '1', 'c~d': '2', gone: 'x' } }, spec: { list: [1, 2] } };
  const to = { metadata: { labels: { 'a/b': '2', 'c~d': '2' } }, spec: { list: [2, 1] } };
  const patch = jsonPatch(from, to);
  assert.deepEqual(patch, [
    { op: 'remove', path: '/metadata/labels/gone' },
    { op: 'replace', path: '/metadata/labels/a~1b', value: '2' },
    { op: 'replace', path: '/spec/list', value: [2, 1] },
  ]);
  assert.deepEqual(applyJsonPatch(from, patch), to);
});

test('equal documents give an empty patch; an undefined value counts as absent', () => {
  assert.deepEqual(jsonPatch({ a: { b: [1, { c: 2 }] } }, { a: { b: [1, { c: 2 }] } }), []);
  assert.deepEqual(jsonPatch({ a: 1 }, { a: 1, b: undefined }), []);
});
