import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { PROJECT_DEPENDENCIES, PROJECT_DEV_DEPENDENCIES, REGULON_VERSION } from './dependencies.ts';

const root = join(import.meta.dirname, '..', '..', '..');
type Manifest = {
  version: string;
  engines?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};
const manifest = (dir: string) =>
  JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as Manifest;

test("a new project's third-party ranges are the ones the framework builds and tests with", () => {
  assert.equal(PROJECT_DEPENDENCIES['typebox'], manifest('packages/crd').dependencies?.['typebox']);
  assert.equal(
    PROJECT_DEPENDENCIES['prom-client'],
    manifest('packages/runtime').dependencies?.['prom-client'],
  );
  assert.equal(PROJECT_DEV_DEPENDENCIES['typescript'], manifest('.').devDependencies?.['typescript']);
  assert.equal(PROJECT_DEV_DEPENDENCIES['@types/node'], manifest('.').devDependencies?.['@types/node']);
});

test('every Regulon package a new project lists exists, at the version this one is', () => {
  for (const [name, range] of Object.entries({ ...PROJECT_DEPENDENCIES, ...PROJECT_DEV_DEPENDENCIES }))
    if (name.startsWith('@regulon/')) {
      assert.equal(manifest(`packages/${name.slice('@regulon/'.length)}`).version, REGULON_VERSION, name);
      assert.equal(range, `^${REGULON_VERSION}`);
    }
});
