// `npm run release -- --dry-run` as a maintainer runs it, but against a
// registry of this test's own (a stub on localhost: nothing reaches npmjs.org)
// and with no token anywhere: it packs every publishable package with
// `npm run pack`'s code, asks the registry which are there already, and runs
// npm publish --dry-run for the others; nothing is written in the repository
// and nothing is sent to the registry. About 40 s, most of it packing.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { cleanEnv } from './outside.ts';
import { PUBLISHABLE } from './pack.ts';

const execFileAsync = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const version = (
  JSON.parse(readFileSync(join(root, 'packages', 'queue', 'package.json'), 'utf8')) as { version: string }
).version;
const names = PUBLISHABLE.map(
  (d) =>
    (JSON.parse(readFileSync(join(root, 'packages', d, 'package.json'), 'utf8')) as { name: string }).name,
);

// The registry: @regulon/queue is published at this version already (a rerun
// after a release failed half-way); every other package is unknown (404).
const requests: string[] = [];
let registry: Server;
let home: string;

before(async () => {
  registry = createServer((req, res) => {
    requests.push(`${req.method} ${decodeURIComponent(req.url ?? '')}`);
    if (req.method === 'GET' && decodeURIComponent(req.url ?? '') === '/@regulon/queue') {
      res.setHeader('content-type', 'application/json');
      const manifest = { name: '@regulon/queue', version, dist: { tarball: 'http://x/q.tgz', shasum: '0' } };
      res.end(
        JSON.stringify({
          name: '@regulon/queue',
          'dist-tags': { latest: version },
          versions: { [version]: manifest },
        }),
      );
      return;
    }
    res.statusCode = req.method === 'GET' ? 404 : 500;
    res.end(JSON.stringify({ error: 'not found' }));
  });
  registry.listen(0, '127.0.0.1');
  await once(registry, 'listening');
  home = mkdtempSync(join(tmpdir(), 'regulon-release-home-'));
  writeFileSync(join(home, '.npmrc'), ''); // no token, whatever the machine's ~/.npmrc holds
});

after(() => {
  registry.close();
  rmSync(home, { recursive: true, force: true });
});

test('the dry run packs every package, skips what the registry has, runs npm publish --dry-run for the rest, with no token, writing nothing', async () => {
  const gitStatus = async () => (await execFileAsync('git', ['status', '--porcelain'], { cwd: root })).stdout;
  const before = await gitStatus();
  const env = cleanEnv({
    HOME: home,
    npm_config_userconfig: join(home, '.npmrc'),
    npm_config_registry: `http://127.0.0.1:${(registry.address() as AddressInfo).port}/`,
  });
  for (const k of ['NPM_TOKEN', 'NODE_AUTH_TOKEN', 'ACTIONS_ID_TOKEN_REQUEST_URL', 'SIGSTORE_ID_TOKEN'])
    delete env[k];

  const { stdout } = await execFileAsync(
    process.execPath,
    [join(root, 'tools', 'scripts', 'release.ts'), '--dry-run'],
    {
      cwd: root,
      env,
      maxBuffer: 16 << 20,
    },
  );
  console.log(stdout);
  assert.match(stdout, new RegExp(`^version: ${version} → ${version} \\(0 pending changesets\\)$`, 'm'));
  for (const name of names) {
    if (name === '@regulon/queue') {
      assert.match(stdout, new RegExp(`^@regulon/queue@${version}: already on the registry, skipped$`, 'm'));
      assert.doesNotMatch(stdout, /\+ @regulon\/queue@/);
      continue;
    }
    const tarball = `${name.slice(1).replace('/', '-')}-${version}.tgz`;
    assert.ok(
      stdout.includes(
        `would publish ${name}@${version}: npm publish <packed>/${tarball} --access public --tag latest --dry-run\n`,
      ),
      name,
    );
    assert.ok(stdout.includes(`  + ${name}@${version}\n`), `npm publish --dry-run of ${name}`);
  }
  assert.doesNotMatch(stdout, /--provenance/, 'no OIDC token here: no provenance asked');
  assert.match(stdout, new RegExp(`^would tag v${version}$`, 'm'));

  // Every package was looked up on this registry, and nothing was sent to it.
  for (const name of names)
    assert.ok(requests.includes(`GET /${name}`), `${name} looked up: ${requests.join(', ')}`);
  assert.deepEqual(
    requests.filter((r) => !r.startsWith('GET ')),
    [],
  );
  assert.equal(await gitStatus(), before, 'nothing written in the repository');
});
