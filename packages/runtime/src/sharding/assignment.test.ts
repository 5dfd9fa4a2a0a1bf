import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assignBuckets } from './assignment.ts';

/** Owner of each bucket, by bucket number. */
function owners(assignment: Map<string, number[]>): string[] {
  const owner: string[] = [];
  for (const [member, buckets] of assignment) for (const b of buckets) owner[b] = member;
  return owner;
}

const membersOf = (set: number, n: number) => Array.from({ length: n }, (_, i) => `set${set}-replica-${i}`);
const moved = (before: string[], after: string[]) => after.filter((o, b) => o !== before[b]).length;

describe('assignBuckets', () => {
  test('deterministic: the same members in any order, with duplicates, get the same answer', () => {
    const members = ['c', 'a', 'd', 'b'];
    const first = assignBuckets(16, members);
    assert.deepEqual(assignBuckets(16, [...members].reverse()), first);
    assert.deepEqual(assignBuckets(16, ['b', 'b', 'a', 'd', 'c', 'a']), first);
    assert.deepEqual([...first.keys()], ['a', 'b', 'c', 'd']);
  });

  test('every bucket has exactly one owner, and counts differ by at most one', () => {
    for (const bucketCount of [1, 2, 7, 16, 64, 256]) {
      for (let n = 1; n <= 12; n++) {
        const assignment = assignBuckets(bucketCount, membersOf(bucketCount, n));
        const all = [...assignment.values()].flat().sort((a, b) => a - b);
        assert.deepEqual(
          all,
          Array.from({ length: bucketCount }, (_, i) => i),
          `${bucketCount} buckets, ${n} members`,
        );
        const counts = [...assignment.values()].map((b) => b.length);
        assert.ok(
          Math.max(...counts) - Math.min(...counts) <= 1,
          `${bucketCount} over ${n}: ${counts.join('/')}`,
        );
      }
    }
  });

  test('no members: no owners; more members than buckets: some own none', () => {
    assert.deepEqual(assignBuckets(16, []), new Map());
    const crowded = assignBuckets(2, ['a', 'b', 'c']);
    assert.deepEqual([...crowded.values()].map((b) => b.length).sort(), [0, 1, 1]);
    assert.throws(() => assignBuckets(0, ['a']), RangeError);
  });

  test('a join moves the newcomer its share, nearly all straight from old owners; a leave is the same in reverse', () => {
    const bucketCount = 16;
    let joins = 0;
    let beyondShare = 0;
    let worst = 0;
    let roundRobinMoved = 0;
    let newcomerShares = 0;
    for (let set = 0; set < 200; set++) {
      for (let n = 1; n <= 6; n++) {
        const members = membersOf(set, n);
        const before = owners(assignBuckets(bucketCount, members));
        const after = owners(assignBuckets(bucketCount, [...members, `set${set}-newcomer`]));
        const share = after.filter((o) => o === `set${set}-newcomer`).length;
        assert.ok(share === Math.floor(bucketCount / (n + 1)) || share === Math.ceil(bucketCount / (n + 1)));
        const extra = moved(before, after) - share;
        assert.ok(extra >= 0);
        beyondShare += extra;
        worst = Math.max(worst, extra);
        newcomerShares += share;
        joins++;
        // The leave is the join reversed: the same buckets move back.
        assert.equal(moved(after, before), share + extra);
        // What sorting members and dealing buckets round-robin would have moved.
        const sorted = [...members, `set${set}-newcomer`].sort();
        const dealt = (list: string[]) =>
          Array.from({ length: bucketCount }, (_, b) => list[b % list.length]!);
        roundRobinMoved += moved(dealt([...members].sort()), dealt(sorted));
      }
    }
    const mean = beyondShare / joins;
    console.log(
      `# ${joins} joins over ${bucketCount} buckets: newcomer's share ${(newcomerShares / joins).toFixed(2)}, moved beyond it ${mean.toFixed(2)} on average (worst ${worst}); round-robin moves ${(roundRobinMoved / joins).toFixed(2)}`,
    );
    assert.ok(mean <= 1.25, `on average ${mean} buckets moved beyond the newcomer's share`);
    assert.ok(worst <= bucketCount / 2, `worst join moved ${worst} buckets beyond the newcomer's share`);
    assert.ok(roundRobinMoved / joins > 2 * (newcomerShares / joins + mean), 'far fewer than round-robin');
  });
});
