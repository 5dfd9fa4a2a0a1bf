// The role sampler's pure parts: which Pods are a set's instances, and the
// summary of its rounds (split brains, the writable sequence, the gaps).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { describeSplitBrain, instancePodsOf, summarise, type SampleRound } from './role-sampler.ts';

test('instancePodsOf: the set’s ordinal Pods in ordinal order, not a backup Job’s Pod nor another set’s', () => {
  const pod = (name: string, ip?: string, deleting = false): V1Pod => ({
    metadata: { name, ...(deleting ? { deletionTimestamp: new Date(0) } : {}) },
    status: { phase: 'Running', ...(ip ? { podIP: ip } : {}) },
  });
  assert.deepEqual(
    instancePodsOf(
      [
        pod('db-10', '10.0.0.10'),
        pod('db-2'),
        pod('db-backup-1-x7k'),
        pod('db.x-0'),
        pod('db-0', '10.0.0.1', true),
      ],
      'db',
    ),
    [
      { name: 'db-0', ip: '10.0.0.1', phase: 'Running', deleting: true },
      { name: 'db-2', ip: undefined, phase: 'Running', deleting: false },
      { name: 'db-10', ip: '10.0.0.10', phase: 'Running', deleting: false },
    ],
  );
  assert.deepEqual(
    instancePodsOf([pod('db.x-0'), pod('dbax-0')], 'db.x').map((p) => p.name),
    ['db.x-0'],
    'a name is matched literally',
  );
});

test('summarise: split-brain rounds, the writable sequence and the spans with none', () => {
  const round = (atMs: number, writable: string[]): SampleRound => ({
    atMs,
    tookMs: 10,
    instances: writable.map((name) => ({ name, ip: `10.0.0.${name.slice(-1)}`, role: 'writable' })),
    writable,
  });
  const s = summarise([
    round(0, ['db-0']),
    round(200, []),
    round(400, []),
    round(600, ['db-1']),
    round(800, ['db-1', 'db-0']),
    round(1000, ['db-1']),
  ]);
  assert.equal(s.maxWritableAtOnce, 2);
  assert.deepEqual(s.splitBrainRounds, [{ atMs: 800, writable: ['db-1', 'db-0'] }]);
  assert.deepEqual(s.splitBrainSpans, [
    { fromMs: 800, toMs: 800, rounds: 1, writable: ['db-0@10.0.0.0', 'db-1@10.0.0.1'] },
  ]);
  assert.equal(describeSplitBrain(s, 0), 'db-0@10.0.0.0 and db-1@10.0.0.1 from +0.8 s to +0.8 s (1 rounds)');
  assert.deepEqual(s.writableSequence, ['db-0', 'db-1', 'db-0', 'db-1']);
  assert.deepEqual(s.noWritableSpans, [{ fromMs: 200, toMs: 600 }]);
});

test('summarise: consecutive split-brain rounds with the same instances make one span; a new address starts another', () => {
  const round = (atMs: number, writable: Array<[string, string]>): SampleRound => ({
    atMs,
    tookMs: 10,
    instances: writable.map(([name, ip]) => ({ name, ip, role: 'writable' })),
    writable: writable.map(([name]) => name),
  });
  const s = summarise([
    round(0, [['db-0', 'a']]),
    round(200, [
      ['db-0', 'a'],
      ['db-2', 'c'],
    ]),
    round(400, [
      ['db-2', 'c'],
      ['db-0', 'a'],
    ]),
    round(600, [['db-2', 'c']]),
    round(800, [
      ['db-0', 'b'],
      ['db-2', 'c'],
    ]),
  ]);
  assert.deepEqual(s.splitBrainSpans, [
    { fromMs: 200, toMs: 400, rounds: 2, writable: ['db-0@a', 'db-2@c'] },
    { fromMs: 800, toMs: 800, rounds: 1, writable: ['db-0@b', 'db-2@c'] },
  ]);
  assert.equal(
    describeSplitBrain(s, 100),
    'db-0@a and db-2@c from +0.1 s to +0.3 s (2 rounds); db-0@b and db-2@c from +0.7 s to +0.7 s (1 rounds)',
  );
});
