import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  parseLsn,
  parsePushed,
  parseTimelineScan,
  planCatchUp,
  segmentName,
  segmentNumber,
  type TimelineScan,
} from './timelines.ts';

const MiB16 = 16n * 1024n * 1024n;
const tl1 = (seg: number) => segmentName(1, BigInt(seg), MiB16);
const tl2 = (seg: number) => segmentName(2, BigInt(seg), MiB16);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

test('positions and segment names', () => {
  assert.equal(parseLsn('0/7000060'), 0x7000060n);
  assert.equal(parseLsn('16/B374D848'), (0x16n << 32n) + 0xb374d848n);
  assert.equal(parseLsn('nonsense'), undefined);
  // 16 MiB segments: 256 to a log id, so the 257th is 00000001 00000001 00000000.
  assert.equal(segmentName(1, 256n, MiB16), '000000010000000100000000');
  assert.deepEqual(segmentNumber('0000000300000001000000FF', MiB16), { timeline: 3, segno: 511n });
  // 1 GiB segments: 4 to a log id.
  assert.equal(segmentName(2, 5n, (1024n * MiB16) / 16n), '000000020000000100000001');
});

test("a promoted standby's scan, as the container prints it", () => {
  const out = [
    'segment-bytes 16777216',
    'history 1\t0/7000060\tno recovery target specified',
    `local ${tl1(5)}`,
    `local ${tl2(7)}`,
    `archived ${tl1(4)}`,
    '',
  ].join('\n');
  assert.deepEqual(parseTimelineScan(out), {
    segmentBytes: MiB16,
    ancestors: [{ timeline: 1, switchLsn: 0x7000060n }],
    local: new Set([tl1(5), tl2(7)]),
    archived: new Set([tl1(4)]),
  });
  assert.equal(parseTimelineScan(''), undefined, 'timeline 1 prints nothing');
  assert.equal(parseTimelineScan('segment-bytes 16777216\nhistory 1 garbage'), undefined);
});

const scan = (s: Partial<TimelineScan>): TimelineScan => ({
  segmentBytes: MiB16,
  ancestors: [{ timeline: 1, switchLsn: 0x7000060n }],
  local: new Set(),
  archived: new Set(),
  ...s,
});

test("what the former primary had not archived is pushed from the new primary's pg_wal; the switch segment and later names are not", () => {
  // Timeline 1 ended inside segment 7: 1..6 are whole, 7 is the partial one postgres archives itself,
  // 8 can only be a recycled file.
  const plan = planCatchUp(
    scan({ archived: new Set(range(1, 4).map(tl1)), local: new Set(range(3, 8).map(tl1)) }),
  );
  assert.deepEqual(plan, { push: [tl1(5), tl1(6)], gaps: [] });
  // Everything archived already: nothing to do.
  assert.deepEqual(planCatchUp(scan({ archived: new Set(range(1, 6).map(tl1)), local: new Set([tl1(6)]) })), {
    push: [],
    gaps: [],
  });
});

test('what no instance holds any more is a gap, said as a range', () => {
  // The switch on a segment boundary: segment 7 is whole on timeline 1.
  const plan = planCatchUp(
    scan({
      ancestors: [{ timeline: 1, switchLsn: 0x8000000n }],
      archived: new Set(range(1, 3).map(tl1)),
      local: new Set([tl1(6), tl1(7)]),
    }),
  );
  assert.deepEqual(plan, {
    push: [tl1(6), tl1(7)],
    gaps: [{ timeline: 1, first: tl1(4), last: tl1(5), count: 2 }],
  });
});

test('two failovers: each ancestor timeline up to its own end', () => {
  const plan = planCatchUp(
    scan({
      ancestors: [
        { timeline: 1, switchLsn: 0x5000100n },
        { timeline: 2, switchLsn: 0x9000000n },
      ],
      archived: new Set([...range(1, 4).map(tl1), ...range(5, 6).map(tl2)]),
      local: new Set([tl1(4), ...range(5, 9).map(tl2)]),
    }),
  );
  // tl2's 9 begins at its switch point: the third timeline's.
  assert.deepEqual(plan, { push: [tl2(7), tl2(8)], gaps: [] });
});

test("the push's lines", () => {
  assert.deepEqual(parsePushed(`pushed ${tl1(5)}\nfailed ${tl1(6)} ERROR: [039]: HTTP 403\n`), {
    pushed: [tl1(5)],
    failed: [{ segment: tl1(6), why: 'ERROR: [039]: HTTP 403' }],
  });
});
