// The README's "Writing your own operator" block, run as a new user runs it:
// its lines taken from the README (readme-commands.ts), so that the page and
// this test cannot drift, in a directory outside the repository laid out as
// the README says (the clone, named regulon, beside the new project).
//   - The block's first line, `npm ci && npm run pack` in the clone, is the
//     one line not run as written: this repository is installed already, and
//     `npm run pack` is packAll into the stand-in clone's dist/packages/.
//   - The rest runs verbatim, in one bash, from the stand-in clone: npx runs the
//     scaffolder from its tarball (npm_config_yes answers npx's one question,
//     as the user does), which installs the project from the tarballs beside
//     it, and `regulon create api` adds the kind.
//   - The made project passes its own checks: the parts of its `npm test`
//     before the control plane (tsc, deploy/ current) always; the block's last
//     lines (`npx regulon-testenv install`, `npm test`, its tests against the
//     control plane) when this machine has the control plane built, as `npm
//     test` always has (its step 2), since building it here takes 8-13 minutes.
// About 40 s with a warm npm cache (pack 20 s, install 10 s, create api and tsc 10 s).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import { cleanEnv, sh } from './outside.ts';
import { packAll } from './pack.ts';
import { tutorialCommands } from './readme-commands.ts';

const root = join(import.meta.dirname, '..', '..');
const commands = tutorialCommands().map((line) => line.replace(/\s+#.*$/, ''));
let parent: string;
let clone: string;

// The user's terminal: this run's Node 24 first on PATH, npm with its own configuration only.
const userEnv = () =>
  cleanEnv({
    PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`,
    npm_config_yes: 'true',
    // From the machine's npm cache first: the registry only for what it lacks.
    npm_config_prefer_offline: 'true',
  });

before(async () => {
  parent = mkdtempSync(join(tmpdir(), 'regulon-readme-'));
  clone = join(parent, 'regulon');
  mkdirSync(clone);
  assert.ok(relative(root, parent).startsWith('..'), 'outside the repository');
  assert.equal(commands[0], 'npm ci && npm run pack', 'the block starts in the clone, packing');
  await packAll(join(clone, 'dist', 'packages'));
});

after(() => rmSync(parent, { recursive: true, force: true }));

/** The block's lines from `from` (inclusive) to `to` (exclusive), run in one bash from `cwd`, as typed. */
const runLines = (cwd: string, from: number, to?: number) =>
  sh('bash', ['-euo', 'pipefail', '-c', commands.slice(from, to).join('\n')], { cwd, env: userEnv() });
// The project the block makes: the directory it changes into after `cd ..`.
const project = () => {
  const cd = commands.find((l) => /^cd (?!\.\.)/.test(l));
  assert.ok(cd, 'the block changes into the new project');
  return join(parent, cd.slice('cd '.length));
};

const controlPlaneLines = () => {
  const at = commands.findIndex((l) => l.startsWith('npx regulon-testenv install'));
  assert.ok(at > 0, 'the block installs the control plane before npm test');
  assert.deepEqual(commands.slice(at + 1), ['npm test'], 'npm test ends the block');
  return at;
};

test("the README's commands, from outside the repository, make a project with its kind that type-checks and whose deploy/ is current", async () => {
  const started = Date.now();
  await runLines(clone, 1, controlPlaneLines());
  const dir = project();
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  // Every @regulon package from the clone's tarballs: none is on the registry yet.
  const listed = { ...manifest.dependencies, ...manifest.devDependencies };
  const regulon = Object.entries(listed).filter(([name]) => name.startsWith('@regulon/'));
  assert.ok(regulon.length >= 4, JSON.stringify(listed));
  for (const [name, spec] of regulon)
    assert.match(spec, /^file:\.\.\/regulon\/dist\/packages\/regulon-/, name);
  assert.ok(existsSync(join(dir, 'deploy', 'crds', 'memcacheds.cache.example.com.yaml')));
  assert.ok(existsSync(join(dir, 'src', 'controllers', 'memcached.test.ts')));

  // The project's own npm test, up to the step that needs a control plane.
  const steps = manifest.scripts['test']!.split(' && ');
  const cluster = steps.findIndex((s) => s.startsWith('regulon-testenv exec'));
  assert.deepEqual(steps.slice(0, cluster), ['tsc', 'regulon-generate --check']);
  const env = userEnv();
  env['PATH'] = `${join(dir, 'node_modules', '.bin')}:${env['PATH']}`;
  await sh('bash', ['-euo', 'pipefail', '-c', steps.slice(0, cluster).join(' && ')], { cwd: dir, env });
  console.log(`README commands to a type-checked project in ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

test("and the block's last lines pass: the control plane installed, the project's npm test against it", async (t) => {
  const { stdout: bin } = await sh('bash', [join(root, 'tools', 'control-plane', 'build.sh'), '--print'], {
    cwd: root,
  });
  if (!existsSync(bin.trim())) {
    // Not run, and reported so: `npm test` builds the control plane in its step 2, before any test.
    t.skip(`the control plane is not built on this machine (${bin.trim()}); npm test builds it`);
    return;
  }
  // Where the first test left the user: in the project, its kind added.
  assert.ok(existsSync(join(project(), 'src', 'api', 'memcached.ts')), 'the first test made the project');
  const { stdout } = await runLines(project(), controlPlaneLines());
  assert.match(stdout, /\bpass 2\b/);
  assert.match(stdout, /\bfail 0\b/);
});
