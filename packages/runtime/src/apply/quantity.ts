const BINARY: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const DECIMAL: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

const GRAMMAR = /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([KMGTPE]i)|([numkMGTPE]?)|[eE]([+-]?[0-9]+))$/;

/**
 * The value of a resource.Quantity (`256Mi`, `1G`, `1.5Gi`, `2e9`, or an
 * integer as the CRD's int-or-string lets clients send it) in base units,
 * rounded up as Kubernetes rounds memory up to whole bytes.
 */
export function quantityValue(q: string | number): number {
  if (typeof q === 'number') return Math.ceil(q);
  const m = GRAMMAR.exec(q.trim());
  if (!m) throw new Error(`not a quantity: ${q}`);
  const n = Number(m[1]);
  const factor = m[2] ? BINARY[m[2]]! : m[4] !== undefined ? 10 ** Number(m[4]) : DECIMAL[m[3] ?? '']!;
  return Math.ceil(n * factor);
}

type Format = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

/** A quantity as resource.Quantity holds it: unscaled × 10^exponent, and the spelling it keeps, if any. */
interface Held {
  unscaled: bigint;
  exponent: number;
  format: Format;
  /** The input, kept verbatim when ParseQuantity finds it canonical enough (`+1`, `01`, `1.500`). */
  kept: string | undefined;
  /** Parsed without exact decimals (int64Amount); the other kind (inf.Dec) never keeps a spelling. */
  fast: boolean;
}

// Suffixes by power: of 1024 for BinarySI, of 10 (multiples of 3) for DecimalSI.
const BINARY_SUFFIXES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const DECIMAL_SUFFIXES = new Map([
  [-9, 'n'],
  [-6, 'u'],
  [-3, 'm'],
  [0, ''],
  [3, 'k'],
  [6, 'M'],
  [9, 'G'],
  [12, 'T'],
  [15, 'P'],
  [18, 'E'],
]);
const DECIMAL_EXPONENTS = new Map([...DECIMAL_SUFFIXES].map(([e, s]) => [s, e]));
/** Quantities keep nine decimal places (nano); finer values are rounded up, away from zero. */
const NANO = -9;
/** The core API's defaulting rounds ResourceList values up to milli (apimachinery issue 18538). */
const MILLI = -3;
const MAX_INT64 = 2n ** 63n - 1n;
/** The decimal digits an int64 holds: ParseQuantity's fast path takes no more. */
const MAX_INT64_DIGITS = 18;
// A spelling this long is a typo, or an attack on the parser; not worth exact arithmetic.
const MAX_LENGTH = 64;

const pow10 = (n: number) => 10n ** BigInt(n);
const abs = (n: bigint) => (n < 0n ? -n : n);

/** `n` × 10^`by` for `by` < 0, rounded away from zero as apimachinery rounds up. */
function shiftRoundingUp(n: bigint, by: number): bigint {
  const d = pow10(-by);
  const q = abs(n) / d + (abs(n) % d === 0n ? 0n : 1n);
  return n < 0n ? -q : q;
}

/** ParseQuantity: its int64 fast path, which may keep the input's spelling, else exact decimals. */
function parse(text: string): Held | undefined {
  const m = GRAMMAR.exec(text);
  if (!m) return undefined;
  const [, number = '', binary, decimal, exponentText] = m;
  if (text === '0') return { unscaled: 0n, exponent: 0, format: 'DecimalSI', kept: text, fast: true };
  const negative = number.startsWith('-');
  const [rawWhole = '', denom = ''] = number.replace(/^[+-]/, '').split('.');
  const num = rawWhole.replace(/^0+/, '') || '0';
  const format: Format = binary ? 'BinarySI' : exponentText !== undefined ? 'DecimalExponent' : 'DecimalSI';
  const exp10 = binary
    ? 0
    : exponentText !== undefined
      ? Number(exponentText)
      : DECIMAL_EXPONENTS.get(decimal ?? '')!;
  const exp2 = binary ? 10 * BINARY_SUFFIXES.indexOf(binary) : 0;
  const sign = negative ? -1n : 1n;

  // The fast path: the digits fit an int64 and need no rounding.
  const precision = binary
    ? denom.length === 0
      ? 15 - num.length - (exp2 * 3) / 10 - 1
      : -1
    : MAX_INT64_DIGITS - (num.length + denom.length);
  const exponent = exp10 - denom.length;
  if (precision >= 0 && exponent >= NANO) {
    const shifted = num + denom;
    const value = BigInt(shifted);
    const result = value * 2n ** BigInt(exp2);
    if (result <= MAX_INT64) {
      const keep = binary
        ? (value & 7n) !== 0n
        : exponent % 3 === 0 && !shifted.endsWith('000') && !shifted.startsWith('0');
      return { unscaled: sign * result, exponent, format, kept: keep ? text : undefined, fast: true };
    }
  }

  let unscaled = BigInt(`${rawWhole}${denom}` || '0') * 2n ** BigInt(exp2);
  let e = exponent;
  if (e < NANO) {
    unscaled = shiftRoundingUp(unscaled, e - NANO);
    e = NANO;
  }
  // Capped, as apimachinery does, before it could overflow an int64.
  if (binary && unscaled * pow10(Math.max(e, 0)) > MAX_INT64 * pow10(Math.max(-e, 0))) {
    unscaled = MAX_INT64;
    e = 0;
  }
  const belowOne = unscaled !== 0n && (e >= 0 ? false : unscaled < pow10(-e));
  return {
    unscaled: sign * unscaled,
    exponent: e,
    format: binary && belowOne ? 'DecimalSI' : format,
    kept: undefined,
    fast: false,
  };
}

/** Quantity.RoundUp(milli): exact decimals always lose the kept spelling; the fast kind only if it rounds. */
function roundUpToMilli(h: Held): Held {
  if (h.fast && h.exponent >= MILLI) return h;
  if (h.exponent >= MILLI) return { ...h, kept: undefined };
  return {
    ...h,
    unscaled: shiftRoundingUp(h.unscaled, h.exponent - MILLI),
    exponent: MILLI,
    kept: undefined,
  };
}

/** Quantity.String when nothing is kept: CanonicalizeBytes. */
function spell(h: Held): string | undefined {
  if (h.unscaled === 0n) return '0';
  const sign = h.unscaled < 0n ? '-' : '';
  let n = abs(h.unscaled);
  let power = h.exponent;
  let format = h.format;
  if (format === 'BinarySI') {
    const whole = power >= 0 ? n * pow10(power) : n % pow10(-power) === 0n ? n / pow10(-power) : undefined;
    if (whole === undefined || whole < 1024n) format = 'DecimalSI';
    else {
      // A whole value below 2^63 has at most six factors of 1024: Ei always names it.
      let times = 0;
      let w = whole;
      while (w >= 1024n && w % 1024n === 0n) {
        w /= 1024n;
        times++;
      }
      return `${sign}${w}${BINARY_SUFFIXES[times]}`;
    }
  }
  while (n >= 10n && n % 10n === 0n) {
    n /= 10n;
    power++;
  }
  const down = ((power % 3) + 3) % 3;
  n *= pow10(down);
  power -= down;
  if (format === 'DecimalExponent') return `${sign}${n}${power === 0 ? '' : `e${power}`}`;
  const suffix = DECIMAL_SUFFIXES.get(power);
  // apimachinery has no suffix past E either, and then prints the number bare: a value it misstates.
  return suffix === undefined ? undefined : `${sign}${n}${suffix}`;
}

export interface CanonicalQuantityOptions {
  /**
   * Round up to milli, as the core API's defaulting does to every
   * ResourceList value (container requests and limits, PVC requests,
   * quotas) but not to other quantities (an emptyDir's sizeLimit keeps nano).
   */
  milli?: boolean | undefined;
}

/**
 * The spelling the API server stores and returns a resource.Quantity in:
 * `1024Mi` → `1Gi`, `1000m` → `1`, `0.5Gi` → `512Mi`, `2000` → `2k`,
 * `1e3` → `1e3`, the number 1073741824 → `1073741824`. Undefined when `q` is
 * not a quantity, or is one the API server itself would misstate (past `E`).
 *
 * apimachinery's resource.Quantity, rule for rule (ParseQuantity, RoundUp,
 * CanonicalizeBytes): the format follows the suffix (binary, decimal or
 * none, exponent); a value whose digits fit an int64 keeps its very spelling
 * when that looks canonical to apimachinery (`1.500`, `+1`, `01` stay so);
 * otherwise the value is rounded up to nano, a binary one is written with the
 * largest power of 1024 that divides it (as decimal when below 1024 or not
 * whole), a decimal one with its trailing zeros moved to an exponent rounded
 * down to a multiple of 3. Integer arithmetic, as apimachinery's: a float
 * would round `1.1Gi` differently. quantity.integration.test.ts holds it to
 * what a real API server answers.
 */
export function canonicalQuantity(
  q: string | number,
  options: CanonicalQuantityOptions = {},
): string | undefined {
  const text = typeof q === 'number' ? (Number.isFinite(q) ? String(q) : '') : q.trim();
  if (text.length > MAX_LENGTH) return undefined;
  const parsed = parse(text);
  if (!parsed) return undefined;
  const held = options.milli ? roundUpToMilli(parsed) : parsed;
  return held.kept ?? spell(held);
}
