// `nx g @regulon/create:controller` in a copy of this monorepo (its tracked
// and new files, and a copy of node_modules, whose workspace links are
// relative and so point into the copy): the new controller app is written,
// registered in the manager (its flags, its CRD and RBAC in deploy/), linked
// into the workspace, formatted and lint-clean, and its own test passes
// against the control plane. A second run for the same kind changes nothing.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
let copy: string;

/**
 * This process's environment for commands in the copy, minus what `npm test`
 * set for this repository's scripts (npm there reads the copy's own
 * package.json) and node:test's NODE_TEST_CONTEXT (the copy's test would
 * report to this runner in its binary protocol). The control plane stays:
 * REGULON_TESTENV_DIR leads the copy's test to this run's.
 */
function copyEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { NX_DAEMON: 'false', NX_NO_CLOUD: 'true' };
  for (const [k, v] of Object.entries(process.env))
    if (!/^npm_(config|package|lifecycle)_/i.test(k) && !['INIT_CWD', 'NODE_TEST_CONTEXT'].includes(k))
      env[k] = v;
  return env;
}

async function run(cmd: string, args: string[], cwd = copy) {
  return execFileAsync(cmd, args, { cwd, env: copyEnv(), maxBuffer: 64 << 20 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => err,
  );
}

const generate = () =>
  run('npx', [
    'nx',
    'g',
    '@regulon/create:controller',
    '--kind=Widget',
    '--group=example.regulon.dev',
    '--api-version=v1alpha1',
  ]);

before(async () => {
  copy = mkdtempSync(join(tmpdir(), 'regulon-monorepo-'));
  const { stdout } = await execFileAsync(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    {
      cwd: root,
      maxBuffer: 64 << 20,
    },
  );
  for (const path of stdout.split('\0').filter(Boolean))
    if (existsSync(join(root, path))) {
      mkdirSync(dirname(join(copy, path)), { recursive: true });
      cpSync(join(root, path), join(copy, path));
    }
  cpSync(join(root, 'node_modules'), join(copy, 'node_modules'), { recursive: true, verbatimSymlinks: true });
});

after(() => {
  if (copy) rmSync(copy, { recursive: true, force: true });
});

test('nx g @regulon/create:controller adds a controller app the manager runs, with its CRD and RBAC, and its test passes', async () => {
  const generated = await generate();
  assert.equal(generated.code, 0, `${generated.stdout}\n${generated.stderr}`);
  const app = join(copy, 'apps', 'widget-controller');
  for (const file of [
    'package.json',
    'src/api/widget.ts',
    'src/controllers/widget.ts',
    'src/controllers/widget.test.ts',
  ])
    assert.ok(existsSync(join(app, file)), file);
  assert.match(
    readFileSync(join(copy, 'apps/manager/src/controllers.ts'), 'utf8'),
    /import \{ Widget, widgetController \} from '@regulon\/widget-controller';[\s\S]*\.\.\.widgetController,[\s\S]*kinds: \[Widget\]/,
  );
  assert.ok(
    existsSync(join(copy, 'node_modules/@regulon/widget-controller/package.json')),
    'linked by npm install',
  );
  assert.ok(existsSync(join(copy, 'deploy/crds/widgets.example.regulon.dev.yaml')), 'the CRD was generated');
  assert.match(readFileSync(join(copy, 'deploy/rbac/generated.yaml'), 'utf8'), /widgets\/status/);

  // What CI checks of every change holds for the generated one too.
  for (const [cmd, args] of [
    ['npx', ['tsc', '-p', 'apps/widget-controller/tsconfig.json']],
    ['npx', ['tsc', '-p', 'apps/manager/tsconfig.json']],
    ['npx', ['eslint', 'apps/widget-controller', 'apps/manager/src/controllers.ts']],
    ['npx', ['prettier', '--check', 'apps/widget-controller', 'apps/manager']],
    [process.execPath, ['tools/scripts/generate.ts', '--check']],
  ] as const) {
    const { code, stdout, stderr } = await run(cmd, [...args]);
    assert.equal(code, 0, `${cmd} ${args.join(' ')}:\n${stdout}\n${stderr}`);
  }
  const help = await run(process.execPath, ['apps/manager/src/main.ts', '--help']);
  assert.match(help.stdout, /--widget-enabled\b/);

  const tested = await run('npm', ['test'], app);
  assert.equal(tested.code, 0, `${tested.stdout}\n${tested.stderr}`);
  assert.match(
    tested.stdout,
    /✔ a Widget gets its ConfigMap, reports Ready for its generation, and follows a changed spec/,
  );
  assert.match(tested.stdout, /\bpass 2\b/);

  const controllers = readFileSync(join(copy, 'apps/manager/src/controllers.ts'), 'utf8');
  const again = await generate();
  assert.notEqual(again.code, 0);
  assert.match(`${again.stdout}${again.stderr}`, /apps\/widget-controller exists/);
  assert.equal(readFileSync(join(copy, 'apps/manager/src/controllers.ts'), 'utf8'), controllers);
});
