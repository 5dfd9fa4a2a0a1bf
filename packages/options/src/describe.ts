// How an option is shown to the person configuring it: in `--help` and in
// the "allowed:" part of an error.
import { formatDuration } from './duration.ts';
import { BOOLEAN_WORDS } from './schema.ts';
import type { OptionSpec } from './spec.ts';

/** A value as it would be written: durations as `15s`, strings quoted. */
export function display(option: OptionSpec, value: unknown): string {
  if (option.type === 'duration' && typeof value === 'number') return formatDuration(value);
  if (option.type === 'string' && typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

/** The `<…>` after a flag in `--help`. */
export function placeholder(option: OptionSpec): string {
  return option.type === 'enum' ? `<${option.values?.join('|')}>` : `<${option.type}>`;
}

/** The bounds, e.g. `1..64`, `at least 1s`; undefined when the option has none. */
export function rangeText(option: OptionSpec, separator: string): string | undefined {
  if (option.type !== 'integer' && option.type !== 'number' && option.type !== 'duration') return undefined;
  const show = (n: number): string => (option.type === 'duration' ? formatDuration(n) : String(n));
  if (option.min !== undefined && option.max !== undefined)
    return `${show(option.min)}${separator}${show(option.max)}`;
  if (option.min !== undefined) return `at least ${show(option.min)}`;
  if (option.max !== undefined) return `at most ${show(option.max)}`;
  return undefined;
}

/** Every value the option takes, in words. */
export function allowed(option: OptionSpec): string {
  const range = rangeText(option, ' to ');
  const within = range === undefined ? '' : range.startsWith('at ') ? ` of ${range}` : ` from ${range}`;
  switch (option.type) {
    case 'string':
      return 'any string';
    case 'enum':
      return option.values?.join(', ') ?? '';
    case 'boolean':
      return [...BOOLEAN_WORDS.keys()].join(', ');
    case 'integer':
      return `integers${within}`;
    case 'number':
      return `numbers${within}`;
    case 'duration':
      return `durations${within}, written like 500ms, 15s, 2m, 1h or as whole milliseconds`;
  }
}
