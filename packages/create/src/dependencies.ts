import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NameError } from './names.ts';

/** This package's own version: a new project asks for the Regulon packages it was made with. */
export const REGULON_VERSION = (
  JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { version: string }
).version;

const regulon = `^${REGULON_VERSION}`;

/**
 * What a new project depends on. The ranges of the third-party packages are
 * the ones the Regulon packages themselves build and test with (a unit test
 * compares them with the repository's manifests), so a project gets no
 * TypeBox or prom-client other than the framework's own.
 */
export const PROJECT_DEPENDENCIES: Readonly<Record<string, string>> = {
  '@regulon/client': regulon,
  '@regulon/crd': regulon,
  '@regulon/options': regulon,
  '@regulon/runtime': regulon,
  'prom-client': '^15.1.3',
  typebox: '^1.4.3',
};

export const PROJECT_DEV_DEPENDENCIES: Readonly<Record<string, string>> = {
  '@regulon/create': regulon,
  '@regulon/generate': regulon,
  '@regulon/testenv': regulon,
  '@types/node': '^24.10.0',
  typescript: '~5.9.3',
};

/** Node's own type stripping runs the project's TypeScript: 22.18 and later, 24. */
export const PROJECT_NODE_ENGINES = '>=22.19.0';

export interface ProjectDependencies {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  /** The @regulon packages the listed ones depend on, pinned to their local tarballs too. */
  overrides?: Record<string, string>;
}

/**
 * A new project's dependency fields: the registry ranges, or with `local`
 * (package name → `file:` spec of its tarball) every @regulon package from
 * its tarball. The ones a project does not list (@regulon/util, …) are
 * reached through the listed ones' `^version` ranges, which npm would look up
 * on the registry: `overrides` points them at their tarballs as well.
 */
export function projectDependencies(local?: ReadonlyMap<string, string>): ProjectDependencies {
  if (!local)
    return { dependencies: { ...PROJECT_DEPENDENCIES }, devDependencies: { ...PROJECT_DEV_DEPENDENCIES } };
  const fromTarball = (deps: Readonly<Record<string, string>>) =>
    Object.fromEntries(
      Object.entries(deps).map(([name, range]) => {
        if (!name.startsWith('@regulon/')) return [name, range];
        const spec = local.get(name);
        if (!spec) throw new NameError(`no tarball of ${name} ${REGULON_VERSION} beside the scaffolder's`);
        return [name, spec];
      }),
    );
  const listed = new Set([...Object.keys(PROJECT_DEPENDENCIES), ...Object.keys(PROJECT_DEV_DEPENDENCIES)]);
  return {
    dependencies: fromTarball(PROJECT_DEPENDENCIES),
    devDependencies: fromTarball(PROJECT_DEV_DEPENDENCIES),
    overrides: Object.fromEntries([...local].filter(([name]) => !listed.has(name)).sort()),
  };
}
