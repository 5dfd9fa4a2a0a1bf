// The command line. node's util.parseArgs is enough: kubectl's conventions
// need short and long options, `--opt=value` and `--opt value`, and options
// before or after the positionals, which it does; only the command word has to
// be found first, since each command accepts its own options.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { parseDuration } from './duration.ts';
import { UsageError } from './errors.ts';
import { kindOf, type KindInfo } from './kinds.ts';

export interface GlobalOptions {
  namespace?: string | undefined;
  context?: string | undefined;
  kubeconfig?: string | undefined;
}

export type OutputFormat = 'text' | 'json' | 'yaml';

/** How long --wait waits unless --timeout says: a switchover's catch-up (60 s by default) and a promotion fit. */
export const DEFAULT_SWITCHOVER_TIMEOUT_MS = 5 * 60_000;
/** A backup's default --timeout: a physical backup of a few tens of GB into an object store. */
export const DEFAULT_BACKUP_TIMEOUT_MS = 30 * 60_000;

export type Command =
  | { name: 'help'; topic?: string | undefined }
  | { name: 'status'; kind: KindInfo; object: string; output: OutputFormat }
  | { name: 'switchover'; database: string; to?: string | undefined; wait: boolean; timeoutMs: number }
  | { name: 'promote'; database: string; pod: string; wait: boolean; timeoutMs: number }
  | { name: 'backup'; database: string; backupName?: string | undefined; wait: boolean; timeoutMs: number }
  | { name: 'logs'; kind: KindInfo; object: string; tail?: number | undefined; sinceMs?: number | undefined };

export interface Invocation {
  global: GlobalOptions;
  command: Command;
}

type Options = NonNullable<ParseArgsConfig['options']>;

const GLOBAL: Options = {
  namespace: { type: 'string', short: 'n' },
  context: { type: 'string' },
  kubeconfig: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};
const WAIT: Options = { wait: { type: 'boolean' }, timeout: { type: 'string' } };

/** Each command's own options, beside GLOBAL. */
const COMMAND_OPTIONS: Record<Exclude<Command['name'], 'help'>, Options> = {
  status: { output: { type: 'string', short: 'o' } },
  switchover: { to: { type: 'string' }, ...WAIT },
  promote: WAIT,
  backup: { name: { type: 'string' }, ...WAIT },
  logs: { tail: { type: 'string' }, since: { type: 'string' } },
};

const isCommand = (word: string | undefined): word is keyof typeof COMMAND_OPTIONS =>
  word !== undefined && Object.hasOwn(COMMAND_OPTIONS, word);

/** Parses argv (without node and the script); throws UsageError. */
export function parseCommandLine(argv: readonly string[]): Invocation {
  const word = commandWord(argv);
  if (word === undefined) {
    const { values } = parse(argv, GLOBAL);
    return { global: globalOf(values), command: { name: 'help' } };
  }
  if (word === 'help')
    return { global: {}, command: { name: 'help', topic: argv.find((a) => isCommand(a)) } };
  if (!isCommand(word)) throw new UsageError(`unknown command "${word}"`);
  const { values, positionals } = parse(argv, { ...GLOBAL, ...COMMAND_OPTIONS[word] });
  const global = globalOf(values);
  if (values.help === true) return { global, command: { name: 'help', topic: word } };
  const args = positionals.slice(1);
  return { global, command: COMMANDS[word](args, values) };
}

type Values = Record<string, string | boolean | undefined>;

/**
 * The first positional: a lenient parse that knows every option (so the value
 * of `-n prod` is not taken for the command), before the strict parse of that
 * command's options.
 */
function commandWord(argv: readonly string[]): string | undefined {
  const all = Object.values(COMMAND_OPTIONS).reduce<Options>((acc, o) => ({ ...acc, ...o }), { ...GLOBAL });
  return parseArgs({ args: [...argv], options: all, strict: false, allowPositionals: true }).positionals[0];
}

function parse(argv: readonly string[], options: Options): { values: Values; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options,
      allowPositionals: true,
      strict: true,
    });
    return { values: values as Values, positionals };
  } catch (err) {
    // parseArgs' own message names the option ("Unknown option '--foo'"), minus its advice on `--`.
    throw new UsageError((err as Error).message.split('. ')[0]!.replace(/\.$/, ''));
  }
}

function globalOf(values: Values): GlobalOptions {
  return {
    namespace: str(values.namespace),
    context: str(values.context),
    kubeconfig: str(values.kubeconfig),
  };
}

const str = (v: string | boolean | undefined) => (typeof v === 'string' ? v : undefined);

/** Exactly `names.length` positionals, named in the message when they are not. */
function positionals(command: string, args: string[], names: string[]): string[] {
  if (args.length < names.length)
    throw new UsageError(`${command}: missing ${names.slice(args.length).join(' ')}`);
  if (args.length > names.length)
    throw new UsageError(`${command}: unexpected argument "${args[names.length]}"`);
  return args;
}

function waitOptions(values: Values, defaultMs: number): { wait: boolean; timeoutMs: number } {
  const timeout = str(values.timeout);
  if (timeout !== undefined && values.wait !== true) throw new UsageError('--timeout goes with --wait');
  return { wait: values.wait === true, timeoutMs: timeout ? parseDuration('--timeout', timeout) : defaultMs };
}

const COMMANDS: Record<keyof typeof COMMAND_OPTIONS, (args: string[], values: Values) => Command> = {
  status(args, values) {
    const [kind, object] = positionals('status', args, ['KIND', 'NAME']);
    const output = str(values.output) ?? 'text';
    if (output !== 'text' && output !== 'json' && output !== 'yaml')
      throw new UsageError(`--output: "${output}" is not one of text, json, yaml`);
    return { name: 'status', kind: kindOf(kind!), object: object!, output };
  },
  switchover(args, values) {
    const [database] = positionals('switchover', args, ['DATABASE']);
    return {
      name: 'switchover',
      database: database!,
      to: str(values.to),
      ...waitOptions(values, DEFAULT_SWITCHOVER_TIMEOUT_MS),
    };
  },
  promote(args, values) {
    const [database, pod] = positionals('promote', args, ['DATABASE', 'POD']);
    return {
      name: 'promote',
      database: database!,
      pod: pod!,
      ...waitOptions(values, DEFAULT_SWITCHOVER_TIMEOUT_MS),
    };
  },
  backup(args, values) {
    const [database] = positionals('backup', args, ['DATABASE']);
    return {
      name: 'backup',
      database: database!,
      backupName: str(values.name),
      ...waitOptions(values, DEFAULT_BACKUP_TIMEOUT_MS),
    };
  },
  logs(args, values) {
    const [kind, object] = positionals('logs', args, ['KIND', 'NAME']);
    const tailText = str(values.tail);
    if (tailText !== undefined && !/^\d+$/.test(tailText))
      throw new UsageError(`--tail: "${tailText}" is not a whole number of lines`);
    const since = str(values.since);
    return {
      name: 'logs',
      kind: kindOf(kind!),
      object: object!,
      tail: tailText === undefined ? undefined : Number(tailText),
      sinceMs: since === undefined ? undefined : parseDuration('--since', since),
    };
  },
};
