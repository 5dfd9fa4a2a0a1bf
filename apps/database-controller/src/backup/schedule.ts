/**
 * Scheduled backups: spec.backup.schedule of a Database with an object store
 * makes a DatabaseBackup at each slot, as a CronJob would start a Job (same
 * schedule syntax, robfig/cron's standard parser, in UTC like the
 * kube-controller-manager's default). A slot missed while no manager ran is
 * made up once, never once per missed slot.
 */
import { isAlreadyExists } from '@regulon/client';
import type { Context } from '@regulon/runtime';
import type { DatabaseObject } from '../api.ts';
import { labels } from '../names.ts';
import { DatabaseBackup, type DatabaseBackupObject } from './api.ts';

/** The slot a scheduled DatabaseBackup was made for (RFC 3339). */
export const SLOT_ANNOTATION = 'regulon.dev/schedule-slot';
/** On scheduled DatabaseBackups: the Database whose schedule made it. */
export const SCHEDULED_FOR_LABEL = 'regulon.dev/scheduled-for';

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const DESCRIPTORS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

interface Field {
  values: Set<number>;
  /** `*` or `?` (robfig's star bit): day of month and day of week combine with AND then, OR otherwise. */
  star: boolean;
}

/** A parsed schedule: five fields, or a constant period (`@every`). */
export type Schedule = { fields: [Field, Field, Field, Field, Field] } | { everyMs: number };

const BOUNDS: Array<[number, number, string[]?]> = [
  [0, 59],
  [0, 23],
  [1, 31],
  [1, 12, MONTHS],
  [0, 6, DAYS],
];

function parseValue(text: string, names: string[] | undefined, offset: number): number {
  const named = names?.indexOf(text.toLowerCase()) ?? -1;
  if (named >= 0) return named + offset;
  if (!/^\+?\d+$/.test(text)) throw new Error(`not a schedule value: ${text}`);
  return Number(text);
}

function parseField(text: string, [min, max, names]: [number, number, string[]?]): Field {
  const values = new Set<number>();
  let star = false;
  const offset = names === MONTHS ? 1 : 0;
  for (const item of text.split(',')) {
    const [range = '', stepText] = item.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!(step >= 1)) throw new Error(`not a step: ${item}`);
    let low: number;
    let high: number;
    if (range === '*' || range === '?') {
      [low, high] = [min, max];
      if (step === 1) star = true;
    } else {
      const [a = '', b] = range.split('-');
      low = parseValue(a, names, offset);
      high = b === undefined ? (stepText === undefined ? low : max) : parseValue(b, names, offset);
    }
    if (low < min || high > max || low > high) throw new Error(`out of range: ${item}`);
    for (let v = low; v <= high; v += step) values.add(v);
  }
  return { values, star };
}

/** Parses a schedule the CRD accepted (see @regulon/crd CronSchedule); throws on anything else. */
export function parseSchedule(schedule: string): Schedule {
  const s = schedule.trim();
  const every = /^@every\s+(.+)$/.exec(s);
  if (every) {
    let ms = 0;
    for (const [, n, unit] of every[1]!.matchAll(/(\d+(?:\.\d+)?)([hms])/g))
      ms += Number(n) * { h: 3_600_000, m: 60_000, s: 1_000 }[unit as 'h' | 'm' | 's'];
    // robfig/cron rounds a period under a second up to one.
    return { everyMs: Math.max(1_000, Math.round(ms / 1_000) * 1_000) };
  }
  const parts = (DESCRIPTORS[s.toLowerCase()] ?? s).split(/\s+/);
  if (parts.length !== 5) throw new Error(`a schedule has five fields: ${schedule}`);
  return { fields: parts.map((p, i) => parseField(p, BOUNDS[i]!)) as [Field, Field, Field, Field, Field] };
}

function dayMatches(dom: Field, dow: Field, t: Date): boolean {
  const d = dom.values.has(t.getUTCDate());
  const w = dow.values.has(t.getUTCDay());
  return dom.star || dow.star ? d && w : d || w;
}

/** The first slot strictly after `t` (whole minutes, UTC; `@every`: t plus the period). */
export function nextAfter(schedule: Schedule, t: Date): Date {
  if ('everyMs' in schedule) return new Date(t.getTime() + schedule.everyMs);
  const [minute, hour, dom, month, dow] = schedule.fields;
  const c = new Date(t.getTime());
  c.setUTCSeconds(0, 0);
  c.setUTCMinutes(c.getUTCMinutes() + 1);
  // Five years of search covers any schedule that matches at all (Feb 29 on a given weekday included).
  const limit = t.getTime() + 5 * 366 * 86_400_000;
  while (c.getTime() <= limit) {
    if (!month.values.has(c.getUTCMonth() + 1)) {
      c.setUTCMonth(c.getUTCMonth() + 1, 1);
      c.setUTCHours(0, 0, 0, 0);
    } else if (!dayMatches(dom, dow, c)) {
      c.setUTCDate(c.getUTCDate() + 1);
      c.setUTCHours(0, 0, 0, 0);
    } else if (!hour.values.has(c.getUTCHours())) {
      c.setUTCHours(c.getUTCHours() + 1, 0, 0, 0);
    } else if (!minute.values.has(c.getUTCMinutes())) {
      c.setUTCMinutes(c.getUTCMinutes() + 1, 0, 0);
    } else return c;
  }
  throw new Error('the schedule never matches');
}

/**
 * What is due at `now`, given the last slot a backup was made for (or the
 * Database's creation): the latest slot not after `now` that is later than
 * `last` (undefined when none), and the slot after now, to wake up for.
 */
export function dueSlot(schedule: Schedule, last: Date, now: Date): { due: Date | undefined; next: Date } {
  let slot = nextAfter(schedule, last);
  if (slot > now) return { due: undefined, next: slot };
  // Bounded: a manager down for long makes up the latest slot only, found by walking at most this far.
  for (let i = 0; i < 100_000; i++) {
    const n = nextAfter(schedule, slot);
    if (n > now) return { due: slot, next: n };
    slot = n;
  }
  return { due: slot, next: nextAfter(schedule, now) };
}

/** `orders-20261124-0300` style: the Database's name and the slot, UTC, to the second only for `@every` below a minute. */
export function scheduledName(db: string, slot: Date): string {
  const iso = slot.toISOString();
  const stamp = `${iso.slice(0, 10).replace(/-/g, '')}-${iso.slice(11, 16).replace(':', '')}`;
  return slot.getUTCSeconds()
    ? `${db}-${stamp}${String(slot.getUTCSeconds()).padStart(2, '0')}`
    : `${db}-${stamp}`;
}

/**
 * Makes the DatabaseBackup of the slot that is due, if any, and returns how
 * long until the next slot. No owner reference: a DatabaseBackup names where
 * its backup is, which a restore needs after the Database is gone too.
 */
export async function ensureScheduledBackup(
  db: DatabaseObject,
  ctx: Context,
  existing: readonly DatabaseBackupObject[],
  now: Date = new Date(),
): Promise<number> {
  const schedule = parseSchedule(db.spec.backup!.schedule);
  const slots = existing
    .filter((b) => b.metadata.labels?.[SCHEDULED_FOR_LABEL] === db.metadata.name)
    .map((b) => Date.parse(b.metadata.annotations?.[SLOT_ANNOTATION] ?? ''))
    .filter((t) => !Number.isNaN(t));
  const created = db.metadata.creationTimestamp
    ? new Date(db.metadata.creationTimestamp).getTime()
    : now.getTime();
  const last = new Date(Math.max(created, ...slots));
  const { due, next } = dueSlot(schedule, last, now);
  if (due) {
    const name = scheduledName(db.metadata.name!, due);
    const backup = DatabaseBackup.object({
      metadata: {
        name,
        namespace: db.metadata.namespace!,
        labels: { ...labels(db), [SCHEDULED_FOR_LABEL]: db.metadata.name! },
        annotations: { [SLOT_ANNOTATION]: due.toISOString() },
      },
      spec: { database: db.metadata.name! },
    });
    try {
      await ctx.client
        .resource(DatabaseBackup)
        .create(backup, { fieldManager: ctx.fieldManager, signal: ctx.signal });
      ctx.event(
        'Normal',
        'BackupScheduled',
        `Created DatabaseBackup ${name} for the ${due.toISOString()} slot of ${db.spec.backup!.schedule}`,
      );
    } catch (err) {
      // Made already (by this manager a moment ago, or by another): the slot is taken care of.
      if (!isAlreadyExists(err)) throw err;
    }
  }
  return Math.max(1_000, next.getTime() - now.getTime());
}
