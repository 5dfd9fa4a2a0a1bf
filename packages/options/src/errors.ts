// Bad configuration, worded for the person running the binary: every problem
// names where the value came from and what would have been accepted.
import { allowed } from './describe.ts';
import type { OptionSpec } from './spec.ts';

/** Bad configuration from a flag, variable or file; `message` is meant for the person running the binary. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly problems: readonly string[];

  constructor(problems: string | readonly string[]) {
    const list = typeof problems === 'string' ? [problems] : problems;
    super(
      list.length === 1
        ? String(list[0])
        : `${list.length} configuration problems:\n${list.map((p) => `  - ${p}`).join('\n')}`,
    );
    this.problems = list;
  }
}

// Long enough to recognise a value, short enough that a pasted file stays one line.
const SHOWN_MAX = 60;

/** `invalid value "x" for flag --y: why (allowed: …)`. */
export function invalid(option: OptionSpec, raw: unknown, where: string, why: string): string {
  let shown = JSON.stringify(raw) ?? String(raw);
  if (shown.length > SHOWN_MAX) shown = `${shown.slice(0, SHOWN_MAX - 3)}...`;
  return `invalid value ${shown} for ${where}: ${why} (allowed: ${allowed(option)})`;
}
