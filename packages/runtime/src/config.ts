// Declarative configuration for a manager binary: one spec per option gives its
// flag, environment variable, config-file key, type, default and help line, so
// the four sources cannot drift apart and `--help` is always complete.
//
// Everything is checked before the caller starts anything: all problems are
// collected into one ConfigError, because fixing a deployment one error per
// restart is slow. A spec that is itself wrong (duplicate flag, default of the
// wrong type) is a programming error and throws a TypeError instead.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseDocument } from 'yaml';

export type OptionType = 'string' | 'integer' | 'number' | 'boolean' | 'duration' | 'enum';

export interface OptionSpec {
  /** Kebab-case flag name without dashes, e.g. `metrics-bind-address`. */
  readonly flag: string;
  /** Environment variable, e.g. `REGULON_METRICS_BIND_ADDRESS`. */
  readonly env: string;
  readonly type: OptionType;
  /**
   * Written as in a config file: durations may be `'15s'` or milliseconds.
   * Without one, a boolean defaults to false and anything else to undefined.
   */
  readonly default?: unknown;
  readonly description: string;
  /** The allowed values of an enum. */
  readonly values?: readonly string[];
  /** Inclusive bounds of an integer, number or duration (milliseconds). */
  readonly min?: number;
  readonly max?: number;
}

export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

export type OptionSource = 'default' | 'file' | 'env' | 'flag';

type ValueOf<O extends OptionSpec> = O['type'] extends 'string'
  ? string
  : O['type'] extends 'boolean'
    ? boolean
    : O['type'] extends 'enum'
      ? O extends { readonly values: readonly (infer V extends string)[] }
        ? V
        : string
      : number;

/** The loaded configuration: durations are milliseconds; options with no default may be undefined. */
export type ConfigOf<S extends OptionSpecs> = {
  -readonly [K in keyof S]: S[K] extends { readonly default: NonNullable<unknown> }
    ? ValueOf<S[K]>
    : S[K]['type'] extends 'boolean'
      ? boolean
      : ValueOf<S[K]> | undefined;
};

export type SourcesOf<S extends OptionSpecs> = { -readonly [K in keyof S]: OptionSource };

/** Bad configuration from a flag, variable or file; `message` is meant for the person running the binary. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly problems: readonly string[];

  constructor(problems: string | readonly string[]) {
    const list = typeof problems === 'string' ? [problems] : problems;
    super(
      list.length === 1
        ? String(list[0])
        : `${list.length} configuration problems:\n${list.map((p) => `  - ${p}`).join('\n')}`,
    );
    this.problems = list;
  }
}

/** Checks the spec and returns it unchanged, with its literal types kept for {@link ConfigOf}. */
export function defineOptions<const S extends OptionSpecs>(spec: S): S {
  checkSpec(spec, {});
  return spec;
}

export interface ConfigFileOptions {
  /** Flag naming the config file; default `config`. */
  configFileFlag?: string;
  /** Environment variable naming the config file when the flag is absent; none by default. */
  configFileEnv?: string;
}

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
    const result = coerce(option, raw);
    if ('why' in result) problems.push(invalid(option, raw, where, result.why));
    else config[key] = result.value;
    sources[key] = source;
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return { help: false, config: config as ConfigOf<S>, sources: sources as SourcesOf<S>, configFile };
}

export interface HelpOptions extends ConfigFileOptions {
  /** The binary's name, for the usage line. */
  program: string;
  /** A sentence on what the binary does. */
  summary: string;
}

/** `--help` output: every option with its flag, variable, type, default and description, then the precedence. */
export function helpText<const S extends OptionSpecs>(spec: S, opts: HelpOptions): string {
  const configFlag = opts.configFileFlag ?? DEFAULT_CONFIG_FLAG;
  const { defaults } = checkSpec(spec, opts);
  const lines = [`Usage: ${opts.program} [flags]`, '', opts.summary, '', 'Flags:'];
  for (const [key, option] of Object.entries(spec)) {
    const name =
      option.type === 'boolean'
        ? `--${option.flag}, --no-${option.flag}`
        : `--${option.flag} ${placeholder(option)}`;
    const details = [`[env: ${option.env}]`];
    const fallback = defaults.get(key);
    details.push(fallback === undefined ? '[default: none]' : `[default: ${display(option, fallback)}]`);
    const range = rangeText(option, '..');
    if (range) details.push(`[range: ${range}]`);
    lines.push(`  ${name}`, `      ${option.description}`, `      ${details.join(' ')}`);
  }
  lines.push(
    `  --${configFlag} <path>`,
    '      Read options from this YAML or JSON file.',
    ...(opts.configFileEnv ? [`      [env: ${opts.configFileEnv}]`] : []),
    '  -h, --help',
    '      Print this help and exit.',
    '',
    'Precedence, highest first: command-line flag > environment variable > config file > default.',
    'Config file keys are option names (e.g. metricsBindAddress) or flag names (metrics-bind-address).',
    'Durations: 500ms, 15s, 2m, 1h, combinations such as 1h30m, or whole milliseconds.',
    'Booleans in the environment or --flag=value: true, false, 1, 0, yes, no. An empty variable counts as unset.',
    '',
  );
  return lines.join('\n');
}

export interface ControllerOptionsDefaults {
  /** Default true. */
  enabled?: boolean;
  /** Default 1. */
  concurrency?: number;
  /** Prefix of the environment variables; default `REGULON`. */
  envPrefix?: string;
}

type CamelCase<S extends string> = S extends `${infer Head}-${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;

interface BooleanOption extends OptionSpec {
  readonly type: 'boolean';
  readonly default: boolean;
}
interface IntegerOption extends OptionSpec {
  readonly type: 'integer';
  readonly default: number;
}
export type ControllerOptions<N extends string> = {
  readonly [K in N as `${CamelCase<K>}Enabled`]: BooleanOption;
} & { readonly [K in N as `${CamelCase<K>}Concurrency`]: IntegerOption };

export const MAX_CONTROLLER_CONCURRENCY = 64;

/**
 * The camelCase key of a kebab-case name: each hyphen dropped and the
 * character after it upper-cased (`my-app` → `myApp`), as the CamelCase type
 * above does, so that ConfigOf's keys are the keys at run time. A digit has
 * no upper case: `redis-2` → `redis2`, the same key as the name `redis2`'s.
 * So the mapping has no inverse on strings (a camelCase key cannot tell
 * where a hyphen was): the kebab-case name is what a controller is known by,
 * flags and variables keep its hyphens (`--redis-2-enabled`,
 * `REGULON_REDIS_2_ENABLED`), and controllerOptions refuses two names that
 * share a key, so within one binary each key leads back to one name.
 * The one conversion: everything that finds a controller's options by its
 * name (the manager, the generated manifests) goes through
 * {@link controllerOptionKeys}.
 */
export function camelCaseKey(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The keys, in a config from {@link controllerOptions}, of the options of the controller `name`. */
export function controllerOptionKeys(name: string): { enabled: string; concurrency: string } {
  const key = camelCaseKey(name);
  return { enabled: `${key}Enabled`, concurrency: `${key}Concurrency` };
}

/**
 * Per-controller switches, to spread into a spec: for a controller `my-app`,
 * `myAppEnabled` (`--my-app-enabled`, `REGULON_MY_APP_ENABLED`) and
 * `myAppConcurrency` (`--my-app-concurrency`, `REGULON_MY_APP_CONCURRENCY`,
 * 1..{@link MAX_CONTROLLER_CONCURRENCY}). Names are lowercase kebab-case.
 */
export function controllerOptions<const N extends readonly string[]>(
  names: N,
  defaults: ControllerOptionsDefaults = {},
): ControllerOptions<N[number]> {
  const prefix = defaults.envPrefix ?? 'REGULON';
  const options: Record<string, OptionSpec> = {};
  const byKey = new Map<string, string>();
  for (const name of names) {
    if (!KEBAB.test(name)) throw new TypeError(`controller name "${name}" must be lowercase kebab-case`);
    const keys = controllerOptionKeys(name);
    const other = byKey.get(keys.enabled);
    if (other === name) throw new TypeError(`controller "${name}" is listed twice`);
    if (other !== undefined)
      throw new TypeError(
        `controllers "${other}" and "${name}" would share the option ${keys.enabled}: rename one`,
      );
    byKey.set(keys.enabled, name);
    const env = `${prefix}_${name.toUpperCase().replaceAll('-', '_')}`;
    options[keys.enabled] = {
      flag: `${name}-enabled`,
      env: `${env}_ENABLED`,
      type: 'boolean',
      default: defaults.enabled ?? true,
      description: `Run the ${name} controller.`,
    };
    options[keys.concurrency] = {
      flag: `${name}-concurrency`,
      env: `${env}_CONCURRENCY`,
      type: 'integer',
      default: defaults.concurrency ?? 1,
      min: 1,
      max: MAX_CONTROLLER_CONCURRENCY,
      description: `Reconciles the ${name} controller runs at once.`,
    };
  }
  checkSpec(options, {});
  return options as ControllerOptions<N[number]>;
}

export interface Writable {
  write(chunk: string): unknown;
}

export interface RunCliOptions extends HelpOptions {
  /** Default `process.argv.slice(2)`. */
  argv?: readonly string[];
  /** Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  stdout?: Writable;
  stderr?: Writable;
  /** Default `process.exit`; a replacement must not return (throw instead). */
  exit?: (code: number) => never;
}

/**
 * The configuration for a binary's `main`: prints help and exits 0 on
 * `--help`; prints the problems and exits 2 on bad configuration (2 being the
 * conventional status for usage errors, distinct from a crash's 1).
 */
export function runCli<const S extends OptionSpecs>(spec: S, opts: RunCliOptions): ConfigOf<S> {
  const exit = opts.exit ?? ((code: number): never => process.exit(code));
  let result: LoadResult<S>;
  try {
    result = loadConfig(spec, {
      argv: opts.argv ?? process.argv.slice(2),
      env: opts.env ?? process.env,
      configFileFlag: opts.configFileFlag,
      configFileEnv: opts.configFileEnv,
    });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    (opts.stderr ?? process.stderr).write(`error: ${err.message}\nRun with --help for the options.\n`);
    return exit(2);
  }
  if (result.help) {
    (opts.stdout ?? process.stdout).write(helpText(spec, opts));
    return exit(0);
  }
  return result.config;
}

const DEFAULT_CONFIG_FLAG = 'config';
const KEBAB = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;
const CAMEL = /^[a-z][a-zA-Z0-9]*$/;
// Upper case only, which also keeps names like `constructor` from reading
// inherited properties of the env object.
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
const BOOLEAN_WORDS = new Map([
  ['true', true],
  ['false', false],
  ['1', true],
  ['0', false],
  ['yes', true],
  ['no', false],
]);
const DURATION_UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/** Throws a TypeError for a malformed spec; returns the defaults converted to their config values. */
function checkSpec(spec: OptionSpecs, opts: ConfigFileOptions): { defaults: Map<string, unknown> } {
  const configFlag = opts.configFileFlag ?? DEFAULT_CONFIG_FLAG;
  const flags = new Map<string, string>([
    ['help', 'the help flag'],
    [configFlag, 'the config file flag'],
  ]);
  if (!KEBAB.test(configFlag)) throw new TypeError(`config file flag "${configFlag}" must be kebab-case`);
  const envs = new Map<string, string>();
  if (opts.configFileEnv !== undefined) {
    if (!ENV_NAME.test(opts.configFileEnv))
      throw new TypeError(`"${opts.configFileEnv}" is not a variable name`);
    envs.set(opts.configFileEnv, 'the config file variable');
  }
  const fileKeys = new Map<string, string>();
  const defaults = new Map<string, unknown>();
  const claim = (names: Map<string, string>, name: string, key: string, what: string): void => {
    const owner = names.get(name);
    if (owner !== undefined && owner !== key)
      throw new TypeError(`option "${key}": ${what} ${name} is also ${owner}`);
    names.set(name, key);
  };
  for (const [key, option] of Object.entries(spec)) {
    if (!CAMEL.test(key)) throw new TypeError(`option key "${key}" must be camelCase`);
    if (!KEBAB.test(option.flag))
      throw new TypeError(`option "${key}": flag "${option.flag}" must be kebab-case`);
    if (!ENV_NAME.test(option.env))
      throw new TypeError(`option "${key}": "${option.env}" is not an upper-case variable name`);
    claim(flags, option.flag, key, 'flag');
    if (option.type === 'boolean') claim(flags, `no-${option.flag}`, key, 'flag');
    claim(envs, option.env, key, 'environment variable');
    claim(fileKeys, key, key, 'config file key');
    claim(fileKeys, option.flag, key, 'config file key');
    if (option.type === 'enum' && !option.values?.length)
      throw new TypeError(`option "${key}": an enum needs values`);
    if (option.min !== undefined && option.max !== undefined && option.min > option.max) {
      throw new TypeError(`option "${key}": min ${option.min} is above max ${option.max}`);
    }
    if (option.default === undefined) {
      defaults.set(key, option.type === 'boolean' ? false : undefined);
      continue;
    }
    const result = coerce(option, option.default);
    if ('why' in result)
      throw new TypeError(invalid(option, option.default, `the default of option "${key}"`, result.why));
    defaults.set(key, result.value);
  }
  return { defaults };
}

interface FlagValue {
  value: string | boolean;
  rawName: string;
}

interface ParsedFlags {
  values: Map<string, FlagValue>;
  configFile: string | undefined;
}

function parseFlags(
  spec: OptionSpecs,
  argv: readonly string[],
  configFlag: string,
  problems: string[],
): ParsedFlags {
  const byFlag = new Map<string, [string, OptionSpec]>();
  for (const [key, option] of Object.entries(spec)) byFlag.set(option.flag, [key, option]);
  const parsed: ParsedFlags = { values: new Map(), configFile: undefined };
  // Declaring which flags take a value is all parseArgs is used for: its
  // strict mode would reject `--enabled=false` and stop at the first problem.
  const declared: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
    [configFlag]: { type: 'string' },
  };
  for (const option of Object.values(spec)) {
    declared[option.flag] = { type: option.type === 'boolean' ? 'boolean' : 'string' };
  }
  const { tokens } = parseArgs({ args: [...argv], options: declared, strict: false, tokens: true });

  // A word right after an unknown flag was most likely its value; reporting
  // it as well would only add noise.
  let afterUnknown = false;
  let previous: { rawName: string; type?: OptionType } | undefined;
  for (const token of tokens) {
    if (token.kind === 'option-terminator') continue;
    if (token.kind === 'positional') {
      if (!afterUnknown) {
        const hint =
          previous?.type === 'boolean' && BOOLEAN_WORDS.has(token.value.toLowerCase())
            ? ` (write ${previous.rawName}=${token.value})`
            : '';
        problems.push(`unexpected argument "${token.value}"${hint}`);
      }
      afterUnknown = false;
      previous = undefined;
      continue;
    }
    afterUnknown = false;
    const { name, rawName, value } = token;
    const negated = name.startsWith('no-') ? byFlag.get(name.slice(3)) : undefined;
    const entry = byFlag.get(name) ?? (negated?.[1].type === 'boolean' ? negated : undefined);
    previous = { rawName, ...(entry ? { type: entry[1].type } : {}) };
    if (name === configFlag || (entry && entry[1].type !== 'boolean')) {
      if (value === undefined) {
        problems.push(`flag ${rawName} needs a value`);
        continue;
      }
      // parseArgs takes the next argument as the value even when it looks like
      // a flag; `--name --other` is far more often a forgotten value.
      if (!token.inlineValue && value.startsWith('-') && !/^-[\d.]/.test(value)) {
        problems.push(
          `flag ${rawName} needs a value but is followed by "${value}" (to pass a value starting with "-", write ${rawName}=<value>)`,
        );
        continue;
      }
      if (name === configFlag) {
        if (value === '') problems.push(`flag ${rawName} needs a path`);
        else parsed.configFile = value;
      } else if (entry) {
        parsed.values.set(entry[0], { value, rawName });
      }
    } else if (entry && entry === negated) {
      if (value !== undefined) problems.push(`flag ${rawName} does not take a value`);
      else parsed.values.set(entry[0], { value: false, rawName });
    } else if (entry) {
      parsed.values.set(entry[0], { value: value ?? true, rawName });
    } else if (name === 'help') {
      // Reached only as `--help=...`, since a bare --help returned earlier.
      problems.push(`flag ${rawName} does not take a value`);
    } else {
      const candidates = [...byFlag.keys(), configFlag, 'help'];
      problems.push(`unknown flag ${rawName}${suggest(name.replace(/^no-/, ''), candidates, '--')}`);
      afterUnknown = value === undefined;
    }
  }
  return parsed;
}

interface FileValue {
  value: unknown;
  /** The option key or flag name it was written under, for messages. */
  fileKey: string;
}

/** The file's values by option key; problems are appended. */
function readConfigFile(spec: OptionSpecs, path: string, problems: string[]): Map<string, FileValue> {
  const values = new Map<string, FileValue>();
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    problems.push(
      code === 'ENOENT'
        ? `config file ${path} does not exist`
        : `cannot read config file ${path}: ${(err as Error).message}`,
    );
    return values;
  }
  let data: unknown;
  if (path.endsWith('.json')) {
    try {
      data = JSON.parse(text);
    } catch (err) {
      problems.push(`config file ${path} is not valid JSON: ${(err as Error).message}`);
      return values;
    }
  } else {
    const doc = parseDocument(text);
    if (doc.errors.length > 0) {
      problems.push(`config file ${path} is not valid YAML: ${doc.errors[0]!.message}`);
      return values;
    }
    data = doc.toJS();
  }
  if (data === null || data === undefined) return values;
  if (typeof data !== 'object' || Array.isArray(data)) {
    problems.push(`config file ${path} must hold a mapping of option names to values`);
    return values;
  }

  const byFileKey = new Map<string, string>();
  for (const [key, option] of Object.entries(spec)) {
    byFileKey.set(key, key);
    byFileKey.set(option.flag, key);
  }
  const foundAs = new Map<string, string>();
  for (const [fileKey, value] of Object.entries(data)) {
    const key = byFileKey.get(fileKey);
    if (key === undefined) {
      problems.push(
        `unknown key "${fileKey}" in config file ${path}${suggest(fileKey, [...byFileKey.keys()], '')}`,
      );
      continue;
    }
    const earlier = foundAs.get(key);
    if (earlier !== undefined) {
      problems.push(`config file ${path} sets option ${key} twice, as "${earlier}" and "${fileKey}"`);
      continue;
    }
    foundAs.set(key, fileKey);
    // `key:` with nothing after it is how YAML comments a value out.
    if (value !== null) values.set(key, { value, fileKey });
  }
  return values;
}

type Coerced = { value: unknown } | { why: string };

/** Converts a flag/env string or a file/default value to the option's type. */
function coerce(option: OptionSpec, raw: unknown): Coerced {
  switch (option.type) {
    case 'string':
      return typeof raw === 'string' ? { value: raw } : { why: 'not a string (quote it)' };
    case 'enum':
      return typeof raw === 'string' && option.values?.includes(raw)
        ? { value: raw }
        : { why: 'not one of the allowed values' };
    case 'boolean': {
      const value =
        typeof raw === 'boolean'
          ? raw
          : typeof raw === 'string'
            ? BOOLEAN_WORDS.get(raw.toLowerCase())
            : undefined;
      return value === undefined ? { why: 'not a boolean' } : { value };
    }
    case 'integer': {
      const value =
        typeof raw === 'number' ? raw : typeof raw === 'string' && /^[+-]?\d+$/.test(raw) ? Number(raw) : NaN;
      return Number.isSafeInteger(value) ? inRange(option, value) : { why: 'not an integer' };
    }
    case 'number': {
      const numeric = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;
      const value =
        typeof raw === 'number' ? raw : typeof raw === 'string' && numeric.test(raw) ? Number(raw) : NaN;
      return Number.isFinite(value) ? inRange(option, value) : { why: 'not a number' };
    }
    case 'duration': {
      const value = typeof raw === 'number' ? raw : typeof raw === 'string' ? parseDuration(raw) : undefined;
      return value !== undefined && Number.isSafeInteger(value) && value >= 0
        ? inRange(option, value)
        : { why: 'not a duration' };
    }
  }
}

function inRange(option: OptionSpec, value: number): Coerced {
  if ((option.min !== undefined && value < option.min) || (option.max !== undefined && value > option.max)) {
    return { why: 'out of range' };
  }
  return { value };
}

function parseDuration(text: string): number | undefined {
  if (/^\d+$/.test(text)) return Number(text);
  if (!/^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/.test(text)) return undefined;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
    total += Number(amount) * DURATION_UNITS[unit as keyof typeof DURATION_UNITS];
  }
  // 1.1s is 1100.0000000000002 in floating point; anything further from a
  // whole millisecond is a real fraction, which a millisecond store cannot keep.
  const rounded = Math.round(total);
  return Math.abs(total - rounded) < 1e-6 ? rounded : undefined;
}

function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
    ['ms', 1],
  ] as const) {
    const count = Math.floor(rest / size);
    if (count > 0) parts.push(`${count}${unit}`);
    rest -= count * size;
  }
  return parts.join('');
}

function display(option: OptionSpec, value: unknown): string {
  if (option.type === 'duration' && typeof value === 'number') return formatDuration(value);
  if (option.type === 'string' && typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

function placeholder(option: OptionSpec): string {
  return option.type === 'enum' ? `<${option.values?.join('|')}>` : `<${option.type}>`;
}

function rangeText(option: OptionSpec, separator: string): string | undefined {
  if (option.type !== 'integer' && option.type !== 'number' && option.type !== 'duration') return undefined;
  const show = (n: number): string => (option.type === 'duration' ? formatDuration(n) : String(n));
  if (option.min !== undefined && option.max !== undefined)
    return `${show(option.min)}${separator}${show(option.max)}`;
  if (option.min !== undefined) return `at least ${show(option.min)}`;
  if (option.max !== undefined) return `at most ${show(option.max)}`;
  return undefined;
}

function allowed(option: OptionSpec): string {
  const range = rangeText(option, ' to ');
  const within = range === undefined ? '' : range.startsWith('at ') ? ` of ${range}` : ` from ${range}`;
  switch (option.type) {
    case 'string':
      return 'any string';
    case 'enum':
      return option.values?.join(', ') ?? '';
    case 'boolean':
      return [...BOOLEAN_WORDS.keys()].join(', ');
    case 'integer':
      return `integers${within}`;
    case 'number':
      return `numbers${within}`;
    case 'duration':
      return `durations${within}, written like 500ms, 15s, 2m, 1h or as whole milliseconds`;
  }
}

function invalid(option: OptionSpec, raw: unknown, where: string, why: string): string {
  let shown = JSON.stringify(raw) ?? String(raw);
  if (shown.length > 60) shown = `${shown.slice(0, 57)}...`;
  return `invalid value ${shown} for ${where}: ${why} (allowed: ${allowed(option)})`;
}

/** A close candidate, or the only one `name` abbreviates, as a hint for a typo. */
function suggest(name: string, candidates: readonly string[], prefix: string): string {
  const extending = candidates.filter((c) => c.startsWith(name));
  let best = extending.length === 1 ? extending[0] : undefined;
  let bestDistance = best === undefined ? 3 : 0;
  for (const candidate of candidates) {
    const distance = editDistance(name, candidate);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best === undefined ? '' : `; did you mean ${prefix}${best}?`;
}

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}
