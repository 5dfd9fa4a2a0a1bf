// Backups that survive, and restores, for real: PostgreSQL on the real node,
// pgBackRest in its container, versitygw (an S3-compatible store, over HTTPS
// with its own CA) on this machine, the Database and DatabaseBackup
// controllers in a Manager on this host. Rows are written and read back by
// query; what a restore holds is checked row by row, and what the store holds
// is read with `pgbackrest info` in the primary. The figures (backup and
// restore times, how long a failure takes to show) are test diagnostics.
// Scheduled backups are in ./backup-schedule.integration.test.ts.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { setInterval } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { type KubeClient, Kinds } from '@regulon/client';
import type { Manager } from '@regulon/runtime';
import {
  eventually,
  podSandboxPid,
  refusePodConnectionsTo,
  type ObjectStore,
  type TestEnv,
} from '@regulon/testenv';
import { Database } from './api.ts';
import { DatabaseBackup } from './backup/api.ts';
import { PodExec } from './backup/exec.ts';
import { ARCHIVE_LAG_METRIC, ARCHIVING_FAILING_METRIC } from './backup/archiver-metrics.ts';
import { ARCHIVE_STUCK_MS, ARCHIVER_COMMAND } from './backup/archiver.ts';
import { backupSuite, BUCKET, cond, range } from './testing/backup-suite.ts';
import { postgresBackupTools } from './testing/pgbackrest-suite.ts';

describe('Database backups to an object store (postgres, pgBackRest)', { timeout: 30 * 60_000 }, () => {
  const s = backupSuite({
    engine: 'postgres',
    namespacePrefix: 'pg-backup',
    storage: '1Gi',
    patienceMs: 300_000,
  });
  let env: TestEnv;
  let client: KubeClient;
  let mgr: Manager;
  let ns: string;
  let version: string;
  let store: ObjectStore;
  /** Runs commands in the instances, as the manager does. */
  let execIn: PodExec;
  before(() => {
    ({ env, client, mgr, ns, version, store } = s);
    execIn = new PodExec(env.kubeConfig);
  });
  const { withPrimary, repositoryInfo } = postgresBackupTools(s);
  const { objectStore, createDatabase, ready, finished, backupOf, eventsAbout } = s;
  const { assertNoKeysAnywhere, assertBackupFailsVisibly, assertMissingBucketReported } = s;
  const dbs = () => client.resource(Database);
  const backups = () => client.resource(DatabaseBackup);

  const insert = (name: string, from: number, to: number) =>
    withPrimary(name, (c) =>
      c.query('insert into items(id) select generate_series($1::int, $2::int)', [from, to]),
    );
  const ids = (name: string) =>
    withPrimary(name, async (c) =>
      (await c.query<{ id: number }>('select id from items order by id')).rows.map((r) => r.id),
    );
  /**
   * Until the Database's standby streams and has replayed all the primary
   * wrote: a Ready standby may not stream yet (it is Ready once it answers
   * queries), and promoted before it does it would lack the rows. That is
   * asynchronous replication's loss, not what these tests are about.
   */
  const standbyPastTheRows = (name: string) =>
    eventually(
      `${name}'s standby streaming and past the rows`,
      () =>
        withPrimary(name, async (c) => {
          const r = await c.query<{ n: number }>(
            "select count(*)::int as n from pg_stat_replication where state = 'streaming' and replay_lsn >= pg_current_wal_lsn()",
          );
          return r.rows[0]!.n === 1 || undefined;
        }),
      120_000,
      200,
    );
  /** Deletes the primary's Pod and waits for another instance to be promoted; returns its name. */
  const failOver = async (name: string, old: string, t: { diagnostic: (m: string) => void }) => {
    const lostAt = Date.now();
    await client.resource<V1Pod>(Kinds.Pod).delete(old, { namespace: ns });
    const promoted = await eventually(
      `a replica of ${name} promoted`,
      async () => {
        const d = await dbs().get(name, { namespace: ns });
        return d.status?.currentPrimary && d.status.currentPrimary !== old
          ? d.status.currentPrimary
          : undefined;
      },
      300_000,
    );
    t.diagnostic(
      `failover ${old} -> ${promoted} ${((Date.now() - lostAt) / 1000).toFixed(1)} s after the Pod was deleted`,
    );
    return promoted;
  };
  const archiverGauge = async (database: string, metric: string) =>
    (await mgr.registry.getSingleMetric(metric)?.get())?.values.find(
      (v) => v.labels['database'] === database && v.labels['database_namespace'] === ns,
    )?.value;
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
    assert.equal(base.status?.phase, 'Succeeded');
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

  test('WAL archiving refused by the store: ArchivingFailed naming the segment, a Warning Event and the gauges within a minute, the Database Ready; once the store answers, archived again with nothing missing', async (t) => {
    await createDatabase('archiver');
    const db = await ready('archiver');
    // The archiver is first read a period after the stanza exists: then the gauge has its series.
    await eventually(
      'the archiver read, keeping up',
      async () => (await archiverGauge('archiver', ARCHIVING_FAILING_METRIC)) === 0,
      120_000,
    );
    // The archive's lag under a write load that writes 5 MB and switches the segment every half
    // second: the age of the oldest segment waiting to be archived, sampled on the primary.
    await withPrimary('archiver', (c) => c.query('create table load(id bigserial primary key, pad text)'));
    const ages: number[] = [];
    let segments = 0;
    const loadUntil = Date.now() + 20_000;
    await Promise.all([
      withPrimary('archiver', async (c) => {
        for await (const _ of setInterval(500)) {
          if (Date.now() >= loadUntil) break;
          await c.query("insert into load(pad) select repeat('x', 1000) from generate_series(1, 5000)");
          await c.query('select pg_switch_wal()');
          segments++;
        }
      }),
      withPrimary('archiver', async (c) => {
        for await (const _ of setInterval(250)) {
          if (Date.now() >= loadUntil) break;
          const r = await c.query<{ age: number }>(
            "select coalesce(extract(epoch from clock_timestamp() - min(modification)), 0)::float8 as age from pg_ls_archive_statusdir() where name like '%.ready'",
          );
          ages.push(r.rows[0]!.age);
        }
      }),
    ]);
    ages.sort((a, b) => a - b);
    t.diagnostic(
      `archive lag under load: ${segments} segments in 20 s; the oldest waiting segment's age, median ${ages[Math.floor(ages.length / 2)]!.toFixed(1)} s, at most ${ages.at(-1)!.toFixed(1)} s (${ages.length} samples)`,
    );
    assert.ok(ages.at(-1)! * 1000 < ARCHIVE_STUCK_MS, 'a healthy archive keeps up under load');
    const pod = await client.resource<V1Pod>(Kinds.Pod).get(db.status!.currentPrimary!, { namespace: ns });
    const sandbox = podSandboxPid(pod.metadata!.uid!);
    const storeAddress = new URL(store.podEndpoint!);
    const refusal = refusePodConnectionsTo(sandbox, storeAddress.hostname, Number(storeAddress.port));
    try {
      await withPrimary('archiver', (c) => c.query('create table items(id int primary key)'));
      await insert('archiver', 1, 100);
      const refused = Date.now();
      const segment = await withPrimary('archiver', async (c) => {
        const r = await c.query<{ w: string }>('select pg_walfile_name(pg_switch_wal()) as w');
        return r.rows[0]!.w;
      });
      const failed = await eventually(
        'BackupSucceeded=False ArchivingFailed',
        async () => {
          const d = await dbs().get('archiver', { namespace: ns });
          const c = cond(d.status?.conditions, 'BackupSucceeded');
          return c?.status === 'False' && c.reason === 'ArchivingFailed' && d;
        },
        90_000,
        500,
      ).catch(async (err: unknown) => {
        const r = await execIn.exec({
          namespace: ns,
          pod: pod.metadata!.name!,
          container: 'postgres',
          command: ARCHIVER_COMMAND,
        });
        throw new Error(`${(err as Error).message}; the archiver says: ${r.stdout}${r.stderr}`);
      });
      const seenAfter = Date.now() - refused;
      t.diagnostic(
        `archiving refused: ArchivingFailed ${(seenAfter / 1000).toFixed(1)} s after the segment switch`,
      );
      assert.ok(seenAfter < 60_000, `seen only after ${seenAfter} ms`);
      const message = cond(failed.status?.conditions, 'BackupSucceeded')!.message;
      t.diagnostic(`its message: ${message}`);
      // Refused, pgBackRest retries until its io-timeout (60 s) before archive_command fails: the
      // segment left waiting says it first.
      assert.match(
        message,
        /WAL archiving into backups\/\S+ (fails: segment [0-9A-F]{24} could not be archived|does not keep up: segment [0-9A-F]{24} has waited)/,
      );
      assert.ok(
        /segment ([0-9A-F]{24})/.exec(message)![1]! <= segment,
        `${message} names a segment after ${segment}`,
      );
      // Serving is not archiving.
      assert.equal(cond(failed.status?.conditions, 'Ready')?.status, 'True');
      await eventually(
        'a Warning Event ArchivingFailed',
        async () => (await eventsAbout('archiver', 'Warning', 'ArchivingFailed')).length > 0,
      );
      assert.equal(await archiverGauge('archiver', ARCHIVING_FAILING_METRIC), 1);
      const lag = await archiverGauge('archiver', ARCHIVE_LAG_METRIC);
      assert.ok(lag !== undefined && lag > 0, `archive lag ${lag}`);
      // More writes while refused: they must reach the archive once it answers.
      await insert('archiver', 101, 200);
    } finally {
      refusal.heal();
    }
    const healed = Date.now();
    const last = await withPrimary('archiver', async (c) => {
      const r = await c.query<{ w: string }>('select pg_walfile_name(pg_switch_wal()) as w');
      return r.rows[0]!.w;
    });
    await eventually(
      'BackupSucceeded no longer ArchivingFailed, the gauge at 0',
      async () => {
        const d = await dbs().get('archiver', { namespace: ns });
        return (
          cond(d.status?.conditions, 'BackupSucceeded')?.reason !== 'ArchivingFailed' &&
          (await archiverGauge('archiver', ARCHIVING_FAILING_METRIC)) === 0
        );
      },
      120_000,
      500,
    );
    t.diagnostic(
      `archiving again: healthy in status ${((Date.now() - healed) / 1000).toFixed(1)} s after the store answered`,
    );
    await eventually(
      'a Normal Event ArchivingRecovered',
      async () => (await eventsAbout('archiver', 'Normal', 'ArchivingRecovered')).length > 0,
    );
    // Nothing skipped: the archive holds every segment up to the last one switched, with no gap.
    const info = await eventually(
      'the archive reaching the last segment',
      async () => {
        const i = await repositoryInfo('archiver');
        return (i.archive.max ?? '') >= last && i;
      },
      120_000,
      1_000,
    );
    const r = await execIn.exec({
      namespace: ns,
      pod: pod.metadata!.name!,
      container: 'postgres',
      command: ['pgbackrest', 'check'],
      timeoutMs: 90_000,
    });
    assert.equal(r.exitCode, 0, `pgbackrest check: ${r.stdout}${r.stderr}`);
    t.diagnostic(`archive after healing: ${info.archive.min} .. ${info.archive.max}`);
    await dbs().delete('archiver', { namespace: ns });
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

  test('a backup taken during a failover: it succeeds, or fails visibly and a retry on the new primary succeeds; what succeeded restores exactly the rows written before it; archiving goes on from the new primary', async (t) => {
    await createDatabase('pair', { replicas: 2, replication: { failoverDelaySeconds: 0 } });
    await ready('pair');
    await eventually(
      'both instances of pair serving',
      async () => (await dbs().get('pair', { namespace: ns })).status?.readyReplicas === 2,
      300_000,
    );
    await withPrimary('pair', (c) => c.query('create table items(id int primary key)'));
    await insert('pair', 1, 100);
    await standbyPastTheRows('pair');
    const old = (await dbs().get('pair', { namespace: ns })).status!.currentPrimary!;

    await backupOf('pair-during', 'pair');
    await eventually(
      'pair-during running',
      async () => {
        const b = await backups().get('pair-during', { namespace: ns });
        return b.status?.phase === 'Running' || b.status?.phase === 'Succeeded' ? b : undefined;
      },
      120_000,
      100,
    );
    const promoted = await failOver('pair', old, t);

    const during = await finished('pair-during', 600_000);
    const outcome = cond(during.status?.conditions, 'Succeeded');
    t.diagnostic(
      `the backup during the failover: ${during.status?.phase} (${outcome?.reason}: ${outcome?.message})`,
    );
    let restorable = during;
    if (during.status?.phase === 'Failed') {
      // pgBackRest's own failure (it lost the server it backs up), or the operator's once its process is gone.
      assert.ok(
        ['BackupFailed', 'InstanceLost'].includes(outcome?.reason ?? ''),
        `a reason: ${outcome?.reason}`,
      );
      assert.ok((outcome?.message ?? '').length > 20, 'a message that says why');
      await eventually('a Warning Event about pair-during', async () =>
        (await eventsAbout('pair-during', 'Warning')).length > 0 ? true : undefined,
      );
      await backupOf('pair-retry', 'pair');
      restorable = await finished('pair-retry');
      assert.equal(restorable.status?.phase, 'Succeeded', JSON.stringify(restorable.status?.conditions));
      assert.equal(restorable.status?.instance, promoted, 'the retry ran on the new primary');
    }
    await insert('pair', 101, 200);

    // Archiving from the new primary: a segment of its timeline reaches the store.
    const segment = await withPrimary('pair', async (c) => {
      const r = await c.query<{ w: string }>('select pg_walfile_name(pg_switch_wal()) as w');
      return r.rows[0]!.w;
    });
    assert.ok(segment.slice(0, 8) > '00000001', `the new primary writes a new timeline (${segment})`);
    await eventually(
      `${segment} archived into the store`,
      async () =>
        (await store.listObjects(BUCKET, `${ns}/pair/archive/db/`)).some((o) =>
          o.key.includes(`/${segment}-`),
        ) || undefined,
      180_000,
      1_000,
    );
    const history = (await store.listObjects(BUCKET, `${ns}/pair/archive/db/`)).filter((o) =>
      o.key.endsWith(`${segment.slice(0, 8)}.history`),
    );
    assert.equal(history.length, 1, "the new timeline's history file is archived");

    const restoring = Date.now();
    await createDatabase('pair-restored', {
      bootstrap: { recovery: { backup: restorable.metadata.name! } },
    });
    await ready('pair-restored');
    t.diagnostic(
      `restored from ${restorable.metadata.name} (taken on ${restorable.status?.instance}) to Ready in ${((Date.now() - restoring) / 1000).toFixed(1)} s`,
    );
    assert.deepEqual(await ids('pair-restored'), range(1, 100));
    assert.deepEqual(await ids('pair'), range(1, 200), 'the source is untouched');
    await assertNoKeysAnywhere();
  });

  test('a primary whose archiving is refused fails: the promoted standby archives the segments it had not (ArchiveCaughtUp), and a restore to the end of the archive holds every row', async (t) => {
    await createDatabase('relay', { replicas: 2, replication: { failoverDelaySeconds: 0 } });
    await ready('relay');
    await eventually(
      'both instances of relay serving',
      async () => (await dbs().get('relay', { namespace: ns })).status?.readyReplicas === 2,
      300_000,
    );
    await withPrimary('relay', (c) => c.query('create table items(id int primary key)'));
    await insert('relay', 1, 100);
    await backupOf('relay-base', 'relay');
    assert.equal((await finished('relay-base')).status?.phase, 'Succeeded');

    const old = (await dbs().get('relay', { namespace: ns })).status!.currentPrimary!;
    const pod = await client.resource<V1Pod>(Kinds.Pod).get(old, { namespace: ns });
    const storeAddress = new URL(store.podEndpoint!);
    const refusal = refusePodConnectionsTo(
      podSandboxPid(pod.metadata!.uid!),
      storeAddress.hostname,
      Number(storeAddress.port),
    );
    const unarchived: string[] = [];
    try {
      // Two segments closed while the store refuses: the old primary can archive neither.
      for (const [from, to] of [
        [101, 150],
        [151, 200],
      ] as const) {
        await insert('relay', from, to);
        unarchived.push(
          await withPrimary('relay', async (c) => {
            const r = await c.query<{ w: string }>('select pg_walfile_name(pg_switch_wal()) as w');
            return r.rows[0]!.w;
          }),
        );
      }
      const archived = await withPrimary('relay', async (c) => {
        const r = await c.query<{ w: string | null }>('select last_archived_wal as w from pg_stat_archiver');
        return r.rows[0]?.w ?? '';
      });
      assert.ok(
        archived < unarchived[0]!,
        `${unarchived[0]} archived (${archived}) though the store refuses`,
      );
      await standbyPastTheRows('relay');
      const lostAt = Date.now();
      await failOver('relay', old, t);
      const caughtUp = await eventually(
        'an ArchiveCaughtUp Event on relay',
        async () => (await eventsAbout('relay', 'Normal', 'ArchiveCaughtUp'))[0],
        180_000,
      );
      t.diagnostic(
        `${((Date.now() - lostAt) / 1000).toFixed(1)} s after the Pod was deleted: ${String(caughtUp['note'])}`,
      );
      const [, first, last] =
        /\(([0-9A-F]{24})(?: to ([0-9A-F]{24}))?\)/.exec(String(caughtUp['note'])) ?? [];
      assert.ok(
        first && first <= unarchived[0]! && (last ?? first) >= unarchived[1]!,
        `the segments archived include ${unarchived.join(' and ')}`,
      );
    } finally {
      // With the old primary's sandbox gone, nothing is left to undo: heal() says so quietly.
      refusal.heal();
    }
    for (const segment of unarchived)
      assert.ok(
        (await store.listObjects(BUCKET, `${ns}/relay/archive/db/`)).some((o) =>
          o.key.includes(`/${segment}-`),
        ),
        `${segment} in the store`,
      );
    assert.deepEqual(await eventsAbout('relay', 'Warning', 'ArchiveGap'), [], 'nothing is missing');

    // Rows on the new timeline, its segment archived: the restore replays across the failover.
    await insert('relay', 201, 300);
    const segment = await withPrimary('relay', async (c) => {
      const r = await c.query<{ w: string }>('select pg_walfile_name(pg_switch_wal()) as w');
      return r.rows[0]!.w;
    });
    await eventually(
      `${segment} archived into the store`,
      async () =>
        (await store.listObjects(BUCKET, `${ns}/relay/archive/db/`)).some((o) =>
          o.key.includes(`/${segment}-`),
        ) || undefined,
      180_000,
      1_000,
    );
    const restoring = Date.now();
    await createDatabase('relay-restored', {
      bootstrap: { recovery: { source: objectStore('store-keys', `${ns}/relay`) } },
    });
    await ready('relay-restored');
    t.diagnostic(
      `restored to the end of the archive, to Ready in ${((Date.now() - restoring) / 1000).toFixed(1)} s`,
    );
    assert.deepEqual(await ids('relay-restored'), range(1, 300));
    await dbs().delete('relay-restored', { namespace: ns });
    await dbs().delete('relay', { namespace: ns });
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
