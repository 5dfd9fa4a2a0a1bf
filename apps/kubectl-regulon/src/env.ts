// What a command runs with: the connection, where its output goes, and time.
// Injected, so the entry function runs in tests as it runs in a terminal.
import type { Clock } from '@regulon/util';
import type { Connection } from './connect.ts';

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
}
