import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  bundleFormatOf,
  DEFAULT_BACKUP_TIMEOUT_MS,
  DEFAULT_RESTORE_TIMEOUT_MS,
  DEFAULT_SWITCHOVER_TIMEOUT_MS,
  parseCommandLine,
  parseTargetTime,
} from './args.ts';
import { parseDuration } from './duration.ts';
import { UsageError } from './errors.ts';

const usage = (argv: string[], message: RegExp) =>
  assert.throws(
    () => parseCommandLine(argv),
    (err: unknown) => err instanceof UsageError && message.test(err.message),
  );

describe('parseCommandLine', () => {
  test('no command, --help and `help COMMAND` are help', () => {
    assert.deepEqual(parseCommandLine([]).command, { name: 'help' });
    assert.deepEqual(parseCommandLine(['--help']).command, { name: 'help' });
    assert.deepEqual(parseCommandLine(['help', 'backup']).command, { name: 'help', topic: 'backup' });
    assert.deepEqual(parseCommandLine(['status', '-h']).command, { name: 'help', topic: 'status' });
  });

  test('global options go before or after the command, short or long, with = or a space', () => {
    for (const argv of [
      ['-n', 'prod', 'status', 'db', 'orders'],
      ['status', 'db', 'orders', '--namespace=prod'],
      ['--namespace', 'prod', 'status', 'db', 'orders'],
    ])
      assert.equal(parseCommandLine(argv).global.namespace, 'prod', argv.join(' '));
    const { global } = parseCommandLine(['--context', 'stage', '--kubeconfig', '/k', 'status', 'cache', 'c']);
    assert.deepEqual(global, { namespace: undefined, context: 'stage', kubeconfig: '/k' });
  });

  test('status takes a kind by any of its names, and -o text|json|yaml', () => {
    const c = parseCommandLine(['status', 'DB', 'orders', '-o', 'yaml']).command;
    assert.equal(c.name, 'status');
    assert.equal(c.kind.kind, 'Database');
    assert.equal(c.object, 'orders');
    assert.equal(c.output, 'yaml');
    for (const [word, kind] of [
      ['kc', 'Cache'],
      ['caches', 'Cache'],
      ['ma', 'MyApp'],
      ['myapp', 'MyApp'],
      ['databases', 'Database'],
    ]) {
      const parsed = parseCommandLine(['status', word!, 'x']).command;
      assert.equal(parsed.name === 'status' && parsed.kind.kind, kind);
    }
    const text = parseCommandLine(['status', 'db', 'x']).command;
    assert.equal(text.name === 'status' && text.output, 'text');
  });

  test('switchover: --to is optional; --wait with its default timeout, or --timeout', () => {
    assert.deepEqual(parseCommandLine(['switchover', 'orders']).command, {
      name: 'switchover',
      database: 'orders',
      to: undefined,
      wait: false,
      timeoutMs: DEFAULT_SWITCHOVER_TIMEOUT_MS,
    });
    assert.deepEqual(
      parseCommandLine(['switchover', 'orders', '--to', 'orders-2', '--wait', '--timeout=90s']).command,
      {
        name: 'switchover',
        database: 'orders',
        to: 'orders-2',
        wait: true,
        timeoutMs: 90_000,
      },
    );
  });

  test('promote needs the Database and the Pod', () => {
    assert.deepEqual(parseCommandLine(['promote', 'orders', 'orders-1']).command, {
      name: 'promote',
      database: 'orders',
      pod: 'orders-1',
      wait: false,
      timeoutMs: DEFAULT_SWITCHOVER_TIMEOUT_MS,
    });
    usage(['promote', 'orders'], /promote: missing POD/);
  });

  test('backup: --name, and a longer default timeout', () => {
    assert.deepEqual(parseCommandLine(['backup', 'orders', '--name', 'before-upgrade', '--wait']).command, {
      name: 'backup',
      database: 'orders',
      backupName: 'before-upgrade',
      wait: true,
      timeoutMs: DEFAULT_BACKUP_TIMEOUT_MS,
    });
  });

  test('logs: --tail is a number of lines, --since a duration', () => {
    const c = parseCommandLine(['logs', 'cache', 'sessions', '--tail', '20', '--since', '1h30m']).command;
    assert.ok(c.name === 'logs');
    assert.equal(c.kind.kind, 'Cache');
    assert.equal(c.tail, 20);
    assert.equal(c.sinceMs, 5_400_000);
    usage(['logs', 'cache', 'sessions', '--tail', 'ten'], /--tail: "ten" is not a whole number/);
  });

  test('restore: DATABASE NEW_NAME, --backup or --time (not both), --dry-run, -o', () => {
    assert.deepEqual(parseCommandLine(['restore', 'orders', 'orders-copy']).command, {
      name: 'restore',
      database: 'orders',
      newName: 'orders-copy',
      backup: undefined,
      targetTime: undefined,
      dryRun: false,
      output: undefined,
      wait: false,
      timeoutMs: DEFAULT_RESTORE_TIMEOUT_MS,
    });
    const pit = parseCommandLine([
      'restore',
      'orders',
      'o2',
      '--time',
      '2026-11-24T12:00:00+01:00',
      '--wait',
    ]);
    assert.ok(pit.command.name === 'restore');
    assert.equal(pit.command.targetTime, '2026-11-24T12:00:00+01:00');
    assert.equal(pit.command.wait, true);
    const dry = parseCommandLine(['restore', 'orders', 'o2', '--backup=nightly', '--dry-run', '-o', 'json']);
    assert.ok(dry.command.name === 'restore');
    assert.deepEqual([dry.command.backup, dry.command.dryRun, dry.command.output], ['nightly', true, 'json']);
    usage(['restore', 'orders'], /restore: missing NEW_NAME/);
    usage(['restore', 'a', 'b', '--backup', 'x', '--time', '2026-11-24T12:00:00Z'], /two kinds of restore/);
    usage(['restore', 'a', 'b', '--time', 'yesterday'], /--time: "yesterday" is not an RFC 3339 time/);
    usage(['restore', 'a', 'b', '-o', 'text'], /"text" is not one of json, yaml/);
    usage(['restore', 'a', 'b', '--dry-run', '--wait'], /nothing to wait for/);
  });

  test('parseTargetTime: RFC 3339 with a zone, a real date', () => {
    assert.equal(parseTargetTime('2026-11-24T12:00:00Z'), '2026-11-24T12:00:00Z');
    assert.equal(parseTargetTime('2026-11-24 12:00:00.5z'), '2026-11-24T12:00:00.5Z');
    for (const bad of ['2026-11-24', '2026-11-24T12:00:00', '2026-13-40T12:00:00Z', '12:00'])
      assert.throws(() => parseTargetTime(bad), UsageError, bad);
  });

  test('psql, mysql, redis-cli: the object, --replica or --instance, and what follows -- untouched', () => {
    assert.deepEqual(parseCommandLine(['psql', 'orders', '-n', 'shop', '--', '-c', 'select 1', '-n', 'x']), {
      global: { namespace: 'shop', context: undefined, kubeconfig: undefined },
      command: {
        name: 'client',
        client: 'psql',
        object: 'orders',
        replica: false,
        instance: undefined,
        args: ['-c', 'select 1', '-n', 'x'],
      },
    });
    const replica = parseCommandLine(['mysql', 'orders', '--replica']).command;
    assert.ok(replica.name === 'client');
    assert.deepEqual([replica.client, replica.replica, replica.args], ['mysql', true, []]);
    const cache = parseCommandLine([
      'redis-cli',
      'sessions',
      '--instance',
      'sessions-2',
      '--',
      'ping',
    ]).command;
    assert.ok(cache.name === 'client');
    assert.deepEqual([cache.client, cache.instance, cache.args], ['redis-cli', 'sessions-2', ['ping']]);
    usage(['redis-cli'], /redis-cli: missing CACHE/);
    usage(['psql', 'orders', '--replica', '--instance', 'orders-1'], /two ways/);
    usage(['logs', 'db', 'orders', '--', '-f'], /after "--" go only to psql, mysql or redis-cli/);
  });

  test('report: KIND NAME, -f FILE whose ending picks the format', () => {
    const c = parseCommandLine(['report', 'db', 'orders', '-f', '/tmp/r.zip']).command;
    assert.ok(c.name === 'report');
    assert.deepEqual([c.kind.kind, c.object, c.file, c.format], ['Database', 'orders', '/tmp/r.zip', 'zip']);
    assert.equal(bundleFormatOf(undefined), 'tar.gz');
    assert.equal(bundleFormatOf('x.tgz'), 'tar.gz');
    assert.equal(bundleFormatOf('x.tar.gz'), 'tar.gz');
    usage(['report', 'db', 'orders', '--file', 'x.rar'], /ends in neither \.tar\.gz \(or \.tgz\) nor \.zip/);
  });

  test('usage errors name what is wrong', () => {
    usage(['frobnicate'], /unknown command "frobnicate"/);
    usage(['status', 'pod', 'x'], /unknown kind "pod"/);
    usage(['status', 'db'], /status: missing NAME/);
    usage(['status', 'db', 'a', 'b'], /unexpected argument "b"/);
    usage(['status', 'db', 'a', '--to', 'x'], /Unknown option '--to'/);
    usage(['status', 'db', 'a', '-o', 'wide'], /"wide" is not one of text, json, yaml/);
    usage(['switchover', 'orders', '--timeout', '1m'], /--timeout goes with --wait/);
    usage(['backup', 'orders', '--wait', '--timeout', 'soon'], /not a duration/);
  });
});

describe('parseDuration', () => {
  test('takes Go units in any combination', () => {
    assert.equal(parseDuration('--x', '250ms'), 250);
    assert.equal(parseDuration('--x', '45s'), 45_000);
    assert.equal(parseDuration('--x', '2h5m10s'), 7_510_000);
  });
  test('refuses a bare number, garbage around a unit, and zero', () => {
    for (const bad of ['5', '5m ', 'x5m', '5mx', '', '0s', '-5m', '1.5h'])
      assert.throws(() => parseDuration('--x', bad), UsageError, bad);
  });
});
