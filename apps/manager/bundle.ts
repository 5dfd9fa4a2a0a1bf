// The manager as a few files: its compiled entry point and every module it
// loads at start (the workspace packages' dist/ and their npm dependencies)
// bundled by esbuild into dist/bundle/, which the image runs. Node keeps each
// ES module it loads as a record of its own (typebox alone is 679 of them),
// and the bundle idles about 14 MiB below the same code unbundled
// (tools/bench/results/memory-floor.md).
//
// It runs after tsc (the package's `build` script) and reads dist/, not src/,
// so the bundle is the JavaScript the typecheck passed. Tests and `npm start`
// load the sources and never see it.
import { build } from 'esbuild';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const here = import.meta.dirname;

/**
 * Left out of the bundle, loaded from node_modules as unbundled. Most are
 * imported with `import()` only on a path most processes never take; in the
 * bundle their source would be read and compiled by every process (the
 * OpenTelemetry SDK and client-node cost tens of MiB once evaluated).
 */
const EXTERNAL = [
  '@opentelemetry/sdk-node', // tracing, only when OTEL_* configures an exporter
  '@kubernetes/client-node', // kubeconfig exec/auth-provider plugins and proxies
  'redis', // Cache replication
  'pg', // postgres replication
  'ws', // exec into a Pod for backups
  '@peculiar/x509', // webhook certificates the manager makes itself
  'reflect-metadata', // @peculiar/x509's
  // Not lazy (options and image-catalog import it), but @regulon/client loads
  // it with a require() esbuild cannot see: bundled, a kubeconfig file would
  // load a second copy (1.3 MiB more at rest, measured).
  'yaml',
];

const outdir = join(here, 'dist', 'bundle');
// Chunk names carry a content hash: without this, every build would leave its
// predecessor's chunks behind.
rmSync(outdir, { recursive: true, force: true });
const result = await build({
  entryPoints: [join(here, 'dist', 'main.js')],
  outdir,
  bundle: true,
  // The workspace's own `import()`s stay lazy as chunks loaded on first use:
  // mysql2 (1.4 MB of source) behind the MariaDB driver, the redis wrapper.
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  conditions: ['regulon-dist'],
  external: EXTERNAL,
  // CommonJS dependencies (prom-client, pino) require() Node's built-ins,
  // and an ES module has no `require` of its own.
  banner: {
    js: "import { createRequire as __bundleCreateRequire } from 'node:module'; const require = __bundleCreateRequire(import.meta.url);",
  },
  // Not keepNames: its `__name()` call on every function and class cost
  // 3.5 MiB at rest. Its absence shows only in `.name`, which the check below
  // covers where it is read: error classes.
  keepNames: false,
  // Lines stay as written, so a stack trace's bundle:line reads without a
  // map. The maps chain through tsc's to the TypeScript sources for
  // `--enable-source-maps`, which costs about 20 MiB, so it is not on by default.
  sourcemap: true,
  sourcesContent: false,
  metafile: true,
  logLevel: 'warning',
});

// An error's `name` (`new.target.name` in @regulon/client) and pino's `type`
// for a logged error come from its class's `.name`. esbuild renames a class
// whose name collides with another module's (`NotFoundError2`) and names a
// class that refers to itself `_NotFoundError`; either would change what
// the logs and callers see.
const renamed: string[] = [];
for (const file of Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js'))) {
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(/\b(?:var|let|const) (\w+Error)(\d*) = class(?: (_\w+))?\b/g))
    if (m[2] || m[3]) renamed.push(`${m[1]}${m[2]}${m[3] ? ` (named ${m[3]})` : ''} in ${file}`);
  for (const m of text.matchAll(/\bclass (\w+Error\d+)\b/g)) renamed.push(`${m[1]} in ${file}`);
}
if (renamed.length > 0) {
  console.error(
    `bundle: esbuild changed the name of error classes, so their .name would differ from the sources':\n  ${renamed.join('\n  ')}\n` +
      'rename one of the colliding classes, or stop the class referring to itself by name',
  );
  process.exit(1);
}

// V8 keeps each script's source for its lifetime, as one byte per character
// only if every character is Latin-1: a single "→" makes the whole file
// two-byte, and main.js and its largest chunk held 2.4 MiB of heap instead of
// 1.2 (tools/bench/results/memory-floor.md). esbuild escapes non-ASCII
// characters in code (its default charset) but copies the comments it keeps
// (those on object properties and class members) as written, so what is left
// is in comments, spelled here as \uXXXX. Those comments stand on lines of
// their own, so lengthening them moves no code the source maps point at.
for (const file of Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js'))) {
  const text = readFileSync(file, 'utf8');
  const ascii = text.replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  if (ascii !== text) writeFileSync(file, ascii);
}
