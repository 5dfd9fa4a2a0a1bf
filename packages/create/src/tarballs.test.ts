import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { REGULON_VERSION } from './dependencies.ts';
import { localPackages, tarballDirOf, tarballName } from './tarballs.ts';

const own = `regulon-create-${REGULON_VERSION}.tgz`;
let parent: string;
beforeEach(() => {
  parent = mkdtempSync(join(tmpdir(), 'regulon-tarballs-'));
});
afterEach(() => rmSync(parent, { recursive: true, force: true }));

test("a tarball's name is npm pack's: scope and name joined by a dash, then the version", () => {
  assert.equal(tarballName('@regulon/image-catalog', '1.2.3'), 'regulon-image-catalog-1.2.3.tgz');
});

test("run from its tarball, the scaffolder finds the tarball's directory from npx's --package, relative to where npx ran", () => {
  assert.equal(
    tarballDirOf({ npm_config_package: `./regulon/dist/packages/${own}`, INIT_CWD: '/home/me' }),
    '/home/me/regulon/dist/packages',
  );
  assert.equal(
    tarballDirOf({ npm_config_package: `typescript\nfile:/srv/packs/${own}`, INIT_CWD: '/x' }),
    '/srv/packs',
  );
  // From the registry, or from another version's tarball: not a local run of this one.
  assert.equal(tarballDirOf({ npm_config_package: '@regulon/create', INIT_CWD: '/x' }), undefined);
  assert.equal(tarballDirOf({ npm_config_package: '/srv/regulon-create-0.0.1-old.tgz' }), undefined);
  assert.equal(tarballDirOf({}), undefined);
});

test("every tarball of the scaffolder's version becomes a relative file: spec; other versions are left out", () => {
  const dir = join(parent, 'regulon', 'dist', 'packages');
  mkdirSync(dir, { recursive: true });
  for (const f of [
    own,
    `regulon-image-catalog-${REGULON_VERSION}.tgz`,
    'regulon-util-0.0.1.tgz',
    'notes.txt',
  ])
    writeFileSync(join(dir, f), '');
  assert.deepEqual([...localPackages(dir, join(parent, 'my-operator'))].sort(), [
    ['@regulon/create', `file:../regulon/dist/packages/${own}`],
    ['@regulon/image-catalog', `file:../regulon/dist/packages/regulon-image-catalog-${REGULON_VERSION}.tgz`],
  ]);
  assert.throws(() => localPackages(join(parent, 'none'), parent), /run `npm run pack` in the clone first/);
});
