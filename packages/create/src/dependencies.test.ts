import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  PROJECT_DEPENDENCIES,
  PROJECT_DEV_DEPENDENCIES,
  projectDependencies,
  REGULON_VERSION,
} from './dependencies.ts';

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

test('from local tarballs, every @regulon package is its file: spec, listed or reached through overrides', () => {
  const local = new Map(
    ['client', 'crd', 'options', 'runtime', 'create', 'generate', 'testenv', 'util', 'queue'].map((n) => [
      `@regulon/${n}`,
      `file:../t/regulon-${n}.tgz`,
    ]),
  );
  const { dependencies, devDependencies, overrides } = projectDependencies(local);
  assert.equal(dependencies['@regulon/runtime'], 'file:../t/regulon-runtime.tgz');
  assert.equal(devDependencies['@regulon/testenv'], 'file:../t/regulon-testenv.tgz');
  assert.equal(dependencies['typebox'], PROJECT_DEPENDENCIES['typebox']);
  // npm refuses an override of a package the project lists itself (EOVERRIDE) unless it is the same spec.
  assert.deepEqual(overrides, {
    '@regulon/queue': 'file:../t/regulon-queue.tgz',
    '@regulon/util': 'file:../t/regulon-util.tgz',
  });
  local.delete('@regulon/crd');
  assert.throws(() => projectDependencies(local), /no tarball of @regulon\/crd/);
  assert.equal(projectDependencies().overrides, undefined);
});
