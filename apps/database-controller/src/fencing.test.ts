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
  troubleAfterFence,
  UNFENCE_GRACE_MS,
} from './fencing.ts';
import type { Member } from '@regulon/conventions';

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

test('an instance whose fence was just lifted is starting, not lost: its failover delay runs from the grace after', () => {
  const member = (troubleSince: number | undefined): Member => ({
    pod: 'orders-0',
    ordinal: 0,
    uid: 'u0',
    createdAt: 0,
    deleting: false,
    ready: troubleSince === undefined,
    troubleSince,
    server: undefined,
  });
  const fenced = new Set(['orders-0']);
  // Fenced since 1 000 (not ready from then), the fence seen last at 60 000.
  assert.equal(troubleAfterFence('db', [member(1_000)], fenced, 60_000)[0]!.troubleSince, 1_000);
  const lifted = troubleAfterFence('db', [member(1_000)], new Set(), 62_000)[0]!;
  assert.equal(lifted.troubleSince, 60_000 + UNFENCE_GRACE_MS);
  // Serving again: forgotten, and a later trouble counts from when it began.
  assert.equal(troubleAfterFence('db', [member(undefined)], new Set(), 70_000)[0]!.troubleSince, undefined);
  assert.equal(troubleAfterFence('db', [member(80_000)], new Set(), 90_000)[0]!.troubleSince, 80_000);
  // Another Database's instance of the same name is its own.
  assert.equal(troubleAfterFence('other', [member(1_000)], new Set(), 62_000)[0]!.troubleSince, 1_000);
});
