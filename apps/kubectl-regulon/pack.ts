// `npm run pack -w @regulon/kubectl-regulon [-- --out DIR]`: the plugin as a
// tarball a user installs (`npm i -g ./regulon-kubectl-regulon-0.1.0.tgz`,
// then `kubectl regulon …`), printed path last. In the repository the plugin
// runs its TypeScript sources against the workspace's apps; the apps are not
// published (they are the manager's), so the tarball carries the plugin
// bundled with everything it imports, and declares no dependency: it installs
// offline and runs on Node 22.19 or 24 with nothing beside it.
//
// esbuild bundles straight from the sources (as tools/scripts/pack.ts stages
// a copy, the repository's package.json and dist/ are not touched). Code
// splitting keeps what a command does not load out of its start: the
// kubeconfig's client-node delegate (about 17 MB, loaded only for an exec or
// auth-provider credential plugin, as EKS and GKE kubeconfigs use) is a
// chunk of its own, read only on that path.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const here = import.meta.dirname;
const root = join(here, '..', '..');
/** What the installed package runs: its bin. */
export const BUNDLE_ENTRY = 'dist/kubectl-regulon.mjs';
/** Node 22 LTS and 24, as the published packages (tools/scripts/pack.ts, NODE_ENGINES). */
const NODE_ENGINES = '>=22.19.0';
/**
 * Optional native speed-ups the bundled drivers try to load and do without
 * (pg's pg-native, ws's bufferutil and utf-8-validate, the redis client's
 * xxhash): in the bundle only because the apps' index modules bring their
 * controllers along; the plugin never opens a database connection.
 */
const OPTIONAL_NATIVE = new Set(['pg-native', 'bufferutil', 'utf-8-validate', '@node-rs/xxhash']);

/** Bundles src/main.ts into `dir`/dist: the entry and its chunks; fails on an import left outside. */
export async function bundle(dir: string): Promise<void> {
  const result = await build({
    entryPoints: { 'kubectl-regulon': join(here, 'src', 'main.ts') },
    outdir: join(dir, 'dist'),
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    // Tracing's SDK: @regulon/runtime imports it lazily, only with OTEL_* set, which a plugin never reads.
    external: ['@opentelemetry/sdk-node', ...OPTIONAL_NATIVE],
    banner: {
      // CommonJS dependencies require() Node's built-ins, and an ES module has no `require` of its own.
      js: "import { createRequire as __bundleCreateRequire } from 'node:module'; const require = __bundleCreateRequire(import.meta.url);",
    },
    minify: false,
    sourcemap: false,
    metafile: true,
    logLevel: 'warning',
  });
  const outside = Object.values(result.metafile.outputs)
    .flatMap((o) => o.imports)
    .filter((i) => i.external && !isBuiltin(i.path) && !OPTIONAL_NATIVE.has(i.path))
    .filter((i) => !(i.path === '@opentelemetry/sdk-node' && i.kind === 'dynamic-import'))
    .map((i) => `${i.path} (${i.kind})`);
  if (outside.length) throw new Error(`imports left outside the bundle: ${[...new Set(outside)].join(', ')}`);
  const entry = join(dir, BUNDLE_ENTRY);
  // The main.ts shebang is kept by esbuild only on the first line; make sure the bin has one.
  const code = readFileSync(entry, 'utf8');
  if (!code.startsWith('#!/usr/bin/env node\n')) writeFileSync(entry, `#!/usr/bin/env node\n${code}`);
  chmodSync(entry, 0o755);
}

interface WorkspaceManifest {
  name: string;
  version: string;
  description?: string;
}

/**
 * A dependency shipped inside the tarball as a module of its own
 * (bundleDependencies), not in the bundle: @regulon/client loads `yaml` with a
 * createRequire of its own, at the first kubeconfig it reads, which a bundler
 * cannot follow. yaml has no dependencies.
 */
const SHIPPED_MODULES = ['yaml'] as const;

/** The package.json of the tarball: the bundle as its bin, nothing to fetch at install. */
export function packedManifest(
  pkg: WorkspaceManifest,
  license: string | undefined,
  shipped: Readonly<Record<string, string>>,
) {
  return {
    name: pkg.name,
    version: pkg.version,
    ...(pkg.description ? { description: pkg.description } : {}),
    ...(license ? { license } : {}),
    type: 'module',
    engines: { node: NODE_ENGINES },
    bin: { 'kubectl-regulon': `./${BUNDLE_ENTRY}` },
    files: ['dist'],
    dependencies: shipped,
    bundleDependencies: Object.keys(shipped),
  };
}

/** Stages the package and packs it into `outDir`; resolves with the tarball's path. */
export async function pack(outDir: string): Promise<string> {
  const staging = mkdtempSync(join(tmpdir(), 'regulon-pack-kubectl-regulon-'));
  try {
    await bundle(staging);
    const pkg = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')) as WorkspaceManifest;
    const license = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { license?: string })
      .license;
    const shipped: Record<string, string> = {};
    for (const name of SHIPPED_MODULES) {
      const from = join(root, 'node_modules', name);
      cpSync(from, join(staging, 'node_modules', name), { recursive: true });
      shipped[name] = (
        JSON.parse(readFileSync(join(from, 'package.json'), 'utf8')) as { version: string }
      ).version;
    }
    writeFileSync(
      join(staging, 'package.json'),
      `${JSON.stringify(packedManifest(pkg, license, shipped), null, 2)}\n`,
    );
    copyFileSync(join(here, 'README.md'), join(staging, 'README.md'));
    copyFileSync(join(root, 'LICENSE'), join(staging, 'LICENSE'));
    mkdirSync(outDir, { recursive: true });
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', outDir], {
      cwd: staging,
      encoding: 'utf8',
    });
    const [{ filename }] = JSON.parse(out) as [{ filename: string }];
    return join(outDir, filename);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  const outDir = resolve(values.out ?? join(root, 'dist', 'packages'));
  console.log(await pack(outDir));
}
