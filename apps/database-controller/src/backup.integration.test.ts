// Backups that survive, and restores, for real: PostgreSQL on the real node,
// pgBackRest in its container, versitygw (an S3-compatible store, over HTTPS
// with its own CA) on this machine, the Database and DatabaseBackup
// controllers in a Manager on this host. Rows are written and read back by
// query; what a restore holds is checked row by row, and what the store holds
// is read with `pgbackrest info` in the primary. The figures (backup and
// restore times, how long a failure takes to show) are test diagnostics.
// Scheduled backups are in ./backup-schedule.integration.test.ts; WAL archiving (refused by
// the store, across a failover) in ./backup-archiving.integration.test.ts.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { type KubeClient, Kinds } from '@regulon/client';
import { eventually, type ObjectStore } from '@regulon/testenv';
import { Database } from './api.ts';
import { DatabaseBackup } from './backup/api.ts';
import { backupSuite, BUCKET, cond, range } from './testing/backup-suite.ts';
import { postgresBackupTools } from './testing/pgbackrest-suite.ts';

describe('Database backups to an object store (postgres, pgBackRest)', { timeout: 30 * 60_000 }, () => {
  const s = backupSuite({
    engine: 'postgres',
    namespacePrefix: 'pg-backup',
    storage: '1Gi',
    patienceMs: 300_000,
  });
  let client: KubeClient;
  let ns: string;
  let version: string;
  let store: ObjectStore;
  before(() => {
    ({ client, ns, version, store } = s);
  });
  const { withPrimary, insert, ids } = postgresBackupTools(s);
  const { objectStore, createDatabase, ready, finished, backupOf, eventsAbout } = s;
  const { assertNoKeysAnywhere, assertBackupFailsVisibly, assertMissingBucketReported } = s;
  const dbs = () => client.resource(Database);
  const backups = () => client.resource(DatabaseBackup);

  test('the API server refuses what cannot work, saying why', async () => {
    const refused = async (spec: Record<string, unknown>, message: RegExp, name = 'refused') =>
      assert.rejects(
        dbs().create(
          Database.object({
            metadata: { name, namespace: ns },
            spec: { engine: 'postgres', version, replicas: 1, storage: { size: '1Gi' }, ...spec },
          }),
        ),
        (err: Error) => message.test(err.message),
      );
    const backup = { enabled: true, schedule: '0 3 * * *', historyLimit: 1 };
    await refused(
      { engine: 'mysql', backup: { ...backup, objectStore: objectStore() } },
      /backup.objectStore is supported for postgres and mariadb/,
    );
    await refused(
      { backup: { ...backup, objectStore: { ...objectStore(), endpoint: 'http://10.0.0.1:9000' } } },
      /endpoint must be an https:\/\/ URL/,
    );
    await refused(
      { bootstrap: { recovery: { backup: 'first', source: objectStore('store-keys', 'a/b') } } },
      /recovery names exactly one of backup \(a DatabaseBackup\) or source/,
    );
    await refused(
      { bootstrap: { recovery: { backup: 'first', targetTime: '2026-11-24T12:00:00Z' } } },
      /targetTime needs source/,
    );
    await refused({ bootstrap: { recovery: { source: objectStore() } } }, /source.path is required/);
    await refused(
      { backup: { ...backup, objectStore: objectStore(), retention: {} } },
      /retention names count, maxAge or both/,
    );
    await refused(
      { backup: { ...backup, objectStore: objectStore(), retention: { maxAge: '30 days' } } },
      /maxAge is a whole number and a unit: m \(minutes\), h \(hours\), d \(days\) or w \(weeks\)/,
    );
    await refused(
      { backup: { ...backup, objectStore: objectStore(), retention: { count: 0 } } },
      /should be greater than or equal to 1/,
    );
    await refused(
      { backup: { ...backup, retention: { count: 3 } } },
      /backup.retention needs backup.objectStore/,
    );
  });

  test('rows, a backup, more rows; a Database restored from the backup holds exactly the first rows', async (t) => {
    await createDatabase('orders');
    await ready('orders');
    await withPrimary('orders', (c) => c.query('create table items(id int primary key)'));
    await insert('orders', 1, 100);

    const startedAt = Date.now();
    await backupOf('first', 'orders');
    const b = await finished('first');
    t.diagnostic(`backup of a fresh Database: ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
    assert.equal(b.status?.phase, 'Succeeded', JSON.stringify(b.status?.conditions));
    assert.match(b.status?.label ?? '', /^\d{8}-\d{6}F$/);
    assert.ok((b.status?.sizeBytes ?? 0) > 0);
    assert.match(b.status?.wal?.startSegment ?? '', /^[0-9A-F]{24}$/);
    assert.match(b.status?.wal?.stopLsn ?? '', /^[0-9A-F]+\/[0-9A-F]+$/);
    assert.equal(b.status?.repository?.path, `${ns}/orders`);
    // The repository has it, under the Database's path.
    const objects = await store.listObjects(BUCKET, `${ns}/orders/backup/db/${b.status.label!}/`);
    assert.ok(objects.length > 0, 'the backup is in the bucket');

    const db = await eventually('BackupSucceeded=True on the Database', async () => {
      const d = await dbs().get('orders', { namespace: ns });
      return cond(d.status?.conditions, 'BackupSucceeded')?.status === 'True' ? d : undefined;
    });
    assert.equal(db.status?.lastBackup, b.status?.stoppedAt);

    await insert('orders', 101, 200);

    const restoring = Date.now();
    await createDatabase('restored', { bootstrap: { recovery: { backup: 'first' } } });
    await ready('restored');
    t.diagnostic(`restored to Ready: ${((Date.now() - restoring) / 1000).toFixed(1)} s`);
    // Its own generated credentials open it: the restore gave the operator's roles this Database's passwords.
    assert.deepEqual(await ids('restored'), range(1, 100));
    assert.deepEqual(await ids('orders'), range(1, 200), 'the source is untouched');
    await assert.rejects(
      dbs().patch('restored', { spec: { bootstrap: null } }, { namespace: ns, type: 'merge' }),
      /bootstrap is how the Database was first filled: it cannot be added, changed or removed later/,
    );
  });

  test('point in time: rows at t1, t2, t3; recovered to a time between t2 and t3, the rows of t1 and t2 only', async (t) => {
    await createDatabase('ledger');
    await ready('ledger');
    await withPrimary('ledger', (c) => c.query('create table items(id int primary key)'));
    await insert('ledger', 1, 10);
    await backupOf('ledger-base', 'ledger');
    const base = await finished('ledger-base');
    assert.equal(base.status?.phase, 'Succeeded', JSON.stringify(base.status?.conditions));
    // pgBackRest keeps a backup's stop time in whole seconds and restores to a time only from a
    // backup that stopped before it: the target must fall in a later second than the base backup's end.
    await eventually("the server's clock in a second after the base backup's end", () =>
      withPrimary('ledger', async (c) => {
        const r = await c.query<{ later: boolean }>(
          "select clock_timestamp() >= $1::timestamptz + interval '1 second' as later",
          [base.status!.stoppedAt!],
        );
        return r.rows[0]!.later || undefined;
      }),
    );

    await insert('ledger', 11, 20);
    // The target: the server's own clock after t2's commit, so no clock of this host is involved.
    const target = await withPrimary('ledger', async (c) => {
      const r = await c.query<{ t: string }>(
        `select to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as t`,
      );
      return r.rows[0]!.t;
    });
    // t3 must commit at a later timestamp than the target: a clock tick apart, not a wait for anything.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await insert('ledger', 21, 30);
    // Close the segment holding t3 and wait until it is archived: the archive must cover the target and beyond.
    const switched = Date.now();
    const segment = await withPrimary('ledger', async (c) => {
      const r = await c.query<{ w: string }>('select pg_walfile_name(pg_switch_wal()) as w');
      return r.rows[0]!.w;
    });
    await eventually('the segment holding t3 archived', () =>
      withPrimary('ledger', async (c) => {
        const r = await c.query<{ w: string | null }>('select last_archived_wal as w from pg_stat_archiver');
        return (r.rows[0]?.w ?? '') >= segment;
      }),
    );
    t.diagnostic(`archived-WAL lag after a segment switch: ${((Date.now() - switched) / 1000).toFixed(1)} s`);

    const recovering = Date.now();
    await createDatabase('ledger-pitr', {
      bootstrap: { recovery: { source: objectStore('store-keys', `${ns}/ledger`), targetTime: target } },
    });
    await ready('ledger-pitr');
    t.diagnostic(
      `point-in-time recovery, created to Ready: ${((Date.now() - recovering) / 1000).toFixed(1)} s`,
    );
    assert.deepEqual(await ids('ledger-pitr'), range(1, 20));
  });

  test("a restore the archive cannot give fails, saying why (Degraded InstanceFailing, a Warning Event), not only in its Pod log: a time before every backup, a time past the archive's end, a hole in the archive", async (t) => {
    // ledger's repository (the test above) holds backups that all stopped after this moment.
    const base = await backups().get('ledger-base', { namespace: ns });
    const tooEarly = new Date(Date.parse(base.status!.startedAt!) - 3_600_000).toISOString();
    // Past anything ledger will have archived by the time the restore replays its archive. (The hole
    // below stops it sooner: postgres says the same, and then no transaction after the backup was replayed.)
    const tooLate = new Date(Date.now() + 3_600_000).toISOString();
    // A hole: the segment after ledger-base's last one goes from the store, with later ones archived.
    const stop = base.status!.wal!.stopSegment!;
    const after = (await store.listObjects(BUCKET, `${ns}/ledger/archive/db/`))
      .map((o) => /\/([0-9A-F]{24})-[0-9a-f]{40}/.exec(o.key))
      .filter((m) => m !== null && m[1]! > stop)
      .map((m) => m![0].slice(1, 25));
    for (let i = after.length; i < 2; i++) {
      const segment = await withPrimary('ledger', async (c) => {
        await c.query('insert into items(id) values ($1)', [1000 + i]);
        const r = await c.query<{ w: string }>('select pg_walfile_name(pg_switch_wal()) as w');
        return r.rows[0]!.w;
      });
      await eventually(
        `${segment} archived`,
        async () =>
          (await store.listObjects(BUCKET, `${ns}/ledger/archive/db/`)).some((o) =>
            o.key.includes(`/${segment}-`),
          ) || undefined,
      );
      after.push(segment);
    }
    after.sort();
    const hole = after[0]!;
    const [holeObject] = (await store.listObjects(BUCKET, `${ns}/ledger/archive/db/`)).filter((o) =>
      o.key.includes(`/${hole}-`),
    );
    const removed = await store.request({ method: 'DELETE', bucket: BUCKET, key: holeObject!.key });
    assert.equal(removed.status, 204, `deleting ${holeObject!.key}`);
    t.diagnostic(
      `the hole: ${hole}, after ledger-base's ${stop}; archived after it: ${after.slice(1).join(', ')}`,
    );

    const created = Date.now();
    const source = objectStore('store-keys', `${ns}/ledger`);
    await Promise.all([
      createDatabase('ledger-early', { bootstrap: { recovery: { source, targetTime: tooEarly } } }),
      createDatabase('ledger-late', { bootstrap: { recovery: { source, targetTime: tooLate } } }),
      createDatabase('ledger-hole', { bootstrap: { recovery: { source } } }),
    ]);
    const failing = async (name: string, message: RegExp, phrase: RegExp) => {
      const d = await eventually(
        `${name} Degraded InstanceFailing`,
        async () => {
          const d = await dbs().get(name, { namespace: ns });
          return cond(d.status?.conditions, 'Degraded')?.reason === 'InstanceFailing' ? d : undefined;
        },
        300_000,
      );
      t.diagnostic(`${name}: reported ${((Date.now() - created) / 1000).toFixed(1)} s after create`);
      const degraded = cond(d.status?.conditions, 'Degraded')!;
      t.diagnostic(`${name}: ${degraded.message}`);
      assert.equal(degraded.status, 'True');
      assert.match(degraded.message, message);
      assert.equal(cond(d.status?.conditions, 'Ready')?.status, 'False');
      assert.equal(cond(d.status?.conditions, 'Stalled')?.status, 'False', 'a new spec heals it');
      assert.equal(d.status?.phase, 'Degraded');
      await eventually(
        `a Warning Event InstanceFailing on ${name}`,
        async () =>
          (await eventsAbout(name, 'Warning', 'InstanceFailing')).some((e) =>
            phrase.test(typeof e['note'] === 'string' ? e['note'] : ''),
          ) || undefined,
      );
      await dbs().delete(name, { namespace: ns });
    };
    await Promise.all([
      failing(
        'ledger-early',
        /^Instance ledger-early-0: container postgres exits with code 1: .*unable to find backup set with stop time less than/,
        /unable to find backup set/,
      ),
      failing(
        'ledger-late',
        /^Instance ledger-late-0: container postgres exits with code 1: regulon: error: the archive ends, or has a gap, before the recovery target \S+ \S+( \(the last transaction replayed was at .+\))?: restore to an earlier targetTime$/,
        /the archive ends, or has a gap, before the recovery target/,
      ),
      failing(
        'ledger-hole',
        new RegExp(
          `^Instance ledger-hole-0: container postgres exits with code 1: regulon: error: the archive has a gap: WAL segment ${hole} is missing while later ones are archived \\(up to [0-9A-F]{24}\\), so recovery stopped at [0-9A-F]+/[0-9A-F]+ and the restore would lack every transaction after it`,
        ),
        new RegExp(`the archive has a gap: WAL segment ${hole} is missing`),
      ),
    ]);
  });

  test('wrong store credentials: the backup fails with the reason, a Warning Event, BackupSucceeded=False; the Database stays Ready; no key anywhere', async () => {
    const db = await dbs().get('orders', { namespace: ns });
    await dbs().patch(
      'orders',
      { spec: { backup: { ...db.spec.backup!, objectStore: objectStore('wrong-keys') } } },
      { namespace: ns, type: 'merge' },
    );
    await eventually('orders rolled to the wrong keys and Ready', async () => {
      const d = await dbs().get('orders', { namespace: ns });
      const pod = await client.resource<V1Pod>(Kinds.Pod).get('orders-0', { namespace: ns });
      const usesWrong = pod.spec?.containers[0]?.env?.some(
        (e) => e.valueFrom?.secretKeyRef?.name === 'wrong-keys',
      );
      return usesWrong && cond(d.status?.conditions, 'Ready')?.status === 'True' ? d : undefined;
    });

    // The store's own answer, not just an exit code.
    await assertBackupFailsVisibly(
      'denied',
      'orders',
      /403 \(Forbidden\)[\s\S]*access keys|access keys[\s\S]*403 \(Forbidden\)/,
    );
    // Neither the wrong keys nor the real ones: not in any status, any Event or any instance's log.
    await assertNoKeysAnywhere();
  });

  test('a bucket that does not exist: the backup fails saying so, BackupSucceeded=False, the Database stays Ready; no bucket is created', async (t) => {
    t.diagnostic(`the backup's message: ${await assertMissingBucketReported('bucketless')}`);
    await dbs().delete('bucketless', { namespace: ns });
  });

  test('throughput: a database of 200 MiB and more, backed up and restored', async (t) => {
    await createDatabase('bulk');
    await ready('bulk');
    // Random hex (not one repeated string): what pgBackRest compresses is what a real table would give it.
    const pad = Array.from({ length: 32 }, () => 'md5(random()::text)').join(' || ');
    const sizeBytes = await withPrimary('bulk', async (c) => {
      await c.query(`create table filler as select g as id, ${pad} as pad from generate_series(1, 210000) g`);
      await c.query('checkpoint');
      const r = await c.query<{ size: string }>('select pg_database_size(current_database())::text as size');
      return Number(r.rows[0]!.size);
    });
    const mib = sizeBytes / 2 ** 20;
    assert.ok(mib >= 200, `the database holds ${mib.toFixed(0)} MiB`);

    await backupOf('bulk-full', 'bulk');
    const b = await finished('bulk-full', 900_000);
    assert.equal(b.status?.phase, 'Succeeded', JSON.stringify(b.status?.conditions));
    const backupSeconds = (Date.parse(b.status.stoppedAt!) - Date.parse(b.status.startedAt!)) / 1000;
    t.diagnostic(
      `backup: ${mib.toFixed(0)} MiB database (cluster ${((b.status?.sizeBytes ?? 0) / 2 ** 20).toFixed(0)} MiB, ${((b.status?.repositorySizeBytes ?? 0) / 2 ** 20).toFixed(0)} MiB in the repository) in ${backupSeconds.toFixed(0)} s by pgBackRest's clock: ${((b.status?.sizeBytes ?? 0) / 2 ** 20 / Math.max(backupSeconds, 1)).toFixed(1)} MiB/s`,
    );

    const restoring = Date.now();
    await createDatabase('bulk-restored', { bootstrap: { recovery: { backup: 'bulk-full' } } });
    await ready('bulk-restored', 900_000);
    const restoreSeconds = (Date.now() - restoring) / 1000;
    t.diagnostic(
      `restore: created to Ready in ${restoreSeconds.toFixed(1)} s: ${((b.status?.sizeBytes ?? 0) / 2 ** 20 / restoreSeconds).toFixed(1)} MiB/s of cluster`,
    );
    const rows = await withPrimary('bulk-restored', async (c) => {
      const r = await c.query<{ n: string }>('select count(*)::text as n from filler');
      return Number(r.rows[0]!.n);
    });
    assert.equal(rows, 210000);
  });
});
