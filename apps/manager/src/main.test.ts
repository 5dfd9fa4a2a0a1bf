import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';

const main = join(import.meta.dirname, 'main.ts');
const runMain = (...args: string[]) =>
  spawnSync(process.execPath, [main, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '' },
  });

test('--help documents every option, its environment variable and default, and exits 0', () => {
  const r = runMain('--help');
  assert.equal(r.status, 0);
  for (const flag of [
    '--metrics-bind-address',
    '--health-probe-bind-address',
    '--leader-elect',
    '--lease-duration',
    '--database-enabled',
    '--database-concurrency',
  ]) {
    assert.ok(r.stdout.includes(flag), `${flag} documented`);
  }
  assert.match(r.stdout, /REGULON_DATABASE_ENABLED/);
  assert.match(
    r.stdout,
    /Precedence, highest first: command-line flag > environment variable > config file > default/,
  );
});

test('bad configuration exits 2 with a clear message before anything starts', () => {
  const cases: Array<[string[], RegExp]> = [
    [['--database-concurrency=0'], /--database-concurrency: out of range \(allowed: integers from 1 to 64\)/],
    [['--leader-elect=maybe'], /--leader-elect/],
    [['--lease-duration=soon'], /--lease-duration/],
    [['--no-such-flag'], /unknown flag --no-such-flag/],
  ];
  for (const [args, message] of cases) {
    const r = runMain(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.equal(r.stdout, '', 'nothing started');
  }
});
