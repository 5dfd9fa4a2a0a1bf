// Command-line flags: `--name value`, `--name=value`, booleans as `--name`,
// `--name=false` or `--no-name`. Every problem is collected, not just the first.
import { parseArgs } from 'node:util';
import { BOOLEAN_WORDS } from './schema.ts';
import type { OptionSpec, OptionSpecs, OptionType } from './spec.ts';
import { suggest } from './suggest.ts';

export interface FlagValue {
  /** As written: the schema converts it later, and only if the flag wins. */
  value: string | boolean;
  /** The flag as typed, e.g. `--no-verbose`, for messages. */
  rawName: string;
}

export interface ParsedFlags {
  /** By option key. */
  values: Map<string, FlagValue>;
  configFile: string | undefined;
}

/** The flags in `argv` by option key, and the config file flag; problems are appended. */
export function parseFlags(
  spec: OptionSpecs,
  argv: readonly string[],
  configFlag: string,
  problems: string[],
): ParsedFlags {
  const byFlag = new Map<string, [string, OptionSpec]>();
  for (const [key, option] of Object.entries(spec)) byFlag.set(option.flag, [key, option]);
  const parsed: ParsedFlags = { values: new Map(), configFile: undefined };
  // Declaring which flags take a value is all parseArgs is used for: its
  // strict mode would reject `--enabled=false` and stop at the first problem.
  const declared: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
    [configFlag]: { type: 'string' },
  };
  for (const option of Object.values(spec)) {
    declared[option.flag] = { type: option.type === 'boolean' ? 'boolean' : 'string' };
  }
  const { tokens } = parseArgs({ args: [...argv], options: declared, strict: false, tokens: true });

  // A word right after an unknown flag was most likely its value; reporting
  // it as well would only add noise.
  let afterUnknown = false;
  let previous: { rawName: string; type?: OptionType } | undefined;
  for (const token of tokens) {
    if (token.kind === 'option-terminator') continue;
    if (token.kind === 'positional') {
      if (!afterUnknown) {
        const hint =
          previous?.type === 'boolean' && BOOLEAN_WORDS.has(token.value.toLowerCase())
            ? ` (write ${previous.rawName}=${token.value})`
            : '';
        problems.push(`unexpected argument "${token.value}"${hint}`);
      }
      afterUnknown = false;
      previous = undefined;
      continue;
    }
    afterUnknown = false;
    const { name, rawName, value } = token;
    const negated = name.startsWith('no-') ? byFlag.get(name.slice(3)) : undefined;
    const entry = byFlag.get(name) ?? (negated?.[1].type === 'boolean' ? negated : undefined);
    previous = { rawName, ...(entry ? { type: entry[1].type } : {}) };
    if (name === configFlag || (entry && entry[1].type !== 'boolean')) {
      if (value === undefined) {
        problems.push(`flag ${rawName} needs a value`);
        continue;
      }
      // parseArgs takes the next argument as the value even when it looks like
      // a flag; `--name --other` is far more often a forgotten value.
      if (!token.inlineValue && value.startsWith('-') && !/^-[\d.]/.test(value)) {
        problems.push(
          `flag ${rawName} needs a value but is followed by "${value}" (to pass a value starting with "-", write ${rawName}=<value>)`,
        );
        continue;
      }
      if (name === configFlag) {
        if (value === '') problems.push(`flag ${rawName} needs a path`);
        else parsed.configFile = value;
      } else if (entry) {
        parsed.values.set(entry[0], { value, rawName });
      }
    } else if (entry && entry === negated) {
      if (value !== undefined) problems.push(`flag ${rawName} does not take a value`);
      else parsed.values.set(entry[0], { value: false, rawName });
    } else if (entry) {
      parsed.values.set(entry[0], { value: value ?? true, rawName });
    } else if (name === 'help') {
      // Reached only as `--help=...`, since a bare --help returned earlier.
      problems.push(`flag ${rawName} does not take a value`);
    } else {
      const candidates = [...byFlag.keys(), configFlag, 'help'];
      problems.push(`unknown flag ${rawName}${suggest(name.replace(/^no-/, ''), candidates, '--')}`);
      afterUnknown = value === undefined;
    }
  }
  return parsed;
}
