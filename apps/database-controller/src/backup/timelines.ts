/**
 * The WAL of earlier timelines that a promoted standby holds and the archive
 * lacks. With `archive_mode = on` only a primary archives: a standby marks
 * what it receives as done. When a primary fails while its archiver is
 * behind (a store that refused for a while, a backlog), its last segments
 * reach the archive from nowhere once a standby is promoted, and every
 * restore from an earlier backup stops at that hole. So the new primary
 * archives the segments of its ancestors' timelines that it holds and the
 * archive lacks; what no instance holds any more is reported as a gap.
 *
 * Only segments wholly before a timeline's switch point are taken: they are
 * the common history, identical on every instance that has them. The segment
 * holding the switch point is archived by postgres itself (as `.partial`,
 * its contents also at the start of the next timeline's segment), and later
 * names on the old timeline may be recycled files, never WAL.
 *
 * `archive_mode = always` would have standbys archive too, but pgBackRest
 * refuses to back up a server so configured.
 */
import { ARCHIVE_WAL_SCRIPT } from './pgbackrest.ts';

/** The postgres container's view: its newest timeline history, its pg_wal, and what the archive holds of the ancestors. */
export const TIMELINES_SCAN_COMMAND = [
  'bash',
  '-c',
  `set -o pipefail
cd "$PGBACKREST_PG1_PATH" || exit 1
history=$(ls pg_wal | grep -E '^[0-9A-F]{8}[.]history$' | sort | tail -n 1)
# Timeline 1 has no ancestors.
[ -n "$history" ] || exit 0
echo "segment-bytes $(pg_controldata . | sed -n 's/^Bytes per WAL segment: *//p')"
grep -vE '^[[:space:]]*(#|$)' "pg_wal/$history" | sed 's/^/history /'
ancestors=$(grep -vE '^[[:space:]]*(#|$)' "pg_wal/$history" | awk '{ printf "%08X\\n", $1 }' | paste -sd '|')
ls pg_wal | grep -E "^($ancestors)[0-9A-F]{16}$" | sed 's/^/local /'
listing=$(pgbackrest repo-ls --recurse "archive/$PGBACKREST_STANZA" 2>&1) || { printf '%s\\n' "$listing" >&2; exit 1; }
printf '%s\\n' "$listing" | grep -oE '[0-9A-F]{24}-[0-9a-f]{40}' | cut -c1-24 | grep -E "^($ancestors)" | sort -u | sed 's/^/archived /'
exit 0`,
];

/** Archives the named segments of pg_wal with archive_command's own wrapper; a line per segment. */
export function pushCommand(segments: readonly string[]): string[] {
  return [
    'bash',
    '-c',
    `cd "$PGBACKREST_PG1_PATH" || exit 1
for s in "$@"; do
  if out=$(bash ${ARCHIVE_WAL_SCRIPT} "pg_wal/$s" 2>&1); then echo "pushed $s"; else echo "failed $s $(printf '%s' "$out" | tail -n 1)"; fi
done`,
    'push',
    ...segments,
  ];
}

export interface TimelineScan {
  segmentBytes: bigint;
  /** The current timeline's ancestors, oldest first, each with the position where it ended. */
  ancestors: Array<{ timeline: number; switchLsn: bigint }>;
  /** Segment names in pg_wal, and in the archive, on those timelines. */
  local: Set<string>;
  archived: Set<string>;
}

/** The scan's output; undefined for timeline 1 (no output) or what cannot be read. */
export function parseTimelineScan(out: string): TimelineScan | undefined {
  const scan: TimelineScan = { segmentBytes: 0n, ancestors: [], local: new Set(), archived: new Set() };
  for (const line of out.split('\n')) {
    const [kind, ...rest] = line.trim().split(/\s+/);
    if (kind === 'segment-bytes' && /^\d+$/.test(rest[0] ?? '')) scan.segmentBytes = BigInt(rest[0]!);
    else if (kind === 'history') {
      const lsn = parseLsn(rest[1] ?? '');
      if (!/^\d+$/.test(rest[0] ?? '') || lsn === undefined) return undefined;
      scan.ancestors.push({ timeline: Number(rest[0]), switchLsn: lsn });
    } else if ((kind === 'local' || kind === 'archived') && SEGMENT.test(rest[0] ?? ''))
      scan[kind].add(rest[0]!);
  }
  if (scan.ancestors.length === 0 || scan.segmentBytes <= 0n) return undefined;
  return scan;
}

const SEGMENT = /^[0-9A-F]{24}$/;

/** `16/B374D848` as a number. */
export function parseLsn(lsn: string): bigint | undefined {
  const m = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(lsn);
  return m ? (BigInt(`0x${m[1]}`) << 32n) + BigInt(`0x${m[2]}`) : undefined;
}

/** A segment's timeline and number (its position divided by the segment size), from its name. */
export function segmentNumber(name: string, segmentBytes: bigint): { timeline: number; segno: bigint } {
  const perLogId = 0x1_0000_0000n / segmentBytes;
  return {
    timeline: parseInt(name.slice(0, 8), 16),
    segno: BigInt(`0x${name.slice(8, 16)}`) * perLogId + BigInt(`0x${name.slice(16, 24)}`),
  };
}

export function segmentName(timeline: number, segno: bigint, segmentBytes: bigint): string {
  const perLogId = 0x1_0000_0000n / segmentBytes;
  const hex = (n: bigint | number) => n.toString(16).toUpperCase().padStart(8, '0');
  return `${hex(timeline)}${hex(segno / perLogId)}${hex(segno % perLogId)}`;
}

export interface CatchUpPlan {
  /** Held here, missing from the archive: to archive now, oldest first. */
  push: string[];
  /** Missing from the archive and held nowhere here: holes between a timeline's first archived segment and its end. */
  gaps: Array<{ timeline: number; first: string; last: string; count: number }>;
}

/** What to archive, and what stays missing once it is. */
export function planCatchUp(scan: TimelineScan): CatchUpPlan {
  const plan: CatchUpPlan = { push: [], gaps: [] };
  const size = scan.segmentBytes;
  for (const { timeline, switchLsn } of scan.ancestors) {
    // Segments numbered below this hold only this timeline's WAL, all of it before the switch.
    const end = switchLsn / size;
    const onTimeline = (names: Set<string>) =>
      [...names]
        .map((n) => ({ n, ...segmentNumber(n, size) }))
        .filter((s) => s.timeline === timeline && s.segno < end);
    const archived = new Set(onTimeline(scan.archived).map((s) => s.segno));
    const push = onTimeline(scan.local)
      .filter((s) => !archived.has(s.segno))
      .sort((a, b) => (a.segno < b.segno ? -1 : 1));
    plan.push.push(...push.map((s) => s.n));
    const present = new Set([...archived, ...push.map((s) => s.segno)]);
    if (present.size === 0) continue;
    let segno = [...present].reduce((a, b) => (b < a ? b : a));
    while (segno < end) {
      if (present.has(segno)) {
        segno++;
        continue;
      }
      const first = segno;
      while (segno < end && !present.has(segno)) segno++;
      plan.gaps.push({
        timeline,
        first: segmentName(timeline, first, size),
        last: segmentName(timeline, segno - 1n, size),
        count: Number(segno - first),
      });
    }
  }
  return plan;
}

/** The push's lines: segments archived, and those that failed with the wrapper's last words. */
export function parsePushed(out: string): {
  pushed: string[];
  failed: Array<{ segment: string; why: string }>;
} {
  const pushed: string[] = [];
  const failed: Array<{ segment: string; why: string }> = [];
  for (const line of out.split('\n')) {
    const m = /^(pushed|failed) ([0-9A-F]{24})(?: (.*))?$/.exec(line.trim());
    if (m?.[1] === 'pushed') pushed.push(m[2]!);
    else if (m) failed.push({ segment: m[2]!, why: m[3] ?? '' });
  }
  return { pushed, failed };
}
