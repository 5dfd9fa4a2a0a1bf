// A CronJob schedule, checked at admission the way the CronJob's own
// validation will check it later: Kubernetes parses `spec.schedule` with
// robfig/cron v3's standard parser (cron.ParseStandard), so a schedule this
// schema accepts is one the CronJob accepts, and the field that is wrong is
// named while the user is still looking at the object.
import { Type } from 'typebox';
import { WithRules } from './helpers.ts';

// Long enough for any real schedule; the bound also keeps the rules below
// (several regex scans of the string) far inside the API server's cost budget.
const CRON_MAX_LENGTH = 64;

// Numbers are what Go's strconv.Atoi takes (an optional `+`, leading zeros),
// bounded here by the field's range, so no value can overflow or parse to
// something outside the field.
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

interface CronField {
  name: string;
  /** One value of the field, as a regular expression (no anchors). */
  value: string;
  /** What a person may write, for the message. */
  allowed: string;
}

/** The five fields of a standard schedule, in order, with robfig/cron's bounds. */
export const CRON_FIELDS: readonly CronField[] = [
  { name: 'minute', value: '\\+?0*([0-9]|[1-5][0-9])', allowed: '0-59' },
  { name: 'hour', value: '\\+?0*([0-9]|1[0-9]|2[0-3])', allowed: '0-23' },
  { name: 'day of month', value: '\\+?0*([1-9]|[12][0-9]|3[01])', allowed: '1-31' },
  { name: 'month', value: `\\+?0*([1-9]|1[0-2])|${MONTHS.join('|')}`, allowed: '1-12 or jan-dec' },
  { name: 'day of week', value: `\\+?0*[0-6]|${DAYS.join('|')}`, allowed: '0-6 (0 is Sunday) or sun-sat' },
];

// A step is a positive integer (`*/0` is refused by the parser).
const STEP = '\\+?0*[1-9][0-9]{0,8}';
// @every takes a Go duration. Only whole-second-scale units and short numbers:
// the parser rounds anything under a second up to one, and with at most four
// digits per part no sum fits a 64-character string yet overflows Go's int64
// nanoseconds.
const EVERY = '@every ([0-9]{1,4}(\\.[0-9]{1,4})?[hms])+';
const DESCRIPTORS = '@(yearly|annually|monthly|weekly|daily|midnight|hourly)';

/** One list item of a field: `*`, `?`, a value or a range, each with an optional step. */
const item = (value: string) => `(\\*|\\?|(${value})(-(${value}))?)(/${STEP})?`;
/** A whole field: a comma-separated list of items. Case-insensitive, as the parser compares names. */
export const fieldPattern = (value: string) => `^(?i)${item(value)}(,${item(value)})*$`;

/** CEL string literal of a regular expression (CEL's escapes are JSON's). */
const lit = (re: string) => JSON.stringify(re);
const FIELDS = `self.findAll(${lit('\\S+')})`;
const SHAPE = `^(${DESCRIPTORS}|${EVERY}|\\s*[^@\\s]\\S*(\\s+\\S+){4}\\s*)$`;
// Rules on one field only speak when the schedule has five fields at all; the shape rule reports the rest.
const FIVE = `(self.startsWith('@') || size(${FIELDS}) != 5)`;
const NAMED = [...MONTHS.map((m, i) => `'${m}': ${i + 1}`), ...DAYS.map((d, i) => `'${d}': ${i}`)];
// Every `low-high` in the schedule, found in one scan of the whole string: a
// scan per field and then per list item multiplies the estimated cost past
// the budget. 18 digits at most, so int() never overflows (a longer run of
// leading zeros is matched from a later digit, which is the same number).
const BOUND = `(\\+?[0-9]{1,18}|${[...MONTHS, ...DAYS].join('|')})`;
const RANGES = `self.findAll(${lit(`(?i)${BOUND}-${BOUND}`)})`;
/** CEL: the number a range bound stands for. Month and day names are disjoint, so one map serves both. */
const boundValue = (x: string) =>
  `(${x}.lowerAscii() in {${NAMED.join(', ')}} ? {${NAMED.join(', ')}}[${x}.lowerAscii()] : int(${x}))`;

/**
 * A CronJob schedule (`minute hour day-of-month month day-of-week`, or a
 * descriptor such as `@daily`), as a string with CEL rules that accept what
 * Kubernetes' CronJob validation accepts. Each field is checked on its own, so
 * the message names the field that is out of range.
 *
 * Stricter than the parser in four ways, each a schedule nobody means: an empty
 * list item (`1,,2`), a star with a range (`*-5`, which the parser reads as
 * `*`), `@every` with a sign or a unit under a second, and whitespace other
 * than space, tab, CR, LF and FF between fields. Time zone prefixes (`TZ=`,
 * `CRON_TZ=`) are refused, as the CronJob refuses them (it has a timeZone field).
 */
export function CronSchedule(options: { default?: string; description?: string; field?: string } = {}) {
  const { field = 'schedule', ...rest } = options;
  return WithRules(
    Type.String({ minLength: 1, maxLength: CRON_MAX_LENGTH, ...rest }),
    {
      rule: `self.matches(${lit(SHAPE)})`,
      message: `${field} must be five fields (minute hour day-of-month month day-of-week) such as '0 3 * * *', or one of @yearly, @monthly, @weekly, @daily, @hourly or @every <duration> such as @every 6h; time zone prefixes (TZ=) are not supported`,
    },
    ...CRON_FIELDS.map((f, i) => ({
      rule: `${FIVE} || ${FIELDS}[${i}].matches(${lit(fieldPattern(f.value))})`,
      messageExpression: `'${field}: the ${f.name} field ' + strings.quote(${FIELDS}[${i}]) + ' is not valid: use ${f.allowed}, *, a range such as ${i < 3 ? '1-5' : i === 3 ? 'jan-mar' : 'mon-fri'}, a list such as ${i === 4 ? '1,3,5' : '1,15'} or a step such as */2'`,
    })),
    {
      rule: `self.startsWith('@') || ${RANGES}.all(r, ${boundValue(`r.split('-')[0]`)} <= ${boundValue(`r.split('-')[1]`)})`,
      message: `${field}: a range runs from low to high, such as 10-20 (not 20-10)`,
    },
  );
}
