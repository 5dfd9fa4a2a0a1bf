// A Database whose backups go nowhere (enabled, no objectStore): the release
// before accepted it, this one refuses it. One stored before the rule is kept
// by the API server's validation ratcheting while its backup is unchanged, and
// the controller reports it (BackupSucceeded NoBackupDestination, a Warning
// Event), keeping its dump CronJob until the spec is fixed.
//
// On a control plane of its own: it installs the Database CRD without the
// rule for a while, which the run's other test files must never see.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { V1CronJob } from '@kubernetes/client-node';
import { InvalidError, isNotFound, KubeClient, Kinds } from '@regulon/client';
import type { CustomResourceDefinition, JSONSchemaProps } from '@regulon/crd';
import { testManager, type Manager } from '@regulon/runtime';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import { Database, NO_BACKUP_DESTINATION_MESSAGE, type DatabaseObject } from './api.ts';
import { setupDatabaseController } from './index.ts';

/** The rule this release adds on spec.backup. */
const RULE = '!self.enabled || has(self.objectStore)';

/** The Database CRD as the release before served it: this one's, without the rule. */
function crdOfTheReleaseBefore(): CustomResourceDefinition {
  const crd = Database.crd();
  for (const version of crd.spec.versions) {
    const backup = version.schema.openAPIV3Schema.properties!['spec']!.properties![
      'backup'
    ] as JSONSchemaProps;
    const rules = backup['x-kubernetes-validations'] ?? [];
    const kept = rules.filter((r) => r.rule !== RULE);
    assert.equal(kept.length, rules.length - 1, 'the rule is on spec.backup, once');
    backup['x-kubernetes-validations'] = kept;
  }
  return crd;
}

const LEGACY_BACKUP = { enabled: true, schedule: '*/30 * * * *', historyLimit: 3 };

let env: TestEnv;
let client: KubeClient;
let ns: string;
let mgr: Manager;
let running: Promise<void>;
const dbs = () => client.resource<DatabaseObject>(Database.type);
const legacy = (name: string) =>
  Database.object({
    metadata: { name, namespace: ns },
    spec: {
      engine: 'postgres',
      version: '16.6',
      replicas: 1,
      storage: { size: '1Gi' },
      backup: LEGACY_BACKUP,
    },
  });
const backupCondition = (db: DatabaseObject) =>
  db.status?.conditions?.find((c) => c.type === 'BackupSucceeded');

before(async () => {
  env = await start({ own: true });
  client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 200, burst: 200 });
  ns = await env.newNamespace('db-destination');
  mgr = testManager(env.kubeConfig, { namespace: ns });
  setupDatabaseController(mgr);
  running = mgr.start();
});
after(async () => {
  mgr?.stop();
  await running;
  client?.close();
  await env?.stop();
});

test('stored before the rule, a Database whose backups go nowhere keeps them through other changes; a new one, or a change to its backup, is refused', async () => {
  await env.installCRDs([crdOfTheReleaseBefore()]);
  await dbs().create(legacy('orders'));

  await env.installCRDs([Database.crd()]);
  // The API server takes up a CRD's new schema shortly after it is written.
  const refusal = await eventually(
    'a new Database in the old form refused',
    async (): Promise<InvalidError | undefined> => {
      try {
        await dbs().create(legacy('fresh'), { dryRun: true });
        return undefined;
      } catch (err) {
        if (err instanceof InvalidError) return err;
        throw err;
      }
    },
  );
  assert.deepEqual(
    refusal.causes.map((c) => `${c.field}: ${c.message}`),
    [`spec.backup: Invalid value: ${NO_BACKUP_DESTINATION_MESSAGE}`],
  );

  // Another field changes, spec.backup does not: ratcheting lets the stored form stay.
  const scaled = await dbs().patch('orders', { spec: { replicas: 2 } }, { type: 'merge', namespace: ns });
  assert.equal(scaled.spec.replicas, 2);
  assert.deepEqual(scaled.spec.backup, LEGACY_BACKUP);

  // A change to the backup itself is checked against the rule.
  await assert.rejects(
    dbs().patch('orders', { spec: { backup: { schedule: '0 4 * * *' } } }, { type: 'merge', namespace: ns }),
    (err: unknown) => {
      assert.ok(err instanceof InvalidError, String(err));
      assert.match(err.message, /backup\.enabled \(the default\) needs backup\.objectStore/);
      return true;
    },
  );
});

test('the controller reports it (BackupSucceeded NoBackupDestination, a Warning Event) and keeps its dump CronJob until the spec is fixed', async () => {
  const reported = await eventually('orders reported', async () => {
    const db = await dbs().get('orders', { namespace: ns });
    return db.status?.observedGeneration === db.metadata.generation &&
      backupCondition(db)?.reason === 'NoBackupDestination'
      ? db
      : undefined;
  });
  const condition = backupCondition(reported)!;
  assert.equal(condition.status, 'False');
  assert.match(
    condition.message,
    /each scheduled dump reaches only a scratch volume deleted with its Pod, and can never be restored/,
  );
  assert.match(
    condition.message,
    /Set spec\.backup\.objectStore \(postgres, mariadb\), or spec\.backup\.enabled: false/,
  );
  assert.equal(reported.status?.lastBackup, undefined, 'a dump onto a scratch volume is no backup');

  const event = await eventually('Warning Event NoBackupDestination', async () => {
    const list = await client.resource(Kinds.Event).list({ namespace: ns });
    return list.items.find(
      (e) => e.type === 'Warning' && e.reason === 'NoBackupDestination' && e.regarding?.name === 'orders',
    );
  });
  assert.match(event.note ?? '', /can never be restored\. Set spec\.backup\.objectStore/);

  // Kept, not broken: the CronJob the spec asks for still runs.
  const cron = await eventually('the dump CronJob', () =>
    client.resource<V1CronJob>(Kinds.CronJob).get('orders-backup', { namespace: ns }),
  );
  assert.equal(cron.spec?.schedule, LEGACY_BACKUP.schedule);

  // Fixed by turning backups off (a merge patch: the rest of backup stays): no CronJob, and the status says so.
  await dbs().patch('orders', { spec: { backup: { enabled: false } } }, { type: 'merge', namespace: ns });
  await eventually('CronJob gone', () =>
    client
      .resource(Kinds.CronJob)
      .get('orders-backup', { namespace: ns })
      .then(() => false, isNotFound),
  );
  await eventually('BackupSucceeded: disabled', async () => {
    const db = await dbs().get('orders', { namespace: ns });
    return db.status?.observedGeneration === db.metadata.generation &&
      backupCondition(db)?.message === 'Backups are disabled'
      ? db
      : undefined;
  });
});
