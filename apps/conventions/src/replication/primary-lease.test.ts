// The manager's judgement of the primary Lease on a fake clock; the transfer
// against the real API server is in primary-lease.integration.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FakeClock } from '@regulon/util';
import { PrimaryLeaseView, type PrimaryLease } from './primary-lease.ts';

const lease = (holder: string, renewTime: string, resourceVersion = '1'): PrimaryLease => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: 'orders-primary', namespace: 'shop', resourceVersion },
  spec: {
    holderIdentity: holder,
    leaseDurationSeconds: 15,
    renewTime,
    acquireTime: 'a',
    leaseTransitions: 0,
  },
});

/** Reads every `everyMs` for `forMs`, as a reconcile loop would, with the same record each time. */
function readFor(
  view: PrimaryLeaseView,
  clock: FakeClock,
  record: PrimaryLease | undefined,
  forMs: number,
  everyMs = 1_000,
) {
  for (let t = 0; t < forMs; t += everyMs) {
    clock.advance(everyMs);
    view.observe(record);
  }
}

describe('PrimaryLeaseView', () => {
  test('knows nothing before its first read', () => {
    const view = new PrimaryLeaseView(new FakeClock(), 5_000);
    assert.deepEqual(view.judge(), { state: 'unknown' });
  });

  test('a Lease left unrenewed expires after its duration of watching, whatever its renewTime says', () => {
    const clock = new FakeClock();
    const view = new PrimaryLeaseView(clock, 5_000);
    // A renewTime long past on the holder's clock: not compared with ours.
    const record = lease('orders-0', '2001-01-01T00:00:00.000000Z');
    view.observe(record);
    const first = view.judge();
    assert.equal(first.state, 'held');
    assert.equal(first.state === 'held' && first.expiresInMs, 15_000);
    readFor(view, clock, record, 14_000);
    assert.equal(view.judge().state, 'held');
    readFor(view, clock, record, 1_000);
    assert.deepEqual(view.judge(), { state: 'expired', holder: 'orders-0', resourceVersion: '1' });
  });

  test('every renewal starts the count again', () => {
    const clock = new FakeClock();
    const view = new PrimaryLeaseView(clock, 5_000);
    for (let i = 0; i < 20; i++) {
      clock.advance(2_000);
      view.observe(lease('orders-0', `renewal-${i}`, String(i)));
    }
    const judged = view.judge();
    assert.equal(judged.state, 'held');
    assert.equal(judged.state === 'held' && judged.expiresInMs, 15_000);
  });

  test('time it could not read does not count: after a gap the whole duration is watched again', () => {
    const clock = new FakeClock();
    const view = new PrimaryLeaseView(clock, 5_000);
    const record = lease('orders-0', 'r1');
    readFor(view, clock, record, 10_000);
    // The API server was unreachable for a minute: the manager read nothing.
    clock.advance(60_000);
    assert.deepEqual(view.judge(), { state: 'unknown' }, 'blind: no judgement at all');
    view.observe(record);
    const after = view.judge();
    assert.equal(after.state, 'held', 'the same record, but not watched unrenewed for 15 s');
    assert.equal(after.state === 'held' && after.expiresInMs, 15_000);
    readFor(view, clock, record, 15_000);
    assert.equal(view.judge().state, 'expired');
  });

  test('a released or absent Lease is free, with the version a transfer must match', () => {
    const clock = new FakeClock();
    const view = new PrimaryLeaseView(clock, 5_000);
    view.observe(lease('', 'released', '7'));
    assert.deepEqual(view.judge(), { state: 'free', resourceVersion: '7' });
    view.observe(undefined);
    assert.deepEqual(view.judge(), { state: 'free', resourceVersion: undefined });
  });
});
