// Durations as people write them (500ms, 15s, 2m, 1h, 1h30m) and as the
// configuration stores them: whole milliseconds.

const UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/**
 * The milliseconds of text the duration schema accepted (digits alone are
 * milliseconds). A fraction of a millisecond is returned as is, for the
 * schema's integer check to refuse.
 */
export function parseDuration(text: string): number {
  if (/^\d+$/.test(text)) return Number(text);
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
    total += Number(amount) * UNITS[unit as keyof typeof UNITS];
  }
  // 1.1s is 1100.0000000000002 in floating point; anything further from a
  // whole millisecond is a real fraction, which a millisecond store cannot keep.
  const rounded = Math.round(total);
  return Math.abs(total - rounded) < 1e-6 ? rounded : total;
}

/** Milliseconds as hours, minutes, seconds and milliseconds, e.g. 5400000 → `1h30m`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of [
    ['h', UNITS.h],
    ['m', UNITS.m],
    ['s', UNITS.s],
    ['ms', UNITS.ms],
  ] as const) {
    const count = Math.floor(rest / size);
    if (count > 0) parts.push(`${count}${unit}`);
    rest -= count * size;
  }
  return parts.join('');
}
