import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The repository root: the nearest ancestor of this package holding
 * tools/control-plane/build.sh. testenv runs from a checkout, never from an
 * installed tarball, because it builds the control plane from the checkout's
 * pinned Go modules.
 */
export function repoRoot(): string {
  let dir = import.meta.dirname;
  for (;;) {
    if (existsSync(join(dir, 'tools', 'control-plane', 'build.sh'))) return dir;
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error('testenv: cannot find tools/control-plane/build.sh above ' + import.meta.dirname);
    dir = parent;
  }
}

/** Where `npm run cluster -- up` keeps its control plane: a known, git-ignored path. */
export function defaultClusterDir(): string {
  return process.env['REGULON_CLUSTER_DIR'] ?? join(repoRoot(), '.cluster');
}
