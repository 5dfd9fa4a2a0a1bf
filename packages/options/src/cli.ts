// The configuration step of a binary's `main`, with the conventional exits.
import { ConfigError } from './errors.ts';
import { helpText, type HelpOptions } from './help.ts';
import { loadConfig, type LoadResult } from './load.ts';
import type { ConfigOf, OptionSpecs } from './spec.ts';

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
