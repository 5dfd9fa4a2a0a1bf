import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const main = join(import.meta.dirname, 'main.ts');
const runMain = (...args: string[]) =>
  spawnSync(process.execPath, [main, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '' },
    // A manager that fails to stop would otherwise hang the test run.
    timeout: 30_000,
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

test('a missing or malformed image catalog: one line naming the file and the flag, exit 2', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'regulon-catalog-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bad = join(dir, 'catalog.yaml');
  writeFileSync(bad, 'postgres:\n  - { version: "16.8", image: "shöp :1" }\n');
  const cases: Array<[string, RegExp]> = [
    [join(dir, 'missing.yaml'), /^image catalog .*missing\.yaml: ENOENT.* \(--image-catalog\)\n$/],
    [bad, /^.*catalog\.yaml: postgres 16\.8: "shöp :1" is not an image reference \(--image-catalog\)\n$/],
  ];
  for (const [file, message] of cases) {
    const r = runMain(`--image-catalog=${file}`);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, message);
    assert.equal(r.stdout, '', 'nothing started');
  }
});

test('a busy metrics or health port: one line naming the address and the flag, exit 2', async (t) => {
  // The servers listen before anything talks to the API server, so a kubeconfig that points nowhere will do.
  const dir = mkdtempSync(join(tmpdir(), 'regulon-manager-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1' } }],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'c',
    }),
  );
  const occupier = createServer();
  await new Promise<void>((resolve) => occupier.listen(0, '127.0.0.1', resolve));
  t.after(() => occupier.close());
  const busy = `127.0.0.1:${(occupier.address() as AddressInfo).port}`;

  const cases: Array<[string[], string]> = [
    [
      ['--metrics-bind-address', busy, '--health-probe-bind-address', '127.0.0.1:0'],
      `metrics address ${busy} is in use: choose another with --metrics-bind-address\n`,
    ],
    // The metrics server is listening by then: the process must still exit.
    [
      ['--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', busy],
      `health probe address ${busy} is in use: choose another with --health-probe-bind-address\n`,
    ],
  ];
  for (const [args, line] of cases) {
    const r = runMain('--kubeconfig', kubeconfig, ...args);
    assert.equal(r.status, 2, `${args.join(' ')}: status ${r.status} signal ${r.signal}\n${r.stderr}`);
    assert.equal(r.stderr, line);
  }
});
