// Configuration loading: the precedence of the four sources, each type's
// parsing and its error message, the help text, per-controller options and
// runCli's exit codes, all without a cluster or a real process exit.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import {
  ConfigError,
  camelCaseKey,
  controllerOptionKeys,
  controllerOptions,
  defineOptions,
  helpText,
  loadConfig,
  runCli,
  type ConfigOf,
  type LoadOptions,
  type OptionSpecs,
} from './index.ts';

const spec = defineOptions({
  name: { flag: 'name', env: 'T_NAME', type: 'string', default: 'regulon', description: 'Instance name.' },
  namespace: { flag: 'namespace', env: 'T_NAMESPACE', type: 'string', description: 'Namespace to watch.' },
  workers: {
    flag: 'workers',
    env: 'T_WORKERS',
    type: 'integer',
    default: 2,
    min: 1,
    max: 64,
    description: 'Worker count.',
  },
  ratio: {
    flag: 'ratio',
    env: 'T_RATIO',
    type: 'number',
    default: 0.5,
    min: 0,
    max: 1,
    description: 'Ratio.',
  },
  verbose: { flag: 'verbose', env: 'T_VERBOSE', type: 'boolean', description: 'Log more.' },
  syncPeriod: {
    flag: 'sync-period',
    env: 'T_SYNC_PERIOD',
    type: 'duration',
    default: '10m',
    min: 1000,
    description: 'Resync interval.',
  },
  logLevel: {
    flag: 'log-level',
    env: 'T_LOG_LEVEL',
    type: 'enum',
    values: ['debug', 'info', 'warn', 'error'],
    default: 'info',
    description: 'Minimum log level.',
  },
});

const dir = mkdtempSync(join(tmpdir(), 'regulon-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
function file(text: string, ext = 'yaml'): string {
  const path = join(dir, `config-${++files}.${ext}`);
  writeFileSync(path, text);
  return path;
}

function load<S extends OptionSpecs = typeof spec>(
  argv: string[],
  env: NodeJS.ProcessEnv = {},
  s: S = spec as unknown as S,
  opts: Partial<LoadOptions> = {},
) {
  const result = loadConfig(s, { argv, env, ...opts });
  assert.equal(result.help, false);
  if (result.help) throw new Error('unreachable');
  return result;
}

/** The message of the ConfigError loading throws. */
function problem(argv: string[], env: NodeJS.ProcessEnv = {}, opts: Partial<LoadOptions> = {}): string {
  try {
    loadConfig(spec, { argv, env, ...opts });
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message;
  }
  assert.fail(`no error for ${argv.join(' ')}`);
}

describe('precedence', () => {
  test('defaults apply when nothing is set, converted to their types', () => {
    const { config, sources, configFile } = load([]);
    assert.deepEqual(config, {
      name: 'regulon',
      namespace: undefined,
      workers: 2,
      ratio: 0.5,
      verbose: false,
      syncPeriod: 600_000,
      logLevel: 'info',
    });
    assert.ok(Object.values(sources).every((s) => s === 'default'));
    assert.equal(configFile, undefined);

    // The value types follow the spec.
    const level: 'debug' | 'info' | 'warn' | 'error' = config.logLevel;
    const workers: number = config.workers;
    const verbose: boolean = config.verbose;
    // @ts-expect-error an option without a default may be undefined
    const namespace: string = config.namespace;
    assert.ok([level, workers, verbose, namespace]);
  });

  test('flag > environment variable > config file > default, and sources says which one won', () => {
    const path = file('name: from-file\nworkers: 3\nlogLevel: debug\n');
    const { config, sources, configFile } = load([`--config=${path}`, '--name', 'from-flag'], {
      T_NAME: 'from-env',
      T_WORKERS: '4',
    });
    assert.equal(configFile, path);
    assert.equal(config.name, 'from-flag');
    assert.equal(config.workers, 4);
    assert.equal(config.logLevel, 'debug');
    assert.equal(config.syncPeriod, 600_000);
    assert.deepEqual(sources, {
      name: 'flag',
      namespace: 'default',
      workers: 'env',
      ratio: 'default',
      verbose: 'default',
      syncPeriod: 'default',
      logLevel: 'file',
    });
  });

  test('config file keys may be option keys or flag names, in YAML or JSON', () => {
    const yaml = file('sync-period: 2m\nlogLevel: warn\nverbose: yes\n');
    assert.deepEqual(
      [load(['--config', yaml]).config.syncPeriod, load(['--config', yaml]).config.logLevel],
      [120_000, 'warn'],
    );
    assert.equal(load(['--config', yaml]).config.verbose, true);
    const json = file('{"sync-period": 1500, "workers": 8, "namespace": null}', 'json');
    const { config, sources } = load(['--config', json]);
    assert.equal(config.syncPeriod, 1500);
    assert.equal(config.workers, 8);
    // null is how a value is left out without deleting the key.
    assert.equal(sources.namespace, 'default');
  });

  test('an environment variable can name the config file; the flag wins over it', () => {
    const a = file('workers: 5\n');
    const b = file('workers: 6\n');
    const opts = { configFileEnv: 'T_CONFIG' };
    assert.equal(load([], { T_CONFIG: a }, spec, opts).config.workers, 5);
    assert.equal(load([`--config=${b}`], { T_CONFIG: a }, spec, opts).config.workers, 6);
  });

  test('an empty environment variable counts as unset', () => {
    const { config, sources } = load([], { T_WORKERS: '', T_NAME: '' });
    assert.equal(config.workers, 2);
    assert.equal(sources.name, 'default');
  });

  test('only the winning value is validated, so a flag can override a bad variable', () => {
    assert.equal(load(['--workers=3'], { T_WORKERS: 'lots' }).config.workers, 3);
  });
});

describe('types', () => {
  test('string: --x v, --x=v, an empty value; a missing value is an error', () => {
    assert.equal(load(['--namespace', 'ns1']).config.namespace, 'ns1');
    assert.equal(load(['--namespace=ns2']).config.namespace, 'ns2');
    assert.equal(load(['--namespace=']).config.namespace, '');
    assert.equal(problem(['--namespace']), 'flag --namespace needs a value');
    assert.equal(
      problem(['--namespace', '--verbose']),
      'flag --namespace needs a value but is followed by "--verbose" (to pass a value starting with "-", write --namespace=<value>)',
    );
    const path = file('namespace: 1.10\n');
    assert.equal(
      problem(['--config', path]),
      `invalid value 1.1 for key "namespace" in config file ${path}: not a string (quote it) (allowed: any string)`,
    );
  });

  test('integer: whole numbers within min..max', () => {
    assert.equal(load(['--workers', '64']).config.workers, 64);
    assert.equal(load([], { T_WORKERS: '+7' }).config.workers, 7);
    assert.equal(
      problem(['--workers=1.5']),
      'invalid value "1.5" for flag --workers: not an integer (allowed: integers from 1 to 64)',
    );
    assert.equal(
      problem([], { T_WORKERS: '65' }),
      'invalid value "65" for environment variable T_WORKERS: out of range (allowed: integers from 1 to 64)',
    );
    // A negative number is a value, not a flag.
    assert.match(problem(['--workers', '-1']), /^invalid value "-1" for flag --workers: out of range/);
  });

  test('number: decimals and exponents within min..max', () => {
    assert.equal(load(['--ratio=0.25']).config.ratio, 0.25);
    assert.equal(load(['--ratio=.5']).config.ratio, 0.5);
    assert.equal(load(['--ratio=1e-1']).config.ratio, 0.1);
    assert.equal(
      problem(['--ratio=half']),
      'invalid value "half" for flag --ratio: not a number (allowed: numbers from 0 to 1)',
    );
    assert.match(problem(['--ratio=2']), /out of range \(allowed: numbers from 0 to 1\)$/);
  });

  test('boolean flags: --x, --x=true|false, --no-x', () => {
    assert.equal(load(['--verbose']).config.verbose, true);
    assert.equal(load(['--verbose=false']).config.verbose, false);
    assert.equal(load(['--verbose=true']).config.verbose, true);
    assert.equal(load(['--verbose', '--no-verbose']).config.verbose, false);
    assert.equal(load(['--no-verbose'], { T_VERBOSE: 'true' }).sources.verbose, 'flag');
    assert.equal(problem(['--no-verbose=true']), 'flag --no-verbose does not take a value');
    assert.equal(
      problem(['--verbose=maybe']),
      'invalid value "maybe" for flag --verbose: not a boolean (allowed: true, false, 1, 0, yes, no)',
    );
    assert.equal(problem(['--verbose', 'false']), 'unexpected argument "false" (write --verbose=false)');
  });

  test('boolean environment variables: true, false, 1, 0, yes, no; anything else names the variable', () => {
    const cases: [string, boolean][] = [
      ['true', true],
      ['false', false],
      ['1', true],
      ['0', false],
      ['yes', true],
      ['no', false],
      ['TRUE', true],
    ];
    for (const [text, value] of cases)
      assert.equal(load([], { T_VERBOSE: text }).config.verbose, value, text);
    assert.equal(
      problem([], { T_VERBOSE: 'on' }),
      'invalid value "on" for environment variable T_VERBOSE: not a boolean (allowed: true, false, 1, 0, yes, no)',
    );
  });

  test('duration: 500ms, 15s, 2m, 1h, combinations and plain milliseconds, stored as milliseconds', () => {
    const cases: [string, number][] = [
      ['1500ms', 1500],
      ['15s', 15_000],
      ['2m', 120_000],
      ['1h', 3_600_000],
      ['1h30m', 5_400_000],
      ['1.1s', 1100],
      ['2500', 2500],
    ];
    for (const [text, ms] of cases) assert.equal(load([`--sync-period=${text}`]).config.syncPeriod, ms, text);
    assert.equal(load(['--config', file('syncPeriod: 4000\n')]).config.syncPeriod, 4000);
    for (const text of ['10x', '-5s', '1.5ms', '1 h', '']) {
      assert.equal(
        problem([`--sync-period=${text}`]),
        `invalid value "${text}" for flag --sync-period: not a duration (allowed: durations of at least 1s, written like 500ms, 15s, 2m, 1h or as whole milliseconds)`,
      );
    }
    assert.match(problem(['--sync-period=500ms']), /: out of range \(allowed: durations of at least 1s,/);
  });

  test('enum: one of the listed values', () => {
    assert.equal(load(['--log-level=error']).config.logLevel, 'error');
    assert.equal(
      problem([], { T_LOG_LEVEL: 'trace' }),
      'invalid value "trace" for environment variable T_LOG_LEVEL: not one of the allowed values (allowed: debug, info, warn, error)',
    );
  });
});

describe('errors', () => {
  test('an unknown flag is an error, with a suggestion when one is close', () => {
    assert.equal(problem(['--foo']), 'unknown flag --foo');
    // Its value is not reported again as a stray argument.
    assert.equal(problem(['--foo', 'bar']), 'unknown flag --foo');
    assert.equal(problem(['--wrokers=3']), 'unknown flag --wrokers; did you mean --workers?');
    assert.equal(problem(['--sync']), 'unknown flag --sync; did you mean --sync-period?');
    assert.equal(problem(['--no-name']), 'unknown flag --no-name; did you mean --name?');
    assert.equal(problem(['-x']), 'unknown flag -x');
    assert.equal(problem(['stray']), 'unexpected argument "stray"');
    assert.equal(problem(['--', '--workers=3']), 'unexpected argument "--workers=3"');
  });

  test('an unknown config file key is an error naming the file', () => {
    const path = file('workers: 3\nsyncPeriods: 1m\n');
    assert.equal(
      problem(['--config', path]),
      `unknown key "syncPeriods" in config file ${path}; did you mean syncPeriod?`,
    );
    const twice = file('syncPeriod: 1m\nsync-period: 2m\n');
    assert.equal(
      problem(['--config', twice]),
      `config file ${twice} sets option syncPeriod twice, as "syncPeriod" and "sync-period"`,
    );
  });

  test('a config file named explicitly must exist', () => {
    const path = join(dir, 'missing.yaml');
    assert.equal(problem([`--config=${path}`]), `config file ${path} does not exist`);
    assert.equal(
      problem([], { T_CONFIG: path }, { configFileEnv: 'T_CONFIG' }),
      `config file ${path} does not exist`,
    );
    assert.equal(problem(['--config']), 'flag --config needs a value');
  });

  test('a config file must parse to a mapping', () => {
    const bad = file('workers: [1\n');
    assert.match(problem(['--config', bad]), new RegExp(`^config file ${bad} is not valid YAML: `));
    const badJson = file('{"workers": }', 'json');
    assert.match(problem(['--config', badJson]), new RegExp(`^config file ${badJson} is not valid JSON: `));
    const list = file('- workers\n');
    assert.equal(
      problem(['--config', list]),
      `config file ${list} must hold a mapping of option names to values`,
    );
    // An empty file is an empty mapping.
    assert.equal(load(['--config', file('')]).sources.workers, 'default');
  });

  test('every problem is reported at once', () => {
    let error: unknown;
    try {
      loadConfig(spec, { argv: ['--foo', '--workers=0'], env: { T_VERBOSE: 'on' } });
    } catch (err) {
      error = err;
    }
    assert.ok(error instanceof ConfigError);
    assert.equal(error.problems.length, 3);
    assert.match(
      error.message,
      /^3 configuration problems:\n {2}- unknown flag --foo\n {2}- invalid value "0"/,
    );
  });

  test('a malformed spec is a programming error (TypeError), not a ConfigError', () => {
    const base = { env: 'T_A', type: 'string', description: 'A.' } as const;
    assert.throws(
      () => defineOptions({ a: { ...base, flag: 'same' }, b: { ...base, env: 'T_B', flag: 'same' } }),
      { name: 'TypeError', message: 'option "b": flag same is also a' },
    );
    assert.throws(() => defineOptions({ a: { ...base, flag: 'a' }, b: { ...base, flag: 'b' } }), {
      message: 'option "b": environment variable T_A is also a',
    });
    assert.throws(() => defineOptions({ a: { ...base, flag: 'config' } }), {
      message: 'option "a": flag config is also the config file flag',
    });
    assert.throws(() => defineOptions({ a: { ...base, flag: 'Bad_Flag' } }), TypeError);
    assert.throws(() => defineOptions({ a: { ...base, flag: 'a', type: 'integer', default: 'three' } }), {
      message: 'invalid value "three" for the default of option "a": not an integer (allowed: integers)',
    });
    assert.throws(
      () => defineOptions({ a: { ...base, flag: 'a', type: 'enum', values: ['x'], default: 'y' } }),
      TypeError,
    );
  });
});

describe('help', () => {
  test('--help or -h anywhere before -- asks for help, whatever else is wrong', () => {
    assert.deepEqual(loadConfig(spec, { argv: ['--foo', '--help'], env: { T_WORKERS: 'x' } }), {
      help: true,
    });
    assert.deepEqual(loadConfig(spec, { argv: ['-h'], env: {} }), { help: true });
    assert.equal(problem(['--', '--help']), 'unexpected argument "--help"');
  });

  test('the help text lists every flag, variable and default, and the precedence', () => {
    const text = helpText(spec, { program: 'regulon-manager', summary: 'Runs the controllers.' });
    assert.ok(text.startsWith('Usage: regulon-manager [flags]\n\nRuns the controllers.\n'));
    for (const option of Object.values(spec)) {
      assert.ok(text.includes(`--${option.flag}`), option.flag);
      assert.ok(text.includes(`[env: ${option.env}]`), option.env);
      assert.ok(text.includes(option.description), option.description);
    }
    const expected = [
      '  --name <string>\n      Instance name.\n      [env: T_NAME] [default: "regulon"]',
      '      [env: T_NAMESPACE] [default: none]',
      '  --workers <integer>\n      Worker count.\n      [env: T_WORKERS] [default: 2] [range: 1..64]',
      '[env: T_RATIO] [default: 0.5] [range: 0..1]',
      '  --verbose, --no-verbose\n      Log more.\n      [env: T_VERBOSE] [default: false]',
      '  --sync-period <duration>\n      Resync interval.\n      [env: T_SYNC_PERIOD] [default: 10m] [range: at least 1s]',
      '  --log-level <debug|info|warn|error>\n      Minimum log level.\n      [env: T_LOG_LEVEL] [default: info]',
      '  --config <path>\n',
      '  -h, --help\n',
      'Precedence, highest first: command-line flag > environment variable > config file > default.',
    ];
    for (const line of expected) assert.ok(text.includes(line), `missing:\n${line}\nin:\n${text}`);
    assert.match(
      helpText(spec, { program: 'p', summary: 's', configFileFlag: 'settings', configFileEnv: 'T_CONFIG' }),
      / {2}--settings <path>\n.*\n {6}\[env: T_CONFIG\]/,
    );
  });
});

describe('controllerOptions', () => {
  test('each controller gets an enabled switch and a concurrency of 1..64', () => {
    const options = controllerOptions(['database', 'cache', 'myapp']);
    assert.deepEqual(Object.keys(options), [
      'databaseEnabled',
      'databaseConcurrency',
      'cacheEnabled',
      'cacheConcurrency',
      'myappEnabled',
      'myappConcurrency',
    ]);
    assert.deepEqual(options.cacheEnabled, {
      flag: 'cache-enabled',
      env: 'REGULON_CACHE_ENABLED',
      type: 'boolean',
      default: true,
      description: 'Run the cache controller.',
    });
    assert.deepEqual(options.myappConcurrency, {
      flag: 'myapp-concurrency',
      env: 'REGULON_MYAPP_CONCURRENCY',
      type: 'integer',
      default: 1,
      min: 1,
      max: 64,
      description: 'Reconciles the myapp controller runs at once.',
    });

    const all = defineOptions({ ...spec, ...options });
    const { config, sources } = load(
      ['--no-cache-enabled', '--database-concurrency=4'],
      {
        REGULON_MYAPP_CONCURRENCY: '8',
      },
      all,
    );
    const typed: { cacheEnabled: boolean; myappConcurrency: number } = config satisfies ConfigOf<typeof all>;
    assert.deepEqual(
      [config.databaseEnabled, typed.cacheEnabled, config.databaseConcurrency, typed.myappConcurrency],
      [true, false, 4, 8],
    );
    assert.equal(sources.myappConcurrency, 'env');
    assert.throws(() => loadConfig(all, { argv: ['--cache-concurrency=65'], env: {} }), {
      message:
        'invalid value "65" for flag --cache-concurrency: out of range (allowed: integers from 1 to 64)',
    });
  });

  test('kebab-case names become camelCase keys; defaults and the prefix can be changed', () => {
    const options = controllerOptions(['my-app'], { enabled: false, concurrency: 4, envPrefix: 'OP' });
    assert.equal(options.myAppEnabled.flag, 'my-app-enabled');
    assert.equal(options.myAppEnabled.env, 'OP_MY_APP_ENABLED');
    assert.equal(options.myAppEnabled.default, false);
    assert.equal(options.myAppConcurrency.env, 'OP_MY_APP_CONCURRENCY');
    assert.equal(options.myAppConcurrency.default, 4);
    assert.throws(() => controllerOptions(['MyApp']), /must be lowercase kebab-case/);
    assert.throws(() => controllerOptions(['db', 'db']), /listed twice/);
    assert.throws(() => controllerOptions(['db'], { concurrency: 100 }), /out of range/);
  });

  test('a digit after a hyphen: redis-2 is redis2 in every key, found by controllerOptionKeys', () => {
    assert.equal(camelCaseKey('redis-2'), 'redis2');
    assert.equal(camelCaseKey('my-app-v2'), 'myAppV2');
    assert.equal(camelCaseKey('a-1-b'), 'a1B');
    const options = controllerOptions(['redis-2', 'my-app-v2']);
    assert.deepEqual(Object.keys(options), [
      'redis2Enabled',
      'redis2Concurrency',
      'myAppV2Enabled',
      'myAppV2Concurrency',
    ]);
    assert.equal(options.redis2Enabled.flag, 'redis-2-enabled');
    assert.equal(options.redis2Enabled.env, 'REGULON_REDIS_2_ENABLED');
    for (const name of ['redis-2', 'my-app-v2']) {
      const keys = controllerOptionKeys(name);
      assert.ok(keys.enabled in options && keys.concurrency in options, name);
    }
    const { config } = load(
      ['--no-redis-2-enabled', '--my-app-v2-concurrency=3'],
      {},
      defineOptions(options),
    );
    const typed: { redis2Enabled: boolean; myAppV2Concurrency: number } = config;
    assert.deepEqual([typed.redis2Enabled, typed.myAppV2Concurrency], [false, 3]);
  });

  test('two names that would share keys are refused, not silently merged', () => {
    assert.throws(
      () => controllerOptions(['redis-2', 'redis2']),
      /controllers "redis-2" and "redis2" would share the option redis2Enabled/,
    );
  });
});

describe('runCli', () => {
  class Exit extends Error {
    readonly code: number;
    constructor(code: number) {
      super(`exit ${code}`);
      this.code = code;
    }
  }

  function cli(argv: string[], env: NodeJS.ProcessEnv = {}) {
    const out: string[] = [];
    const err: string[] = [];
    let code: number | undefined;
    let config: ConfigOf<typeof spec> | undefined;
    try {
      config = runCli(spec, {
        program: 'regulon-manager',
        summary: 'Runs the controllers.',
        argv,
        env,
        stdout: { write: (s: string) => out.push(s) },
        stderr: { write: (s: string) => err.push(s) },
        exit: (c) => {
          throw new Exit(c);
        },
      });
    } catch (e) {
      if (!(e instanceof Exit)) throw e;
      code = e.code;
    }
    return { config, code, stdout: out.join(''), stderr: err.join('') };
  }

  test('returns the configuration when it is good', () => {
    const { config, code, stdout, stderr } = cli(['--workers=3']);
    assert.equal(config?.workers, 3);
    assert.deepEqual([code, stdout, stderr], [undefined, '', '']);
  });

  test('bad configuration prints the problem and exits 2', () => {
    const { config, code, stdout, stderr } = cli(['--workers=abc']);
    assert.equal(code, 2);
    assert.equal(config, undefined);
    assert.equal(stdout, '');
    assert.equal(
      stderr,
      'error: invalid value "abc" for flag --workers: not an integer (allowed: integers from 1 to 64)\n' +
        'Run with --help for the options.\n',
    );
  });

  test('--help prints the help text and exits 0', () => {
    const { code, stdout, stderr } = cli(['--help']);
    assert.equal(code, 0);
    assert.equal(stdout, helpText(spec, { program: 'regulon-manager', summary: 'Runs the controllers.' }));
    assert.equal(stderr, '');
  });
});
