// The user project's configuration module: regulon.config.ts (or .js, .mjs,
// .mts) exporting a GenerateConfig, as its default export or as `config`.
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { GenerateConfig } from './generate.ts';

/** Where the CLI looks for the configuration, in this order, in the working directory. */
export const CONFIG_FILES = [
  'regulon.config.ts',
  'regulon.config.mts',
  'regulon.config.js',
  'regulon.config.mjs',
];

/** Types a configuration in place: `export default defineConfig({ ... })`. */
export function defineConfig(config: GenerateConfig): GenerateConfig {
  return config;
}

export interface LoadedConfig {
  /** The configuration module's path. */
  path: string;
  config: GenerateConfig;
  /** The output directory: `outDir` resolved against the configuration's directory, default `deploy`. */
  outDir: string;
}

/**
 * Imports the configuration module `path` (or the first of {@link CONFIG_FILES}
 * in `cwd`). A `.ts` configuration runs with Node's own type stripping (Node
 * 22.18 and later, 24).
 */
export async function loadConfig(path?: string, cwd: string = process.cwd()): Promise<LoadedConfig> {
  const file = path ? resolve(cwd, path) : CONFIG_FILES.map((f) => join(cwd, f)).find((f) => existsSync(f));
  if (!file)
    throw new Error(`no configuration: none of ${CONFIG_FILES.join(', ')} in ${cwd} (or pass --config FILE)`);
  if (!existsSync(file)) throw new Error(`no configuration at ${file}`);
  const mod = (await import(pathToFileURL(file).href)) as { default?: unknown; config?: unknown };
  const config = (mod.default ?? mod.config) as GenerateConfig | undefined;
  if (!config || typeof config !== 'object' || !('manager' in config))
    throw new Error(
      `${file}: export the configuration as default (or as \`config\`), with at least \`manager\``,
    );
  const out = config.outDir ?? 'deploy';
  return { path: file, config, outDir: isAbsolute(out) ? out : join(dirname(file), out) };
}
