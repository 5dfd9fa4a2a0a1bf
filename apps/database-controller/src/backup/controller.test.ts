// A DatabaseBackup's status from what a reconcile decided: the phase follows
// the conditions, and what the repository said lands in the status.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DatabaseBackupObject } from './api.ts';
import { computeBackupStatus } from './controller.ts';
import { repositoryOf, type RepositoryBackup } from './pgbackrest.ts';

const backup = (status?: DatabaseBackupObject['status']): DatabaseBackupObject => ({
  apiVersion: 'regulon.dev/v1alpha1',
  kind: 'DatabaseBackup',
  metadata: { name: 'nightly', namespace: 'shop', uid: 'u1', generation: 1 },
  spec: { database: 'orders' },
  ...(status ? { status } : {}),
});

const repository = repositoryOf(
  { endpoint: 'https://s3.example.com', bucket: 'b', credentials: { secretName: 'keys' } },
  'shop/orders',
);
const cond = (s: ReturnType<typeof computeBackupStatus>, type: string) =>
  s.conditions?.find((c) => c.type === type);

test('new: Pending, nothing known', () => {
  const s = computeBackupStatus(backup(), undefined, undefined);
  assert.equal(s.phase, 'Pending');
  assert.equal(cond(s, 'Succeeded')?.status, 'Unknown');
});

test('Running: where and since when, and the repository by name (no keys)', () => {
  const s = computeBackupStatus(
    backup(),
    { state: 'Running', instance: 'orders-0', startedAt: '2026-11-24T12:00:00Z', repository },
    undefined,
  );
  assert.equal(s.phase, 'Running');
  assert.equal(s.instance, 'orders-0');
  assert.equal(s.repository?.credentialsSecret, 'keys');
  assert.equal(s.repository?.path, 'shop/orders');
  assert.equal(cond(s, 'Ready')?.status, 'False');
});

test('Succeeded: the label, times, sizes and WAL range from the repository; Ready', () => {
  const running = computeBackupStatus(
    backup(),
    { state: 'Running', instance: 'orders-0', startedAt: '2026-11-24T12:00:00Z', repository },
    undefined,
  );
  const found: RepositoryBackup = {
    label: '20261124-120001F',
    type: 'full',
    error: false,
    annotations: {},
    startedAt: new Date('2026-11-24T12:00:01Z'),
    stoppedAt: new Date('2026-11-24T12:00:09Z'),
    sizeBytes: 100,
    repositorySizeBytes: 10,
    wal: { startSegment: 'A', stopSegment: 'B', startLsn: '0/1', stopLsn: '0/2' },
  };
  const s = computeBackupStatus(backup(running), { state: 'Succeeded', backup: found }, undefined);
  assert.equal(s.phase, 'Succeeded');
  assert.equal(cond(s, 'Ready')?.status, 'True');
  assert.equal(s.label, '20261124-120001F');
  assert.equal(s.startedAt, '2026-11-24T12:00:01Z');
  assert.equal(s.stoppedAt, '2026-11-24T12:00:09Z');
  assert.equal(s.sizeBytes, 100);
  assert.deepEqual(s.wal, { startSegment: 'A', stopSegment: 'B', startLsn: '0/1', stopLsn: '0/2' });
  assert.equal(s.repository?.bucket, 'b', 'kept from when it ran');
});

test('Failed: the reason and message, a stop time; later reconciles that decide nothing keep it', () => {
  const failed = computeBackupStatus(
    backup(),
    { state: 'Failed', reason: 'BackupFailed', message: 'the store answered HTTP 403 (Forbidden)' },
    undefined,
    new Date('2026-11-24T12:01:00Z'),
  );
  assert.equal(failed.phase, 'Failed');
  assert.equal(cond(failed, 'Succeeded')?.reason, 'BackupFailed');
  assert.equal(failed.stoppedAt, '2026-11-24T12:01:00Z');
  assert.deepEqual(computeBackupStatus(backup(failed), undefined, undefined), failed);
});
