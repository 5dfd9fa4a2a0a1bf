// The manager as its image runs it (apps/manager/Dockerfile): the workspace
// packages compiled to dist/ by their `build` targets, and the manager's own
// build bundling its compiled entry point with everything it loads at start
// into apps/manager/dist/bundle/ (apps/manager/bundle.ts). From the sources,
// Node's type stripping (a WASM build of swc) would sit in the process and its
// RSS with it; unbundled, every ES module costs a record of its own. Neither
// is what production pays; see tools/bench/results/memory-floor.md.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/**
 * Node's flags before a compiled but unbundled workspace module: the exports
 * condition that selects each package's dist/ rather than its src/*.ts.
 */
export const DIST_NODE_FLAGS = ['--conditions=regulon-dist'] as const;

/**
 * Node's flags on the image's command line (apps/manager/Dockerfile's
 * ENTRYPOINT; keep the two the same): V8 semi-spaces of 4 MiB rather than
 * the default 16, which took about 13 MiB off the bundled manager's peak RSS
 * at N = 100 and 115 MiB at N = 1,000 for no CPU the runs could tell apart
 * (tools/bench/results/memory-floor.md).
 */
export const MANAGER_NODE_FLAGS = ['--max-semi-space-size=4'] as const;

/**
 * Node's arguments that start the manager as its image does: the bundle, with
 * the image's Node flags. `nodeFlags` come after those, so a flag given again
 * there (`--max-semi-space-size=16`) overrides the image's: V8 takes the last.
 */
export function managerCommand(root: string, nodeFlags: readonly string[] = []): string[] {
  return [...MANAGER_NODE_FLAGS, ...nodeFlags, join(root, 'apps', 'manager', 'dist', 'bundle', 'main.js')];
}

/** The same manager compiled but not bundled, as the image ran it before the bundle (with its flags). */
export function managerUnbundledCommand(root: string, nodeFlags: readonly string[] = []): string[] {
  return [
    ...MANAGER_NODE_FLAGS,
    ...DIST_NODE_FLAGS,
    ...nodeFlags,
    join(root, 'apps', 'manager', 'dist', 'main.js'),
  ];
}

/**
 * Builds the manager and every workspace package it depends on into their
 * dist/, the bundle included (nx's `build` targets, so packages unchanged
 * since their last build come from nx's cache and the call takes seconds).
 */
export async function buildManager(root: string, log: (line: string) => void): Promise<void> {
  const started = performance.now();
  log('building the manager and its workspace packages (nx run @regulon/manager:build)');
  await execFileAsync(
    process.execPath,
    [
      join(root, 'node_modules', 'nx', 'dist', 'bin', 'nx.js'),
      'run',
      '@regulon/manager:build',
      '--outputStyle=stream',
    ],
    { cwd: root, maxBuffer: 64 * 2 ** 20 },
  ).catch((err: Error & { stdout?: string; stderr?: string }) => {
    throw new Error(`building the manager failed:\n${err.stdout ?? ''}${err.stderr ?? err.message}`, {
      cause: err,
    });
  });
  log(`  built in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
