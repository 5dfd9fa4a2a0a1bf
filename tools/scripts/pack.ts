// `npm run pack [-- --out DIR] [package dirs...]`: the publishable tarballs of
// the workspace packages, in dist/packages/ at the root unless --out says
// otherwise. The repository itself runs the TypeScript sources (its package.json
// `exports` default to src/*.ts; only the manager's image and benchmark take the
// `regulon-dist` condition, to the repository's own build); what a user installs is built
// here, in a staging copy, so the repository's package.json files and dist/
// are never touched:
//   1. tsc -p tsconfig.build.json into the staging dist/ (ESM JavaScript, .d.ts,
//      source maps with their sources inlined, since src/ is not shipped);
//   2. the .d.ts files' relative imports end in .js: tsc's
//      rewriteRelativeImportExtensions rewrites the JavaScript only, and
//      while TypeScript 5 maps './x.ts' to x.d.ts in a declaration file,
//      TypeScript 4 rejects it (TS2691) and tools that follow the path
//      literally find no file;
//   3. the published package.json: no `private`, `exports` with `types` and
//      `import` conditions into dist/, `bin` as JavaScript, `files`, semver
//      ranges between the @regulon packages, `engines.node` (Node 22 LTS and
//      24), and the heavy optional parts as optional peer dependencies;
//   4. checks that refuse a broken tarball: a relative import that does not
//      resolve inside dist/, a bare import the manifest does not declare, an
//      optional peer imported other than lazily, a test file in dist/;
//   5. the repository's LICENSE, and the build scripts a package runs at
//      the paths they have here (SHIPPED_TOOLS);
//   6. npm pack of the staging copy.
import { execFile } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import ts from 'typescript';

const execFileAsync = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');

/** The package directories under packages/ that are published, in dependency order. */
export const PUBLISHABLE = [
  'util',
  'queue',
  'client',
  'cache',
  'crd',
  'generate',
  'image-catalog',
  'options',
  'runtime',
  'testenv',
  'create',
] as const;

/**
 * Dependencies a package imports only lazily, for a feature most users leave
 * off: published as optional peer dependencies, so that an install does not
 * pull them in (the OpenTelemetry Node SDK and its exporters are about 35 MB;
 * tracing stays off without OTEL_* variables). The repository keeps them as
 * ordinary dependencies (its lock file and the manager image install them).
 */
export const OPTIONAL_PEERS: Readonly<Record<string, readonly string[]>> = {
  // Tracing's SDK; the webhook certificates' X.509 library (and the decorator metadata it needs).
  '@regulon/runtime': ['@opentelemetry/sdk-node', '@peculiar/x509', 'reflect-metadata'],
};

/**
 * Files of the repository a package carries, at the same paths relative to
 * its root as to the repository's: an installed @regulon/testenv runs the
 * control plane's and the real node's build scripts, with the Go module files
 * that pin what they build and the Debian images' recipes, exactly as the
 * repository does (`regulon-testenv install`). Shipped rather than moved into
 * the package: they share tools/lib/cached-build.sh with the repository's
 * other cached builds, and identical relative paths keep the scripts, and so
 * the cache keys, one and the same.
 */
export const SHIPPED_TOOLS: Readonly<Record<string, readonly string[]>> = {
  '@regulon/testenv': ['tools/lib/cached-build.sh', 'tools/control-plane', 'tools/images'],
};

// Node 22 LTS and 24. 22.19, not 22.0: @kubernetes/client-node 2 depends on
// undici 8, which declares node >=22.19.0.
export const NODE_ENGINES = '>=22.19.0';

type Deps = Record<string, string>;

/** The fields of a workspace package.json this script reads or writes. */
export interface Manifest {
  name: string;
  version: string;
  description?: string;
  license?: string;
  private?: boolean;
  type?: string;
  exports?: Record<string, WorkspaceExport>;
  bin?: Record<string, string>;
  scripts?: Record<string, string>;
  dependencies?: Deps;
  devDependencies?: Deps;
  peerDependencies?: Deps;
}

/**
 * A workspace export: the source path, or the source as `default` with the
 * repository's own build beside it under the `regulon-dist` condition (what
 * the manager image runs: `node --conditions=regulon-dist`).
 */
export type WorkspaceExport = string | { 'regulon-dist'?: string; default: string };

export interface PublishedExport {
  types: string;
  import: string;
  default: string;
}

export interface PublishedManifest {
  name: string;
  version: string;
  description?: string;
  license?: string;
  type: 'module';
  engines: { node: string };
  exports: Record<string, PublishedExport | './package.json'>;
  main: string;
  types: string;
  bin?: Record<string, string>;
  files: string[];
  dependencies?: Deps;
  peerDependencies?: Deps;
  peerDependenciesMeta?: Record<string, { optional: true }>;
  publishConfig: { access: 'public' };
}

/** `./src/a/b.ts` → `a/b` (the module's path inside dist/, without extension). */
function distModule(sourcePath: string, field: string): string {
  const m = /^\.\/src\/(.+)\.ts$/.exec(sourcePath);
  if (!m?.[1]) throw new Error(`${field}: expected ./src/<path>.ts, got ${sourcePath}`);
  return m[1];
}

/**
 * The package.json a user installs, from the workspace's: `versions` gives
 * each publishable package's version (the range of a dependency between them),
 * `built(module)` whether dist/ holds `<module>.js` (an export of a file the
 * build excludes, such as a package's test helpers, is not published).
 */
export function publishedManifest(
  pkg: Manifest,
  versions: ReadonlyMap<string, string>,
  built: (module: string) => boolean,
  license: string | undefined,
): { manifest: PublishedManifest; omittedExports: string[] } {
  const exports: Record<string, PublishedExport | './package.json'> = {};
  const omittedExports: string[] = [];
  for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
    const field = `${pkg.name} exports["${subpath}"]`;
    const source = typeof target === 'string' ? target : target.default;
    // The manifest itself, for tools that read it by resolving the package (Nx finds generators so).
    if (subpath === './package.json' && source === './package.json') {
      exports[subpath] = source;
      continue;
    }
    const module = distModule(source, field);
    // The published exports are made from the source path; a `regulon-dist`
    // path that named another file would run other code in the image than
    // what users install.
    const repositoryBuild = typeof target === 'string' ? undefined : target['regulon-dist'];
    if (repositoryBuild !== undefined && repositoryBuild !== `./dist/${module}.js`)
      throw new Error(
        `${field}: "regulon-dist" is ${repositoryBuild}, but ${source} builds ./dist/${module}.js`,
      );
    if (!built(module)) {
      omittedExports.push(subpath);
      continue;
    }
    // `types` first: TypeScript takes the first condition it knows.
    exports[subpath] = {
      types: `./dist/${module}.d.ts`,
      import: `./dist/${module}.js`,
      default: `./dist/${module}.js`,
    };
  }
  const main = exports['.'];
  if (typeof main === 'string') throw new Error(`${pkg.name}: the "." export is its package.json`);
  if (!main) throw new Error(`${pkg.name}: no "." export in dist/`);

  const optional = OPTIONAL_PEERS[pkg.name] ?? [];
  const dependencies: Deps = {};
  const peerDependencies: Deps = { ...pkg.peerDependencies };
  for (const [dep, range] of Object.entries(pkg.dependencies ?? {})) {
    if (optional.includes(dep)) peerDependencies[dep] = range;
    else if (dep.startsWith('@regulon/')) {
      const version = versions.get(dep);
      if (!version) throw new Error(`${pkg.name} depends on ${dep}, which is not published`);
      dependencies[dep] = `^${version}`;
    } else dependencies[dep] = range;
  }
  for (const dep of optional)
    if (!peerDependencies[dep])
      throw new Error(`${pkg.name}: optional peer ${dep} is not among its dependencies`);

  const manifest: PublishedManifest = {
    name: pkg.name,
    version: pkg.version,
    ...(pkg.description ? { description: pkg.description } : {}),
    ...((pkg.license ?? license) ? { license: pkg.license ?? license } : {}),
    type: 'module',
    engines: { node: NODE_ENGINES },
    exports,
    main: main.import,
    types: main.types,
    ...(pkg.bin
      ? {
          bin: Object.fromEntries(
            Object.entries(pkg.bin).map(([name, source]) => [
              name,
              `./dist/${distModule(source, `${pkg.name} bin["${name}"]`)}.js`,
            ]),
          ),
        }
      : {}),
    files: ['dist', ...new Set((SHIPPED_TOOLS[pkg.name] ?? []).map((path) => path.split('/')[0]!))],
    ...(Object.keys(dependencies).length ? { dependencies } : {}),
    ...(Object.keys(peerDependencies).length ? { peerDependencies } : {}),
    ...(optional.length
      ? {
          peerDependenciesMeta: Object.fromEntries(optional.map((dep) => [dep, { optional: true as const }])),
        }
      : {}),
    publishConfig: { access: 'public' },
  };
  return { manifest, omittedExports };
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile());
}

interface Specifier {
  specifier: string;
  lazy: boolean;
}

/**
 * The module specifiers of a built file, from its syntax tree: static imports
 * and re-exports (also in .d.ts) are eager; `import('…')` (a lazy import, or
 * an inline type in a .d.ts) and `require…('…')` (createRequire) are lazy.
 * Parsed, not matched by pattern, so that code held in a string (the
 * scaffolder's templates) is not taken for the package's own imports.
 */
function specifiers(code: string): Specifier[] {
  const out: Specifier[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier)
      out.push({ specifier: (node.moduleSpecifier as ts.StringLiteral).text, lazy: false });
    else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    )
      out.push({ specifier: node.argument.literal.text, lazy: true });
    else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && /^require\w*$/.test(node.expression.text))) &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    )
      out.push({ specifier: node.arguments[0].text, lazy: true });
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile('built.ts', code, ts.ScriptTarget.Latest, false));
  return out;
}

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Rewrites the relative `.ts` specifiers of a .d.ts to `.js`. */
export function rewriteDeclarationImports(code: string): string {
  const rewrite = (_all: string, head: string, quote: string, path: string) =>
    `${head}${quote}${path}.js${quote}`;
  return code
    .replace(/(\bfrom\s*)(['"])(\.{1,2}\/[^'"]+)\.ts\2/g, rewrite)
    .replace(/(\bimport\s*\(\s*)(['"])(\.{1,2}\/[^'"]+)\.ts\2/g, rewrite);
}

/**
 * What would break a user of the staged package (empty when nothing): every
 * relative import resolves inside dist/, every bare import is a declared
 * dependency (or a Node builtin), an optional peer is imported only lazily
 * from JavaScript and never from the types, no test file is shipped, each
 * bin keeps its node shebang.
 */
export function checkStaged(dir: string, manifest: PublishedManifest): string[] {
  const problems: string[] = [];
  const dist = join(dir, 'dist');
  const declared = new Set([
    ...Object.keys(manifest.dependencies ?? {}),
    ...Object.keys(manifest.peerDependencies ?? {}),
  ]);
  const optional = new Set(Object.keys(manifest.peerDependenciesMeta ?? {}));
  for (const file of filesUnder(dist)) {
    const rel = relative(dir, file);
    if (/\.(test|crash-test|bench)\.|(^|\/)testing\//.test(rel))
      problems.push(`${rel}: a test file in dist/`);
    const isTypes = file.endsWith('.d.ts');
    if (!isTypes && !file.endsWith('.js')) continue;
    for (const { specifier, lazy } of specifiers(readFileSync(file, 'utf8'))) {
      if (specifier.startsWith('node:')) continue;
      if (specifier.startsWith('.')) {
        if (!specifier.endsWith('.js')) {
          problems.push(`${rel}: relative import ${specifier} does not end in .js`);
          continue;
        }
        const target = resolve(dirname(file), isTypes ? specifier.replace(/\.js$/, '.d.ts') : specifier);
        if (!target.startsWith(dist + '/') || !existsSync(target))
          problems.push(`${rel}: ${specifier} does not resolve inside dist/`);
        continue;
      }
      const name = packageOf(specifier);
      if (name === manifest.name) continue;
      if (!declared.has(name))
        problems.push(`${rel}: imports ${specifier}, which ${manifest.name} does not depend on`);
      else if (optional.has(name) && (isTypes || !lazy))
        problems.push(
          `${rel}: the optional peer ${name} is imported ${isTypes ? 'by the types' : 'eagerly'}`,
        );
    }
  }
  if (!existsSync(join(dir, 'LICENSE'))) problems.push('no LICENSE');
  for (const path of SHIPPED_TOOLS[manifest.name] ?? [])
    if (!existsSync(join(dir, path))) problems.push(`${path} is not shipped`);
  for (const [name, bin] of Object.entries(manifest.bin ?? {})) {
    const file = join(dir, bin);
    if (!existsSync(file)) problems.push(`bin ${name}: ${bin} was not built`);
    else if (!readFileSync(file, 'utf8').startsWith('#!/usr/bin/env node\n'))
      problems.push(`bin ${name}: ${bin} does not start with #!/usr/bin/env node`);
  }
  return problems;
}

export interface Packed {
  name: string;
  version: string;
  tarball: string;
  /** The tarball's size. */
  bytes: number;
  /** Unpacked size, as npm reports it. */
  unpackedBytes: number;
  files: number;
  /** Export subpaths of the workspace package that are not published (built files excluded). */
  omittedExports: string[];
}

function readManifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
}

async function packOne(
  dir: (typeof PUBLISHABLE)[number],
  outDir: string,
  versions: ReadonlyMap<string, string>,
  license: string | undefined,
): Promise<Packed> {
  const source = join(root, 'packages', dir);
  const read = readManifest(source);
  const pkg = { ...read, version: versions.get(read.name) ?? read.version };
  const staging = mkdtempSync(join(tmpdir(), `regulon-pack-${dir}-`));
  try {
    const dist = join(staging, 'dist');
    await execFileAsync(
      process.execPath,
      [
        join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
        '-p',
        join(source, 'tsconfig.build.json'),
        '--outDir',
        dist,
        '--inlineSources',
      ],
      { cwd: source },
    ).catch((err: Error & { stdout?: string }) => {
      throw new Error(`${pkg.name}: tsc failed\n${err.stdout || err.message}`, { cause: err });
    });
    for (const file of filesUnder(dist).filter((f) => f.endsWith('.d.ts')))
      writeFileSync(file, rewriteDeclarationImports(readFileSync(file, 'utf8')));

    const { manifest, omittedExports } = publishedManifest(
      pkg,
      versions,
      (module) => existsSync(join(dist, `${module}.js`)),
      license,
    );
    writeFileSync(join(staging, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
    if (existsSync(join(source, 'README.md')))
      copyFileSync(join(source, 'README.md'), join(staging, 'README.md'));
    copyFileSync(join(root, 'LICENSE'), join(staging, 'LICENSE'));
    for (const path of SHIPPED_TOOLS[pkg.name] ?? [])
      cpSync(join(root, path), join(staging, path), { recursive: true });
    for (const bin of Object.values(manifest.bin ?? {}))
      if (existsSync(join(staging, bin))) chmodSync(join(staging, bin), 0o755);

    const problems = checkStaged(staging, manifest);
    if (problems.length) throw new Error(`${pkg.name}: not packed:\n  ${problems.join('\n  ')}`);

    const { stdout } = await execFileAsync(
      'npm',
      ['pack', staging, '--pack-destination', outDir, '--json', '--ignore-scripts'],
      { cwd: staging },
    );
    const [report] = JSON.parse(stdout) as Array<{
      filename: string;
      size: number;
      unpackedSize: number;
      entryCount: number;
    }>;
    if (!report) throw new Error(`${pkg.name}: npm pack reported nothing`);
    return {
      name: pkg.name,
      version: pkg.version,
      tarball: join(outDir, report.filename),
      bytes: report.size,
      unpackedBytes: report.unpackedSize,
      files: report.entryCount,
      omittedExports,
    };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * Packs the publishable packages (all by default) into `outDir`; with
 * `version`, every one at that version instead of its manifest's (a release's
 * dry run packs the version it would publish without writing it).
 */
export async function packAll(
  outDir: string,
  dirs: readonly (typeof PUBLISHABLE)[number][] = PUBLISHABLE,
  version?: string,
): Promise<Packed[]> {
  mkdirSync(outDir, { recursive: true });
  const versions = new Map(
    PUBLISHABLE.map((d) => readManifest(join(root, 'packages', d))).map((m) => [
      m.name,
      version ?? m.version,
    ]),
  );
  const license = readManifest(root).license;
  // Settled, not Promise.all: a failure must not end the process while the
  // other packages' staging copies are still being removed.
  const results = await Promise.allSettled(dirs.map((dir) => packOne(dir, outDir, versions, license)));
  const failed = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
  if (failed.length) throw new AggregateError(failed, failed.map((e) => e.message).join('\n'));
  return results.map((r) => (r as PromiseFulfilledResult<Packed>).value);
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(0)} KiB`;
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    options: { out: { type: 'string', default: join(root, 'dist', 'packages') } },
    allowPositionals: true,
  });
  for (const p of positionals)
    if (!(PUBLISHABLE as readonly string[]).includes(p))
      throw new Error(`not a publishable package: ${p} (one of ${PUBLISHABLE.join(', ')})`);
  const outDir = resolve(values.out);
  const packed = await packAll(
    outDir,
    positionals.length ? (positionals as (typeof PUBLISHABLE)[number][]) : PUBLISHABLE,
  );
  for (const p of packed) {
    const omitted = p.omittedExports.length ? `  (not published: ${p.omittedExports.join(', ')})` : '';
    console.log(
      `${relative(process.cwd(), p.tarball)}  ${kib(p.bytes)} packed, ${kib(p.unpackedBytes)} unpacked, ${p.files} files${omitted}`,
    );
  }
}
