// Reading a namespace's Events in a fault test: when each last occurred, and
// the sequence since a fault as one line, for a failure message that says
// what the controllers did.
import type { EventsV1Event } from '@kubernetes/client-node';

/** When an Event last occurred (epoch ms): its series' latest occurrence, else its own time. */
export function lastOccurred(x: EventsV1Event): number {
  return new Date(
    x.series?.lastObservedTime ??
      x.eventTime ??
      x.deprecatedLastTimestamp ??
      x.metadata?.creationTimestamp ??
      0,
  ).getTime();
}

/** The Events from a second before `fromMs` on, in order, as `+seconds object reason: note` joined by '; '. */
export function eventTimeline(events: readonly EventsV1Event[], fromMs: number): string {
  return events
    .filter((x) => lastOccurred(x) >= fromMs - 1000)
    .sort((a, b) => lastOccurred(a) - lastOccurred(b))
    .map(
      (x) =>
        `+${((lastOccurred(x) - fromMs) / 1000).toFixed(1)} s ${x.regarding?.name} ${x.reason}: ${(x.note ?? '').slice(0, 160)}`,
    )
    .join('; ');
}

/** How many times Events of `reason` occurred since `fromMs` (a second before it on), series counted. */
export function occurrencesSince(events: readonly EventsV1Event[], reason: string, fromMs: number): number {
  return events
    .filter((x) => x.reason === reason && lastOccurred(x) >= fromMs - 1000)
    .reduce((n, x) => n + (x.series?.count ?? 1), 0);
}

/** The Events a controller instance (`reportingInstance`) reported since `fromMs`, as `reason: note`. */
export function reportedBy(events: readonly EventsV1Event[], instance: string, fromMs: number): string[] {
  return events
    .filter((x) => x.reportingInstance === instance && lastOccurred(x) >= fromMs)
    .map((x) => `${x.reason}: ${x.note}`);
}
