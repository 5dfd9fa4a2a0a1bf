import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import type { Context } from '@regulon/runtime';
import type { DatabaseObject } from '../api.ts';
import { ARCHIVE_STUCK_MS, archiverHealth, parseArchiverState, type ArchiverState } from './archiver.ts';
import { ARCHIVE_LAG_METRIC, ARCHIVING_FAILING_METRIC, archiverReporter } from './archiver-metrics.ts';
import { ARCHIVER_CHECK_MS, Stanzas } from './database.ts';
import type { ExecRequest, ExecResult, Executor } from './exec.ts';
import { segmentName } from './timelines.ts';

const T = Date.parse('2026-11-29T06:00:00Z');
const healthy: ArchiverState = {
  lastArchivedWal: '000000010000000000000007',
  lastArchivedAt: T - 5_000,
  lastFailedWal: undefined,
  lastFailedAt: undefined,
  failedCount: 0,
  pendingSegments: 1,
  oldestPendingAt: T - 2_000,
  oldestPendingWal: '000000010000000000000008',
  serverNow: T,
};
/** psql -At -F '|' prints the row so. */
const row = (s: ArchiverState) =>
  [
    s.lastArchivedWal ?? '',
    s.lastArchivedAt ?? 0,
    s.lastFailedWal ?? '',
    s.lastFailedAt ?? 0,
    s.failedCount,
    s.pendingSegments,
    s.oldestPendingAt ?? 0,
    s.oldestPendingWal ?? '',
    s.serverNow,
  ].join('|') + '\n';
const failing: ArchiverState = {
  ...healthy,
  lastFailedWal: '000000010000000000000008',
  lastFailedAt: T - 1_000,
  failedCount: 6,
  pendingSegments: 3,
  oldestPendingAt: T - 30_000,
};

test("psql's row becomes the archiver's state; anything else is no answer", () => {
  assert.deepEqual(parseArchiverState(row(healthy)), healthy);
  assert.deepEqual(parseArchiverState(row(failing)), failing);
  // A server that never archived: empty names, zero times.
  assert.deepEqual(parseArchiverState('|0||0|0|0|0||1764396000000\n'), {
    lastArchivedWal: undefined,
    lastArchivedAt: undefined,
    lastFailedWal: undefined,
    lastFailedAt: undefined,
    failedCount: 0,
    pendingSegments: 0,
    oldestPendingAt: undefined,
    oldestPendingWal: undefined,
    serverNow: 1764396000000,
  });
  assert.equal(parseArchiverState(''), undefined);
  assert.equal(parseArchiverState('psql: error: connection to server failed'), undefined);
  assert.equal(parseArchiverState('a|b|c|d|e|f|g|h|i'), undefined);
});

test('a failure after the last success, or a segment waiting past ARCHIVE_STUCK_MS, is archiving that fails', () => {
  const ok = archiverHealth(healthy, 'backups/shop/orders');
  assert.deepEqual(ok, {
    ok: true,
    message: 'WAL is archived into backups/shop/orders',
    oldestPendingSeconds: 2,
  });

  const bad = archiverHealth(failing, 'backups/shop/orders');
  assert.equal(bad.ok, false);
  assert.equal(bad.oldestPendingSeconds, 30);
  assert.match(bad.message, /segment 000000010000000000000008 could not be archived \(6 failed attempts/);
  assert.match(bad.message, /last segment archived is 000000010000000000000007/);
  // The message does not move while the archiver retries the same segment: no status rewrite per look.
  assert.equal(
    archiverHealth(
      { ...failing, lastFailedAt: T + 30_000, serverNow: T + 31_000, oldestPendingAt: T - 70_000 },
      'backups/shop/orders',
    ).message.replace(/\(\d+ failed/, '(n failed'),
    bad.message.replace(/\(\d+ failed/, '(n failed'),
  );
  // Once a segment is archived after the failure, it is healthy again (the failure is history).
  assert.equal(archiverHealth({ ...failing, lastArchivedAt: T }, 'b').ok, true);

  // Hung: no failure reported, but a segment waits too long.
  const hung = { ...healthy, oldestPendingAt: T - ARCHIVE_STUCK_MS - 1_000 };
  const h = archiverHealth(hung, 'b');
  assert.equal(h.ok, false);
  assert.match(
    h.message,
    /does not keep up: segment 000000010000000000000008 has waited more than 40 s to be archived, no failure reported yet/,
  );
  assert.equal(archiverHealth({ ...healthy, oldestPendingAt: T - ARCHIVE_STUCK_MS + 1_000 }, 'b').ok, true);

  // Never archived and failing from the start.
  const never = archiverHealth({ ...failing, lastArchivedWal: undefined, lastArchivedAt: undefined }, 'b');
  assert.equal(never.ok, false);
  assert.match(never.message, /no segment has been archived yet/);
});

const db = {
  metadata: { namespace: 'shop', name: 'orders', uid: 'db-uid' },
  spec: {
    engine: 'postgres',
    backup: {
      objectStore: {
        endpoint: 'https://store:9000',
        bucket: 'backups',
        path: 'shop/orders',
        credentials: { secretName: 'keys' },
      },
    },
  },
} as unknown as DatabaseObject;

/**
 * An executor that answers stanza-create with success, the timelines' scan
 * with `scan()` (by default as on timeline 1: no output), a push of segments
 * with `push()`, and the archiver's query with `archiver()`.
 */
function scripted(
  archiver: () => ExecResult,
  more: { scan?: () => string; push?: (segments: string[]) => ExecResult } = {},
) {
  const calls: string[] = [];
  const ok = (stdout: string) => Promise.resolve({ exitCode: 0, stdout, stderr: '' });
  const executor: Executor = {
    exec(req: ExecRequest) {
      const script = req.command.join(' ');
      if (script.includes('stanza-create')) {
        calls.push('stanza-create');
        return ok('');
      }
      if (script.includes('repo-ls')) {
        calls.push('timelines');
        return ok(more.scan?.() ?? '');
      }
      if (req.command[3] === 'push') {
        const segments = req.command.slice(4);
        calls.push(`push ${segments.join(' ')}`);
        return Promise.resolve(more.push!(segments));
      }
      calls.push('archiver');
      return Promise.resolve(archiver());
    },
  };
  return { executor, calls };
}
/** A Context that records Events: `Type Reason` in `events`, and `Type Reason: message` in `notes`. */
const recordingContext = () => {
  const events: string[] = [];
  const notes: string[] = [];
  const record = (type: string, reason: string, message: string) => {
    events.push(`${type} ${reason}`);
    notes.push(`${type} ${reason}: ${message}`);
  };
  const ctx = {
    signal: new AbortController().signal,
    warn: (reason: string, message: string) => record('Warning', reason, message),
    event: record,
  } as unknown as Context;
  return { ctx, events, notes };
};

test('the stanza once, then the archiver every ARCHIVER_CHECK_MS: a failure and a recovery are each an Event and move the status', async () => {
  let answer: ExecResult = { exitCode: 0, stdout: row(healthy), stderr: '' };
  const { executor, calls } = scripted(() => answer);
  const { ctx, events } = recordingContext();
  const stanzas = new Stanzas(executor);
  const primary = { pod: 'orders-0', uid: 'pod-uid' };

  assert.equal(await stanzas.ensure(db, ctx, primary, T), ARCHIVER_CHECK_MS);
  assert.deepEqual(calls, ['stanza-create', 'timelines']);
  assert.deepEqual(events, ['Normal ArchivingReady']);
  assert.deepEqual(stanzas.archiving(db), { ok: true, message: 'WAL is archived into backups/shop/orders' });
  assert.equal(stanzas.archiver(db), undefined, 'not read yet');

  // Not due: nothing run, the time left returned.
  assert.equal(await stanzas.ensure(db, ctx, primary, T + 5_000), ARCHIVER_CHECK_MS - 5_000);
  assert.deepEqual(calls, ['stanza-create', 'timelines']);

  assert.equal(await stanzas.ensure(db, ctx, primary, T + ARCHIVER_CHECK_MS), ARCHIVER_CHECK_MS);
  assert.deepEqual(calls, ['stanza-create', 'timelines', 'archiver'], 'timeline 1: looked at once');
  assert.equal(stanzas.archiver(db)?.ok, true);
  assert.deepEqual(events, ['Normal ArchivingReady'], 'healthy is no news');

  answer = { exitCode: 0, stdout: row(failing), stderr: '' };
  await stanzas.ensure(db, ctx, primary, T + 2 * ARCHIVER_CHECK_MS);
  assert.equal(stanzas.archiving(db)?.ok, false);
  assert.match(stanzas.archiving(db)!.message, /WAL archiving into backups\/shop\/orders fails/);
  assert.deepEqual(events, ['Normal ArchivingReady', 'Warning ArchivingFailed']);
  await stanzas.ensure(db, ctx, primary, T + 3 * ARCHIVER_CHECK_MS);
  assert.equal(events.length, 2, 'one Warning per failure, not one per look');

  // No answer (exec failed, psql refused): what was said stands.
  answer = { exitCode: 2, stdout: 'psql: error', stderr: '' };
  await stanzas.ensure(db, ctx, primary, T + 4 * ARCHIVER_CHECK_MS);
  assert.equal(stanzas.archiving(db)?.ok, false);

  answer = {
    exitCode: 0,
    stdout: row({ ...failing, lastArchivedAt: T + 4 * ARCHIVER_CHECK_MS }),
    stderr: '',
  };
  await stanzas.ensure(db, ctx, primary, T + 5 * ARCHIVER_CHECK_MS);
  assert.deepEqual(stanzas.archiving(db), { ok: true, message: 'WAL is archived into backups/shop/orders' });
  assert.deepEqual(events, ['Normal ArchivingReady', 'Warning ArchivingFailed', 'Normal ArchivingRecovered']);

  // A new primary: the stanza again there, and the archiver read anew.
  await stanzas.ensure(db, ctx, { pod: 'orders-1', uid: 'pod-uid-2' }, T + 6 * ARCHIVER_CHECK_MS);
  assert.deepEqual(calls.slice(-2), ['stanza-create', 'timelines']);
  assert.equal(stanzas.archiver(db), undefined);
});

test('the gauges: failing 0 or 1 and the archive lag, only for a Database whose archiver was read', async () => {
  const registry = new Registry();
  const report = archiverReporter(registry);
  const values = async (name: string) =>
    (await registry.getSingleMetric(name)!.get()).values.map(
      (v) => `${v.labels['database_namespace']}/${v.labels['database']} ${v.value}`,
    );
  report(db, archiverHealth(healthy, 'b'));
  assert.deepEqual(await values(ARCHIVING_FAILING_METRIC), ['shop/orders 0']);
  assert.deepEqual(await values(ARCHIVE_LAG_METRIC), ['shop/orders 2']);
  report(db, archiverHealth(failing, 'b'));
  assert.deepEqual(await values(ARCHIVING_FAILING_METRIC), ['shop/orders 1']);
  assert.deepEqual(await values(ARCHIVE_LAG_METRIC), ['shop/orders 30']);
  report(db, undefined);
  assert.deepEqual(await values(ARCHIVING_FAILING_METRIC), []);
  assert.deepEqual(await values(ARCHIVE_LAG_METRIC), []);
});

test("a promoted primary archives the earlier timeline's segments the archive lacks, once; a failed push is tried again at the next check; a gap is a Warning", async () => {
  const MiB16 = 16n * 1024n * 1024n;
  const tl1 = (seg: number) => segmentName(1, BigInt(seg), MiB16);
  let scan = [
    'segment-bytes 16777216',
    'history 1\t0/8000000\tno recovery target specified',
    `local ${tl1(6)}`,
    `local ${tl1(7)}`,
    ...[1, 2, 3].map((n) => `archived ${tl1(n)}`),
  ].join('\n');
  let push = (segments: string[]): ExecResult => ({
    exitCode: 0,
    stdout: `pushed ${segments[0]}\nfailed ${segments[1]} ERROR: [039]: HTTP 403\n`,
    stderr: '',
  });
  const { executor, calls } = scripted(() => ({ exitCode: 1, stdout: '', stderr: '' }), {
    scan: () => scan,
    push: (segments) => push(segments),
  });
  const { ctx, events, notes } = recordingContext();
  const stanzas = new Stanzas(executor);
  const primary = { pod: 'orders-1', uid: 'pod-uid-2' };

  await stanzas.ensure(db, ctx, primary, T);
  assert.deepEqual(calls, ['stanza-create', 'timelines', `push ${tl1(6)} ${tl1(7)}`]);
  assert.deepEqual(events, ['Normal ArchivingReady', 'Normal ArchiveCaughtUp', 'Warning ArchivingFailed']);
  assert.match(notes[1]!, new RegExp(`Archived 1 WAL segment\\(s\\) .*\\(${tl1(6)}\\)`));
  assert.match(notes[2]!, new RegExp(`${tl1(7)}: ERROR: \\[039\\]: HTTP 403\\); trying again$`));

  // The next check: the scan again (segment 6 is archived now), the rest pushed, and the gap said.
  scan += `\narchived ${tl1(6)}`;
  push = (segments) => ({ exitCode: 0, stdout: segments.map((s) => `pushed ${s}\n`).join(''), stderr: '' });
  await stanzas.ensure(db, ctx, primary, T + ARCHIVER_CHECK_MS);
  assert.deepEqual(calls.slice(3), ['timelines', `push ${tl1(7)}`, 'archiver']);
  assert.deepEqual(events.slice(3), ['Normal ArchiveCaughtUp', 'Warning ArchiveGap']);
  assert.equal(
    notes[4],
    `Warning ArchiveGap: The archive in backups/shop/orders lacks 2 WAL segment(s) of timeline 1 (${tl1(4)} to ${tl1(5)}) that the former primary never archived and no instance holds: a restore from an earlier backup cannot pass them (it fails, saying so); backups taken from now on restore past them`,
  );
  // Done for this primary: the later checks read the archiver alone.
  await stanzas.ensure(db, ctx, primary, T + 2 * ARCHIVER_CHECK_MS);
  assert.deepEqual(calls.slice(6), ['archiver']);
  assert.equal(events.length, 5);
});
