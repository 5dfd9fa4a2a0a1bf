// The regulon-generate bin as a user's project runs it: a regulon.config.ts in
// the working directory, deploy/ next to it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, test } from 'node:test';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const cli = join(import.meta.dirname, 'cli.ts');
// Outside the repository the project would import '@regulon/crd'; here, the workspace's source.
const crd = pathToFileURL(join(import.meta.dirname, '..', '..', 'crd', 'src', 'index.ts')).href;

const project = mkdtempSync(join(tmpdir(), 'regulon-generate-cli-'));
after(() => rmSync(project, { recursive: true, force: true }));

writeFileSync(
  join(project, 'regulon.config.ts'),
  `import { defineKind, Type } from '${crd}';

const Memcached = defineKind({
  group: 'cache.example.com',
  version: 'v1alpha1',
  kind: 'Memcached',
  plural: 'memcacheds',
  singular: 'memcached',
  scope: 'Namespaced',
  spec: Type.Object({ size: Type.Integer({ minimum: 1 }) }),
  status: Type.Object({}),
});

export default {
  kinds: [Memcached],
  rbac: { rules: [{ apiGroups: ['cache.example.com'], resources: ['memcacheds'], verbs: process.env.VERBS!.split(',') }] },
  manager: { name: 'memcached-operator', namespace: 'memcached-system', image: 'memcached-operator:dev' },
};
`,
);

async function run(args: string[], verbs = 'list,watch') {
  return execFileAsync(process.execPath, [cli, ...args], {
    cwd: project,
    env: { ...process.env, VERBS: verbs },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({
      code: err.code,
      stdout: err.stdout,
      stderr: err.stderr,
    }),
  );
}

test('--check names every missing file and fails; a run writes them; --check then passes', async () => {
  const before = await run(['--check']);
  assert.equal(before.code, 1);
  assert.match(before.stderr, /deploy\/crds\/memcacheds\.cache\.example\.com\.yaml: missing/);
  assert.match(before.stderr, /deploy\/rbac\/role\.yaml: missing/);
  assert.match(before.stderr, /run: npx regulon-generate/);
  assert.equal(existsSync(join(project, 'deploy')), false, '--check writes nothing');

  const wrote = await run([]);
  assert.equal(wrote.code, 0, wrote.stderr);
  assert.match(wrote.stdout, /wrote deploy\/kustomization\.yaml/);
  assert.match(readFileSync(join(project, 'deploy', 'rbac', 'role.yaml'), 'utf8'), /verbs: \[list, watch\]/);
  assert.deepEqual(await run(['--check']), { code: 0, stdout: '', stderr: '' });
});

test('--check after a declaration changed names the one stale file', async () => {
  await run([]);
  const stale = await run(['--check'], 'list,watch,patch');
  assert.equal(stale.code, 1);
  assert.match(
    stale.stderr,
    /^generated files are out of date:\n {2}deploy\/rbac\/role\.yaml: differs\nrun:/,
  );
});

test('a wildcard in the configuration fails with the rule and the reason, and writes nothing', async () => {
  const before = readFileSync(join(project, 'deploy', 'rbac', 'role.yaml'), 'utf8');
  const refused = await run([], '*');
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /memcached-operator: rule .*"verbs":\["\*"\].*wildcards are not allowed/);
  assert.equal(readFileSync(join(project, 'deploy', 'rbac', 'role.yaml'), 'utf8'), before);
});

test('--out and --config: another directory, and a clear error for a missing configuration', async () => {
  const other = await run(['--out', 'elsewhere']);
  assert.equal(other.code, 0, other.stderr);
  assert.ok(existsSync(join(project, 'elsewhere', 'kustomization.yaml')));
  const missing = await run(['--config', 'nope.config.ts']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /regulon-generate: no configuration at .*nope\.config\.ts/);
});
