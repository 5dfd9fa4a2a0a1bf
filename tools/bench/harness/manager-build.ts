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

/** Node's arguments that start the manager as its image does: the bundle. */
export function managerCommand(root: string): string[] {
  return [join(root, 'apps', 'manager', 'dist', 'bundle', 'main.js')];
}

/** The same manager compiled but not bundled, as the image ran it before the bundle. */
export function managerUnbundledCommand(root: string): string[] {
  return [...DIST_NODE_FLAGS, join(root, 'apps', 'manager', 'dist', 'main.js')];
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
