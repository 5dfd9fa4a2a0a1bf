// Which succeeded backups spec.backup.retention lets go: by count, by age,
// both; never the newest; only those of this Database in its own repository.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DatabaseObject } from '../api.ts';
import type { DatabaseBackupObject } from './api.ts';
import { repositoryOf } from './pgbackrest.ts';
import { parseMaxAge, retentionPlan, type RetentionPolicy } from './retention.ts';

const store = { endpoint: 'https://s3.example.com', bucket: 'b', credentials: { secretName: 'keys' } };

function db(retention?: RetentionPolicy, objectStore: typeof store | null = store): DatabaseObject {
  return {
    apiVersion: 'regulon.dev/v1beta1',
    kind: 'Database',
    metadata: { name: 'orders', namespace: 'shop', uid: 'd1', generation: 1 },
    spec: {
      engine: 'postgres',
      version: '16.8',
      replicas: 1,
      storage: { size: '1Gi' },
      backup: {
        enabled: true,
        schedule: '0 3 * * *',
        historyLimit: 3,
        ...(objectStore ? { objectStore } : {}),
        ...(retention ? { retention } : {}),
      },
    },
  };
}

/** A backup of orders that completed at `stopped` (minutes after 12:00). */
function backup(
  name: string,
  stopped: number,
  extra: { phase?: 'Succeeded' | 'Failed' | 'Running'; database?: string; path?: string } = {},
): DatabaseBackupObject {
  const at = new Date(Date.UTC(2026, 10, 24, 12, stopped));
  const label = `${at.toISOString().slice(0, 10).replace(/-/g, '')}-${at.toISOString().slice(11, 19).replace(/:/g, '')}F`;
  const repo = repositoryOf(store, extra.path ?? 'shop/orders');
  return {
    apiVersion: 'regulon.dev/v1alpha1',
    kind: 'DatabaseBackup',
    metadata: { name, namespace: 'shop', uid: `u-${name}` },
    spec: { database: extra.database ?? 'orders' },
    status: {
      phase: extra.phase ?? 'Succeeded',
      label,
      startedAt: new Date(at.getTime() - 10_000).toISOString(),
      stoppedAt: at.toISOString(),
      repository: {
        endpoint: repo.endpoint,
        bucket: repo.bucket,
        path: repo.path,
        region: repo.region,
        credentialsSecret: repo.credentialsSecret,
        accessKeyIdKey: repo.accessKeyIdKey,
        secretAccessKeyKey: repo.secretAccessKeyKey,
      },
    },
  };
}

const at = (minutes: number) => new Date(Date.UTC(2026, 10, 24, 12, minutes));
const names = (plan: ReturnType<typeof retentionPlan>) => plan.expire.map((e) => e.backup.metadata.name);

test('maxAge: minutes, hours, days and weeks', () => {
  assert.equal(parseMaxAge('90m'), 90 * 60_000);
  assert.equal(parseMaxAge('12h'), 12 * 3_600_000);
  assert.equal(parseMaxAge('30d'), 30 * 86_400_000);
  assert.equal(parseMaxAge('2w'), 14 * 86_400_000);
  assert.throws(() => parseMaxAge('0d'));
  assert.throws(() => parseMaxAge('1y'));
  assert.throws(() => parseMaxAge('1.5h'));
});

test('count: the newest count stay, the older ones expire oldest first', () => {
  const all = [backup('a', 1), backup('b', 2), backup('c', 3), backup('d', 4)];
  const plan = retentionPlan(db({ count: 2 }), all, at(10));
  assert.deepEqual(names(plan), ['a', 'b']);
  assert.equal(plan.newest?.metadata.name, 'd');
  assert.match(plan.expire[0]!.why, /beyond the 2 newest \(retention.count\)/);
  assert.equal(plan.nextExpiryAt, undefined, 'a count has no clock');
  assert.deepEqual(names(retentionPlan(db({ count: 4 }), all, at(10))), []);
});

test('maxAge: older than the age expires, and the plan says when the next one will', () => {
  const all = [backup('a', 1), backup('b', 20), backup('c', 40)];
  const plan = retentionPlan(db({ maxAge: '30m' }), all, at(45));
  assert.deepEqual(names(plan), ['a']);
  assert.match(plan.expire[0]!.why, /older than 30m \(retention.maxAge\)/);
  assert.deepEqual(plan.nextExpiryAt, at(50), 'b, completed at 12:20, is 30 minutes old at 12:50');
});

test('the newest succeeded backup stays, however old', () => {
  const all = [backup('a', 1), backup('b', 2), backup('late', 3, { phase: 'Failed' })];
  const plan = retentionPlan(db({ maxAge: '1m' }), all, at(600));
  assert.deepEqual(names(plan), ['a']);
  assert.equal(plan.newest?.metadata.name, 'b');
  assert.equal(plan.nextExpiryAt, undefined);
  assert.deepEqual(names(retentionPlan(db({ count: 1, maxAge: '1m' }), [backup('only', 1)], at(600))), []);
});

test('both limits: a backup stays only within each', () => {
  const all = [backup('a', 1), backup('b', 30), backup('c', 50), backup('d', 55)];
  // count 3 lets a go; maxAge 20m lets b go too (35 minutes old at 12:65).
  assert.deepEqual(names(retentionPlan(db({ count: 3, maxAge: '20m' }), all, at(65))), ['a', 'b']);
});

test('failed and running backups, other Databases, other repositories and deleted objects are not counted or expired', () => {
  const deleting = backup('deleting', 2);
  deleting.metadata.deletionTimestamp = at(9).toISOString() as never;
  const all = [
    backup('old-store', 0, { path: 'elsewhere' }),
    backup('a', 1),
    deleting,
    backup('failed', 3, { phase: 'Failed' }),
    backup('running', 4, { phase: 'Running' }),
    backup('other-db', 5, { database: 'ledger' }),
    backup('b', 6),
  ];
  const plan = retentionPlan(db({ count: 1 }), all, at(10));
  assert.deepEqual(names(plan), ['a']);
  assert.equal(plan.newest?.metadata.name, 'b');
});

test('no retention, or no object store: nothing expires and nothing leads', () => {
  const all = [backup('a', 1), backup('b', 2)];
  assert.deepEqual(retentionPlan(db(), all, at(10)), {
    newest: undefined,
    expire: [],
    nextExpiryAt: undefined,
  });
  assert.equal(retentionPlan(db({ count: 1 }, null), all, at(10)).expire.length, 0);
});
