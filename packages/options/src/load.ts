// Resolving every option from its four sources. Everything is checked before
// the caller starts anything: all problems are collected into one
// ConfigError, because fixing a deployment one error per restart is slow.
import { ConfigError, invalid } from './errors.ts';
import { readConfigFile, type FileValue } from './file.ts';
import { parseFlags } from './flags.ts';
import { convert } from './schema.ts';
import {
  DEFAULT_CONFIG_FLAG,
  checkSpec,
  type ConfigFileOptions,
  type ConfigOf,
  type OptionSource,
  type OptionSpecs,
  type SourcesOf,
} from './spec.ts';

export interface LoadOptions extends ConfigFileOptions {
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
}

export type LoadResult<S extends OptionSpecs> =
  | { help: true }
  | { help: false; config: ConfigOf<S>; sources: SourcesOf<S>; configFile: string | undefined };

/**
 * Resolves every option of `spec` from, highest precedence first:
 *
 *   1. a command-line flag (`--name value`, `--name=value`; booleans `--name`,
 *      `--name=false`, `--no-name`),
 *   2. an environment variable (an empty one counts as unset, as manifests
 *      often carry `NAME=` for "not configured"),
 *   3. the config file named by `--config` (YAML or JSON; keys are the option
 *      keys, e.g. `metricsBindAddress`, or the flag names),
 *   4. the option's default.
 *
 * Only the winning value is validated, so a flag can override a bad variable.
 * `--help`/`-h` anywhere before `--` returns `{ help: true }` without reading
 * anything else. Throws a ConfigError listing every problem found.
 */
export function loadConfig<const S extends OptionSpecs>(spec: S, opts: LoadOptions): LoadResult<S> {
  const configFlag = opts.configFileFlag ?? DEFAULT_CONFIG_FLAG;
  const { defaults } = checkSpec(spec, opts);
  const terminator = opts.argv.indexOf('--');
  const options = terminator === -1 ? opts.argv : opts.argv.slice(0, terminator);
  if (options.some((arg) => arg === '--help' || arg === '-h')) return { help: true };

  const problems: string[] = [];
  const flags = parseFlags(spec, opts.argv, configFlag, problems);

  let configFile = flags.configFile;
  if (configFile === undefined && opts.configFileEnv !== undefined) {
    const fromEnv = opts.env[opts.configFileEnv];
    if (fromEnv) configFile = fromEnv;
  }
  const file =
    configFile === undefined ? new Map<string, FileValue>() : readConfigFile(spec, configFile, problems);

  const config: Record<string, unknown> = {};
  const sources: Record<string, OptionSource> = {};
  for (const [key, option] of Object.entries(spec)) {
    let raw: unknown;
    let where: string;
    let source: OptionSource;
    const envValue = opts.env[option.env];
    if (flags.values.has(key)) {
      const flag = flags.values.get(key)!;
      [raw, where, source] = [flag.value, `flag ${flag.rawName}`, 'flag'];
    } else if (envValue !== undefined && envValue !== '') {
      [raw, where, source] = [envValue, `environment variable ${option.env}`, 'env'];
    } else if (file.has(key)) {
      const { value, fileKey } = file.get(key)!;
      [raw, where, source] = [value, `key "${fileKey}" in config file ${configFile}`, 'file'];
    } else {
      config[key] = defaults.get(key);
      sources[key] = 'default';
      continue;
    }
    const result = convert(option, raw);
    if ('why' in result) problems.push(invalid(option, raw, where, result.why));
    else config[key] = result.value;
    sources[key] = source;
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return { help: false, config: config as ConfigOf<S>, sources: sources as SourcesOf<S>, configFile };
}
