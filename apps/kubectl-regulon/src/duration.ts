// Durations as kubectl takes them (`--since=1h30m`, `--timeout=90s`): Go's
// time.ParseDuration units, without fractions or signs, which no flag here needs.
import { UsageError } from './errors.ts';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** `1h30m` → 5400000; a bare number is refused (kubectl's flags need a unit too). */
export function parseDuration(flag: string, text: string): number {
  const parts = [...text.matchAll(/(\d+)(ms|s|m|h)/gy)];
  const consumed = parts.reduce((n, m) => n + m[0].length, 0);
  if (parts.length === 0 || consumed !== text.length)
    throw new UsageError(`${flag}: "${text}" is not a duration such as 30s, 5m or 1h30m`);
  const ms = parts.reduce((sum, m) => sum + Number(m[1]) * UNIT_MS[m[2]!]!, 0);
  if (ms <= 0) throw new UsageError(`${flag}: the duration must be more than 0`);
  return ms;
}
