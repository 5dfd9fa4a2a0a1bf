// What the sharded benchmark's replicas divide: Widgets (../framework/population.ts) spread
// round-robin over many namespaces. A sharded manager hashes keys by namespace, so every
// object of one namespace lands in one bucket and on one replica: with all objects in one
// namespace (as the framework benchmark has them) one replica would own all of them and
// the others none. Object i is `obj-<i>` in namespace i mod `namespaces`, so its index is in
// its name and a replica can report what it reconciled as numbers.
//
// The namespaces' names vary in the middle, not at the end (`bench-007-widgets`, not
// `bench-007`). The bucket is the top bits of the 64-bit FNV-1a hash of the namespace (the
// API server's shardRange over KEP-5866's hash, which the runtime must match), and FNV-1a
// carries a change of the last two bytes only into the low ~54 bits: `bench-000`…`bench-063`,
// `team-00`…`team-63` and `tenant-0000`…`tenant-0063` each fall into one single bucket of 16.
import { bucketOfKey } from '@regulon/runtime';
import { AlreadyExistsError, Kinds, type KubeClient } from '@regulon/client';
import { KIND_TYPES, inParallel, objectFor } from '../framework/population.ts';

/** The name of the k-th namespace of the benchmark. */
export const namespaceName = (k: number) => `bench-${String(k).padStart(3, '0')}-widgets`;

/** The namespace object i lives in: round-robin, so every namespace holds N ÷ namespaces of them. */
export const namespaceOfObject = (i: number, namespaces: number) => namespaceName(i % namespaces);

/** The index in an object's name (`obj-000123` is 123); undefined for a name of another form. */
export function indexOfName(name: string): number | undefined {
  const m = /^obj-(\d+)$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** The bucket (of `buckets`) that object i falls in: its namespace's, as the sharded manager hashes keys. */
export function bucketOfObject(i: number, namespaces: number, buckets: number): number {
  return bucketOfKey(`${namespaceOfObject(i, namespaces)}/x`, buckets);
}

/**
 * How many of objects [0, n) fall in each bucket. The namespaces' hashes fall unevenly into
 * the buckets (64 namespaces over 16 buckets: 4 on average, some with 1, some with 8), so a
 * replica's fair share of buckets is not exactly its fair share of objects.
 */
export function objectsPerBucket(n: number, namespaces: number, buckets: number): number[] {
  const perNamespace = Array.from({ length: namespaces }, (_, k) =>
    Math.max(0, Math.floor((n - 1 - k) / namespaces) + 1),
  );
  const counts = new Array<number>(buckets).fill(0);
  for (let k = 0; k < namespaces; k++)
    counts[bucketOfKey(`${namespaceName(k)}/x`, buckets)]! += perNamespace[k]!;
  return counts;
}

/** Creates the namespaces, then Widgets [from, to) spread over them; what exists already is left as it is. */
export async function populateSpread(
  client: KubeClient,
  namespaces: number,
  from: number,
  to: number,
  concurrency: number,
): Promise<void> {
  await inParallel(0, namespaces, concurrency, async (k) => {
    try {
      await client.resource(Kinds.Namespace).create({ metadata: { name: namespaceName(k) } });
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) throw err;
    }
  });
  const widgets = client.resource(KIND_TYPES.widgets);
  await inParallel(from, to, concurrency, async (i) => {
    try {
      await widgets.create(objectFor('widgets', namespaceOfObject(i, namespaces), i));
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) throw err;
    }
  });
}
