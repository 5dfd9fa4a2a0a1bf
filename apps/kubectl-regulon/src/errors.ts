// What a command's failure means to the person who ran it, as kubectl's exit
// codes do: 1 for a problem they can act on (a missing object, a refused
// request, a wait that timed out), 2 for a command line that does not parse.
import { isUnauthorized } from '@regulon/client';

/** A failure the user can act on: exit code 1, its message on one line. */
export class UserError extends Error {}

/** The command line is wrong: exit code 2, with a pointer to --help. */
export class UsageError extends Error {}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/**
 * The one line printed for `err`, and the exit code. Never a stack trace: a
 * plugin's user needs what went wrong, not where in our code. An error we did
 * not anticipate still prints only its message (its first line), since a
 * longer one could quote a request body.
 */
export function describeFailure(err: unknown): { line: string; code: number } {
  if (err instanceof UsageError) return { line: `${err.message} (see --help)`, code: EXIT_USAGE };
  if (err instanceof UserError) return { line: err.message, code: EXIT_FAILED };
  if (isUnauthorized(err))
    return { line: 'the API server refused the credentials (401 Unauthorized)', code: EXIT_FAILED };
  // The API server's own words for the rest (`databases.regulon.dev "x" is forbidden: …`), a
  // ConfigError's (no kubeconfig, no such context), or a socket's (ECONNREFUSED).
  return { line: firstLine(err instanceof Error ? err.message : String(err)), code: EXIT_FAILED };
}

function firstLine(s: string): string {
  return s.split('\n')[0] ?? s;
}
