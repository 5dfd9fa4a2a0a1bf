import assert from 'node:assert/strict';
import { test } from 'node:test';
import { memberOf, TroubleClock } from './members.ts';

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
    clock: new TroubleClock(),
    key: 'uid/db-1',
    now: NOW,
    outdated: false,
  });

test('a deleting Pod: its deletion began its grace period before the deletionTimestamp', () => {
  const m = member(pod({}, { deletionTimestamp: '2026-11-25T10:00:30Z', deletionGracePeriodSeconds: 30 }));
  assert.equal(m.deleting, true);
  assert.equal(m.deletingSince, NOW);
  assert.equal(m.troubleSince, NOW, 'a Ready Pod whose server does not answer is in trouble from now');
});
