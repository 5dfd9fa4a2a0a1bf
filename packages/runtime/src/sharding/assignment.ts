// Which replica should own which bucket: a pure function of the bucket count and the set of
// live members, so every replica that sees the same members computes the same answer
// without talking to the others.
//
// Why not plain rendezvous (highest-random-weight) hashing: it moves the fewest buckets on a
// join or leave, but with few buckets it balances badly (16 buckets over 3 members often
// comes out 9/4/3), and a replica's memory and work follow its bucket count. Why not a
// sorted round-robin (bucket i to member i mod n): balanced, but one join shifts almost
// every bucket. The middle road is rendezvous with capacities: every (bucket, member) pair
// gets a hash weight, and the pairs are taken heaviest first, a bucket going to the member
// of its pair while that member is under its fair share (floor(buckets / members), and
// floor + 1 for the first `buckets mod members` members to ask for one more). Each member
// thus keeps the buckets it weighs most, so a join takes the newcomer's share mostly
// straight from their old owners; a share that shrinks can push a few more buckets along
// (assignment.test.ts measures how many: over 16 buckets, about one per join beyond the
// newcomer's share, where round-robin moves most of them). Exact balance and exactly
// minimal movement cannot both hold for every member set when the answer may depend on the
// set alone, and a history-dependent answer would need the replicas to agree on a history.
// The result is the unique stable matching of buckets and members under those
// weights, which is what makes it independent of the order members are listed in.
import { createHash } from 'node:crypto';

/** A pair's weight: 48 bits of SHA-256, exact in a double, the same on every replica and Node version. */
export function bucketWeight(bucket: number, member: string): number {
  return createHash('sha256').update(`${bucket}\0${member}`).digest().readUIntBE(0, 6);
}

/**
 * The buckets each member should own, in ascending order; every bucket goes to exactly one
 * member, and members' counts differ by at most one. Duplicate members count once; no
 * members means no owners.
 */
export function assignBuckets(bucketCount: number, members: Iterable<string>): Map<string, number[]> {
  if (!Number.isInteger(bucketCount) || bucketCount < 1) {
    throw new RangeError(`bucket assignment: bucketCount must be a positive integer, got ${bucketCount}`);
  }
  const ids = [...new Set(members)].sort();
  const owned = new Map(ids.map((id) => [id, [] as number[]]));
  if (ids.length === 0) return owned;
  const fairShare = Math.floor(bucketCount / ids.length);
  let onePlus = bucketCount % ids.length;

  const pairs: Array<{ bucket: number; member: string; weight: number }> = [];
  for (let bucket = 0; bucket < bucketCount; bucket++) {
    for (const member of ids) pairs.push({ bucket, member, weight: bucketWeight(bucket, member) });
  }
  // Ties (one in 2^48) fall back to names and numbers so that the order stays total.
  pairs.sort(
    (a, b) =>
      b.weight - a.weight || (a.member < b.member ? -1 : a.member > b.member ? 1 : 0) || a.bucket - b.bucket,
  );
  const taken = new Array<boolean>(bucketCount).fill(false);
  for (const { bucket, member } of pairs) {
    if (taken[bucket]) continue;
    const held = owned.get(member)!;
    if (held.length === fairShare && onePlus > 0) onePlus--;
    else if (held.length >= fairShare) continue;
    held.push(bucket);
    taken[bucket] = true;
  }
  for (const held of owned.values()) held.sort((a, b) => a - b);
  return owned;
}
