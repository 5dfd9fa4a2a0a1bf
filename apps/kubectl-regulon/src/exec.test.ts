import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { UserError } from './errors.ts';
import { containerCommand, kubectlExecArgs, pickInstance } from './exec.ts';
import { replicatedDatabase } from './testing/fixtures.ts';

const pod = (name: string, role?: string): V1Pod => ({
  metadata: { name, ...(role ? { labels: { 'regulon.dev/role': role } } : {}) },
});
const pods = ['orders-0', 'orders-1', 'orders-2'].map((n) => pod(n));

describe('pickInstance', () => {
  test('the primary the status names; --replica the replica serving reads with the least lag; --instance', () => {
    const db = replicatedDatabase();
    assert.equal(pickInstance(db, pods, { replica: false }), 'orders-1');
    // orders-2 is a standby (Lagging): not serving reads, never picked for --replica.
    assert.equal(pickInstance(db, pods, { replica: true }), 'orders-0');
    assert.equal(pickInstance(db, pods, { replica: false, instance: 'orders-2' }), 'orders-2');
    assert.throws(
      () => pickInstance(db, pods, { replica: false, instance: 'orders-7' }),
      (e: unknown) =>
        e instanceof UserError &&
        /orders-7 is not an instance of orders \(orders-0, orders-1, orders-2\)/.test(e.message),
    );
  });

  test('without a primary in the status: the role label, else the only Pod; refused when several replicate', () => {
    const db = replicatedDatabase();
    delete db.status!.currentPrimary;
    assert.equal(
      pickInstance(db, [pod('orders-0'), pod('orders-1', 'primary')], { replica: false }),
      'orders-1',
    );
    assert.throws(() => pickInstance(db, pods, { replica: false }), /no serving primary now/);
    const single = replicatedDatabase();
    single.status = {};
    assert.equal(pickInstance(single, [pod('orders-0')], { replica: false }), 'orders-0');
    assert.throws(() => pickInstance(single, [], { replica: false }), /has no instance Pods/);
    assert.throws(
      () => pickInstance(single, [pod('orders-0')], { replica: true }),
      /has no replica serving reads/,
    );
  });
});

describe('kubectlExecArgs', () => {
  test('-i always, -t only for a terminal; the plugin connection flags; the command after --', () => {
    assert.deepEqual(
      kubectlExecArgs({
        global: { context: 'prod', kubeconfig: '/k' },
        namespace: 'shop',
        pod: 'orders-1',
        container: 'postgres',
        tty: true,
        command: ['psql'],
      }),
      [
        'exec',
        '-it',
        'orders-1',
        '-n',
        'shop',
        '--context',
        'prod',
        '--kubeconfig',
        '/k',
        '-c',
        'postgres',
        '--',
        'psql',
      ],
    );
    assert.deepEqual(
      kubectlExecArgs({
        global: {},
        namespace: 'shop',
        pod: 'p',
        container: 'redis',
        tty: false,
        command: ['x'],
      }),
      ['exec', '-i', 'p', '-n', 'shop', '-c', 'redis', '--', 'x'],
    );
  });
});

describe('containerCommand', () => {
  // Runs each engine's command in a local sh with the container's variables, the client
  // replaced by a script that prints its arguments and environment: the password reaches the
  // client's environment, never an argument, and the user's arguments arrive as given.
  const run = (engine: string, client: string, env: Record<string, string>, args: string[]) => {
    const bin = mkdtempSync(join(tmpdir(), 'kubectl-regulon-exec-'));
    try {
      writeFileSync(
        join(bin, client),
        '#!/bin/sh\nfor a in "$@"; do printf "arg=%s\\n" "$a"; done\nprintf "PGPASSWORD=%s\\nMYSQL_PWD=%s\\n" "$PGPASSWORD" "$MYSQL_PWD"\n',
      );
      chmodSync(join(bin, client), 0o755);
      const [command, ...rest] = containerCommand(engine, args);
      return execFileSync(command!, rest, {
        env: { PATH: `${bin}:/usr/bin:/bin`, ...env },
        encoding: 'utf8',
      });
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  };

  test('postgres: psql as SUPERUSER on the Database, the password in PGPASSWORD only', () => {
    const secret = 's3cr$t "x"';
    const out = run(
      'postgres',
      'psql',
      { SUPERUSER: 'postgres', SUPERUSER_PASSWORD: secret, DATABASE: 'app' },
      ['-c', 'select 1'],
    );
    assert.equal(
      out,
      ['-h', '127.0.0.1', '-p', '5432', '-U', 'postgres', '-d', 'app', '-c', 'select 1']
        .map((a) => `arg=${a}\n`)
        .join('') + `PGPASSWORD=${secret}\nMYSQL_PWD=\n`,
    );
    assert.ok(!containerCommand('postgres', []).some((a) => a.includes(secret)));
  });

  test('mariadb: -D only when the Secret names a database; the password in MYSQL_PWD', () => {
    const out = run('mariadb', 'mariadb', { SUPERUSER: 'root', SUPERUSER_PASSWORD: 'pw' }, [
      '-e',
      'select 1',
    ]);
    assert.match(out, /arg=-u\narg=root\narg=-e\narg=select 1\nPGPASSWORD=\nMYSQL_PWD=pw\n$/);
    const withDb = run(
      'mariadb',
      'mariadb',
      { SUPERUSER: 'root', SUPERUSER_PASSWORD: 'pw', DATABASE: 'my app' },
      [],
    );
    assert.match(withDb, /arg=-D\narg=my app\n/);
  });

  test('mysql: root with MYSQL_ROOT_PASSWORD; redis: redis-cli, which reads REDISCLI_AUTH itself', () => {
    assert.match(
      run('mysql', 'mysql', { MYSQL_ROOT_PASSWORD: 'pw' }, []),
      /arg=root\nPGPASSWORD=\nMYSQL_PWD=pw\n$/,
    );
    assert.deepEqual(containerCommand('redis', ['info', 'replication']), [
      'redis-cli',
      '--no-auth-warning',
      '-h',
      '127.0.0.1',
      '-p',
      '6379',
      'info',
      'replication',
    ]);
  });
});
