// --wait: polls until a check has an answer or the deadline passes. A poll,
// not a watch: a command that waits minutes for one field needs no resumable
// stream, and a poll every POLL_INTERVAL_MS costs the API server nothing.
import { sleep } from '@regulon/util';
import type { CommandEnv } from './env.ts';
import { UserError } from './errors.ts';

/** 2 s: a switchover takes seconds, a person at the terminal notices a longer lag. */
export const POLL_INTERVAL_MS = 2_000;

/**
 * Resolves with the first defined answer of `check`; throws UserError naming
 * `what` once `timeoutMs` has passed (the last check runs at the deadline).
 */
export async function waitFor<T>(
  env: CommandEnv,
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = env.clock.now() + timeoutMs;
  for (;;) {
    const answer = await check();
    if (answer !== undefined) return answer;
    const left = deadline - env.clock.now();
    if (left <= 0)
      throw new UserError(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`);
    await sleep(env.clock, Math.min(POLL_INTERVAL_MS, left), env.signal);
  }
}
