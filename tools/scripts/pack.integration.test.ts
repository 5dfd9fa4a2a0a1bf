// The packages as a user gets them: every publishable package packed
// (tools/scripts/pack.ts), installed from its tarball into a new project
// outside the repository (no workspace links, no TypeScript sources), then
//   - a TypeScript file using the packages type-checks under a strict
//     tsconfig (exactOptionalPropertyTypes, no allowImportingTsExtensions,
//     skipLibCheck off, so an error in the framework's .d.ts shows here);
//   - `npx regulon-testenv install` finds the control plane this machine
//     built for the repository (the scripts the package ships, the same cache
//     keys) instead of building it again, and before it, with nothing built,
//     the installed testenv's start() fails naming that command;
//   - the project's own testenv-based test (`npm test`: `regulon-testenv exec
//     -- node --test`) runs a tiny operator written in plain JavaScript, a
//     @regulon/runtime controller that annotates the ConfigMaps labelled
//     demo=1, as a process against the control plane the installed testenv
//     starts (no REGULON_* variable points into the repository), and stops
//     it with SIGTERM; on Node 24 (the repository's) and Node 22 (from the npm
//     registry, `npx -p node@22`);
//   - the OpenTelemetry SDK, an optional peer, is not installed and nothing
//     misses it;
//   - the installed `regulon-generate` writes the example operator's deploy/
//     from its regulon.config.js (its kind's CRD, RBAC from its declared
//     rules, the kustomize base), `--check` says when it is stale, on Node 24
//     and 22, and the base applies server-side to a control plane;
//   - the installed testenv runs a real Pod: `regulon-testenv install
//     --real-node` finds the node's parts and images this machine built, and
//     the package's start({ realNodes: 1 }) puts a Pod of its client image on
//     the real node, where cluster DNS answers (the run's control plane and
//     its real node, the machine's only one, when the run has them);
//   - the installed scaffolder (@regulon/create, run from its tarball as the
//     README shows, the other tarballs found beside it) makes a project, `regulon create api` adds a kind, and the
//     project's own `npm test` passes: tsc, deploy/ current, the generated
//     test of its controller against the control plane.
// Prints the tarball sizes, the size of the installed node_modules, the
// time `regulon-testenv install` takes on a warm machine, and the time from
// scaffolding to the generated project's passing test.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { eventually, start } from '@regulon/testenv';
import { cleanEnv, sh } from './outside.ts';
import { NODE_ENGINES, packAll, SHIPPED_TOOLS, type Packed } from './pack.ts';

const execFileAsync = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');

const packageJson = (deps: Record<string, string>, devDeps: Record<string, string>) => ({
  name: 'demo-operator',
  version: '0.0.0',
  private: true,
  type: 'module',
  scripts: { test: 'regulon-testenv exec -- node --test' },
  dependencies: deps,
  devDependencies: devDeps,
});

// The operator: one controller, plain JavaScript, as a user would write it.
const OPERATOR_JS = `import { Kinds } from '@regulon/client';
import { Manager, predicate, stopOnSignals } from '@regulon/runtime';

export const SEEN = 'demo.regulon.dev/seen';

export function operator(namespace) {
  const mgr = new Manager({ namespace, metricsBindAddress: '0', healthBindAddress: '0' });
  mgr
    .controller('demo')
    .for(Kinds.ConfigMap, { predicates: [predicate((cm) => cm.metadata.labels?.demo === '1')] })
    .reconcile(async (cm, ctx) => {
      if (cm.metadata.annotations?.[SEEN]) return;
      await ctx.client
        .resource(Kinds.ConfigMap)
        .patch(cm.metadata.name, { metadata: { annotations: { [SEEN]: process.version } } }, {
          type: 'merge',
          namespace: cm.metadata.namespace,
          signal: ctx.signal,
        });
    });
  return mgr;
}

if (import.meta.filename === process.argv[1]) {
  const mgr = operator(process.env.DEMO_NAMESPACE);
  stopOnSignals(mgr);
  await mgr.start();
}
`;

// The project's own test: the operator as a process, against testenv's control plane.
const OPERATOR_TEST_JS = `import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { Kinds, KubeClient } from '@regulon/client';
import { eventually, start } from '@regulon/testenv';
import { SEEN } from '../operator.js';

test('the operator annotates the ConfigMaps labelled demo=1', async () => {
  assert.equal(process.versions.node.split('.')[0], process.env.EXPECTED_NODE_MAJOR);
  const env = await start();
  const namespace = await env.newNamespace('demo');
  const configMaps = KubeClient.load({ kubeconfigPath: env.kubeconfigPath }).resource(Kinds.ConfigMap);
  await configMaps.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'labelled', namespace, labels: { demo: '1' } } });
  const operator = spawn(process.execPath, ['operator.js'], {
    env: { ...process.env, KUBECONFIG: env.kubeconfigPath, DEMO_NAMESPACE: namespace },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = once(operator, 'exit');
  try {
    const seen = await eventually('the annotation', async () => (await configMaps.get('labelled', { namespace })).metadata.annotations?.[SEEN], 30_000);
    assert.equal(seen, process.version); // written by an operator on this test's Node
  } finally {
    operator.kill('SIGTERM');
  }
  assert.deepEqual(await exited, [0, null]); // a graceful stop
  await env.stop();
});
`;

// The example operator's generation config: the Web kind of typed.ts, and the
// rules of what its two controllers do (the demo one patches labelled
// ConfigMaps, the web one reads and applies ConfigMaps it owns). The namespace
// comes from the test, so that the applied base is this run's own.
const GENERATE_CONFIG_JS = `import { defineKind, Type } from '@regulon/crd';
import { defineConfig } from '@regulon/generate';

export const Web = defineKind({
  group: 'example.com',
  version: 'v1',
  kind: 'Web',
  plural: 'webs',
  singular: 'web',
  scope: 'Namespaced',
  spec: Type.Object({ greeting: Type.String() }),
  status: Type.Object({}),
});

export default defineConfig({
  kinds: [Web],
  rbac: {
    rules: [
      { apiGroups: ['example.com'], resources: ['webs'], verbs: ['list', 'watch'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'patch'] },
    ],
  },
  manager: { name: 'demo-operator', namespace: process.env.DEMO_OPERATOR_NAMESPACE, image: 'demo-operator:0.0.0' },
});
`;

// The same operator in TypeScript, with the other packages' entry points
// imported too, so that every package's .d.ts is checked.
// What a user's test does with the real node: a namespace whose Pods go there,
// the client image, a Pod that prints what only a real container on a real
// network can (its kernel, cluster DNS), read back through kubectl logs.
const REAL_POD_JS = `import { ensureImages, eventually, start } from '@regulon/testenv';
const env = await start({ realNodes: 1 });
try {
  const ns = await env.newNamespace('installed', { realNode: true });
  const images = Object.fromEntries((await ensureImages()).map((i) => [i.name, i.ref]));
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'hello', namespace: ns },
    spec: {
      restartPolicy: 'Never',
      containers: [{
        name: 'c',
        image: images.client,
        command: ['sh', '-c', 'echo "kernel $(uname -r)"; getent hosts kubernetes.default.svc.cluster.local'],
      }],
    },
  };
  const applied = await env.kubectl(['apply', '-f', '-'], JSON.stringify(pod));
  if (applied.code !== 0) throw new Error(applied.stderr);
  const done = await eventually('the Pod finished', async () => {
    const p = JSON.parse((await env.kubectl(['-n', ns, 'get', 'pod', 'hello', '-o', 'json'])).stdout);
    return (p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed') && p;
  }, 180_000, 500);
  const logs = await env.kubectl(['-n', ns, 'logs', 'hello']);
  console.log(\`node \${done.spec.nodeName}, phase \${done.status.phase}\`);
  console.log(logs.stdout);
} finally {
  await env.stop();
}
`;

const TYPED_TS = `import { Kinds, KubeClient } from '@regulon/client';
import { Manager, predicate } from '@regulon/runtime';
import { Informer } from '@regulon/cache';
import { defineKind } from '@regulon/crd';
import { ImageCatalog } from '@regulon/image-catalog';
import { WorkQueue } from '@regulon/queue';
import { realClock } from '@regulon/util';
import { eventually, start } from '@regulon/testenv';
import { defineConfig, generate } from '@regulon/generate';
import { Type } from 'typebox';

const Web = defineKind({
  group: 'example.com',
  version: 'v1',
  kind: 'Web',
  plural: 'webs',
  singular: 'web',
  scope: 'Namespaced',
  spec: Type.Object({ greeting: Type.String() }),
  status: Type.Object({}),
});

export function operator(namespace: string): Manager {
  const mgr = new Manager({ namespace, metricsBindAddress: '0', healthBindAddress: '0' });
  mgr
    .controller('demo')
    .for(Kinds.ConfigMap, { predicates: [predicate((cm) => cm.metadata?.labels?.['demo'] === '1')] })
    .reconcile(async (cm, ctx) => {
      await ctx.client
        .resource(Kinds.ConfigMap)
        .patch(cm.metadata.name, { metadata: { annotations: { seen: 'yes' } } }, { type: 'merge', namespace, signal: ctx.signal });
    });
  mgr
    .controller('web')
    .for(Web)
    .owns(Kinds.ConfigMap)
    .reconcile(async (web, ctx) => {
      // An object's own namespace is string | undefined: the option types take it as it is,
      // also under exactOptionalPropertyTypes.
      const before = await ctx.client
        .resource(Kinds.ConfigMap)
        .get(web.metadata.name, { namespace: web.metadata.namespace, signal: ctx.signal })
        .catch(() => undefined);
      const data = { greeting: web.spec.greeting, previous: before?.data?.['greeting'] ?? '' };
      await ctx.apply([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: web.metadata.name }, data }]);
    });
  return mgr;
}

export const files: ReadonlyMap<string, string> = generate(
  defineConfig({
    kinds: [Web],
    rbac: { rules: [{ apiGroups: ['example.com'], resources: ['webs'], verbs: ['list', 'watch'] }] },
    manager: { name: 'demo-operator', namespace: 'demo-system', image: 'demo-operator:0.0.0' },
  }),
);

export const used = [Informer, ImageCatalog, WorkQueue, realClock, KubeClient, eventually, start];
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'es2023',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: false,
    noEmit: true,
    types: ['node'],
  },
  files: ['typed.ts'],
};

let tarballs: string;
let project: string;
let packed: Packed[];
let node22: string;

/** Bytes of the files under `dir`, not following links; `skip` leaves out nested directories by path. */
function bytesUnder(dir: string, skip: (path: string) => boolean = () => false): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += skip(path) ? 0 : bytesUnder(path, skip);
    else if (entry.isFile()) total += lstatSync(path).size;
  }
  return total;
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

before(async () => {
  const versions = (path: string) =>
    JSON.parse(readFileSync(join(root, path, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
  tarballs = mkdtempSync(join(tmpdir(), 'regulon-tarballs-'));
  project = mkdtempSync(join(tmpdir(), 'regulon-consumer-'));
  assert.ok(relative(root, project).startsWith('..'), 'the project is outside the repository');
  packed = await packAll(tarballs);

  const file = (name: string) => {
    const p = packed.find((x) => x.name === name);
    assert.ok(p, `${name} was packed`);
    return `file:${p.tarball}`;
  };
  // A user lists @regulon/runtime and @regulon/client (and @regulon/testenv
  // for tests); the registry would bring the rest. Here the tarballs of the
  // rest are listed too, so that their ^0.1.0 ranges resolve to them and
  // never to the registry.
  const deps: Record<string, string> = {};
  // testenv and the generator are development tools: devDependencies, as a user lists them.
  const devTools = ['@regulon/testenv', '@regulon/generate'];
  for (const p of packed) if (!devTools.includes(p.name)) deps[p.name] = file(p.name);
  deps['typebox'] = versions('packages/crd').dependencies['typebox']!; // the schemas of defineKind
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify(
      packageJson(deps, {
        '@regulon/testenv': file('@regulon/testenv'),
        '@regulon/generate': file('@regulon/generate'),
        '@types/node': versions('.').devDependencies['@types/node']!,
        // @kubernetes/client-node's types import isomorphic-ws, whose types
        // import 'ws' untyped: a project with skipLibCheck off needs these.
        '@types/ws': '^8.18.1',
      }),
      null,
      2,
    ),
  );
  writeFileSync(join(project, 'operator.js'), OPERATOR_JS);
  mkdirSync(join(project, 'test'));
  writeFileSync(join(project, 'test', 'operator.test.js'), OPERATOR_TEST_JS);
  writeFileSync(join(project, 'typed.ts'), TYPED_TS);
  writeFileSync(join(project, 'regulon.config.js'), GENERATE_CONFIG_JS);
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));

  // From the machine's npm cache first: the registry only for what it lacks.
  const install = sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: project });
  // Node 22 from the npm registry's `node` package (cached by npx after the first run).
  const resolve22 = sh('npx', ['-y', '--prefer-offline', '-p', 'node@22', 'node', '-p', 'process.execPath'], {
    cwd: tarballs,
  });
  const [, { stdout }] = await Promise.all([install, resolve22]);
  node22 = stdout.trim();
});

after(() => {
  for (const dir of [tarballs, project]) if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the tarballs hold dist/ and the LICENSE (testenv its build scripts too), and a minimal operator installs without the OpenTelemetry SDK', () => {
  for (const p of packed) {
    const installed = join(project, 'node_modules', p.name);
    const top = readdirSync(installed).sort();
    const shipped = SHIPPED_TOOLS[p.name] ? ['tools'] : [];
    assert.deepEqual(
      top.filter((f) => f !== 'README.md'),
      ['LICENSE', 'dist', 'package.json', ...shipped],
      `${p.name}: ${top.join(', ')}`,
    );
    assert.equal(
      readFileSync(join(installed, 'LICENSE'), 'utf8'),
      readFileSync(join(root, 'LICENSE'), 'utf8'),
    );
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    assert.equal(manifest['private'], undefined);
    assert.deepEqual(manifest['engines'], { node: NODE_ENGINES });
  }
  assert.equal(existsSync(join(project, 'node_modules', '@opentelemetry', 'sdk-node')), false);

  const nodeModules = join(project, 'node_modules');
  // The operator's own dependencies, without the test tooling (testenv, @types).
  const prodDirs = (
    JSON.parse(readFileSync(join(nodeModules, '.package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    }
  ).packages;
  const prodBytes = Object.entries(prodDirs)
    .filter(([, meta]) => !meta.dev)
    .reduce((sum, [path]) => sum + bytesUnder(join(project, path), (p) => basename(p) === 'node_modules'), 0);
  console.log(
    [
      'tarballs:',
      ...packed.map((p) => `  ${basename(p.tarball)}: ${(p.bytes / 1024).toFixed(0)} KiB (${p.files} files)`),
      `  total: ${(packed.reduce((s, p) => s + p.bytes, 0) / 1024).toFixed(0)} KiB`,
      `node_modules: ${mib(bytesUnder(nodeModules))} with the dev tooling, ${mib(prodBytes)} for the operator's dependencies`,
    ].join('\n'),
  );
});

test('a strict TypeScript project type-checks against the published .d.ts', async () => {
  await sh(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
    {
      cwd: project,
    },
  );
});

test("with nothing installed, the installed testenv's start() fails naming the command that installs it", async () => {
  const emptyCache = mkdtempSync(join(tmpdir(), 'regulon-empty-cache-'));
  try {
    const failed = await sh(
      process.execPath,
      ['--input-type=module', '-e', "import { start } from '@regulon/testenv'; await start();"],
      { cwd: project, env: cleanEnv({ REGULON_CACHE_DIR: emptyCache }) },
    ).then(
      () => undefined,
      (err: Error) => err,
    );
    assert.ok(failed, 'start() with an empty cache fails');
    assert.match(failed.message, /not installed\. Run `npx regulon-testenv install` once/);
    assert.deepEqual(readdirSync(emptyCache), [], 'nothing was built');
  } finally {
    rmSync(emptyCache, { recursive: true, force: true });
  }
});

for (const [major, nodeBin] of [
  ['24', () => process.execPath],
  ['22', () => node22],
] as const) {
  test(`Node ${major}: the project's testenv test runs the JavaScript operator against the control plane`, async () => {
    // `node` on PATH is the one under test: npm, the regulon-testenv bin's
    // shebang and the project's test script (`regulon-testenv exec -- node
    // --test`) all find it there.
    const path = `${dirname(nodeBin())}:${process.env['PATH'] ?? ''}`;
    const projectEnv = cleanEnv({ PATH: path, EXPECTED_NODE_MAJOR: major });

    // This machine built the control plane for the repository's tests: the
    // installed package's scripts must find it (same cache key), not build.
    const { stdout: repoBin } = await sh(
      'bash',
      [join(root, 'tools', 'control-plane', 'build.sh'), '--print'],
      {
        cwd: root,
      },
    );
    const started = Date.now();
    const installed = await sh('npx', ['--no-install', 'regulon-testenv', 'install'], {
      cwd: project,
      env: projectEnv,
    });
    console.log(`Node ${major}: regulon-testenv install found the binaries in ${Date.now() - started} ms`);
    assert.equal(installed.stdout.trim(), repoBin.trim());
    assert.doesNotMatch(installed.stderr, /building/);

    const { stdout } = await sh('npm', ['test'], { cwd: project, env: projectEnv });
    // node --test finding no test file would pass too.
    assert.match(stdout, /the operator annotates the ConfigMaps labelled demo=1/);
    assert.match(stdout, /\bpass 1\b/);
  });
}

test('the installed testenv runs a real Pod on the real node: install --real-node finds its parts and images, cluster DNS answers in the Pod', async () => {
  const installed = await sh('npx', ['--no-install', 'regulon-testenv', 'install', '--real-node'], {
    cwd: project,
  });
  assert.doesNotMatch(installed.stderr, /building/, 'the installed scripts find what this machine built');
  // The run's control plane, if any: its real node is the machine's only one.
  const shared = process.env['REGULON_TESTENV_DIR'];
  const { stdout } = await sh(process.execPath, ['--input-type=module', '-e', REAL_POD_JS], {
    cwd: project,
    env: cleanEnv(shared ? { REGULON_TESTENV_DIR: shared } : {}),
  });
  assert.match(stdout, /node real-node-0, phase Succeeded/);
  assert.match(stdout, /^kernel \S+$/m);
  assert.match(stdout, /^\S+\s+kubernetes\.default\.svc\.cluster\.local$/m);
});

test("the installed regulon-generate writes the example operator's deploy/, --check finds it stale or current on Node 24 and 22, and it applies", async () => {
  const namespace = `demo-operator-${randomBytes(3).toString('hex')}`;
  const generateEnv = (nodeBin: string) =>
    cleanEnv({
      PATH: `${dirname(nodeBin)}:${process.env['PATH'] ?? ''}`,
      DEMO_OPERATOR_NAMESPACE: namespace,
    });
  const regulonGenerate = (nodeBin: string, ...args: string[]) =>
    execFileAsync('npx', ['--no-install', 'regulon-generate', ...args], {
      cwd: project,
      env: generateEnv(nodeBin),
    }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (err: { code: number; stdout: string; stderr: string }) => err,
    );

  const missing = await regulonGenerate(process.execPath, '--check');
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /deploy\/crds\/webs\.example\.com\.yaml: missing/);
  const wrote = await regulonGenerate(process.execPath);
  assert.equal(wrote.code, 0, wrote.stderr);
  for (const nodeBin of [process.execPath, node22]) {
    const current = await regulonGenerate(nodeBin, '--check');
    assert.equal(current.code, 0, `${nodeBin}: ${current.stderr}`);
  }
  const role = readFileSync(join(project, 'deploy', 'rbac', 'role.yaml'), 'utf8');
  assert.match(role, /resources: \[configmaps\]\n {4}verbs: \[get, list, watch, create, patch\]/);
  writeFileSync(join(project, 'deploy', 'rbac', 'role.yaml'), role.replace('[list, watch]', '[list]'));
  const stale = await regulonGenerate(node22, '--check');
  assert.equal(stale.code, 1);
  assert.match(stale.stderr, /deploy\/rbac\/role\.yaml: differs/);
  assert.equal((await regulonGenerate(process.execPath)).code, 0);

  const env = await start();
  try {
    const applied = await env.kubectl(['apply', '--server-side', '-k', join(project, 'deploy')]);
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(
      applied.stdout,
      /^customresourcedefinition\.apiextensions\.k8s\.io\/webs\.example\.com serverside-applied$/m,
    );
    assert.match(applied.stdout, /^deployment\.apps\/demo-operator serverside-applied$/m);
    // The generated binding reaches the authorizer through its informers.
    const canI = async (verb: string) =>
      (
        await env.kubectl([
          'auth',
          'can-i',
          verb,
          'webs.example.com',
          `--as=system:serviceaccount:${namespace}:demo-operator`,
        ])
      ).stdout.trim();
    await eventually('the ServiceAccount may list webs', async () => (await canI('list')) === 'yes', 30_000);
    assert.equal(await canI('delete'), 'no', 'only the declared verbs');
  } finally {
    await env.kubectl(['delete', '-k', join(project, 'deploy'), '--ignore-not-found', '--wait=false']);
    await env.stop();
  }
});

/**
 * `npx --package <the scaffolder's tarball> create <name>` in `parent`, as the
 * README shows until the first release: the scaffolder finds the other
 * tarballs beside its own and installs the project's @regulon packages from
 * them (`file:` specs, and overrides for the ones they depend on), never from
 * the registry, which has none.
 */
async function scaffold(parent: string, name: string): Promise<string> {
  const tarball = (pkg: string) => packed.find((p) => p.name === pkg)!.tarball;
  // --yes answers npx's question; the rest of the install from the machine's npm cache first.
  await sh('npx', ['--yes', `--package=${tarball('@regulon/create')}`, 'create', name], {
    cwd: parent,
    env: cleanEnv({ npm_config_prefer_offline: 'true' }),
  });
  const dir = join(parent, name);
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  const listed = { ...manifest.dependencies, ...manifest.devDependencies };
  const regulon = Object.keys(listed).filter((n) => n.startsWith('@regulon/'));
  assert.ok(regulon.length > 0, JSON.stringify(listed));
  for (const n of regulon) assert.equal(listed[n], `file:${relative(dir, tarball(n))}`, n);
  return dir;
}

/** `npm test` in a project: passes when node --test ran `tests` tests and none failed. */
async function assertProjectTestsPass(dir: string, tests: readonly string[]) {
  const { stdout } = await sh('npm', ['test'], { cwd: dir });
  for (const name of tests) assert.ok(stdout.includes(`✔ ${name}`), `${name}:\n${stdout.slice(-3000)}`);
  assert.match(stdout, new RegExp(`\\bpass ${tests.length}\\b`));
  assert.match(stdout, /\bfail 0\b/);
}

test('a project made by the installed scaffolder (init, create api) passes its own tests: tsc, deploy/ current, its kind against the control plane', async () => {
  const parent = mkdtempSync(join(tmpdir(), 'regulon-scaffolded-'));
  try {
    const started = Date.now();
    const dir = await scaffold(parent, 'my-operator');
    const created = await sh(
      'npx',
      [
        '--no-install',
        'regulon',
        'create',
        'api',
        '--group',
        'cache.example.com',
        '--version',
        'v1alpha1',
        '--kind',
        'Memcached',
      ],
      { cwd: dir },
    );
    assert.match(created.stdout, /wrote deploy\/crds\/memcacheds\.cache\.example\.com\.yaml/);
    assert.match(readFileSync(join(dir, 'deploy', 'rbac', 'role.yaml'), 'utf8'), /memcacheds\/status/);
    await assertProjectTestsPass(dir, [
      'a Memcached gets its ConfigMap, reports Ready for its generation, and follows a changed spec',
      'the API server refuses a Memcached without a message, saying why',
    ]);
    console.log(
      `scaffolded project: create, install, create api and a passing npm test in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );

    // The manager entry: the standard flags and the new controller's switch.
    const help = await sh(process.execPath, ['src/main.ts', '--help'], { cwd: dir });
    for (const flag of [
      '--leader-elect',
      '--metrics-bind-address',
      '--health-probe-bind-address',
      '--memcached-enabled',
    ])
      assert.match(help.stdout, new RegExp(`${flag}\\b`), flag);
    const bad = await execFileAsync(process.execPath, ['src/main.ts', '--memcached-concurrency', 'many'], {
      cwd: dir,
      env: cleanEnv(),
    }).then(
      () => undefined,
      (err: { code: number; stderr: string }) => err,
    );
    assert.equal(bad?.code, 2, 'bad input is a usage error, not a crash');
    assert.match(bad?.stderr ?? '', /memcached-concurrency/);
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});

test("the tutorial's Memcached operator, its code taken from docs/your-first-operator.md, passes its tests", async () => {
  const doc = readFileSync(join(root, 'docs', 'your-first-operator.md'), 'utf8');
  // The files are the blocks fenced as ```ts file=PATH; the commands are the tutorial's own.
  const files = [...doc.matchAll(/^```ts file=(\S+)\n([\s\S]*?)^```$/gm)].map((m) => ({
    path: m[1]!,
    code: m[2]!,
  }));
  assert.deepEqual(
    files.map((f) => f.path),
    ['src/api/memcached.ts', 'src/controllers/memcached.ts', 'src/controllers/memcached.test.ts'],
  );
  const createApi = /^npx (regulon create api .*)$/m.exec(doc)?.[1]?.split(' ');
  assert.ok(createApi, 'the tutorial runs regulon create api');
  const name = /^npx --package \S+\/regulon-create-\S+\.tgz create (\S+)$/m.exec(doc)?.[1];
  assert.equal(name, 'memcached-operator');

  const parent = mkdtempSync(join(tmpdir(), 'regulon-tutorial-'));
  try {
    const dir = await scaffold(parent, name);
    await sh('npx', ['--no-install', ...createApi], { cwd: dir });
    for (const { path, code } of files) writeFileSync(join(dir, path), code);
    await sh('npm', ['run', 'generate'], { cwd: dir });
    assert.match(
      readFileSync(join(dir, 'deploy', 'rbac', 'role.yaml'), 'utf8'),
      /resources: \[deployments\]/,
    );
    await assertProjectTestsPass(dir, [
      'a Memcached runs its size in Pods, is Ready when they are available, and scales',
      'the API server refuses a size out of range, saying which field',
    ]);
    const lines = (path: string) => readFileSync(join(dir, path), 'utf8').trimEnd().split('\n').length;
    console.log(
      `tutorial operator: ${lines('src/api/memcached.ts') + lines('src/controllers/memcached.ts')} lines (kind ${lines('src/api/memcached.ts')}, controller ${lines('src/controllers/memcached.ts')}), test ${lines('src/controllers/memcached.test.ts')}`,
    );
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});
