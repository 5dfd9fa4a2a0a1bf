// The plugin's entry function: argv in, output through the env, an exit code
// out. main.ts binds it to the process; tests call it directly.
import { realClock, type Clock } from '@regulon/util';
import { parseCommandLine, type Command } from './args.ts';
import { backup } from './backup.ts';
import { connect } from './connect.ts';
import type { CommandEnv } from './env.ts';
import { describeFailure, EXIT_OK } from './errors.ts';
import { COMMAND_HELP, USAGE } from './help.ts';
import { logs } from './logs.ts';
import { status } from './status.ts';
import { promote, switchover } from './switchover.ts';

export interface RunOptions {
  out: (text: string) => void;
  err: (text: string) => void;
  clock?: Clock | undefined;
  date?: (() => Date) | undefined;
  signal?: AbortSignal | undefined;
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
    };
    await dispatch(env, command);
    return EXIT_OK;
  } catch (err) {
    const { line, code } = describeFailure(err);
    opts.err(`error: ${line}\n`);
    return code;
  } finally {
    // Idle keep-alive sockets would hold the process open after the command.
    env?.client.close();
  }
}

async function dispatch(env: CommandEnv, command: Exclude<Command, { name: 'help' }>): Promise<void> {
  switch (command.name) {
    case 'status':
      return status(env, command.kind, command.object, command.output);
    case 'switchover':
      return switchover(env, command);
    case 'promote':
      return promote(env, command);
    case 'backup':
      return backup(env, command);
    case 'logs':
      return logs(env, command);
  }
}
