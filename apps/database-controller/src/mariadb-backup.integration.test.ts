// MariaDB backups that survive, and restores, for real: MariaDB 10.11 on the
// real node, mariabackup streamed by rclone from its container, versitygw (an
// S3-compatible store, over HTTPS with its own CA) on this machine, the
// Database and DatabaseBackup controllers in a Manager on this host. Rows are
// written and read back by query; what a restore holds is checked row by row.
// The figures (backup and restore throughput) are test diagnostics.
//   npx regulon-testenv exec -- npx node --test apps/database-controller/src/mariadb-backup.integration.test.ts
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { type KubeClient, Kinds } from '@regulon/client';
import { eventually, type ObjectStore } from '@regulon/testenv';
import mysql from 'mysql2/promise';
import { Database } from './api.ts';
import { backupSuite, BUCKET, cond, range } from './testing/backup-suite.ts';
import { readCredentials } from './testing/workload.ts';

const MiB = 1024 * 1024;

describe('MariaDB backups to an object store (mariabackup, rclone)', { timeout: 40 * 60_000 }, () => {
  const s = backupSuite({
    engine: 'mariadb',
    namespacePrefix: 'mdb-backup',
    storage: '2Gi',
    patienceMs: 600_000,
  });
  let client: KubeClient;
  let ns: string;
  let store: ObjectStore;
  before(() => ({ client, ns, store } = s));
  const {
    objectStore,
    createDatabase,
    ready,
    finished,
    backupOf,
    assertNoKeysAnywhere,
    assertBackupFailsVisibly,
    assertMissingBucketReported,
  } = s;
  const dbs = () => client.resource(Database);

  /** Runs `use` connected to the Database's primary as its credentials Secret's user (this host reaches the real node's Pods). */
  const withPrimary = async <R>(name: string, use: (c: mysql.Connection) => Promise<R>): Promise<R> => {
    const db = await dbs().get(name, { namespace: ns });
    const primary = db.status?.currentPrimary ?? `${name}-0`;
    const pod = await client.resource<V1Pod>(Kinds.Pod).get(primary, { namespace: ns });
    const creds = await readCredentials(client, ns, name);
    const c = await mysql.createConnection({
      host: pod.status!.podIP!,
      port: creds.port,
      user: creds.username,
      password: creds.password,
      database: creds.database,
      connectTimeout: 5_000,
      multipleStatements: false,
    });
    c.on('error', () => {});
    try {
      return await use(c);
    } finally {
      c.destroy();
    }
  };
  const insert = (name: string, from: number, to: number) =>
    withPrimary(name, (c) =>
      c.query({
        sql: `insert into items(id) values ${Array.from({ length: to - from + 1 }, (_, i) => `(${from + i})`).join(',')}`,
        timeout: 60_000,
      }),
    );
  const ids = (name: string) =>
    withPrimary(name, async (c) => {
      const [rows] = await c.query<mysql.RowDataPacket[]>('select id from items order by id');
      return rows.map((r) => Number(r['id']));
    });
  test('rows, a backup, more rows; a Database restored from the backup holds exactly the first rows', async (t) => {
    await createDatabase('orders');
    await ready('orders');
    await withPrimary('orders', (c) => c.query('create table items(id int primary key) engine=InnoDB'));
    await insert('orders', 1, 100);

    const startedAt = Date.now();
    await backupOf('first', 'orders');
    const b = await finished('first');
    t.diagnostic(`backup of a fresh Database: ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
    assert.equal(b.status?.phase, 'Succeeded', JSON.stringify(b.status?.conditions));
    assert.match(b.status?.label ?? '', /^\d{8}T\d{6}Z$/);
    assert.ok((b.status?.sizeBytes ?? 0) > 0);
    assert.ok((b.status?.repositorySizeBytes ?? 0) > 0);
    // The GTID the backup is consistent at: domain 0, the primary's server id (100 + ordinal 0).
    assert.match(b.status?.binlog?.gtid ?? '', /^0-100-\d+$/);
    assert.equal(b.status?.repository?.path, `${ns}/orders`);
    // The store has it, stream and manifest, under the Database's path.
    const objects = await store.listObjects(BUCKET, `${ns}/orders/${b.status.label!}/`);
    assert.deepEqual(objects.map((o) => o.key.split('/').pop()).sort(), [
      'backup.xbstream.zst',
      'manifest.json',
    ]);

    const db = await eventually('BackupSucceeded=True on the Database', async () => {
      const d = await dbs().get('orders', { namespace: ns });
      return cond(d.status?.conditions, 'BackupSucceeded')?.status === 'True' ? d : undefined;
    });
    assert.equal(db.status?.lastBackup, b.status?.stoppedAt);

    await insert('orders', 101, 200);

    const restoring = Date.now();
    await createDatabase('restored', {
      backup: {
        enabled: true,
        schedule: '0 3 * * *',
        historyLimit: 1,
        objectStore: objectStore('store-keys', `${ns}/restored`),
      },
      bootstrap: { recovery: { backup: 'first' } },
    });
    await ready('restored');
    t.diagnostic(`restored to Ready: ${((Date.now() - restoring) / 1000).toFixed(1)} s`);
    // Its own generated credentials open it: the restore gave the operator's accounts this Database's passwords.
    assert.deepEqual(await ids('restored'), range(1, 100));
    assert.deepEqual(await ids('orders'), range(1, 200), 'the source is untouched');
    // The restored Database is a cluster of its own, and takes backups of its own.
    await insert('restored', 101, 110);
    await backupOf('restored-first', 'restored');
    const again = await finished('restored-first');
    assert.equal(again.status?.phase, 'Succeeded', JSON.stringify(again.status?.conditions));
  });

  test('wrong store credentials: the backup fails with the reason, a Warning Event, BackupSucceeded=False; the Database stays Ready; no key anywhere', async () => {
    await createDatabase('refused', {
      backup: {
        enabled: true,
        schedule: '0 3 * * *',
        historyLimit: 1,
        objectStore: objectStore('wrong-keys'),
      },
    });
    await ready('refused');
    // The store's own answer (versitygw: an unknown access key), not just an exit code.
    await assertBackupFailsVisibly(
      'refused-1',
      'refused',
      /InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied|403/,
    );
    await assertNoKeysAnywhere();
  });

  test('a bucket that does not exist: the backup fails saying so, BackupSucceeded=False, the Database stays Ready; no bucket is created', async (t) => {
    t.diagnostic(`the backup's message: ${await assertMissingBucketReported('bucketless')}`);
  });

  test('throughput: a database of at least 200 MiB backed up and restored', async (t) => {
    await createDatabase('bulk', { storage: { size: '4Gi' } });
    await ready('bulk');
    await withPrimary('bulk', async (c) => {
      await c.query('create table items(id int primary key, pad varbinary(1024) not null) engine=InnoDB');
      // Rows made by the server (a recursive CTE): 8 batches of 32,768 rows of 1 KiB of random
      // bytes, about 256 MiB that no compression shrinks, so the store receives all of it.
      await c.query('set session max_recursive_iterations = 100000');
      for (let batch = 0; batch < 8; batch++)
        await c.query({
          sql: `insert into items(id, pad)
            with recursive s(n) as (select 1 union all select n + 1 from s where n < 32768)
            select ${batch} * 32768 + n, random_bytes(1024) from s`,
          timeout: 600_000,
        });
    });
    const dataBytes = await withPrimary('bulk', async (c) => {
      // InnoDB's table statistics lag a bulk insert: refreshed first.
      await c.query({ sql: 'analyze table items', timeout: 600_000 });
      const [counted] = await c.query<mysql.RowDataPacket[]>('select count(*) as n from items');
      assert.equal(Number(counted[0]?.['n']), 8 * 32768);
      const [rows] = await c.query<mysql.RowDataPacket[]>(
        "select sum(data_length + index_length) as bytes from information_schema.tables where table_name = 'items'",
      );
      return Number(rows[0]?.['bytes']);
    });
    assert.ok(dataBytes >= 200 * MiB, `the table holds ${(dataBytes / MiB).toFixed(0)} MiB`);

    const backingUp = Date.now();
    await backupOf('bulk-1', 'bulk');
    const b = await finished('bulk-1', 1_200_000);
    const backupSeconds = (Date.now() - backingUp) / 1000;
    assert.equal(b.status?.phase, 'Succeeded', JSON.stringify(b.status?.conditions));
    const size = b.status?.sizeBytes ?? 0;
    t.diagnostic(
      `backup: table ${(dataBytes / MiB).toFixed(0)} MiB, data directory ${(size / MiB).toFixed(0)} MiB, ` +
        `${((b.status?.repositorySizeBytes ?? 0) / MiB).toFixed(0)} MiB in the store, ` +
        `${backupSeconds.toFixed(1)} s from create to Succeeded (${(size / MiB / backupSeconds).toFixed(1)} MiB/s)`,
    );

    const restoring = Date.now();
    await createDatabase('bulk-restored', {
      storage: { size: '4Gi' },
      backup: {
        enabled: true,
        schedule: '0 3 * * *',
        historyLimit: 1,
        objectStore: objectStore('store-keys', `${ns}/bulk-restored`),
      },
      bootstrap: { recovery: { backup: 'bulk-1' } },
    });
    await ready('bulk-restored', 1_200_000);
    const restoreSeconds = (Date.now() - restoring) / 1000;
    t.diagnostic(
      `restore: ${restoreSeconds.toFixed(1)} s from create to Ready (${(size / MiB / restoreSeconds).toFixed(1)} MiB/s)`,
    );
    const count = await withPrimary('bulk-restored', async (c) => {
      const [rows] = await c.query<mysql.RowDataPacket[]>('select count(*) as n from items');
      return Number(rows[0]?.['n']);
    });
    assert.equal(count, 8 * 32768);
  });
});
