// Each option type as TypeBox schemas: what a value of the type is, the
// option's bounds, and how the type is written as text (flags, variables and
// strings in a config file). Checking is TypeBox's; the only code here turns
// text that already passed its schema into a value.
//
// TypeBox's own Value.Convert is not used for the text: it is built to repair
// values, not to refuse typos, and reads "1.5" as the integer 1, "" as 0,
// "0x10" as 16 and "true" as 1, each of which a person would want reported.
import { Type, type TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { parseDuration } from './duration.ts';
import type { OptionSpec, OptionType } from './spec.ts';

/** Booleans as text, read case-insensitively, and what each means. */
export const BOOLEAN_WORDS: ReadonlyMap<string, boolean> = new Map([
  ['true', true],
  ['false', false],
  ['1', true],
  ['0', false],
  ['yes', true],
  ['no', false],
]);

/** Why a value is not of its option's type, as the message says it. */
const NOT_A: Record<OptionType, string> = {
  string: 'not a string (quote it)',
  enum: 'not one of the allowed values',
  boolean: 'not a boolean',
  integer: 'not an integer',
  number: 'not a number',
  duration: 'not a duration',
};

interface TextForm {
  /** The strings that are a value of the type. */
  readonly schema: TSchema;
  /** The value of a string the schema accepted. */
  decode(text: string): unknown;
}

// Strings stay strings and an enum is matched as written, so only these types have a text form.
const TEXT: Partial<Record<OptionType, TextForm>> = {
  boolean: {
    // `(?i:…)` is a case-insensitive group (ES2025 regexp modifiers, Node ≥ 23).
    schema: Type.String({ pattern: `^(?i:${[...BOOLEAN_WORDS.keys()].join('|')})$` }),
    decode: (text) => BOOLEAN_WORDS.get(text.toLowerCase()),
  },
  integer: { schema: Type.String({ pattern: '^[+-]?\\d+$' }), decode: Number },
  number: {
    schema: Type.String({ pattern: '^[+-]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][+-]?\\d+)?$' }),
    decode: Number,
  },
  duration: {
    schema: Type.String({ pattern: '^(?:\\d+|(?:\\d+(?:\\.\\d+)?(?:ms|s|m|h))+)$' }),
    decode: parseDuration,
  },
};

// Integers beyond 2^53 cannot be told apart from their neighbours; durations are whole milliseconds.
const SAFE = { minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER };

function typeSchema(option: OptionSpec): TSchema {
  switch (option.type) {
    case 'string':
      return Type.String();
    case 'enum':
      return Type.Union((option.values ?? []).map((value) => Type.Literal(value)));
    case 'boolean':
      return Type.Boolean();
    case 'integer':
      return Type.Integer(SAFE);
    case 'number':
      return Type.Number();
    case 'duration':
      return Type.Integer({ ...SAFE, minimum: 0 });
  }
}

function rangeSchema(option: OptionSpec): TSchema | undefined {
  if (option.min === undefined && option.max === undefined) return undefined;
  return Type.Number({
    ...(option.min !== undefined ? { minimum: option.min } : {}),
    ...(option.max !== undefined ? { maximum: option.max } : {}),
  });
}

interface OptionSchemas {
  readonly type: TSchema;
  readonly range: TSchema | undefined;
}

// Specs are fixed once defined, and loading converts each option at least twice (default, then value).
const compiled = new WeakMap<OptionSpec, OptionSchemas>();

function schemasOf(option: OptionSpec): OptionSchemas {
  let schemas = compiled.get(option);
  if (!schemas) {
    schemas = { type: typeSchema(option), range: rangeSchema(option) };
    compiled.set(option, schemas);
  }
  return schemas;
}

export type Converted = { value: unknown } | { why: string };

/**
 * A flag or variable (always text), a config-file value (text or YAML/JSON
 * typed) or a default, as the option's value; or why it is not one. A value
 * of the wrong type and one out of bounds give different reasons.
 */
export function convert(option: OptionSpec, raw: unknown): Converted {
  const schemas = schemasOf(option);
  const text = TEXT[option.type];
  let value = raw;
  if (text !== undefined && typeof raw === 'string') {
    if (!Value.Check(text.schema, raw)) return { why: NOT_A[option.type] };
    value = text.decode(raw);
  }
  if (!Value.Check(schemas.type, value)) return { why: NOT_A[option.type] };
  if (schemas.range !== undefined && !Value.Check(schemas.range, value)) return { why: 'out of range' };
  return { value };
}
