// Scheduled backups, for real (PostgreSQL on the real node, pgBackRest, versitygw on this machine,
// the controllers in a Manager on this host): a DatabaseBackup per slot, and a store stopped
// (SIGSTOP) during a scheduled backup, with retention after it. Apart from the other backup
// scenarios (./backup.integration.test.ts), with a store of its own: they wait for a minute's
// slots and for pgBackRest to give up on the stopped store (minutes, mostly idle), while the
// other file's scenarios run beside them, and the stopped store stops nothing else.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eventually } from '@regulon/testenv';
import { Database } from './api.ts';
import { DatabaseBackup } from './backup/api.ts';
import { backupSuite, cond } from './testing/backup-suite.ts';
import { postgresBackupTools, slotOf } from './testing/pgbackrest-suite.ts';

/** How long pgBackRest waits on the stopped store, per request (spec.backup.storeTimeoutSeconds). */
const STORE_TIMEOUT_S = 10;

describe('Database backups on a schedule (postgres, pgBackRest)', { timeout: 30 * 60_000 }, () => {
  const s = backupSuite({
    engine: 'postgres',
    namespacePrefix: 'pg-backup-schedule',
    storage: '1Gi',
    patienceMs: 300_000,
  });
  const { objectStore, createDatabase, ready, finished, backupOf, listEvents, eventsAbout } = s;
  const { assertNoKeysAnywhere, pauseStore, resumeStore } = s;
  const { withPrimary, repositoryInfo, failingMetric } = postgresBackupTools(s);
  const dbs = () => s.client.resource(Database);
  const backups = () => s.client.resource(DatabaseBackup);

  test('a schedule makes a DatabaseBackup per slot, and the Database follows it', async (t) => {
    await createDatabase('ticker', {
      backup: { enabled: true, schedule: '* * * * *', historyLimit: 1, objectStore: objectStore() },
    });
    await ready('ticker');
    const since = Date.now();
    const scheduled = await eventually(
      'a scheduled DatabaseBackup of ticker succeeded',
      async () => {
        const list = await backups().list({
          namespace: s.ns,
          labelSelector: 'regulon.dev/scheduled-for=ticker',
        });
        return list.items.find((b) => b.status?.phase === 'Succeeded');
      },
      180_000,
    );
    t.diagnostic(
      `first scheduled backup succeeded ${((Date.now() - since) / 1000).toFixed(0)} s after Ready`,
    );
    assert.match(scheduled.metadata.name!, /^ticker-\d{8}-\d{4}$/);
    assert.equal(
      scheduled.metadata.ownerReferences,
      undefined,
      'it outlives the Database: a restore needs it',
    );
    await eventually('BackupSucceeded=True on ticker', async () => {
      const d = await dbs().get('ticker', { namespace: s.ns });
      return cond(d.status?.conditions, 'BackupSucceeded')?.status === 'True';
    });
    // No backup a minute for the rest of the run.
    await dbs().delete('ticker', { namespace: s.ns });
  });

  // Minutes by design: a minute's slots, and pgBackRest giving up on a stopped store (its io-timeout,
  // retried). storeTimeoutSeconds makes that timeout 10 s: with pgBackRest's 60 s, giving up took
  // 4 minutes of the scenario's 7. The runner's default 10 minutes is too close either way.
  test(
    'the object store stopped during a scheduled backup: that backup fails visibly, the first slot after the store returns succeeds, and retention removes what it should and nothing else',
    { timeout: 15 * 60_000 },
    async (t) => {
      await createDatabase('metronome', {
        backup: {
          enabled: true,
          schedule: '* * * * *',
          historyLimit: 1,
          objectStore: objectStore(),
          retention: { count: 2 },
          storeTimeoutSeconds: STORE_TIMEOUT_S,
        },
      });
      await ready('metronome');
      await withPrimary('metronome', (c) => c.query('create table items(id int primary key)'));
      // An on-demand backup counts with the scheduled ones: the oldest of them all, the first to go.
      await backupOf('metronome-manual', 'metronome');
      const manual = await finished('metronome-manual');
      assert.equal(manual.status?.phase, 'Succeeded', JSON.stringify(manual.status?.conditions));
      const scheduled = async () =>
        (
          await backups().list({ namespace: s.ns, labelSelector: 'regulon.dev/scheduled-for=metronome' })
        ).items.sort((a, b) => slotOf(a) - slotOf(b));
      const first = await eventually(
        'a scheduled backup of metronome succeeded',
        async () => (await scheduled()).find((b) => b.status?.phase === 'Succeeded'),
        240_000,
      );

      // The next slot's DatabaseBackup: the store stops the moment it exists, before or while pgBackRest runs.
      const victim = await eventually(
        "the next slot's DatabaseBackup",
        async () => (await scheduled()).find((b) => slotOf(b) > slotOf(first)),
        120_000,
        100,
      );
      pauseStore();
      const paused = Date.now();
      const failed = await finished(victim.metadata.name!, 600_000);
      const why = cond(failed.status?.conditions, 'Succeeded');
      t.diagnostic(
        `store stopped: ${victim.metadata.name} ${failed.status?.phase} ${((Date.now() - paused) / 1000).toFixed(0)} s later (${why?.reason}: ${why?.message})`,
      );
      assert.equal(failed.status?.phase, 'Failed');
      assert.equal(why?.reason, 'BackupFailed');
      assert.ok((why?.message ?? '').length > 20, 'the reason is pgBackRest’s, not a bare exit code');
      const down = await eventually('BackupSucceeded=False on metronome', async () => {
        const d = await dbs().get('metronome', { namespace: s.ns });
        return cond(d.status?.conditions, 'BackupSucceeded')?.status === 'False' ? d : undefined;
      });
      assert.equal(cond(down.status?.conditions, 'Ready')?.status, 'True', 'serving is not backing up');
      await eventually('a Warning Event about the failed backup', async () =>
        (await eventsAbout(victim.metadata.name!, 'Warning')).length > 0 ? true : undefined,
      );
      await eventually('regulon_database_backup_failing 1 for metronome', async () =>
        (await failingMetric('metronome')) === 1 ? true : undefined,
      );

      resumeStore();
      const resumed = Date.now();
      // The first slot whose backup starts with the store back succeeds, and then one more: three succeeded, count 2.
      await eventually(
        'two scheduled backups after the failed one succeeded',
        async () =>
          (await scheduled()).filter((b) => slotOf(b) > slotOf(failed) && b.status?.phase === 'Succeeded')
            .length >= 2
            ? true
            : undefined,
        600_000,
        1_000,
      );
      t.diagnostic(
        `two backups succeeded ${((Date.now() - resumed) / 1000).toFixed(0)} s after the store returned`,
      );
      // No more slots: what is left to check must hold still.
      const db = await dbs().get('metronome', { namespace: s.ns });
      await dbs().patch(
        'metronome',
        { spec: { backup: { ...db.spec.backup!, enabled: false } } },
        { namespace: s.ns, type: 'merge' },
      );
      const settled = await eventually(
        'every DatabaseBackup of metronome finished, and retention done in the repository and the API alike',
        async () => {
          const all = (await backups().list({ namespace: s.ns })).items.filter(
            (b) => b.spec.database === 'metronome',
          );
          if (all.some((b) => b.status?.phase !== 'Succeeded' && b.status?.phase !== 'Failed'))
            return undefined;
          const succeeded = all.filter((b) => b.status?.phase === 'Succeeded');
          if (succeeded.length !== 2) return undefined;
          const info = await repositoryInfo('metronome');
          const listed = info.backups.map((k) => k.label).sort();
          const kept = succeeded.map((b) => b.status!.label!).sort();
          return JSON.stringify(listed) === JSON.stringify(kept) ? { all, succeeded, info } : undefined;
        },
        300_000,
        2_000,
      );
      const names = settled.all.map((b) => b.metadata.name);
      assert.ok(!names.includes('metronome-manual'), 'the oldest succeeded backup is gone');
      assert.ok(!names.includes(first.metadata.name), 'and so is the next oldest');
      assert.ok(names.includes(failed.metadata.name), 'a failed DatabaseBackup holds nothing: it stays');
      const newest = settled.succeeded
        .map((b) => b.status!)
        .sort((a, b) => Date.parse(b.stoppedAt!) - Date.parse(a.stoppedAt!));
      assert.ok(
        Date.parse(newest[1]!.stoppedAt!) > Date.parse(first.status!.stoppedAt!),
        'what is kept is newer than what went',
      );
      // The WAL only the expired backups needed is gone; what the oldest kept one needs is there.
      const oldestKeptStart = newest[1]!.wal!.startSegment!;
      assert.ok(settled.info.archive.min, 'WAL is archived');
      assert.ok(
        settled.info.archive.min > manual.status.wal!.startSegment!,
        `WAL expired: the archive starts at ${settled.info.archive.min}, after ${manual.status.wal!.startSegment}`,
      );
      assert.ok(
        settled.info.archive.min <= oldestKeptStart,
        `the archive (from ${settled.info.archive.min}) covers the oldest kept backup (from ${oldestKeptStart})`,
      );
      const expired = (await listEvents())
        .filter((e) => e['reason'] === 'BackupExpired')
        .map((e) => String(e['note']));
      for (const gone of [manual, first])
        assert.ok(
          expired.some((note) => note.includes(gone.status!.label!) && note.includes(gone.metadata.name!)),
          `a Normal Event names ${gone.metadata.name}: ${expired.join(' | ')}`,
        );
      const d = await eventually('BackupSucceeded=True on metronome again', async () => {
        const x = await dbs().get('metronome', { namespace: s.ns });
        return cond(x.status?.conditions, 'BackupSucceeded')?.status === 'True' ? x : undefined;
      });
      assert.equal(cond(d.status?.conditions, 'Ready')?.status, 'True');
      await eventually('regulon_database_backup_failing 0 for metronome', async () =>
        (await failingMetric('metronome')) === 0 ? true : undefined,
      );
      await assertNoKeysAnywhere();
      await dbs().delete('metronome', { namespace: s.ns });
    },
  );
});
