// WAL archiving for real, beside ./backup.integration.test.ts (the same
// suite: PostgreSQL on the real node, pgBackRest in its container, versitygw
// on this machine, the controllers in a Manager on this host), in a file of
// its own so that the two run side by side: a store that refuses the
// archiver, then answers again (and the shipped alert
// RegulonPostgresArchivingFails firing in a real Prometheus, then resolved);
// a backup taken during a failover; and a promoted standby that archives what
// its failed primary had not. Each restore is checked row by row. The
// instances run under the instance agent, which publishes the series the
// alert reads (and makes a failover go through the primary Lease).
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { setInterval } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { type KubeClient, Kinds } from '@regulon/client';
import {
  eventually,
  podSandboxPid,
  refusePodConnectionsTo,
  type ObjectStore,
  type RunningPrometheus,
  type TestEnv,
} from '@regulon/testenv';
import {
  assertNoneFiring,
  untilFiring,
  untilNoneFiring,
  watchInstances,
} from '../../../tools/monitoring/instances.ts';
import { Database } from './api.ts';
import { DatabaseBackup } from './backup/api.ts';
import { PodExec } from './backup/exec.ts';
import { ARCHIVE_LAG_METRIC, ARCHIVING_FAILING_METRIC } from './backup/archiver-metrics.ts';
import { ARCHIVE_STUCK_MS, ARCHIVER_COMMAND } from './backup/archiver.ts';
import { backupSuite, BUCKET, cond, range } from './testing/backup-suite.ts';
import { postgresBackupTools } from './testing/pgbackrest-suite.ts';

describe('WAL archiving to an object store (postgres, pgBackRest)', { timeout: 30 * 60_000 }, () => {
  const s = backupSuite({
    engine: 'postgres',
    namespacePrefix: 'pg-archive',
    storage: '1Gi',
    patienceMs: 300_000,
    instanceAgent: true,
  });
  let env: TestEnv;
  let client: KubeClient;
  let ns: string;
  let store: ObjectStore;
  /** Runs commands in the instances, as the manager does. */
  let execIn: PodExec;
  before(() => {
    ({ env, client, ns, store } = s);
    execIn = new PodExec(env.kubeConfig);
  });
  const { withPrimary, repositoryInfo, insert, ids, standbyPastTheRows, failOver, gauge } =
    postgresBackupTools(s);
  const { objectStore, createDatabase, ready, finished, backupOf, eventsAbout } = s;
  const { assertNoKeysAnywhere } = s;
  const dbs = () => client.resource(Database);
  const backups = () => client.resource(DatabaseBackup);

  /** The series RegulonPostgresArchivingFails reads for `pod`, and the alerts pending or firing: what a failed alert wait says. */
  const alertInputs = async (prometheus: RunningPrometheus, pod: string) => {
    const parts: string[] = [];
    for (const expr of [
      `increase(pg_stat_archiver_failed_count{pod="${pod}"}[5m])`,
      `pg_wal_archive_ready_count{pod="${pod}"}`,
      `pg_wal_archive_oldest_ready_age_seconds{pod="${pod}"}`,
      'ALERTS',
    ])
      parts.push(
        `${expr}: ${JSON.stringify((await prometheus.query(expr)).map((x) => [x.metric, x.value[1]]))}`,
      );
    return parts.join('\n');
  };
  /** The work, and on a failure what the alert's series said then. */
  const withAlertInputs = async <T>(prometheus: RunningPrometheus, pod: string, work: Promise<T>) => {
    try {
      return await work;
    } catch (err) {
      (err as Error).message += `\n${await alertInputs(prometheus, pod).catch((e: unknown) => String(e))}`;
      throw err;
    }
  };

  test('WAL archiving refused by the store: ArchivingFailed naming the segment, a Warning Event and the gauges within a minute, and RegulonPostgresArchivingFails firing in a real Prometheus, the Database Ready; once the store answers, archived again with nothing missing and the alert resolved', async (t) => {
    // A 10 s io-timeout (pgBackRest's default 60 s): refused, archive_command fails within the
    // scenario's first minute instead of after two, and the alert's failure branch fires.
    await createDatabase('archiver', {
      backup: {
        enabled: true,
        schedule: '0 3 * * *',
        historyLimit: 1,
        objectStore: objectStore(),
        storeTimeoutSeconds: 10,
      },
    });
    const db = await ready('archiver');
    const primary = db.status!.currentPrimary!;
    // The archiver is first read a period after the stanza exists: then the gauge has its series.
    await eventually(
      'the archiver read, keeping up',
      async () => (await gauge('archiver', ARCHIVING_FAILING_METRIC)) === 0,
      120_000,
    );
    // Started once the stanza exists and archiving keeps up: archive_command's failures before
    // the stanza was created are then a counter's starting value, not an increase the alert reads.
    const prometheus = await watchInstances(env.kubeconfigPath, ns);
    /** The last segment switched, once the store answers again. */
    let last: string;
    try {
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
        // Meanwhile no alert fires on the healthy archive under that load (segments wait briefly,
        // none fails), once the alert has its inputs: the primary's archiver scraped twice (an
        // increase needs two samples) and its waiting segments.
        withAlertInputs(
          prometheus,
          primary,
          (async () => {
            await eventually(
              `${primary}'s archiver series scraped`,
              async () =>
                (
                  await prometheus.query(
                    `count_over_time(pg_stat_archiver_failed_count{pod="${primary}",role="primary"}[1m]) >= 2 and on (pod) pg_wal_archive_ready_count{pod="${primary}",role="primary"}`,
                  )
                ).length === 1,
              60_000,
              500,
            );
            await assertNoneFiring(prometheus, 10);
          })(),
        ),
      ]);
      ages.sort((a, b) => a - b);
      t.diagnostic(
        `archive lag under load: ${segments} segments in 20 s; the oldest waiting segment's age, median ${ages[Math.floor(ages.length / 2)]!.toFixed(1)} s, at most ${ages.at(-1)!.toFixed(1)} s (${ages.length} samples); no alert firing`,
      );
      assert.ok(ages.at(-1)! * 1000 < ARCHIVE_STUCK_MS, 'a healthy archive keeps up under load');
      const pod = await client.resource<V1Pod>(Kinds.Pod).get(primary, { namespace: ns });
      const sandbox = podSandboxPid(pod.metadata!.uid!);
      const storeAddress = new URL(store.podEndpoint!);
      const refusal = refusePodConnectionsTo(sandbox, storeAddress.hostname, Number(storeAddress.port));
      let firedAfter: number;
      try {
        await withPrimary('archiver', (c) => c.query('create table items(id int primary key)'));
        await insert('archiver', 1, 100);
        const refused = Date.now();
        const segment = await withPrimary('archiver', async (c) => {
          const r = await c.query<{ w: string }>('select pg_walfile_name(pg_switch_wal()) as w');
          return r.rows[0]!.w;
        });
        // Watched from the segment switch, beside the condition's checks. Refused, pgBackRest retries
        // each request until its io-timeout (10 s here), then archive_command fails and postgres
        // retries it: the failures with segments waiting fire the alert, after its `for` (5 s here).
        // With the default 60 s, archive_command had not failed once 126 s on (measured), and what
        // fired it was the segment waiting over 120 s (INSTANCE_THRESHOLDS.archiveWaitSeconds); the
        // wait allows for either. A scrape missed on a loaded machine restarts the `for`.
        const alert = withAlertInputs(
          prometheus,
          primary,
          untilFiring(prometheus, 'RegulonPostgresArchivingFails', primary, 180_000),
        ).then((firing) => ({ firing, after: Date.now() - refused }));
        // Awaited below: a check failing before then must not leave its failure unhandled.
        alert.catch(() => {});
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
            pod: primary,
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
        // Refused, pgBackRest retries until its io-timeout before archive_command fails: the failure,
        // or the segment left waiting, whichever the manager reads first.
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
        assert.equal(await gauge('archiver', ARCHIVING_FAILING_METRIC), 1);
        const lag = await gauge('archiver', ARCHIVE_LAG_METRIC);
        assert.ok(lag !== undefined && lag > 0, `archive lag ${lag}`);
        // More writes while refused: they must reach the archive once it answers.
        await insert('archiver', 101, 200);
        const { firing, after } = await alert;
        firedAfter = after;
        assert.ok(
          firing.every(
            (a) =>
              a['alertname'] === 'RegulonPostgresArchivingFails' &&
              a['pod'] === primary &&
              a['owner'] === 'archiver' &&
              a['namespace'] === ns,
          ),
          `only the primary's archiving alert fires: ${JSON.stringify(firing)}`,
        );
        // Which of the alert's conditions holds: archive_command's failures (as scraped, and as the
        // server counts them), or the oldest segment's wait.
        const [failures] = await prometheus.query(
          `increase(pg_stat_archiver_failed_count{pod="${primary}"}[5m])`,
        );
        const [oldest] = await prometheus.query(`pg_wal_archive_oldest_ready_age_seconds{pod="${primary}"}`);
        const serverFailures = await withPrimary('archiver', async (c) => {
          const r = await c.query<{ n: string }>('select failed_count as n from pg_stat_archiver');
          return r.rows[0]!.n;
        });
        t.diagnostic(
          `RegulonPostgresArchivingFails firing for ${primary} ${(after / 1000).toFixed(1)} s after the segment switch (its for set to 5 s): archive_command failures in 5 min ${Number(failures?.value[1] ?? 0).toFixed(1)} (pg_stat_archiver.failed_count ${serverFailures} since the server started), the oldest waiting segment ${Number(oldest?.value[1] ?? 0).toFixed(0)} s old`,
        );
      } finally {
        refusal.heal();
      }
      const healed = Date.now();
      last = await withPrimary('archiver', async (c) => {
        const r = await c.query<{ w: string }>('select pg_walfile_name(pg_switch_wal()) as w');
        return r.rows[0]!.w;
      });
      // The status and the alert, both back to healthy: waited for side by side.
      const [inStatus, resolved] = await Promise.all([
        eventually(
          'BackupSucceeded no longer ArchivingFailed, the gauge at 0',
          async () => {
            const d = await dbs().get('archiver', { namespace: ns });
            return (
              cond(d.status?.conditions, 'BackupSucceeded')?.reason !== 'ArchivingFailed' &&
              (await gauge('archiver', ARCHIVING_FAILING_METRIC)) === 0
            );
          },
          120_000,
          500,
        ).then(() => Date.now() - healed),
        withAlertInputs(prometheus, primary, untilNoneFiring(prometheus, 120_000)).then(
          () => Date.now() - healed,
        ),
      ]);
      t.diagnostic(
        `archiving again: healthy in status ${(inStatus / 1000).toFixed(1)} s after the store answered; no alert firing ${(resolved / 1000).toFixed(1)} s after (firing had come ${(firedAfter / 1000).toFixed(1)} s after the switch)`,
      );
    } finally {
      await prometheus.stop();
    }
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
      pod: primary,
      container: 'postgres',
      command: ['pgbackrest', 'check'],
      timeoutMs: 90_000,
    });
    assert.equal(r.exitCode, 0, `pgbackrest check: ${r.stdout}${r.stderr}`);
    t.diagnostic(`archive after healing: ${info.archive.min} .. ${info.archive.max}`);
    await dbs().delete('archiver', { namespace: ns });
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
    const primaryBefore = (await dbs().get('relay', { namespace: ns })).status?.currentPrimary;
    await backupOf('relay-base', 'relay');
    let base = await finished('relay-base');
    const primaryAfter = (await dbs().get('relay', { namespace: ns })).status?.currentPrimary;
    if (base.status?.phase === 'Failed' && primaryAfter !== primaryBefore) {
      // With failoverDelaySeconds 0, a primary that stalled under the machine's load past its
      // Lease is failed over at once; pgBackRest then finds no primary where it ran. Not what
      // this scenario is about: it says so and backs up the new primary.
      t.diagnostic(
        `the primary moved (${primaryBefore} -> ${primaryAfter}) during the base backup, which failed: ` +
          JSON.stringify(base.status?.conditions),
      );
      await backupOf('relay-base-again', 'relay');
      base = await finished('relay-base-again');
    }
    assert.equal(
      base.status?.phase,
      'Succeeded',
      `primary ${primaryBefore} before the backup, ${primaryAfter} after; ran on ${base.status?.instance}: ${JSON.stringify(base.status?.conditions)}`,
    );

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
});
