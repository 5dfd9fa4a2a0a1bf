import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  releasePlan,
  pendingChangesets,
  plannedVersion,
  provenanceFlags,
  VERSIONED,
  versionsIn,
  withVersion,
} from './release.ts';

const root = join(import.meta.dirname, '..', '..');
const manifest = (dir: string) =>
  JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { name: string; version: string };

test('provenance only where npm can sign: GitHub Actions with its OIDC token, GitLab CI with SIGSTORE_ID_TOKEN', () => {
  assert.deepEqual(provenanceFlags({}), []);
  assert.deepEqual(provenanceFlags({ GITHUB_ACTIONS: 'true' }), [], 'a job without id-token: write');
  assert.deepEqual(
    provenanceFlags({
      GITHUB_ACTIONS: 'true',
      ACTIONS_ID_TOKEN_REQUEST_URL: 'https://token.actions.example',
    }),
    ['--provenance'],
  );
  assert.deepEqual(provenanceFlags({ GITLAB_CI: 'true', SIGSTORE_ID_TOKEN: 'jwt' }), ['--provenance']);
  assert.deepEqual(provenanceFlags({ SIGSTORE_ID_TOKEN: 'jwt' }), [], 'outside GitLab CI');
});

test('one version line: every @regulon workspace, the manager image tag and the docs name the same version', () => {
  const dirs = ['packages', 'apps'].flatMap((d) => readdirSync(join(root, d)).map((p) => `${d}/${p}`));
  const versions = new Set([...dirs, 'tools'].map((d) => manifest(d).version));
  assert.equal(versions.size, 1, [...versions].join(', '));
  const [version] = versions;
  for (const { file, pattern } of VERSIONED) {
    const found = versionsIn(readFileSync(join(root, file), 'utf8'), pattern);
    assert.ok(found.length > 0, `${file} names the version (${pattern})`);
    assert.deepEqual(new Set(found), new Set([version]), file);
  }
  const config = JSON.parse(readFileSync(join(root, '.changeset', 'config.json'), 'utf8')) as {
    fixed: string[][];
  };
  assert.deepEqual(config.fixed, [['@regulon/*']]);
});

test('a release sets the version where VERSIONED finds it, and leaves other versions alone', () => {
  const deployment = VERSIONED.find((v) => v.file === 'deploy/manager/deployment.yaml')!;
  assert.equal(
    withVersion('image: regulon-manager:0.1.0\nimage: memcached:1.6.0\n', deployment.pattern, '0.2.0-next.1'),
    'image: regulon-manager:0.2.0-next.1\nimage: memcached:1.6.0\n',
  );
  const readme = VERSIONED.find((v) => v.file === 'README.md')!;
  const line = 'npx --package ./regulon/dist/packages/regulon-create-0.2.0-next.1.tgz create op';
  assert.deepEqual(versionsIn(line, readme.pattern), ['0.2.0-next.1']);
  assert.equal(withVersion(line, readme.pattern, '0.2.0'), line.replace('0.2.0-next.1', '0.2.0'));
});

test('changesets moves every @regulon package to one version, from a changeset that names one of them', async () => {
  // A small monorepo with this repository's changesets configuration: two
  // packages, one depending on the other as the workspaces do ("*"), and an app.
  const dir = mkdtempSync(join(tmpdir(), 'regulon-changesets-'));
  try {
    const write = (path: string, data: unknown) => {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), typeof data === 'string' ? data : JSON.stringify(data, null, 2));
    };
    write('package.json', { name: 'fixture', private: true, workspaces: ['packages/*', 'apps/*'] });
    // How changesets (@manypkg/get-packages) recognises an npm workspace.
    write('package-lock.json', { name: 'fixture', lockfileVersion: 3, packages: {} });
    write('packages/util/package.json', { name: '@regulon/util', version: '0.1.0', private: true });
    write('packages/runtime/package.json', {
      name: '@regulon/runtime',
      version: '0.1.0',
      private: true,
      dependencies: { '@regulon/util': '*' },
    });
    write('apps/manager/package.json', { name: '@regulon/manager', version: '0.1.0', private: true });
    cpSync(join(root, '.changeset', 'config.json'), join(dir, '.changeset', 'config.json'));
    const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
    git('init', '-q', '-b', 'main');
    git(
      '-c',
      'user.email=t@example.com',
      '-c',
      'user.name=t',
      'commit',
      '-q',
      '--allow-empty',
      '-m',
      'start',
    );
    git('add', '-A');
    git('-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '-m', 'packages');
    assert.deepEqual(pendingChangesets(join(dir, '.changeset')), []);
    assert.deepEqual(await releasePlan(dir), [], 'nothing pending: the current version is released');

    write('.changeset/brave-fox.md', "---\n'@regulon/util': minor\n---\n\nA new clock.\n");
    write('.changeset/README.md', '# not a changeset\n');
    assert.deepEqual(pendingChangesets(join(dir, '.changeset')), ['brave-fox.md']);
    const plan = await releasePlan(dir);
    assert.deepEqual(plan.map((r) => `${r.name} ${r.oldVersion} → ${r.newVersion}`).sort(), [
      '@regulon/manager 0.1.0 → 0.2.0',
      '@regulon/runtime 0.1.0 → 0.2.0',
      '@regulon/util 0.1.0 → 0.2.0',
    ]);
    assert.equal(plannedVersion(plan, '0.1.0'), '0.2.0');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a plan with two versions for the line is refused', () => {
  const r = (name: string, newVersion: string) => ({ name, oldVersion: '0.1.0', newVersion, type: 'minor' });
  assert.equal(plannedVersion([r('@regulon/a', '0.2.0'), r('@regulon/b', '0.2.0')], '0.1.0'), '0.2.0');
  assert.throws(
    () => plannedVersion([r('@regulon/a', '0.2.0'), r('@regulon/b', '1.0.0')], '0.1.0'),
    /several versions/,
  );
});
