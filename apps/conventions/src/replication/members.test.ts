import assert from 'node:assert/strict';
import { test } from 'node:test';
import { memberOf, ReplicationMemory } from './members.ts';
import type { Member, Server } from './plan.ts';

const NOW = Date.parse('2026-11-25T10:00:00Z');
const pod = (labels: Record<string, string>, extra: Record<string, unknown> = {}) => ({
  metadata: { name: 'db-1', uid: 'u1', labels, creationTimestamp: '2026-11-25T09:00:00Z', ...extra },
  status: { conditions: [{ type: 'Ready', status: 'True' }] },
});
const member = (p: ReturnType<typeof pod>) =>
  memberOf({
    name: 'db-1',
    ordinal: 1,
    pod: p,
    server: undefined,
    memory: new ReplicationMemory(),
    key: 'uid/db-1',
    now: NOW,
    outdated: false,
  });

test('a deleting Pod: its deletion began its grace period before the deletionTimestamp', () => {
  const m = member(pod({}, { deletionTimestamp: '2026-11-25T10:00:30Z', deletionGracePeriodSeconds: 30 }));
  assert.equal(m.deleting, true);
  assert.equal(m.deletingSince, NOW);
  assert.equal(m.troubleSince, NOW, 'a deleting Pod whose server does not answer is in trouble from now');
});

test('a Ready Pod whose server does not answer this manager is not in trouble: the kubelet says it serves', () => {
  const m = member(pod({ 'regulon.dev/role': 'primary' }));
  assert.equal(m.troubleSince, undefined);
  assert.equal(m.ready, true);
  assert.equal(m.label, 'primary', 'the role label it carries');
  const notReady = memberOf({
    name: 'db-1',
    ordinal: 1,
    pod: {
      ...pod({ 'regulon.dev/role': 'bogus' }),
      status: {
        conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: '2026-11-25T09:59:00Z' }],
      },
    },
    server: undefined,
    memory: new ReplicationMemory(),
    key: 'uid/db-1',
    now: NOW,
    outdated: false,
  });
  assert.equal(notReady.troubleSince, NOW - 60_000, 'not ready: in trouble since the kubelet said so');
  assert.equal(notReady.label, undefined, 'an unknown label value is no role');
});

test("the primary's last answer: refreshed while it answers writable, kept while it does not, forgotten once another is named", () => {
  const server = (writable: boolean, lsn: bigint, streaming = !writable): Server => ({
    writable,
    systemId: 's',
    timeline: 1,
    lsn,
    replayLsn: lsn,
    streaming,
  });
  const at = (pod: string, s: Server | undefined) => ({ pod, server: s }) as Member;
  const memory = new ReplicationMemory();
  assert.equal(memory.lastAnswer('u', 'db-0', [at('db-0', undefined)]), undefined, 'never seen answering');
  const first = memory.lastAnswer('u', 'db-0', [
    at('db-0', server(true, 100n)),
    at('db-1', server(false, 90n)),
    at('db-2', server(false, 100n, false)),
  ]);
  assert.deepEqual(first, { lsn: 100n, followers: new Set(['db-1']) }, 'only the streaming standby follows');
  // It stops answering, and the stream breaks with it: what it said last is what counts.
  const kept = memory.lastAnswer('u', 'db-0', [
    at('db-0', undefined),
    at('db-1', server(false, 100n, false)),
  ]);
  assert.deepEqual(kept, first);
  assert.equal(memory.lastAnswer('other', 'db-0', [at('db-0', undefined)]), undefined, 'kept per owner');
  assert.equal(
    memory.lastAnswer('u', 'db-1', [at('db-1', undefined)]),
    undefined,
    'a new primary: nothing known of it',
  );
  assert.equal(
    memory.lastAnswer('u', 'db-0', [at('db-0', undefined)]),
    undefined,
    'the role back on db-0: its answer from before is not trusted',
  );
});

test('out of touch: since first seen answering as a standby that follows no primary; forgotten once it follows one or does not answer', () => {
  const memory = new ReplicationMemory();
  const server = (extra: Partial<Server>): Server => ({
    writable: false,
    systemId: 's',
    timeline: 1,
    lsn: 10n,
    replayLsn: 10n,
    streaming: false,
    ...extra,
  });
  const at = (now: number, s: Server | undefined) =>
    memberOf({
      name: 'db-1',
      ordinal: 1,
      pod: pod({}),
      server: s,
      memory,
      key: 'uid/db-1',
      now,
      outdated: false,
    }).outOfTouchSince;
  assert.equal(at(NOW, server({ streaming: true })), undefined, 'streaming: in touch');
  assert.equal(at(NOW + 1_000, server({})), NOW + 1_000);
  assert.equal(at(NOW + 5_000, server({})), NOW + 1_000, 'counted from the first sight');
  assert.equal(at(NOW + 6_000, undefined), undefined, 'no answer: it may be in touch');
  assert.equal(at(NOW + 7_000, server({})), NOW + 7_000, 'counted afresh');
  assert.equal(
    at(NOW + 8_000, server({ writable: true })),
    undefined,
    'a primary is no standby out of touch',
  );
});

test('position moved: when first seen, then each time it changes; kept while the server does not answer', () => {
  const memory = new ReplicationMemory();
  const at = (lsn: bigint | undefined, now: number) =>
    memory.positionMovedAt(
      'uid/db-1',
      lsn === undefined
        ? undefined
        : { writable: false, systemId: '1', timeline: 1, lsn, replayLsn: lsn, streaming: true },
      now,
    );
  assert.equal(at(undefined, NOW), undefined, 'never seen');
  assert.equal(at(100n, NOW), NOW);
  assert.equal(at(100n, NOW + 5_000), NOW, 'unchanged');
  assert.equal(at(250n, NOW + 6_000), NOW + 6_000, 'moved');
  assert.equal(at(undefined, NOW + 9_000), NOW + 6_000, 'silent: the last move is kept');
});
