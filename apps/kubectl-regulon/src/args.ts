// The command line. node's util.parseArgs is enough: kubectl's conventions
// need short and long options, `--opt=value` and `--opt value`, and options
// before or after the positionals, which it does; only the command word has to
// be found first, since each command accepts its own options.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { parseDuration } from './duration.ts';
import { UsageError } from './errors.ts';
import { kindOf, type KindInfo } from './kinds.ts';
import { fenceCommand, FENCE_OPTIONS, type FenceCommand } from './fence.ts';

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
/** A restore's: the backup's transfer back, and the WAL replayed after it. */
export const DEFAULT_RESTORE_TIMEOUT_MS = 30 * 60_000;

/** The engine clients the plugin runs in an instance, by their command names. */
export const CLIENT_COMMANDS = ['psql', 'mysql', 'redis-cli'] as const;
export type ClientCommand = (typeof CLIENT_COMMANDS)[number];

/** What `report -f` writes: a gzipped tar or a zip, by the file name's ending. */
export type BundleFormat = 'tar.gz' | 'zip';

export type Command =
  | { name: 'help'; topic?: string | undefined }
  | FenceCommand
  | { name: 'status'; kind: KindInfo; object: string; output: OutputFormat }
  | { name: 'switchover'; database: string; to?: string | undefined; wait: boolean; timeoutMs: number }
  | { name: 'promote'; database: string; pod: string; wait: boolean; timeoutMs: number }
  | { name: 'backup'; database: string; backupName?: string | undefined; wait: boolean; timeoutMs: number }
  | { name: 'logs'; kind: KindInfo; object: string; tail?: number | undefined; sinceMs?: number | undefined }
  | {
      name: 'restore';
      database: string;
      newName: string;
      backup?: string | undefined;
      targetTime?: string | undefined;
      dryRun: boolean;
      output?: 'json' | 'yaml' | undefined;
      wait: boolean;
      timeoutMs: number;
    }
  | {
      name: 'client';
      client: ClientCommand;
      object: string;
      replica: boolean;
      instance?: string | undefined;
      args: string[];
    }
  | { name: 'report'; kind: KindInfo; object: string; file?: string | undefined; format: BundleFormat };

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
type CommandWord = Exclude<Command['name'], 'help' | 'client'> | ClientCommand;

const COMMAND_OPTIONS: Record<CommandWord, Options> = {
  status: { output: { type: 'string', short: 'o' } },
  switchover: { to: { type: 'string' }, ...WAIT },
  promote: WAIT,
  backup: { name: { type: 'string' }, ...WAIT },
  logs: { tail: { type: 'string' }, since: { type: 'string' } },
  restore: {
    backup: { type: 'string' },
    time: { type: 'string' },
    'dry-run': { type: 'boolean' },
    output: { type: 'string', short: 'o' },
    ...WAIT,
  },
  psql: clientOptions(),
  mysql: clientOptions(),
  'redis-cli': clientOptions(),
  report: { file: { type: 'string', short: 'f' } },
  fence: FENCE_OPTIONS,
  unfence: FENCE_OPTIONS,
};

function clientOptions(): Options {
  return { replica: { type: 'boolean' }, instance: { type: 'string' } };
}

const isClient = (word: string): word is ClientCommand =>
  (CLIENT_COMMANDS as readonly string[]).includes(word);

const isCommand = (word: string | undefined): word is keyof typeof COMMAND_OPTIONS =>
  word !== undefined && Object.hasOwn(COMMAND_OPTIONS, word);

/** Parses argv (without node and the script); throws UsageError. */
export function parseCommandLine(all: readonly string[]): Invocation {
  // What follows `--` goes to the engine's client untouched (psql, mysql, redis-cli).
  const dash = all.indexOf('--');
  const argv = dash < 0 ? all : all.slice(0, dash);
  const passed = dash < 0 ? undefined : all.slice(dash + 1);
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
  if (passed !== undefined && !isClient(word))
    throw new UsageError(`${word}: arguments after "--" go only to psql, mysql or redis-cli`);
  return { global, command: COMMANDS[word](args, values, passed ?? []) };
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

/** RFC 3339 with a zone (Z or ±hh:mm), as the CRD's date-time format and postgres' recovery target take it. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** `--time`: an RFC 3339 moment that is a real date; normalised to the form the API server stores. */
export function parseTargetTime(text: string): string {
  if (!RFC3339.test(text) || Number.isNaN(Date.parse(text)))
    throw new UsageError(`--time: "${text}" is not an RFC 3339 time such as 2026-11-24T12:00:00Z`);
  return text.replace(' ', 'T').replace(/z$/, 'Z').replace(/t/, 'T');
}

/** The format `report -f FILE` writes, from FILE's ending. */
export function bundleFormatOf(file: string | undefined): BundleFormat {
  if (file === undefined || /\.(tar\.gz|tgz)$/.test(file)) return 'tar.gz';
  if (file.endsWith('.zip')) return 'zip';
  throw new UsageError(`--file: "${file}" ends in neither .tar.gz (or .tgz) nor .zip`);
}

function clientCommand(client: ClientCommand) {
  return (args: string[], values: Values, passed: string[]): Command => {
    const [object] = positionals(client, args, [client === 'redis-cli' ? 'CACHE' : 'DATABASE']);
    const instance = str(values.instance);
    if (instance !== undefined && values.replica === true)
      throw new UsageError(`${client}: --replica and --instance name the instance two ways: give one`);
    return {
      name: 'client',
      client,
      object: object!,
      replica: values.replica === true,
      instance,
      args: passed,
    };
  };
}

const COMMANDS: Record<
  keyof typeof COMMAND_OPTIONS,
  (args: string[], values: Values, passed: string[]) => Command
> = {
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
  restore(args, values) {
    const [database, newName] = positionals('restore', args, ['DATABASE', 'NEW_NAME']);
    const backup = str(values.backup);
    const time = str(values.time);
    if (backup !== undefined && time !== undefined)
      throw new UsageError(
        'restore: --backup and --time are two kinds of restore: a DatabaseBackup ends where it ended; --time replays the archive to a moment',
      );
    const output = str(values.output);
    if (output !== undefined && output !== 'json' && output !== 'yaml')
      throw new UsageError(`--output: "${output}" is not one of json, yaml`);
    const dryRun = values['dry-run'] === true;
    if (dryRun && values.wait === true)
      throw new UsageError('restore: --dry-run creates nothing to wait for');
    return {
      name: 'restore',
      database: database!,
      newName: newName!,
      backup,
      targetTime: time === undefined ? undefined : parseTargetTime(time),
      dryRun,
      output,
      ...waitOptions(values, DEFAULT_RESTORE_TIMEOUT_MS),
    };
  },
  psql: clientCommand('psql'),
  mysql: clientCommand('mysql'),
  'redis-cli': clientCommand('redis-cli'),
  report(args, values) {
    const [kind, object] = positionals('report', args, ['KIND', 'NAME']);
    const file = str(values.file);
    return { name: 'report', kind: kindOf(kind!), object: object!, file, format: bundleFormatOf(file) };
  },
  fence: (args, values) => fenceCommand('fence', args, values),
  unfence: (args, values) => fenceCommand('unfence', args, values),
};
