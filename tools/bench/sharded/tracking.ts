// The sharded benchmark's bookkeeping, kept apart from the processes so that it can be
// tested: which objects each replica reconciled and when all of them were reconciled once
// (ReconciledTracker), and when the replicas' buckets have settled (settled()).

/** Objects [0, n) reconciled, per replica and by all together, from the replicas' "reconciled" lines. */
export class ReconciledTracker {
  readonly n: number;
  readonly #byReplica: Uint8Array[];
  readonly #distinct: number[];
  readonly #reconciles: number[];
  readonly #union: Uint8Array;
  #unionCount = 0;
  /** Epoch ms of the line that completed the union: every object reconciled once by some replica. */
  allAt: number | undefined;
  #watch: { targets: Uint8Array; left: number; from: readonly number[]; since: number } | undefined;
  /** Epoch ms of the line that completed the watched set (see watch()). */
  watchedAt: number | undefined;

  constructor(n: number, replicas: number) {
    this.n = n;
    this.#byReplica = Array.from({ length: replicas }, () => new Uint8Array(n));
    this.#distinct = new Array<number>(replicas).fill(0);
    this.#reconciles = new Array<number>(replicas).fill(0);
    this.#union = new Uint8Array(n);
    if (n === 0) this.allAt = 0;
  }

  /** One "reconciled" line of `replica`: the indexes it reconciled, the last at epoch ms `at`. */
  add(replica: number, ids: readonly number[], at: number): void {
    const mine = this.#byReplica[replica];
    if (!mine) throw new RangeError(`no replica ${replica}`);
    const w = this.#watch;
    for (const i of ids) {
      if (!Number.isInteger(i) || i < 0 || i >= this.n) continue;
      this.#reconciles[replica]!++;
      if (!mine[i]) {
        mine[i] = 1;
        this.#distinct[replica]!++;
      }
      if (!this.#union[i]) {
        this.#union[i] = 1;
        if (++this.#unionCount === this.n) this.allAt = at;
      }
      if (w && w.left > 0 && w.targets[i] && at >= w.since && w.from.includes(replica)) {
        w.targets[i] = 0;
        if (--w.left === 0) this.watchedAt = at;
      }
    }
  }

  /** Distinct objects `replica` reconciled. */
  distinct(replica: number): number {
    return this.#distinct[replica] ?? 0;
  }

  /** Reconciles `replica` ran, repeats included. */
  reconciles(replica: number): number {
    return this.#reconciles[replica] ?? 0;
  }

  /** Objects reconciled once by some replica. */
  get reconciled(): number {
    return this.#unionCount;
  }

  /**
   * From now on, watches for every object `isTarget` picks to be reconciled by one of the
   * replicas `from` in a line whose time is `since` or later (a takeover: the killed replica's
   * objects, by the survivors). watchedAt is set when the last one is.
   */
  watch(isTarget: (i: number) => boolean, from: readonly number[], since: number): number {
    const targets = new Uint8Array(this.n);
    let left = 0;
    for (let i = 0; i < this.n; i++)
      if (isTarget(i)) {
        targets[i] = 1;
        left++;
      }
    this.#watch = { targets, left, from, since };
    this.watchedAt = left === 0 ? since : undefined;
    return left;
  }
}

/** What a replica said of its shard ("shard"). */
export interface ShardView {
  objects: number;
  buckets: readonly number[];
}

/**
 * Whether the replicas' buckets have settled: they own every bucket between them, none twice,
 * each within one bucket of its fair share (as assignBuckets gives them out), and each cache
 * holds exactly the objects it should: its buckets' objects with owned caches (`perBucket`, the
 * objects in each bucket), all of them with whole caches.
 */
export function settled(views: readonly ShardView[], perBucket: readonly number[], owned: boolean): boolean {
  const buckets = perBucket.length;
  const total = perBucket.reduce((a, b) => a + b, 0);
  const low = Math.floor(buckets / views.length);
  const high = Math.ceil(buckets / views.length);
  const seen = new Set<number>();
  for (const v of views) {
    if (v.buckets.length < low || v.buckets.length > high) return false;
    for (const b of v.buckets) {
      if (seen.has(b) || b < 0 || b >= buckets) return false;
      seen.add(b);
    }
    const expected = owned ? v.buckets.reduce((a, b) => a + perBucket[b]!, 0) : total;
    if (v.objects !== expected) return false;
  }
  return seen.size === buckets;
}
