import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DatabaseBackup, type DatabaseObject } from '@regulon/database-controller';
import { UserError } from './errors.ts';
import { describeRecovery, restoreManifest } from './restore.ts';
import { replicatedDatabase } from './testing/fixtures.ts';

const refused = (fn: () => unknown, message: RegExp) =>
  assert.throws(fn, (err: unknown) => err instanceof UserError && message.test(err.message));

const withSpec = (spec: Partial<DatabaseObject['spec']>): DatabaseObject => {
  const db = replicatedDatabase();
  return { ...db, spec: { ...db.spec, ...spec } };
};

describe('restoreManifest', () => {
  test('from the object store: the source repository (its default path), to the end of the archive', () => {
    const source = withSpec({ parameters: { max_connections: '200' } });
    const db = restoreManifest(source, { database: 'orders', newName: 'orders-copy' });
    assert.equal(db.apiVersion, 'regulon.dev/v1beta1');
    assert.equal(db.kind, 'Database');
    assert.deepEqual(db.metadata, {
      name: 'orders-copy',
      namespace: 'shop',
      annotations: { 'regulon.dev/restored-from': 'shop/orders' },
    });
    assert.deepEqual(db.spec.bootstrap, {
      recovery: {
        source: {
          endpoint: 'https://minio.storage.svc:9000',
          bucket: 'backups',
          credentials: { secretName: 'store-keys' },
          path: 'shop/orders',
        },
      },
    });
    assert.equal(db.spec.engine, 'postgres');
    assert.equal(db.spec.version, '16.8');
    assert.equal(db.spec.replicas, 3);
    assert.deepEqual(db.spec.storage, { size: '10Gi' });
    assert.deepEqual(db.spec.parameters, { max_connections: '200' });
    // Its own backups, into the same store, under its own default path (none named).
    assert.deepEqual(db.spec.backup?.objectStore, {
      endpoint: 'https://minio.storage.svc:9000',
      bucket: 'backups',
      credentials: { secretName: 'store-keys' },
    });
    assert.equal(db.spec.backup?.schedule, '0 3 * * *');
    assert.equal(db.spec.credentials, undefined);
    assert.equal(db.status, undefined);
  });

  test('--time: the source with its explicit path, and targetTime; the new Database does not take that path', () => {
    const source = replicatedDatabase();
    source.spec.backup!.objectStore!.path = 'prod/orders-repo';
    const db = restoreManifest(source, {
      database: 'orders',
      newName: 'orders-noon',
      targetTime: '2026-11-24T12:00:00Z',
    });
    assert.equal(db.spec.bootstrap?.recovery?.source?.path, 'prod/orders-repo');
    assert.equal(db.spec.bootstrap?.recovery?.targetTime, '2026-11-24T12:00:00Z');
    assert.equal(db.spec.backup?.objectStore?.path, undefined);
    assert.equal(source.spec.backup!.objectStore!.path, 'prod/orders-repo', 'the source is not changed');
  });

  test('--backup: recovery.backup alone, checked against the DatabaseBackup', () => {
    const backup = DatabaseBackup.object({
      metadata: { name: 'nightly', namespace: 'shop' },
      spec: { database: 'orders' },
      status: { phase: 'Succeeded' },
    });
    const from = (b: typeof backup) =>
      restoreManifest(replicatedDatabase(), { database: 'orders', newName: 'o2', backup: 'nightly' }, b);
    assert.deepEqual(from(backup).spec.bootstrap, { recovery: { backup: 'nightly' } });
    refused(
      () => from({ ...backup, spec: { database: 'other' } }),
      /a backup of Database "other", not of "orders"/,
    );
    refused(() => from({ ...backup, status: { phase: 'Failed' } }), /DatabaseBackup "nightly" failed/);
  });

  test('refused where the CRD would refuse, saying why', () => {
    refused(
      () =>
        restoreManifest(withSpec({ engine: 'mysql', backup: undefined }), {
          database: 'orders',
          newName: 'x',
        }),
      /mysql, which has no backups to restore from/,
    );
    refused(
      () =>
        restoreManifest(withSpec({ engine: 'mariadb' }), {
          database: 'orders',
          newName: 'x',
          targetTime: '2026-11-24T12:00:00Z',
        }),
      /--time is postgres only/,
    );
    refused(
      () => restoreManifest(withSpec({ backup: undefined }), { database: 'orders', newName: 'x' }),
      /no spec.backup.objectStore to recover from: name a DatabaseBackup with --backup/,
    );
  });

  test('describeRecovery says where the data comes from', () => {
    assert.equal(describeRecovery({ database: 'orders', backup: 'nightly' }), 'from databasebackup/nightly');
    assert.equal(
      describeRecovery({ database: 'orders', targetTime: '2026-11-24T12:00:00Z' }),
      'from the object store of database/orders, to 2026-11-24T12:00:00Z',
    );
    assert.equal(
      describeRecovery({ database: 'orders' }),
      'from the object store of database/orders, to the end of its archived WAL',
    );
  });
});
