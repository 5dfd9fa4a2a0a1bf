// Until the first release the @regulon packages are not on the registry: a
// project is made from the tarballs `npm run pack` writes in a clone of the
// repository (dist/packages/), the scaffolder's own among them. npm runs the
// scaffolder from its tarball with `npx --package DIR/regulon-create-V.tgz
// create NAME`, and the project's Regulon dependencies become `file:` specs of
// the tarballs beside it, so that `npm install` never asks the registry for a
// @regulon package.
import { existsSync, readdirSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { REGULON_VERSION } from './dependencies.ts';
import { NameError } from './names.ts';

/** The file npm pack names a package's tarball: `@regulon/create`, `0.1.0` → `regulon-create-0.1.0.tgz`. */
export function tarballName(pkg: string, version: string): string {
  return `${pkg.replace(/^@/, '').replace('/', '-')}-${version}.tgz`;
}

/**
 * The directory holding the scaffolder's tarball when npm runs it from one,
 * else undefined. npm passes `npx --package SPEC` on to the bin it runs as the
 * `npm_config_package` variable (one spec a line when there are several),
 * relative to `INIT_CWD`, the directory npx was run in.
 */
export function tarballDirOf(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const own = tarballName('@regulon/create', REGULON_VERSION);
  const spec = (env['npm_config_package'] ?? '')
    .split('\n')
    .map((s) => s.trim().replace(/^file:/, ''))
    .find((s) => s === own || s.endsWith(`/${own}`));
  if (!spec) return undefined;
  return resolve(env['INIT_CWD'] ?? process.cwd(), spec, '..');
}

/**
 * Every @regulon tarball of this scaffolder's version in `dir`, as the `file:`
 * spec a project in `projectDir` installs it by (relative, so that the clone
 * and the project can move together). Throws when `dir` holds none.
 */
export function localPackages(dir: string, projectDir: string): Map<string, string> {
  const suffix = `-${REGULON_VERSION}.tgz`;
  const found = existsSync(dir)
    ? readdirSync(dir).filter((f) => f.startsWith('regulon-') && f.endsWith(suffix))
    : [];
  if (!found.length)
    throw new NameError(`no regulon-*${suffix} in ${dir}: run \`npm run pack\` in the clone first`);
  const specs = new Map<string, string>();
  for (const file of found) {
    // regulon-image-catalog-0.1.0.tgz → @regulon/image-catalog
    const name = `@regulon/${file.slice('regulon-'.length, -suffix.length)}`;
    const path = relative(projectDir, join(dir, file));
    specs.set(name, `file:${isAbsolute(path) || path.startsWith('.') ? path : `./${path}`}`);
  }
  return specs;
}
