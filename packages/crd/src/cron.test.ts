// The cron field patterns, read by JavaScript's regex engine: for these
// constructs it agrees with RE2, which the API server runs them with. The
// integration test compares the whole rule set with a CronJob's validation on
// a real API server.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CRON_FIELDS, CronSchedule, fieldPattern } from './cron.ts';
import { toStructural } from './schema.ts';

/** The field's pattern as a JavaScript RegExp: RE2's leading (?i) becomes the i flag. */
const field = (name: string) => {
  const f = CRON_FIELDS.find((x) => x.name === name);
  assert.ok(f, name);
  const source = fieldPattern(f.value);
  assert.ok(source.startsWith('^(?i)'), source);
  return new RegExp(`^${source.slice('^(?i)'.length)}`, 'i');
};

const takes = (name: string, good: string[], bad: string[]) => {
  const re = field(name);
  for (const v of good) assert.ok(re.test(v), `${name} should take ${JSON.stringify(v)}`);
  for (const v of bad) assert.ok(!re.test(v), `${name} should refuse ${JSON.stringify(v)}`);
};

describe('cron fields', () => {
  test('minute: 0-59, with the forms the parser reads as numbers (+5, 007)', () => {
    takes(
      'minute',
      ['0', '59', '*', '?', '*/5', '5/15', '0-59/2', '1,2,3', '+5', '007', '10-20,40'],
      ['60', '99', '-1', '*/0', '1,,2', ',1', '1-', '*-5', 'L', 'jan', '1.5', '', '5/', '1-2-3'],
    );
  });

  test('hour: 0-23', () => {
    takes('hour', ['0', '23', '9-17/2', '00'], ['24', '99', '1-24']);
  });

  test('day of month: 1-31, no Quartz L or W', () => {
    takes('day of month', ['1', '31', '?', '1-15', '01'], ['0', '32', 'L', '15W', '00']);
  });

  test('month: 1-12 or three-letter names in any case', () => {
    takes(
      'month',
      ['1', '12', 'jan', 'DEC', 'Feb-Mar', 'jan,jul', 'jan/3'],
      ['0', '13', 'january', 'foo', 'sun'],
    );
  });

  test('day of week: 0-6 (the parser has no 7 for Sunday) or names, no Quartz #', () => {
    takes(
      'day of week',
      ['0', '6', 'sun', 'SAT', 'mon-fri', '1,3,5', '*/2'],
      ['7', 'sunday', '1#2', '5L', 'jan'],
    );
  });

  test('CronSchedule is a bounded, non-empty string whose messages name the field', () => {
    const s = toStructural(CronSchedule({ default: '0 3 * * *', field: 'backup.schedule' }));
    assert.equal(s.type, 'string');
    assert.equal(s.minLength, 1);
    assert.equal(s.maxLength, 64);
    assert.equal(s.default, '0 3 * * *');
    const rules = s['x-kubernetes-validations'] ?? [];
    // The shape, one rule per field (so the message names the field out of range), range order.
    assert.equal(rules.length, 7);
    for (const r of rules) assert.match(r.message ?? r.messageExpression ?? '', /backup\.schedule/);
    for (const name of CRON_FIELDS.map((f) => f.name))
      assert.ok(
        rules.some((r) => r.messageExpression?.includes(`the ${name} field`)),
        name,
      );
  });
});
