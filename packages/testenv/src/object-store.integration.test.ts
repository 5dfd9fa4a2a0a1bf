// The object store for real: versitygw over HTTPS, signed S3 requests in and
// S3's own error codes out, and nothing left running after stop().
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { once } from 'node:events';
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connect } from 'node:tls';
import { start, type TestEnv } from './index.ts';
import { S3Error, startObjectStore, type ObjectStore } from './object-store.ts';
import { SERVICES_DIR, stopRecordedService } from './process.ts';

/** Whether any process of the group led by `pid` is left (the server may fork helpers). */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('object store', () => {
  let store: ObjectStore;

  before(async () => {
    store = await startObjectStore();
  });

  after(async () => {
    await store.stop();
  });

  test('serves HTTPS with a certificate only its CA vouches for', async () => {
    assert.match(store.endpoint, /^https:\/\/127\.0\.0\.1:\d+$/);
    const socket = connect({ host: store.host, port: store.port, ca: store.caPem });
    await once(socket, 'secureConnect');
    const names = (socket.getPeerCertificate().subjectaltname ?? '').split(', ');
    socket.destroy();
    // The real node's Pods connect to 10.245.0.1; pgBackRest 2.45 matches DNS names only.
    for (const name of ['IP Address:127.0.0.1', 'IP Address:10.245.0.1', 'DNS:127.0.0.1', 'DNS:10.245.0.1'])
      assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);
    // Without the CA, a client must refuse the server, as it would a forged cloud endpoint.
    await assert.rejects(
      new Promise((resolve, reject) => httpsGet(`${store.endpoint}/`, resolve).on('error', reject)),
      (err: NodeJS.ErrnoException) => err.code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    );
  });

  test('creates a bucket, stores an object, lists it and returns it', async () => {
    await store.createBucket('backups');
    const body = Buffer.from('a base backup\n\u00e9\u0000\u00ff');
    await store.putObject('backups', 'pg/main/base.tar', body);
    await store.putObject('backups', 'pg/other/wal', 'wal');
    assert.deepEqual(await store.listObjects('backups', 'pg/main/'), [
      { key: 'pg/main/base.tar', size: body.length },
    ]);
    assert.deepEqual(
      (await store.listObjects('backups')).map((o) => o.key),
      ['pg/main/base.tar', 'pg/other/wal'],
    );
    assert.deepEqual(await store.getObject('backups', 'pg/main/base.tar'), body);
    // The POSIX backend: a bucket is a directory, an object a file.
    assert.ok(existsSync(join(store.dataDir, 'backups', 'pg', 'main', 'base.tar')));
  });

  test('lists every page of a long listing', async () => {
    await store.createBucket('many');
    const keys = Array.from({ length: 1005 }, (_, i) => `k/${String(i).padStart(4, '0')}`);
    for (let i = 0; i < keys.length; i += 50)
      await Promise.all(keys.slice(i, i + 50).map((k) => store.putObject('many', k, '')));
    assert.deepEqual(
      (await store.listObjects('many', 'k/')).map((o) => o.key),
      keys,
    );
  });

  test('refuses a wrong secret and an unknown access key with 403 and S3 error codes', async () => {
    const wrongSecret = await store.request({
      method: 'GET',
      credentials: { accessKeyId: store.accessKeyId, secretAccessKey: `${store.secretAccessKey}x` },
    });
    assert.equal(wrongSecret.status, 403);
    assert.equal(new S3Error('list buckets', wrongSecret).code, 'SignatureDoesNotMatch');

    const unknownKey = await store.request({
      method: 'PUT',
      bucket: 'intruder',
      credentials: { accessKeyId: 'AKIAUNKNOWN000000000', secretAccessKey: store.secretAccessKey },
    });
    assert.equal(unknownKey.status, 403);
    assert.equal(new S3Error('create bucket', unknownKey).code, 'InvalidAccessKeyId');
    assert.equal(existsSync(join(store.dataDir, 'intruder')), false, 'the refused request created nothing');

    const anonymous = await new Promise<number>((resolve, reject) =>
      httpsGet(`${store.endpoint}/backups`, { ca: store.caPem }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject),
    );
    assert.equal(anonymous, 403, 'no anonymous access');
  });

  test('a missing bucket is NoSuchBucket', async () => {
    await assert.rejects(
      store.listObjects('no-such-bucket'),
      (err: unknown) => err instanceof S3Error && err.status === 404 && err.code === 'NoSuchBucket',
    );
  });

  test('stop() leaves no process and no data', async () => {
    const other = await startObjectStore();
    assert.ok(groupAlive(other.pid));
    const dataDir = other.dataDir;
    await other.stop();
    assert.equal(groupAlive(other.pid), false, 'the server process group is gone');
    assert.equal(existsSync(dataDir), false, 'its data is deleted');
    await other.stop(); // idempotent
  });
});

describe('object store attached to an env', () => {
  let env: TestEnv;

  before(async () => {
    env = await start();
  });

  after(async () => {
    await env.stop();
  });

  test('is recorded under the control plane, which stops it from its record alone', async () => {
    const store = await startObjectStore({ env, reachableFromPods: false });
    try {
      const root = join(env.controlPlane.state.dir, SERVICES_DIR);
      const recorded = readdirSync(root).map((name) => join(root, name));
      const mine = recorded.find((dir) => store.dataDir.startsWith(`${dir}/`));
      assert.ok(mine, `recorded under ${root}`);
      // What ControlPlane.stop() runs for each recorded service, here for this
      // one only: other test files may share this control plane and its services.
      await stopRecordedService(mine);
      assert.equal(groupAlive(store.pid), false, 'the server process group is gone');
      assert.equal(existsSync(mine), false);
    } finally {
      await store.stop();
    }
  });
});
