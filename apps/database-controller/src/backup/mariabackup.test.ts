// MariaDB backups: the container settings, the scripts the manager runs by
// exec, and what it reads back from them. The outputs below are real rclone
// 1.60 (Debian bookworm) answers from versitygw, shortened.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, test } from 'node:test';
import type { DatabaseObject } from '../api.ts';
import type { DatabaseBackupObject } from './api.ts';
import {
  fromStore,
  listedLabels,
  MARIABACKUP_CHECK_SCRIPT,
  MARIABACKUP_EXPIRE_SCRIPT,
  MARIABACKUP_START_SCRIPT,
  mariabackupEnv,
  mariadbRecoverySecretData,
  parseMariabackupCheck,
  parseStoreView,
  renderFetchBackupFunctions,
  storeBackupByUid,
} from './mariabackup.ts';
import { repositoryOf } from './pgbackrest.ts';

const database = (objectStore?: object): DatabaseObject =>
  ({
    apiVersion: 'regulon.dev/v1beta1',
    kind: 'Database',
    metadata: { name: 'orders', namespace: 'shop', uid: 'd1' },
    spec: {
      engine: 'mariadb',
      version: '10.11',
      replicas: 1,
      storage: { size: '1Gi' },
      ...(objectStore
        ? { backup: { enabled: true, schedule: '0 3 * * *', historyLimit: 3, objectStore } }
        : {}),
    },
  }) as DatabaseObject;

const store = {
  endpoint: 'https://s3.example.com:9000/',
  bucket: 'db-backups',
  credentials: { secretName: 'keys' },
  caSecret: { name: 'store-ca' },
};

const backupObject: DatabaseBackupObject = {
  apiVersion: 'regulon.dev/v1alpha1',
  kind: 'DatabaseBackup',
  metadata: { name: 'b1', namespace: 'shop', uid: 'uid-1' },
  spec: { database: 'orders' },
};

const MANIFEST =
  '{"uid":"uid-1","backup":"shop/b1","label":"20261124T154132Z","tool":"mariabackup","format":"xbstream+zstd","startedAt":"2026-11-24T15:41:32Z","stoppedAt":"2026-11-24T15:41:35Z","sizeBytes":3004096,"streamBytes":30000697,"binlogFile":"binlog.000002","binlogPosition":1234,"gtid":"0-100-42","instance":"orders-0"}';
const OBJECTS = `[
{"Path":"20261124T154132Z/backup.xbstream.zst","Name":"backup.xbstream.zst","Size":30000697,"IsDir":false},
{"Path":"20261124T154132Z/manifest.json","Name":"manifest.json","Size":307,"IsDir":false}
]`;
const SUCCEEDED = `started: yes
rc: 0
2026/11/24 15:41:33 NOTICE: S3 bucket db-backups path shop/orders/20261124T154132Z: Streaming uploads using chunk size 16Mi will have maximum file size of 156.250Gi
info:
objects-rc: 0
${OBJECTS}
manifests-rc: 0
${MANIFEST}
`;
const REFUSED = `started: yes
rc: 1
2026/11/24 15:41:45 ERROR : : error listing: SignatureDoesNotMatch: The request signature we calculated does not match the signature you provided. Check your key and signing method.
	status code: 403, request id: 1F1I7PM0H7JZFII4, host id: nhbPQy6sAe8CmF13zLhC2mVyvb7EQcydCx9AgkO2Be9cAubxXoN8OrKrTCJZtAOKAt2W1QaP0EDAcpVs1IYI86Q=
2026/11/24 15:41:45 Failed to lsf with 2 errors: last error was: error in ListJSON: SignatureDoesNotMatch: The request signature we calculated does not match the signature you provided. Check your key and signing method.
	status code: 403, request id: 1F1I7PM0H7JZFII4, host id: nhbPQy6sAe8CmF13zLhC2mVyvb7EQcydCx9AgkO2Be9cAubxXoN8OrKrTCJZtAOKAt2W1QaP0EDAcpVs1IYI86Q=
info:
objects-rc: 1
[
2026/11/24 15:41:55 Failed to lsjson with 2 errors: last error was: error in ListJSON: SignatureDoesNotMatch: The request signature we calculated does not match the signature you provided. Check your key and signing method.
	status code: 403, request id: 2C1UG85XD6FWJDVA, host id: zRbtTFW9
manifests-rc: 1
2026/11/24 15:41:56 Failed to cat with 2 errors: last error was: SignatureDoesNotMatch: The request signature we calculated does not match the signature you provided.
`;
const NO_BUCKET = `started: yes
rc: 3
2026/11/24 15:41:45 ERROR : : error listing: directory not found
2026/11/24 15:41:45 Failed to lsf with 2 errors: last error was: error in ListJSON: directory not found
info:
objects-rc: 3
[
2026/11/24 15:41:56 Failed to lsjson with 2 errors: last error was: error in ListJSON: directory not found
manifests-rc: 3
2026/11/24 15:41:56 Failed to cat with 2 errors: last error was: directory not found
`;
const UNREACHABLE = `started: yes
rc: 1
2026/11/24 15:41:47 ERROR : : error listing: RequestError: send request failed
caused by: Get "https://10.0.0.1:9000/db-backups?delimiter=%2F&max-keys=1000&prefix=shop%2Forders%2F": dial tcp 10.0.0.1:9000: connect: connection refused
2026/11/24 15:41:47 Failed to lsf with 2 errors: last error was: error in ListJSON: RequestError: send request failed
caused by: Get "https://10.0.0.1:9000/db-backups?delimiter=%2F&max-keys=1000&prefix=shop%2Forders%2F": dial tcp 10.0.0.1:9000: connect: connection refused
info:
objects-rc: 1
`;
const MARIABACKUP_FAILED = `started: yes
rc: 1
mariabackup exited with 1
mariabackup: [00] 2026-11-24 15:00:00 Connecting to MariaDB server host: localhost, user: mysql
mariabackup: [00] 2026-11-24 15:00:01 Error: failed to connect
info:
objects-rc: 0
[]
manifests-rc: 0
`;

describe('the container settings', () => {
  test('rclone is configured from the environment, the keys by secretKeyRef only', () => {
    const env = mariabackupEnv(database(store));
    const byName = new Map(env.map((e) => [e.name, e]));
    assert.equal(byName.get('RCLONE_CONFIG_STORE_TYPE')?.value, 's3');
    assert.equal(byName.get('RCLONE_CONFIG_STORE_ENDPOINT')?.value, 'https://s3.example.com:9000');
    assert.equal(byName.get('RCLONE_CONFIG_STORE_NO_CHECK_BUCKET')?.value, 'true', 'never creates a bucket');
    assert.equal(byName.get('REGULON_BACKUP_LOCATION')?.value, 'db-backups/shop/orders');
    assert.equal(byName.get('RCLONE_CA_CERT')?.value, '/etc/regulon/backup-ca/ca.crt');
    assert.deepEqual(byName.get('RCLONE_CONFIG_STORE_ACCESS_KEY_ID')?.valueFrom, {
      secretKeyRef: { name: 'keys', key: 'ACCESS_KEY_ID' },
    });
    assert.deepEqual(byName.get('RCLONE_CONFIG_STORE_SECRET_ACCESS_KEY')?.valueFrom, {
      secretKeyRef: { name: 'keys', key: 'ACCESS_SECRET_KEY' },
    });
    for (const e of env) if (/KEY/.test(e.name)) assert.equal(e.value, undefined, `${e.name} holds no value`);
  });

  test("storeTimeoutSeconds is rclone's timeout to connect and to answer; left out, 15 s to connect and rclone's own idle timeout", () => {
    const timeouts = (db: DatabaseObject) =>
      Object.fromEntries(
        mariabackupEnv(db)
          .filter((e) => e.name === 'RCLONE_CONTIMEOUT' || e.name === 'RCLONE_TIMEOUT')
          .map((e) => [e.name, e.value]),
      );
    const db = database(store);
    db.spec.backup!.storeTimeoutSeconds = 10;
    assert.deepEqual(timeouts(db), { RCLONE_CONTIMEOUT: '10s', RCLONE_TIMEOUT: '10s' });
    assert.deepEqual(timeouts(database(store)), { RCLONE_CONTIMEOUT: '15s' });
  });

  test('nothing for a Database without an object store', () => {
    assert.deepEqual(mariabackupEnv(database()), []);
  });

  test('the recovery Secret: the source store, its keys, where the backup is', () => {
    const repo = repositoryOf(store, 'shop/orders');
    const data = mariadbRecoverySecretData(
      repo,
      { accessKeyId: 'AKID', secretAccessKey: 'SECRET', ca: 'PEM' },
      '20261124T154132Z',
    );
    assert.equal(data['ACCESS_KEY_ID'], 'AKID');
    assert.equal(data['SECRET_ACCESS_KEY'], 'SECRET');
    assert.equal(data['ca.crt'], 'PEM');
    assert.equal(data['LOCATION'], 'db-backups/shop/orders');
    assert.equal(data['LABEL'], '20261124T154132Z');
    const latest = mariadbRecoverySecretData(
      repo,
      { accessKeyId: 'AKID', secretAccessKey: 'SECRET' },
      undefined,
    );
    assert.equal(latest['LABEL'], undefined, 'no label: the latest backup of the path');
    assert.equal(latest['ca.crt'], undefined);
  });

  test('the scripts are valid bash and put no key on a command line', () => {
    for (const script of [
      MARIABACKUP_START_SCRIPT,
      MARIABACKUP_CHECK_SCRIPT,
      MARIABACKUP_EXPIRE_SCRIPT,
      renderFetchBackupFunctions(),
    ]) {
      execFileSync('bash', ['-n'], { input: script });
      assert.doesNotMatch(script, /--s3-(access-key-id|secret-access-key)|--password/);
    }
  });
});

describe('what the store says', () => {
  test('a finished backup: Succeeded from its manifest and the stream the store lists', () => {
    const check = parseMariabackupCheck(SUCCEEDED);
    assert.equal(check.exitCode, 0);
    assert.equal(check.error, undefined);
    const outcome = fromStore(backupObject, check.info);
    assert.equal(outcome.state, 'Succeeded');
    if (outcome.state !== 'Succeeded') return;
    assert.equal(outcome.backup.label, '20261124T154132Z');
    assert.equal(outcome.backup.sizeBytes, 3004096);
    assert.equal(outcome.backup.repositorySizeBytes, 30000697);
    assert.deepEqual(outcome.backup.stoppedAt, new Date('2026-11-24T15:41:35Z'));
    assert.deepEqual(outcome.backup.binlog, { file: 'binlog.000002', position: 1234, gtid: '0-100-42' });
  });

  test("another backup's manifest is not this one's", () => {
    const outcome = fromStore(
      { ...backupObject, metadata: { ...backupObject.metadata, uid: 'uid-2' } },
      parseMariabackupCheck(SUCCEEDED).info,
    );
    assert.equal(outcome.state, 'Failed');
    assert.equal(outcome.state === 'Failed' && outcome.reason, 'NotInRepository');
  });

  test('a stream missing or of another size than its manifest says: incomplete, never Succeeded', () => {
    const truncated = parseStoreView(
      `objects-rc: 0\n${OBJECTS.replace('"Size":30000697', '"Size":1000')}\nmanifests-rc: 0\n${MANIFEST}\n`,
    );
    assert.equal(storeBackupByUid(truncated, 'uid-1'), 'incomplete');
    const gone = parseStoreView(`objects-rc: 0\n[]\nmanifests-rc: 0\n${MANIFEST}\n`);
    assert.equal(storeBackupByUid(gone, 'uid-1'), 'incomplete');
  });

  test('refused keys: the S3 code and HTTP status, no request ids', () => {
    const check = parseMariabackupCheck(REFUSED);
    assert.equal(check.exitCode, 1);
    assert.equal(
      check.error,
      'SignatureDoesNotMatch: The request signature we calculated does not match the signature you provided. Check your key and signing method. (status code: 403)',
    );
    assert.match(parseStoreView(check.info).error ?? '', /SignatureDoesNotMatch/);
  });

  test('a missing bucket says so', () => {
    assert.equal(parseMariabackupCheck(NO_BUCKET).error, 'the bucket does not exist (directory not found)');
  });

  test('an unreachable store: the connection error', () => {
    assert.match(parseMariabackupCheck(UNREACHABLE).error ?? '', /send request failed.*connection refused/);
  });

  test("mariabackup's own failure: its exit and its error line", () => {
    const error = parseMariabackupCheck(MARIABACKUP_FAILED).error ?? '';
    assert.match(error, /^mariabackup exited with 1/);
    assert.match(error, /Error: failed to connect/);
    assert.doesNotMatch(error, /Connecting to MariaDB/);
  });

  test('running: neither an exit code nor an error', () => {
    const check = parseMariabackupCheck('started: yes\ninfo:\nobjects-rc: 0\n[]\nmanifests-rc: 0\n');
    assert.equal(check.started, true);
    assert.equal(check.exitCode, undefined);
    assert.equal(check.error, undefined);
  });

  test('retention reads what the store still lists after an expiry; an unreadable store is an error, not "nothing left"', () => {
    assert.deepEqual([...listedLabels(parseMariabackupCheck(SUCCEEDED).info)], ['20261124T154132Z']);
    assert.deepEqual([...listedLabels('objects-rc: 0\n[]\nmanifests-rc: 0\n')], []);
    assert.throws(() => listedLabels(parseMariabackupCheck(REFUSED).info), /SignatureDoesNotMatch/);
  });

  test('the expiry refuses anything but a label the start script makes', () => {
    const out = execFileSync('bash', ['-c', MARIABACKUP_EXPIRE_SCRIPT, 'sh', '../other-database', '*'], {
      // No rclone on this PATH: the listing after fails, the refusals are what is checked.
      env: { PATH: '/usr/bin:/bin', REGULON_BACKUP_LOCATION: 'b/p' },
    }).toString();
    assert.match(out, /refusing to expire \.\.\/other-database: not a backup label/);
    assert.match(out, /refusing to expire \*: not a backup label/);
  });
});
