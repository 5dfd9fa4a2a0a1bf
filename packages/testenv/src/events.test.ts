import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EventsV1Event } from '@kubernetes/client-node';
import { eventTimeline, lastOccurred, occurrencesSince, reportedBy } from './events.ts';

const event = (reason: string, at: Partial<EventsV1Event>): EventsV1Event => ({
  metadata: { creationTimestamp: new Date(1) },
  eventTime: new Date(0),
  regarding: { name: 'db' },
  reason,
  note: `${reason} happened`,
  ...at,
});

test("lastOccurred: a series' latest occurrence, else the Event's own time", () => {
  assert.equal(lastOccurred(event('A', { eventTime: new Date(5000) })), 5000);
  assert.equal(
    lastOccurred(
      event('A', { eventTime: new Date(5000), series: { count: 3, lastObservedTime: new Date(9000) } }),
    ),
    9000,
  );
});

test('eventTimeline: from a second before the fault, in order, times relative to it', () => {
  const events = [
    event('Promoted', { eventTime: new Date(14_000) }),
    event('Old', { eventTime: new Date(8_000) }),
    event('FailoverStarted', { eventTime: new Date(9_500) }),
  ];
  assert.equal(
    eventTimeline(events, 10_000),
    '+-0.5 s db FailoverStarted: FailoverStarted happened; +4.0 s db Promoted: Promoted happened',
  );
});

test('occurrencesSince counts a series by its count; reportedBy names what one instance reported since then', () => {
  const events = [
    { ...event('Promoted', { eventTime: new Date(12_000) }), reportingInstance: 'manager-b' },
    {
      ...event('Fencing', {
        eventTime: new Date(9_500),
        series: { count: 3, lastObservedTime: new Date(11_000) },
      }),
      reportingInstance: 'manager-a',
    },
    { ...event('Promoted', { eventTime: new Date(2_000) }), reportingInstance: 'manager-a' },
  ];
  assert.equal(occurrencesSince(events, 'Fencing', 10_000), 3);
  assert.equal(occurrencesSince(events, 'Promoted', 10_000), 1);
  assert.deepEqual(reportedBy(events, 'manager-a', 10_000), ['Fencing: Fencing happened']);
  assert.deepEqual(reportedBy(events, 'manager-b', 13_000), []);
});
