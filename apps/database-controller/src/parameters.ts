// What spec.parameters may hold, per engine: the grammar of a setting name,
// how the engine compares names, the names the operator keeps for itself, and
// the characters a value may carry. One definition, two enforcers: api.ts turns
// it into CEL rules (admission), and config.ts checks it again before it writes
// a line (objects stored before the rules existed never reach the file).
import { engines } from './engines/index.ts';
import { ENGINE_NAMES, RESERVED_PARAMETERS, type Engine } from './versions.ts';

/**
 * Bounds on the map. They also bound the CEL cost the API server estimates,
 * and keep a rendered my.cnf line far below the 4 KiB mysqld reads a line in
 * (longer lines are split, and the rest would parse as a line of its own):
 * 64 + 256 code points of at most 4 bytes each is under 1.3 KiB.
 */
export const PARAMETER_LIMITS = { maxEntries: 64, maxNameLength: 64, maxValueLength: 256 } as const;

/**
 * Setting names each engine's configuration file parser takes as a name
 * (its ParameterNaming: postgres/parameters.ts, mysql/parameters.ts). None
 * admits a space, `=`, a quote, `#`, `[` or `!`: nothing that starts a
 * comment, a section or an `!include` directive, or ends the name early.
 */
const naming = (engine: Engine) => engines[engine].parameters;
const perEngine = <T>(f: (engine: Engine) => T): Record<Engine, T> =>
  Object.fromEntries(ENGINE_NAMES.map((e) => [e, f(e)])) as Record<Engine, T>;
export const NAME_PATTERN: Record<Engine, string> = perEngine((e) => naming(e).namePattern);
export const NAME_RULE_TEXT: Record<Engine, string> = perEngine((e) => naming(e).nameRuleText);

const lowerAscii = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());

/**
 * The name as the engine compares it. postgres: setting names are
 * case-insensitive. mysql and mariadb: `-` and `_` are the same, and prefixes are
 * stripped; mysqld compares case-sensitively, lowering here only makes the
 * reserved check stricter.
 */
export function canonicalName(engine: Engine, name: string): string {
  return naming(engine).canonical(lowerAscii(name));
}

/** The reserved names in canonical form (a prefixed entry such as `skip-grant-tables` loses its prefix). */
function reservedCanonical(engine: Engine): string[] {
  return [...new Set(RESERVED_PARAMETERS[engine].map((r) => canonicalName(engine, r)))];
}
const RESERVED: Record<Engine, ReadonlySet<string>> = perEngine((e) => new Set(reservedCanonical(e)));

export function isReservedName(engine: Engine, name: string): boolean {
  return RESERVED[engine].has(canonicalName(engine, name));
}

/** C0, DEL and C1 controls (Unicode category Cc): a line break ends a config line early. */
const CONTROL_RE = /\p{Cc}/u;
export const CONTROL_CEL_PATTERN = '\\p{Cc}';

/** Why one parameter can't be rendered, or undefined when it can. */
export function parameterProblem(engine: Engine, name: string, value: string): string | undefined {
  const key = JSON.stringify(name);
  if ([...name].length > PARAMETER_LIMITS.maxNameLength)
    return `name ${key} is longer than ${PARAMETER_LIMITS.maxNameLength} characters`;
  if (!new RegExp(NAME_PATTERN[engine]).test(name))
    return `${key} is not a ${engine} setting name: use ${NAME_RULE_TEXT[engine]}`;
  if (isReservedName(engine, name))
    return `${key} is a setting the operator manages (${reservedText(engine)})`;
  if ([...value].length > PARAMETER_LIMITS.maxValueLength)
    return `the value of ${key} is longer than ${PARAMETER_LIMITS.maxValueLength} characters`;
  if (CONTROL_RE.test(value)) return `the value of ${key} contains a line break or another control character`;
  return undefined;
}

export function reservedText(engine: Engine): string {
  return `${engine} reserves ${RESERVED_PARAMETERS[engine].join(', ')}; ${naming(engine).comparedText}`;
}

/**
 * CEL: `k` (a parameter name) is a reserved name of the engine. The same
 * comparison as {@link isReservedName}: postgres lowers the name; mysql also
 * maps `_` to `-` and lets any run of option prefixes precede a reserved name.
 */
export function reservedCel(engine: Engine, k: string): string {
  const names = reservedCanonical(engine);
  for (const n of names)
    if (!/^[a-z0-9_-]+$/.test(n)) throw new Error(`reserved name ${n} needs regex escaping`);
  return naming(engine).celMatches(k, names);
}
