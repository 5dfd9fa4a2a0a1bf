// The agent as one self-contained file, dist/bundle/agent.mjs: it runs in
// an engine's container, which has a Node binary copied beside it and no
// node_modules, so every dependency it loads is inside. The
// manager image carries it; an init container copies it with Node into the
// engine Pod (README, "How it gets into the Pod").
//
// It runs after tsc (the package's `build` script) and reads dist/, so the
// bundle is the JavaScript the typecheck passed.
import { build } from 'esbuild';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';

const here = import.meta.dirname;

/**
 * Left out, each imported only with `import()` on a path the agent never
 * takes (checked below: a static import of one fails the build). In a Pod
 * the agent authenticates with its service account token; client-node (18 MB
 * of source, most of it generated API models) is loaded only for a
 * kubeconfig's exec or auth-provider plugin. The agent sets up no tracing.
 */
const LEFT_OUT = new Set(['@kubernetes/client-node', '@opentelemetry/sdk-node']);
const outfile = join(here, 'dist', 'bundle', 'agent.mjs');
const result = await build({
  entryPoints: [join(here, 'dist', 'main.js')],
  outfile,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  conditions: ['regulon-dist'],
  external: [...LEFT_OUT],
  // CommonJS dependencies require() Node's built-ins, and an ES module has no `require` of its own.
  banner: {
    js: "import { createRequire as __bundleCreateRequire } from 'node:module'; const require = __bundleCreateRequire(import.meta.url);",
  },
  // Lines stay as written, so a stack trace's bundle:line reads without a map.
  sourcemap: false,
  metafile: true,
  logLevel: 'warning',
});
// A bundle that still imports a package would fail in the engine's container, which has none.
const outside = Object.values(result.metafile.outputs)
  .flatMap((o) => o.imports)
  .filter((i) => i.external && !isBuiltin(i.path))
  .filter((i) => !(LEFT_OUT.has(i.path) && i.kind === 'dynamic-import'))
  .map((i) => `${i.path} (${i.kind})`);
if (outside.length > 0) {
  console.error(`agent bundle: imports left outside the bundle: ${[...new Set(outside)].join(', ')}`);
  process.exit(1);
}
