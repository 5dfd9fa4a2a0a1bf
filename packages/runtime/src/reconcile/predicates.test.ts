import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '@regulon/client';
import { and, annotationsChanged, generationChanged, labelsChanged, or, predicate } from './predicates.ts';

const obj = (
  generation: number,
  labels: Record<string, string> = {},
  annotations: Record<string, string> = {},
): KubeObject => ({
  metadata: { name: 'x', generation, labels, annotations },
});

test('generationChanged passes spec changes and drops status-only updates', () => {
  assert.equal(generationChanged.update!(obj(1), obj(2)), true);
  assert.equal(generationChanged.update!(obj(2), obj(2)), false);
  assert.equal('create' in generationChanged, false, 'creates and deletes always pass');
});

test('labelsChanged and annotationsChanged compare the maps, not their identity', () => {
  assert.equal(labelsChanged.update!(obj(1, { a: '1' }), obj(1, { a: '1' })), false);
  assert.equal(labelsChanged.update!(obj(1, { a: '1' }), obj(1, { a: '2' })), true);
  assert.equal(labelsChanged.update!(obj(1, { a: '1' }), obj(1, { a: '1', b: '2' })), true);
  assert.equal(annotationsChanged.update!(obj(1, {}, { x: 'y' }), obj(1, {}, { x: 'y' })), false);
  assert.equal(annotationsChanged.update!(obj(1, {}, { x: 'y' }), obj(1, {}, {})), true);
});

test('or, and and custom predicates combine per event type', () => {
  const either = or(generationChanged, labelsChanged);
  assert.equal(either.update!(obj(1, { a: '1' }), obj(1, { a: '2' })), true);
  assert.equal(either.update!(obj(1), obj(1)), false);
  const both = and(generationChanged, labelsChanged);
  assert.equal(both.update!(obj(1, { a: '1' }), obj(2, { a: '1' })), false);
  assert.equal(both.update!(obj(1, { a: '1' }), obj(2, { a: '2' })), true);
  const named = predicate((o) => o.metadata?.name === 'x');
  assert.equal(named.create!(obj(1)), true);
  assert.equal(named.delete!({ metadata: { name: 'y' } }), false);
});
