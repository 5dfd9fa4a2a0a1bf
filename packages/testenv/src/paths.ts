import { existsSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';

/**
 * Where the build scripts are: the nearest ancestor of this module holding
 * tools/control-plane/build.sh. In a checkout that is the repository root; in
 * an installed tarball it is the package's own folder, which ships
 * tools/control-plane, tools/images and tools/lib at the same relative paths
 * (tools/scripts/pack.ts), so the cache keys are the same.
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
  const root = repoRoot();
  // Installed under node_modules, the cluster belongs to the project that runs it, not to the package.
  const owner = root.split(sep).includes('node_modules') ? process.cwd() : root;
  return process.env['REGULON_CLUSTER_DIR'] ?? join(owner, '.cluster');
}
