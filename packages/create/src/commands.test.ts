import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { main } from './commands.ts';

let cwd: string;
let out: string[];
let err: string[];
let runs: Array<{ cwd: string; args: string }>;
let exitOf: (args: string) => number;

beforeEach(() => {
  cwd = mkdtempSync(join(tmpdir(), 'regulon-cli-'));
  out = [];
  err = [];
  runs = [];
  exitOf = () => 0;
  env = {};
});
afterEach(() => rmSync(cwd, { recursive: true, force: true }));

// npm is the one outside effect; recorded here, run for real by the pack test.
let env: Record<string, string | undefined>;
const io = () => ({
  cwd,
  env,
  out: (l: string) => out.push(l),
  err: (l: string) => err.push(l),
  run: (dir: string, _command: string, args: readonly string[]) => {
    runs.push({ cwd: dir, args: args.join(' ') });
    return exitOf(args.join(' '));
  },
});

test('init installs and generates in the new project, and says what comes next', () => {
  assert.equal(main(['init', 'shop-operator'], io()), 0);
  assert.deepEqual(runs, [
    { cwd: join(cwd, 'shop-operator'), args: 'install --no-audit --no-fund' },
    { cwd: join(cwd, 'shop-operator'), args: 'run generate' },
  ]);
  assert.match(out.at(-1)!, /cd shop-operator && npx regulon create api/);
});

test('init --skip-install runs nothing; a failed install exits 1 and keeps the project', () => {
  assert.equal(main(['init', 'a', '--skip-install'], io()), 0);
  assert.deepEqual(runs, []);
  exitOf = (args) => (args.startsWith('install') ? 7 : 0);
  assert.equal(main(['init', 'b'], io()), 1);
  assert.match(err.at(-1)!, /npm install --no-audit --no-fund failed \(exit 7\)/);
  assert.ok(existsSync(join(cwd, 'b', 'package.json')));
});

test('create api generates only when the project has its dependencies', () => {
  main(['init', '.', '--name', 'op', '--skip-install'], io());
  assert.equal(
    main(['create', 'api', '--group', 'example.com', '--version', 'v1', '--kind', 'Web'], io()),
    0,
  );
  assert.deepEqual(runs, []);
  assert.match(out.at(-1)!, /npm install && npm run generate/);
  mkdirSync(join(cwd, 'node_modules', '@regulon', 'generate'), { recursive: true });
  assert.equal(
    main(['create', 'api', '--group', 'example.com', '--version', 'v1', '--kind', 'Blog'], io()),
    0,
  );
  assert.deepEqual(runs, [{ cwd, args: 'run generate' }]);
});

test('bad usage exits 2 with the reason and the usage', () => {
  assert.equal(main(['create', 'api', '--group', 'example.com', '--kind', 'Web'], io()), 2);
  assert.match(err.at(-1)!, /needs --group, --version and --kind/);
  assert.equal(main(['create', 'api', '--colour'], io()), 2);
  assert.match(err.at(-1)!, /Unknown option '--colour'/);
  assert.equal(main(['deploy'], io()), 2);
  assert.match(err.at(-1)!, /unknown command: deploy\nusage:/);
  assert.equal(main(['create', 'api', '--group', 'x', '--version', 'v1', '--kind', 'Web'], io()), 2);
  assert.match(err.at(-1)!, /--group "x"/);
});

test("run by npx from the scaffolder's tarball, init installs the @regulon packages from the tarballs beside it", () => {
  const packs = join(cwd, 'regulon', 'dist', 'packages');
  mkdirSync(packs, { recursive: true });
  const version = (
    JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { version: string }
  ).version;
  for (const n of ['client', 'crd', 'options', 'runtime', 'create', 'generate', 'testenv', 'util'])
    writeFileSync(join(packs, `regulon-${n}-${version}.tgz`), '');
  env = { npm_config_package: `./regulon/dist/packages/regulon-create-${version}.tgz`, INIT_CWD: cwd };
  assert.equal(main(['init', 'op', '--skip-install'], io()), 0);
  assert.ok(out.includes(`the @regulon packages come from the tarballs in ${packs}, not the registry`));
  const manifest = JSON.parse(readFileSync(join(cwd, 'op', 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    overrides: Record<string, string>;
  };
  assert.equal(
    manifest.dependencies['@regulon/runtime'],
    `file:../regulon/dist/packages/regulon-runtime-${version}.tgz`,
  );
  assert.deepEqual(Object.keys(manifest.overrides), ['@regulon/util']);

  // --tarballs says where, when npm did not run it from one; an empty directory is refused.
  env = {};
  mkdirSync(join(cwd, 'empty'));
  assert.equal(main(['init', 'op2', '--skip-install', '--tarballs', 'empty'], io()), 2);
  assert.match(err.at(-1)!, /no regulon-\*-.*\.tgz in .*empty: run `npm run pack`/);
  assert.equal(main(['init', 'op3', '--skip-install', '--tarballs', 'regulon/dist/packages'], io()), 0);
  assert.match(
    readFileSync(join(cwd, 'op3', 'package.json'), 'utf8'),
    /"@regulon\/crd": "file:\.\.\/regulon\/dist/,
  );
});
