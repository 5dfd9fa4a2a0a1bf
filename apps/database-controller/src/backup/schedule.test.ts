// Scheduled backups: the slots of a CronJob schedule (robfig/cron's standard
// syntax, UTC), and which one is due after a manager was away.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dueSlot, nextAfter, parseSchedule, scheduledName } from './schedule.ts';

const at = (iso: string) => new Date(iso);
const next = (schedule: string, from: string) => nextAfter(parseSchedule(schedule), at(from)).toISOString();

test('the next slot of five-field schedules, descriptors and @every', () => {
  assert.equal(next('0 3 * * *', '2026-11-24T12:00:00Z'), '2026-11-25T03:00:00.000Z');
  assert.equal(next('0 3 * * *', '2026-11-24T02:59:59Z'), '2026-11-24T03:00:00.000Z');
  assert.equal(next('0 3 * * *', '2026-11-24T03:00:00Z'), '2026-11-25T03:00:00.000Z', 'strictly after');
  assert.equal(next('*/15 * * * *', '2026-11-24T12:07:30Z'), '2026-11-24T12:15:00.000Z');
  assert.equal(next('30 2 1 jan,jul *', '2026-11-24T00:00:00Z'), '2027-01-01T02:30:00.000Z');
  assert.equal(
    next('0 0 * * sun', '2026-11-24T00:00:00Z'),
    '2026-11-29T00:00:00.000Z',
    '2026-11-29 is a Sunday',
  );
  assert.equal(next('@daily', '2026-11-24T00:00:00Z'), '2026-11-25T00:00:00.000Z');
  assert.equal(next('@hourly', '2026-11-24T00:30:00Z'), '2026-11-24T01:00:00.000Z');
  assert.equal(next('@every 6h', '2026-11-24T00:30:00Z'), '2026-11-24T06:30:00.000Z');
  assert.equal(next('0 0 29 2 *', '2026-11-24T00:00:00Z'), '2028-02-29T00:00:00.000Z');
});

test('day of month and day of week: either when both are restricted, both when one is *', () => {
  // The 13th, or any Friday (robfig/cron and Vixie cron alike).
  assert.equal(next('0 0 13 * fri', '2026-11-24T00:00:00Z'), '2026-11-27T00:00:00.000Z');
  assert.equal(next('0 0 13 * *', '2026-11-24T00:00:00Z'), '2026-12-13T00:00:00.000Z');
  assert.equal(next('0 0 ? * 5', '2026-11-24T00:00:00Z'), '2026-11-27T00:00:00.000Z');
});

test('what is due: nothing before the first slot; after an absence, the latest missed slot once', () => {
  const daily = parseSchedule('0 3 * * *');
  assert.deepEqual(dueSlot(daily, at('2026-11-24T12:00:00Z'), at('2026-11-24T20:00:00Z')), {
    due: undefined,
    next: at('2026-11-25T03:00:00Z'),
  });
  // Made for the 24th; the manager was away until the 27th at noon: the 27th's slot, then the 28th's.
  assert.deepEqual(dueSlot(daily, at('2026-11-24T03:00:00Z'), at('2026-11-27T12:00:00Z')), {
    due: at('2026-11-27T03:00:00Z'),
    next: at('2026-11-28T03:00:00Z'),
  });
});

test('names: the Database and the slot, seconds only when the slot has them', () => {
  assert.equal(scheduledName('orders', at('2026-11-24T03:00:00Z')), 'orders-20261124-0300');
  assert.equal(scheduledName('orders', at('2026-11-24T03:00:30Z')), 'orders-20261124-030030');
});
