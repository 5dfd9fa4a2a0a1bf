import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import {
  FENCED_POD_ANNOTATION,
  fencedCondition,
  fencingOf,
  formatFencedInstances,
  INVALID_FENCING,
  parseFencedInstances,
} from './fencing.ts';

test('the fenced-instances annotation: a JSON list of instance names, or ["*"]', () => {
  assert.equal(parseFencedInstances(undefined), undefined);
  assert.deepEqual(parseFencedInstances('[]'), { all: false, names: [] });
  assert.deepEqual(parseFencedInstances('["orders-2","orders-1","orders-2"]'), {
    all: false,
    names: ['orders-1', 'orders-2'],
  });
  assert.deepEqual(parseFencedInstances('["*"]'), { all: true });
  for (const [bad, why] of [
    ['orders-1', /not JSON/],
    ['{"orders-1":true}', /JSON list/],
    ['[1]', /JSON list/],
    ['["*","orders-1"]', /stands alone/],
    ['["Orders_1"]', /not an instance name/],
  ] as const)
    assert.throws(() => parseFencedInstances(bad), why, bad);
  assert.equal(formatFencedInstances({ all: false, names: ['b-1', 'a-0', 'b-1'] }), '["a-0","b-1"]');
  assert.equal(formatFencedInstances({ all: true }), '["*"]');
});

const pod = (name: string, fenced = false): [string, V1Pod] => [
  name,
  { metadata: { name, annotations: fenced ? { [FENCED_POD_ANNOTATION]: 'true' } : {} } },
];

test('which instances are fenced; an annotation that cannot be read keeps the fence as the Pods carry it', () => {
  const instances = ['orders-0', 'orders-1', 'orders-2'];
  const pods = new Map([pod('orders-0'), pod('orders-1', true), pod('orders-2')]);
  assert.deepEqual([...fencingOf(undefined, instances, pods).fenced], []);
  assert.deepEqual([...fencingOf('["*"]', instances, pods).fenced], instances);
  const some = fencingOf('["orders-2","other-0"]', instances, pods);
  assert.deepEqual([...some.fenced], ['orders-2']);
  assert.deepEqual(some.unknown, ['other-0']);
  const invalid = fencingOf('orders-2', instances, pods);
  assert.deepEqual([...invalid.fenced], ['orders-1']);
  assert.match(invalid.invalid ?? '', /not JSON/);

  const c = fencedCondition(invalid, () => true);
  assert.equal(c.reason, INVALID_FENCING);
  assert.equal(c.status, 'True');
  assert.match(c.message, /stays as it was \(orders-1\)/);
  assert.equal(fencedCondition(undefined, () => true).status, 'False');
  const stopping = fencedCondition(some, () => false);
  assert.deepEqual([stopping.status, stopping.reason], ['True', 'Stopping']);
  assert.match(stopping.message, /not instances of this Database: other-0/);
  assert.equal(fencedCondition(some, () => true).reason, 'EnginesStopped');
});
