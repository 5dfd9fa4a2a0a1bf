import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { NameError } from './names.ts';
import { createApi, initProject } from './scaffold.ts';

let parent: string;
beforeEach(() => {
  parent = mkdtempSync(join(tmpdir(), 'regulon-scaffold-'));
});
afterEach(() => rmSync(parent, { recursive: true, force: true }));

const read = (dir: string, path: string) => readFileSync(join(dir, path), 'utf8');

test('init names the project after its directory and writes a project with no kind', () => {
  const dir = join(parent, 'my-operator');
  const written = initProject(dir);
  assert.ok(
    written.includes('src/main.ts') &&
      written.includes('Dockerfile') &&
      written.includes('regulon.config.ts'),
  );
  const pkg = JSON.parse(read(dir, 'package.json')) as { name: string; scripts: Record<string, string> };
  assert.equal(pkg.name, 'my-operator');
  assert.match(pkg.scripts['test']!, /regulon-generate --check/);
  assert.match(read(dir, 'src/main.ts'), /envPrefix: 'MY_OPERATOR'/);
  assert.match(read(dir, 'regulon.config.ts'), /namespace: 'my-operator-system'/);
});

test('init refuses a directory holding files, and writes nothing there', () => {
  const dir = join(parent, 'taken');
  mkdirSync(dir);
  writeFileSync(join(dir, 'notes.txt'), 'mine');
  assert.throws(() => initProject(dir), /not empty \(notes\.txt…\)/);
  assert.equal(read(dir, 'notes.txt'), 'mine');
  assert.throws(() => initProject(join(parent, 'Bad_Name')), NameError);
});

test('create api adds the kind, its controller and test, and registers them at the markers', () => {
  const dir = join(parent, 'op');
  initProject(dir);
  createApi(dir, { group: 'cache.example.com', version: 'v1alpha1', kind: 'Memcached' });
  createApi(dir, { group: 'cache.example.com', version: 'v1alpha1', kind: 'RedisCluster' });
  assert.match(read(dir, 'src/api/memcached.ts'), /plural: 'memcacheds'/);
  assert.match(read(dir, 'src/controllers/redis-cluster.ts'), /resources: \['redisclusters\/status'\]/);
  const kinds = read(dir, 'src/kinds.ts');
  // In the order added, each above its marker so that the next one follows it.
  assert.match(
    kinds,
    /import \{ Memcached \} from '\.\/api\/memcached\.ts';\nimport \{ RedisCluster \} from '\.\/api\/redis-cluster\.ts';\n\/\/ regulon:scaffold:kind-imports/,
  );
  assert.match(kinds, /\[\n {2}Memcached,\n {2}RedisCluster,\n {2}\/\/ regulon:scaffold:kinds\n\]/);
  assert.match(read(dir, 'src/controllers.ts'), /\n {2}memcachedController,\n {2}redisClusterController,\n/);
});

test('create api refuses a kind that is there already, or a registry without its marker, writing nothing', () => {
  const dir = join(parent, 'op');
  initProject(dir);
  const request = { group: 'cache.example.com', version: 'v1alpha1', kind: 'Memcached' };
  createApi(dir, request);
  const kinds = read(dir, 'src/kinds.ts');
  assert.throws(() => createApi(dir, request), /src\/api\/memcached\.ts exists/);
  assert.equal(read(dir, 'src/kinds.ts'), kinds);

  writeFileSync(join(dir, 'src/controllers.ts'), 'export const CONTROLLERS = [];\n');
  assert.throws(
    () => createApi(dir, { ...request, kind: 'Other' }),
    /src\/controllers\.ts: the line "\/\/ regulon:scaffold:controller-imports" is gone/,
  );
  assert.equal(read(dir, 'src/kinds.ts'), kinds, 'the other registry is untouched');
  assert.throws(() => read(dir, 'src/api/other.ts'), /ENOENT/);
});
