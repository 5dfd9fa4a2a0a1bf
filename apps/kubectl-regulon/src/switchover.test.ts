import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DatabaseObject } from '@regulon/database-controller';
import { pickSwitchoverTarget } from './switchover.ts';
import { replicatedDatabase } from './testing/fixtures.ts';

type Instances = NonNullable<NonNullable<DatabaseObject['status']>['instances']>;

const withInstances = (instances: Instances, primary = 'orders-0'): DatabaseObject => {
  const db = replicatedDatabase();
  db.status = { ...db.status, currentPrimary: primary, instances };
  return db;
};
const primary = { name: 'orders-0', role: 'primary', state: 'Primary', timeline: 1, lsn: '0/9000000' };

describe('pickSwitchoverTarget', () => {
  test('the streaming replica with the least lag', () => {
    const db = withInstances([
      primary,
      { name: 'orders-1', role: 'replica', state: 'Streaming', lagBytes: 8192 },
      { name: 'orders-2', role: 'replica', state: 'Streaming', lagBytes: 120 },
    ]);
    assert.equal(pickSwitchoverTarget(db), 'orders-2');
  });

  test('never the primary, nor an instance that does not stream', () => {
    const db = withInstances([
      { ...primary, lagBytes: 0 },
      { name: 'orders-1', role: 'standby', state: 'NotStreaming', lagBytes: 0 },
      { name: 'orders-2', role: 'standby', state: 'Unreachable' },
      { name: 'orders-3', role: 'standby', state: 'Missing' },
      { name: 'orders-4', role: 'standby', state: 'Lagging', lagBytes: 50_000_000 },
    ]);
    assert.equal(pickSwitchoverTarget(db), 'orders-4');
  });

  test('none when no replica streams', () => {
    const db = withInstances([primary, { name: 'orders-1', role: 'standby', state: 'NotStreaming' }]);
    assert.equal(pickSwitchoverTarget(db), undefined);
    assert.equal(pickSwitchoverTarget(withInstances([])), undefined);
  });

  test('mariadb: lag in transactions', () => {
    const db = withInstances([
      primary,
      { name: 'orders-1', role: 'replica', state: 'Streaming', lagTransactions: 3, lsn: '0-1-100' },
      { name: 'orders-2', role: 'replica', state: 'Streaming', lagTransactions: 0, lsn: '0-1-103' },
    ]);
    assert.equal(pickSwitchoverTarget(db), 'orders-2');
  });

  test('at equal lag a Streaming replica before a Lagging one, then by name', () => {
    const db = withInstances([
      primary,
      { name: 'orders-1', role: 'standby', state: 'Lagging', lagBytes: 0 },
      { name: 'orders-3', role: 'replica', state: 'Streaming', lagBytes: 0 },
      { name: 'orders-2', role: 'replica', state: 'Streaming', lagBytes: 0 },
    ]);
    assert.equal(pickSwitchoverTarget(db), 'orders-2');
  });

  test('an instance whose lag is unknown comes after every known lag', () => {
    const db = withInstances([
      primary,
      { name: 'orders-1', role: 'replica', state: 'Streaming' },
      { name: 'orders-2', role: 'standby', state: 'Lagging', lagBytes: 900_000_000 },
    ]);
    assert.equal(pickSwitchoverTarget(db), 'orders-2');
  });
});
