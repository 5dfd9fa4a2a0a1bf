// The plugin's entry function: argv in, output through the env, an exit code
// out. main.ts binds it to the process; tests call it directly.
import { realClock, type Clock } from '@regulon/util';
import { parseCommandLine, type Command } from './args.ts';
import { backup } from './backup.ts';
import { connect } from './connect.ts';
import type { CommandEnv } from './env.ts';
import { describeFailure, EXIT_OK } from './errors.ts';
import { fence } from './fence.ts';
import { COMMAND_HELP, USAGE } from './help.ts';
import { runClient, spawnInheriting, type Spawner } from './exec.ts';
import { logs } from './logs.ts';
import { report } from './bundle.ts';
import { restore } from './restore.ts';
import { status } from './status.ts';
import { promote, switchover } from './switchover.ts';

export interface RunOptions {
  out: (text: string) => void;
  err: (text: string) => void;
  clock?: Clock | undefined;
  date?: (() => Date) | undefined;
  signal?: AbortSignal | undefined;
  /** How psql, mysql and redis-cli run kubectl (default: the kubectl on PATH, on this terminal). */
  spawn?: Spawner | undefined;
  /** Default: whether process.stdin is a terminal. */
  stdinIsTTY?: boolean | undefined;
  /** Default: process.cwd(). */
  cwd?: string | undefined;
}

/** Runs `kubectl regulon <argv>`; resolves with the exit code, never rejects. */
export async function run(argv: readonly string[], opts: RunOptions): Promise<number> {
  let env: CommandEnv | undefined;
  try {
    const { global, command } = parseCommandLine(argv);
    if (command.name === 'help') {
      opts.out(`${(command.topic && COMMAND_HELP[command.topic]) || USAGE}\n`);
      return EXIT_OK;
    }
    env = {
      ...connect(global),
      out: opts.out,
      err: opts.err,
      clock: opts.clock ?? realClock,
      date: opts.date ?? (() => new Date()),
      signal: opts.signal,
      global,
      spawn: opts.spawn ?? spawnInheriting,
      stdinIsTTY: opts.stdinIsTTY ?? process.stdin.isTTY === true,
      cwd: opts.cwd ?? process.cwd(),
    };
    return (await dispatch(env, command)) ?? EXIT_OK;
  } catch (err) {
    const { line, code } = describeFailure(err);
    opts.err(`error: ${line}\n`);
    return code;
  } finally {
    // Idle keep-alive sockets would hold the process open after the command.
    env?.client.close();
  }
}

/** Runs the command; an exit code of its own (an engine client's) when it has one. */
async function dispatch(
  env: CommandEnv,
  command: Exclude<Command, { name: 'help' }>,
): Promise<number | undefined> {
  switch (command.name) {
    case 'status':
      return void (await status(env, command.kind, command.object, command.output));
    case 'switchover':
      return void (await switchover(env, command));
    case 'promote':
      return void (await promote(env, command));
    case 'backup':
      return void (await backup(env, command));
    case 'logs':
      return void (await logs(env, command));
    case 'restore':
      return void (await restore(env, command));
    case 'report':
      return void (await report(env, command));
    case 'client':
      return runClient(env, command);
    case 'fence':
    case 'unfence':
      return void (await fence(env, command));
  }
}
