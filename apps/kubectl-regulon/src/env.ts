// What a command runs with: the connection, where its output goes, and time.
// Injected, so the entry function runs in tests as it runs in a terminal.
import type { Clock } from '@regulon/util';
import type { GlobalOptions } from './args.ts';
import type { Connection } from './connect.ts';
import type { Spawner } from './exec.ts';

export interface CommandEnv extends Connection {
  /** Standard output: the command's result (a screen, a document, a name). */
  out: (text: string) => void;
  /** Standard error: notes on progress and what to run next, never part of a result. */
  err: (text: string) => void;
  /** For --wait's polls and deadline. */
  clock: Clock;
  /** The wall clock, for ages and generated names. */
  date(): Date;
  signal?: AbortSignal | undefined;
  /** The command line's --context and --kubeconfig, for the kubectl a command runs (exec). */
  global: GlobalOptions;
  /** Runs kubectl attached to the terminal (psql, mysql, redis-cli). */
  spawn: Spawner;
  /** Whether stdin is a terminal: an interactive client gets one in the container too. */
  stdinIsTTY: boolean;
  /** Where `report` writes its bundle unless -f says: the working directory. */
  cwd: string;
}
