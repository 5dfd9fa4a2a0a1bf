// pgBackRest as the operator renders and reads it: the container's settings
// (keys only ever by secretKeyRef), and what `pgbackrest info` and a failed
// command print (testdata/: real pgBackRest 2.45 output against versitygw).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { eventually } from '@regulon/testenv';
import type { DatabaseObject } from '../api.ts';
import { desiredConfigMap, desiredStatefulSet } from '../children.ts';
import { renderConfig } from '../config.ts';
import { childNames } from '../names.ts';
import {
  BACKUP_STATE_DIR,
  backupByUid,
  CHECK_BACKUP_SCRIPT,
  endpointParts,
  EXPIRE_SCRIPT,
  parseCheck,
  parseInfo,
  pgbackrestEnv,
  pgbackrestTime,
  recoverySecretData,
  REDACT_SED,
  renderArchiveWalScript,
  repositoryOf,
  sameRepository,
  START_BACKUP_SCRIPT,
  summarizeError,
} from './pgbackrest.ts';

const fixture = (name: string) => readFileSync(join(import.meta.dirname, 'testdata', name), 'utf8');

const store = {
  endpoint: 'https://10.245.0.1:9000',
  bucket: 'backups',
  credentials: { secretName: 'store-keys' },
  caSecret: { name: 'store-ca' },
};

function postgres(backup?: Record<string, unknown>): DatabaseObject {
  return {
    apiVersion: 'regulon.dev/v1beta1',
    kind: 'Database',
    metadata: { name: 'orders', namespace: 'shop', uid: 'u1', generation: 1 },
    spec: {
      engine: 'postgres',
      version: '15.10',
      replicas: 1,
      storage: { size: '1Gi' },
      ...(backup ? { backup: { enabled: true, schedule: '0 3 * * *', historyLimit: 3, ...backup } } : {}),
    },
  };
}

describe('the container settings', () => {
  test('an object store: every repo1 option from the environment, path-style, the keys by secretKeyRef, the CA mounted', () => {
    const env = pgbackrestEnv(postgres({ objectStore: store }), '/var/lib/postgresql/data/pgdata');
    const byName = new Map(env.map((e) => [e.name, e]));
    assert.equal(byName.get('PGBACKREST_REPO1_TYPE')?.value, 's3');
    assert.equal(byName.get('PGBACKREST_REPO1_PATH')?.value, '/shop/orders', 'default path: namespace/name');
    assert.equal(byName.get('PGBACKREST_REPO1_S3_ENDPOINT')?.value, '10.245.0.1');
    assert.equal(byName.get('PGBACKREST_REPO1_STORAGE_PORT')?.value, '9000');
    assert.equal(byName.get('PGBACKREST_REPO1_S3_URI_STYLE')?.value, 'path');
    assert.equal(byName.get('PGBACKREST_REPO1_S3_REGION')?.value, 'us-east-1');
    assert.equal(byName.get('PGBACKREST_REPO1_STORAGE_CA_FILE')?.value, '/etc/regulon/backup-ca/ca.crt');
    assert.deepEqual(byName.get('PGBACKREST_REPO1_S3_KEY')?.valueFrom, {
      secretKeyRef: { name: 'store-keys', key: 'ACCESS_KEY_ID' },
    });
    assert.deepEqual(byName.get('PGBACKREST_REPO1_S3_KEY_SECRET')?.valueFrom, {
      secretKeyRef: { name: 'store-keys', key: 'ACCESS_SECRET_KEY' },
    });
    assert.equal(byName.get('PGBACKREST_PG1_USER')?.value, '$(SUPERUSER)');
  });

  test("storeTimeoutSeconds is pgBackRest's io-timeout; left out, no setting at all (the Pods stay as they were)", () => {
    const pgdata = '/var/lib/postgresql/data/pgdata';
    const timeout = (db: DatabaseObject) =>
      pgbackrestEnv(db, pgdata).filter((e) => e.name === 'PGBACKREST_IO_TIMEOUT');
    assert.deepEqual(timeout(postgres({ objectStore: store, storeTimeoutSeconds: 10 })), [
      { name: 'PGBACKREST_IO_TIMEOUT', value: '10' },
    ]);
    assert.deepEqual(timeout(postgres({ objectStore: store })), []);
  });

  test('the StatefulSet: pg1-user refers to SUPERUSER defined before it, the CA is a Secret volume', () => {
    const db = postgres({ objectStore: store });
    const sts = desiredStatefulSet(db, childNames(db).credentials, 'regulon.local/postgres:15');
    const pod = sts.spec!.template.spec!;
    const names = pod.containers[0]!.env!.map((e) => e.name);
    assert.ok(names.indexOf('SUPERUSER') < names.indexOf('PGBACKREST_PG1_USER'));
    assert.deepEqual(
      pod.volumes!.find((v) => v.name === 'backup-ca'),
      { name: 'backup-ca', secret: { secretName: 'store-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
    );
    assert.ok(pod.containers[0]!.volumeMounts!.some((m) => m.mountPath === '/etc/regulon/backup-ca'));
  });

  test('archiving: on with an object store, through pgBackRest; off without, and no CronJob dump beside it', () => {
    assert.match(renderConfig(postgres({ objectStore: store })).content, /^archive_mode = on$/m);
    assert.match(
      renderConfig(postgres({ objectStore: store })).content,
      /^archive_command = 'bash \/etc\/postgresql\/pgbackrest-archive-push.sh %p'$/m,
    );
    assert.doesNotMatch(renderConfig(postgres()).content, /archive/);
    assert.doesNotMatch(renderConfig(postgres({})).content, /archive/);
  });

  test('a Database that neither archives nor restores gets no pgBackRest environment, volume or file', () => {
    const db = postgres();
    const pod = desiredStatefulSet(db, childNames(db).credentials, 'regulon.local/postgres:15').spec!.template
      .spec!;
    assert.deepEqual(
      pod.containers[0]!.env!.filter((e) => e.name.startsWith('PGBACKREST_')),
      [],
    );
    assert.deepEqual(
      pod.volumes!.map((v) => v.name),
      ['config', 'topology'],
    );
    assert.deepEqual(Object.keys(desiredConfigMap(db).data!).sort(), [
      'pg_hba.conf',
      'postgresql.conf',
      'start.sh',
    ]);
  });

  test('no key ever reaches the ConfigMap', () => {
    const cm = JSON.stringify(desiredConfigMap(postgres({ objectStore: store })));
    assert.doesNotMatch(cm, /store-keys|ACCESS_KEY_ID|ACCESS_SECRET_KEY/);
  });

  test('a repository is its endpoint, bucket and path; the path defaults to namespace/name', () => {
    const a = repositoryOf({ ...store, path: 'shop/orders' }, 'x/y');
    const b = repositoryOf({ ...store, endpoint: 'https://10.245.0.1:9000/' }, 'shop/orders');
    assert.ok(sameRepository(a, b));
    assert.ok(!sameRepository(a, repositoryOf({ ...store, path: 'shop/orders-restored' }, 'x/y')));
    assert.deepEqual(endpointParts('https://s3.example.com'), { host: 's3.example.com', port: undefined });
  });

  test('the recovery Secret: the source settings by option name, its keys, the CA and the target', () => {
    const repo = repositoryOf({ ...store, path: 'shop/orders' }, 'unused');
    const data = recoverySecretData(
      repo,
      { accessKeyId: 'AKID', secretAccessKey: 'SECRET', ca: 'PEM' },
      { type: 'immediate', set: '20261124-115403F' },
    );
    assert.equal(data['REPO1_PATH'], '/shop/orders');
    assert.equal(data['REPO1_S3_KEY'], 'AKID');
    assert.equal(data['REPO1_S3_KEY_SECRET'], 'SECRET');
    assert.equal(data['REPO1_STORAGE_CA_FILE'], '/etc/regulon/recovery/ca.crt');
    assert.equal(data['ca.crt'], 'PEM');
    assert.equal(data['TYPE'], 'immediate');
    assert.equal(data['SET'], '20261124-115403F');
    const pitr = recoverySecretData(
      repositoryOf(
        { endpoint: store.endpoint, bucket: store.bucket, credentials: store.credentials, path: 'p' },
        'unused',
      ),
      { accessKeyId: 'A', secretAccessKey: 'S' },
      { type: 'time', target: '2026-11-24T12:00:00Z' },
    );
    assert.equal(pitr['TARGET'], '2026-11-24 12:00:00+00', "pgBackRest's form: it refuses RFC 3339's T");
    assert.equal(pitr['REPO1_STORAGE_CA_FILE'], undefined);
  });

  test('a target time in the form pgBackRest takes, fraction and offset kept', () => {
    assert.equal(pgbackrestTime('2026-11-24T12:23:46.386051Z'), '2026-11-24 12:23:46.386051+00');
    assert.equal(pgbackrestTime('2026-11-24t12:23:46+02:00'), '2026-11-24 12:23:46+02:00');
    assert.throws(() => pgbackrestTime('yesterday'), /not an RFC 3339 time/);
  });

  test('the scripts run by exec are valid sh', () => {
    for (const script of [START_BACKUP_SCRIPT, CHECK_BACKUP_SCRIPT, EXPIRE_SCRIPT])
      execFileSync('sh', ['-n'], { input: script });
    execFileSync('bash', ['-n'], { input: renderArchiveWalScript() });
  });

  test("pgBackRest's output loses the key id an S3 error body names, and nothing else", () => {
    const raw = fixture('backup-403.out');
    const redacted = execFileSync('sed', ['-e', REDACT_SED], { input: raw }).toString();
    assert.match(raw, /WRONGKEYID123/);
    assert.doesNotMatch(redacted, /WRONGKEYID123/);
    assert.match(redacted, /<AWSAccessKeyId>\(redacted\)<\/AWSAccessKeyId>/);
    assert.equal(redacted.split('\n').length, raw.split('\n').length);
    assert.match(redacted, /<Code>InvalidAccessKeyId<\/Code>/);
  });
});

describe('a backup in the background', () => {
  test('the check tells a running backup from one whose process is gone, and from one that finished', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'regulon-backup-'));
    const state = join(dir, 'state');
    const here = (script: string) => script.replaceAll(BACKUP_STATE_DIR, state);
    // A stand-in pgbackrest: backups wait for a file to appear, then succeed; info lists nothing.
    writeFileSync(
      join(dir, 'pgbackrest'),
      `#!/bin/sh\ncase "$1" in\n  backup) while [ ! -e "${dir}/finish" ]; do sleep 0.1; done ;;\n  info) echo '[]' ;;\nesac\n`,
    );
    chmodSync(join(dir, 'pgbackrest'), 0o755);
    const env = { ...process.env, PATH: `${dir}:${process.env['PATH']}` };
    const sh = (script: string, uid: string) =>
      execFileSync('sh', ['-c', here(script), 'sh', uid, 'shop/nightly'], { env }).toString();
    try {
      assert.equal(sh(START_BACKUP_SCRIPT, 'u1').trim(), 'started');
      assert.equal(sh(START_BACKUP_SCRIPT, 'u1').trim(), 'already-started');
      const running = parseCheck(sh(CHECK_BACKUP_SCRIPT, 'u1'));
      assert.deepEqual([running.started, running.gone, running.exitCode], [true, false, undefined]);
      assert.equal(running.info, '', 'the repository is not asked while the backup runs');

      // A process that is not the one started (as after a container restart): gone.
      writeFileSync(join(state, 'u1.since'), '1\n');
      assert.equal(parseCheck(sh(CHECK_BACKUP_SCRIPT, 'u1')).gone, true);

      writeFileSync(join(dir, 'finish'), '');
      const finished = await eventually(
        'the backup finished',
        () => {
          const c = parseCheck(sh(CHECK_BACKUP_SCRIPT, 'u1'));
          return c.exitCode !== undefined && c;
        },
        10_000,
      );
      assert.deepEqual([finished.exitCode, finished.gone], [0, false], 'finished is never gone');
      assert.equal(finished.info, '[]', 'finished: what the repository lists');
    } finally {
      writeFileSync(join(dir, 'finish'), '');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('retention in the repository', () => {
  test('EXPIRE_SCRIPT expires each set oldest first, then the WAL older than every full backup left, then lists the repository', () => {
    // A stand-in pgbackrest on PATH that records its arguments and lists two full backups left.
    const dir = mkdtempSync(join(tmpdir(), 'regulon-expire-'));
    try {
      const info = JSON.stringify(JSON.parse(fixture('info-ok.json'))).replace(
        /"backup":\[(\{.*?"type":"full"\})\]/,
        '"backup":[$1,$1]',
      );
      writeFileSync(join(dir, 'info.json'), info);
      writeFileSync(
        join(dir, 'pgbackrest'),
        `#!/bin/sh\necho "$*" >>"${dir}/calls"\ncase "$*" in\n  *--set=20261124-120000F*) echo 'ERROR: [075]: lock held' ;;\n  info*) cat "${dir}/info.json" ;;\nesac\n`,
      );
      chmodSync(join(dir, 'pgbackrest'), 0o755);
      const out = execFileSync('sh', ['-c', EXPIRE_SCRIPT, 'sh', '20261124-115000F', '20261124-120000F'], {
        env: { ...process.env, PATH: `${dir}:${process.env['PATH']}` },
      }).toString();
      assert.deepEqual(readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n'), [
        'expire --set=20261124-115000F',
        'expire --set=20261124-120000F',
        'info --output=json',
        'expire --repo1-retention-archive=2',
        'info --output=json',
      ]);
      const [errors = '', json = ''] = out.split(/^info:$/m);
      assert.match(errors, /ERROR: \[075\]: lock held/, "pgBackRest's refusal is kept for the Event");
      assert.equal(parseInfo(json).backups.length, 2);
      assert.deepEqual(parseInfo(json).archive, {
        min: '000000010000000000000001',
        max: '000000010000000000000003',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('what pgBackRest says', () => {
  test('info: the backup the annotation names, with its label, times, sizes and WAL range', () => {
    const info = parseInfo(fixture('info-ok.json'));
    assert.equal(info.code, 0);
    const b = backupByUid(info, 'abc');
    assert.ok(b);
    assert.equal(b.label, '20261124-115403F');
    assert.equal(b.type, 'full');
    assert.equal(b.error, false);
    assert.equal(b.startedAt?.toISOString(), '2026-11-24T11:54:03.000Z');
    assert.equal(b.stoppedAt?.toISOString(), '2026-11-24T11:54:09.000Z');
    assert.equal(b.sizeBytes, 23221961);
    assert.equal(b.repositorySizeBytes, 3063147);
    assert.deepEqual(b.wal, {
      startSegment: '000000010000000000000002',
      stopSegment: '000000010000000000000002',
      startLsn: '0/2000028',
      stopLsn: '0/2000100',
    });
    assert.equal(backupByUid(info, 'another'), undefined);
  });

  test('info with a wrong key: the repository status, summarised without the key id the store echoes', () => {
    const raw = fixture('info-403.json');
    assert.match(raw, /WRONGKEYID123/, 'the raw answer names the key id');
    const info = parseInfo(raw);
    assert.equal(info.code, 99);
    assert.equal(info.backups.length, 0);
    assert.equal(
      info.message,
      'the store answered HTTP 403 (Forbidden); InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records.',
    );
  });

  test('a failed command: its error and the store answer, never headers or the key id', () => {
    const summary = summarizeError(fixture('backup-403.out'));
    assert.match(
      summary,
      /^unable to load info file .*; the store answered HTTP 403 \(Forbidden\); InvalidAccessKeyId: /,
    );
    // A HEAD request's refusal has no body: the status says what it usually means.
    assert.equal(
      summarizeError(fixture('stanza-403.out')),
      'HTTP request failed with 403 (Forbidden); the store refused the access keys (wrong keys, or no permission on the bucket)',
    );
    assert.doesNotMatch(summary, /WRONGKEYID123|authorization|x-amz/i);
    assert.equal(
      summarizeError(fixture('refused.out')),
      "unable to connect to '127.0.0.1:1': [111] Connection refused",
    );
  });

  test('the check script output: running, failed with its error, or finished with the info JSON', () => {
    assert.deepEqual(parseCheck('started: yes\ninfo:\n[]'), {
      started: true,
      gone: false,
      exitCode: undefined,
      error: undefined,
      info: '[]',
    });
    const failed = parseCheck(`started: yes\nrc: 49\n${fixture('refused.out')}info:\n[]`);
    assert.equal(failed.exitCode, 49);
    assert.equal(failed.error, "unable to connect to '127.0.0.1:1': [111] Connection refused");
    const done = parseCheck(`started: yes\nrc: 0\ninfo:\n${fixture('info-ok.json')}`);
    assert.equal(done.exitCode, 0);
    assert.equal(backupByUid(parseInfo(done.info), 'abc')?.label, '20261124-115403F');
    assert.equal(parseCheck('started: no\ninfo:\n[]').started, false);
    assert.equal(parseCheck('started: yes\ngone: yes\ninfo:\n[]').gone, true);
  });

  test('text that is no info JSON is an error, with what pgBackRest said', () => {
    assert.throws(() => parseInfo(fixture('refused.out')), /Connection refused/);
  });
});
