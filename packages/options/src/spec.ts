// The option spec: one entry per option gives its flag, environment variable,
// config-file key, type, default and help line, so the four sources cannot
// drift apart and `--help` is always complete. A spec that is itself wrong
// (duplicate flag, default of the wrong type) is a programming error and
// throws a TypeError as soon as it is defined.
import { invalid } from './errors.ts';
import { convert } from './schema.ts';

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

export interface ConfigFileOptions {
  /** Flag naming the config file; default `config`. */
  configFileFlag?: string;
  /** Environment variable naming the config file when the flag is absent; none by default. */
  configFileEnv?: string;
}

export const DEFAULT_CONFIG_FLAG = 'config';
export const KEBAB = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;
const CAMEL = /^[a-z][a-zA-Z0-9]*$/;
// Upper case only, which also keeps names like `constructor` from reading
// inherited properties of the env object.
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

/** Checks the spec and returns it unchanged, with its literal types kept for {@link ConfigOf}. */
export function defineOptions<const S extends OptionSpecs>(spec: S): S {
  checkSpec(spec, {});
  return spec;
}

/** Throws a TypeError for a malformed spec; returns the defaults converted to their config values. */
export function checkSpec(spec: OptionSpecs, opts: ConfigFileOptions): { defaults: Map<string, unknown> } {
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
    const result = convert(option, option.default);
    if ('why' in result)
      throw new TypeError(invalid(option, option.default, `the default of option "${key}"`, result.why));
    defaults.set(key, result.value);
  }
  return { defaults };
}
