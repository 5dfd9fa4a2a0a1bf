// Sharded managers against the real API server: replicas in child processes over 1,000
// ConfigMaps in 20 namespaces, during a burst of changes to all of them. Two replicas start,
// a third joins, one is killed (-9), one is frozen (SIGSTOP) in the middle of a reconcile
// until the last one holds every bucket, then resumed. Every reconcile is recorded by its
// replica (start, end, whether and when it wrote); afterwards no key has been reconciled by
// two replicas at overlapping times, except by the frozen one, whose writes attempted after
// the freeze were all refused; and every object converged to its last change. Twice: with
// every replica caching every object, and with each caching its own buckets only
// (sharding.shardCaches) on a server that cuts the shards (ShardedListAndWatch on).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import { bucketOfKey } from '../reconcile/owned-keys.ts';
import { spawnReplica, type Replica, type ReplicaLine } from '../testing/sharded-replica.ts';
import { eventually } from '../testing/wait.ts';

const NAMESPACES = 20;
const PER_NAMESPACE = 50;
const BUCKETS = 16;
const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };
const RECONCILE_MS = 5;
const WRITE_CONCURRENCY = 50;
/** Each round of the burst changes one of this many slices of the objects. */
const BURST_SLICES = 4;
/** Changes per second during the burst: about what two loaded replicas reconcile with room to spare. */
const BURST_QPS = 100;

/** Runs `fn` over `items`, `WRITE_CONCURRENCY` at a time. */
async function forEach<T>(items: readonly T[], fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: WRITE_CONCURRENCY }, async () => {
      for (let i = next++; i < items.length; i = next++) await fn(items[i]!);
    }),
  );
}

interface Reconcile {
  identity: string;
  key: string;
  start: number;
  end: number;
  attemptAt: number | undefined;
  wrote: boolean;
  refused: boolean;
}

const reconcilesOf = (lines: readonly ReplicaLine[]): Reconcile[] =>
  lines
    .filter((l) => l.event === 'reconcile')
    .map((l) => ({
      identity: l.identity,
      key: l.key!,
      start: l.start!,
      end: l.end!,
      attemptAt: l.attemptAt,
      wrote: l.wrote ?? false,
      refused: l.refused ?? false,
    }));

/** Whether the live replicas own every bucket, each exactly once. */
function ownEveryBucketOnce(live: readonly Replica[]): boolean {
  const owned = live.flatMap((r) => r.owned());
  return owned.length === BUCKETS && new Set(owned).size === BUCKETS;
}

/**
 * The two ways a sharded manager caches: every object (client-side filtering of the keys,
 * warm takeovers), on a server without the gate; and the owned buckets only, cut by the
 * server (ShardedListAndWatch), where every takeover lists its buckets first.
 */
const variants = [
  { shardCaches: false, gate: false, name: 'every replica caching every object' },
  { shardCaches: true, gate: true, name: 'each replica caching its buckets, cut by the server' },
];

// The two variants side by side, each on its own control plane's namespaces: the file takes
// as long as the slower of them rather than their sum (they wait on Leases more than they compute).
describe('sharded managers in child processes', { concurrency: variants.length }, () => {
  for (const variant of variants) {
    test(
      `${variant.name}: sharded replicas over ${NAMESPACES * PER_NAMESPACE} ConfigMaps: a join, a kill -9 and a freeze during a burst; no key on two replicas at once, nothing lost`,
      { timeout: 150_000 },
      async (t) => {
        const t0 = Date.now();
        const env: TestEnv = await (variant.gate
          ? start({ featureGates: { ShardedListAndWatch: true } })
          : start());
        const client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 1000, burst: 1000 });
        const replicas: Replica[] = [];
        // Run last first once the test ends, however it ends: the burst, then the replicas and
        // the control plane.
        const cleanups: Array<() => Promise<void>> = [];
        t.after(async () => {
          for (const cleanup of cleanups.reverse()) await cleanup();
        });
        cleanups.push(async () => {
          for (const r of replicas) {
            if (r.child.exitCode === null && r.child.signalCode === null) {
              r.child.kill('SIGCONT');
              r.child.kill('SIGKILL');
            }
          }
          client.close();
          await env.stop();
        });
        const namespaces: string[] = [];
        for (let i = 0; i < NAMESPACES; i++) namespaces.push(await env.newNamespace('rt-sharded'));
        const leaseNamespace = await env.newNamespace('rt-sharded-leases');
        const objects = namespaces.flatMap((namespace) =>
          Array.from({ length: PER_NAMESPACE }, (_, i) => ({ namespace, name: `obj-${i}` })),
        );
        const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
        await forEach(objects, (o) => cms.create({ metadata: o, data: { v: '0' } }));

        // A slow reconcile waits for this file: b is frozen in the middle of one, however
        // loaded the machine (a timed one could end before the freeze arrived), and goes on
        // once resumed.
        const releaseDir = mkdtempSync(join(tmpdir(), 'rt-sharded-'));
        const releaseSlowFile = join(releaseDir, 'release-slow');
        cleanups.push(() => Promise.resolve(rmSync(releaseDir, { recursive: true, force: true })));
        const replica = (identity: string) => {
          const r = spawnReplica({
            kubeconfigPath: env.kubeconfigPath,
            identity,
            namespaces,
            leaseNamespace,
            buckets: BUCKETS,
            timings: TIMINGS,
            reconcileMs: RECONCILE_MS,
            releaseSlowFile,
            shardCaches: variant.shardCaches,
          });
          replicas.push(r);
          return r;
        };
        /** Whether every object's last change has been reconciled (its reconciled-v is its data.v). */
        const converged = async (v?: string) => {
          for (const namespace of namespaces) {
            const { items } = await cms.list({ namespace });
            for (const cm of items) {
              if (!cm.metadata?.name?.startsWith('obj-')) continue;
              const want = cm.data?.['v'];
              if ((v !== undefined && want !== v) || cm.metadata.annotations?.['reconciled-v'] !== want)
                return false;
            }
          }
          return true;
        };

        const a = replica('replica-a');
        const b = replica('replica-b');
        await eventually('a and b own every bucket once', () => ownEveryBucketOnce([a, b]), 20_000);
        await eventually('every object reconciled', () => converged('0'), 30_000, 250);
        const startedAt = Date.now();

        // The burst: round after round, a quarter of the objects change, each quarter in turn,
        // through a client limited to BURST_QPS. Faster, it outran the replicas on a loaded
        // 2-core machine, and the keys a takeover queues at low priority waited behind the
        // backlog of real changes (as the priority queue means them to) for many seconds.
        const burstClient = KubeClient.fromKubeConfig(env.kubeConfig, { qps: BURST_QPS, burst: BURST_QPS });
        const burstCms = burstClient.resource<V1ConfigMap>(Kinds.ConfigMap);
        let round = 0;
        let bursting = true;
        const burst = (async () => {
          while (bursting) {
            round++;
            await forEach(
              objects.filter((_, i) => i % BURST_SLICES === round % BURST_SLICES),
              (o) =>
                burstCms.patch(
                  o.name,
                  { data: { v: `r${round}` } },
                  { type: 'merge', namespace: o.namespace },
                ),
            );
          }
        })();
        // A failed assertion ends the test mid-burst: stop it before the control plane goes.
        cleanups.push(async () => {
          bursting = false;
          await burst.catch(() => {});
          burstClient.close();
        });

        const c = replica('replica-c');
        await eventually(
          'c joined and the three own every bucket once',
          () => c.owned().length > 0 && ownEveryBucketOnce([a, b, c]),
          20_000,
        );
        const joinedAt = Date.now();

        a.child.kill('SIGKILL');
        await a.exited;
        const killedAt = Date.now();
        await eventually('b and c took over from a', () => ownEveryBucketOnce([b, c]), 20_000);
        const tookOverAt = Date.now();

        // Freeze b in the middle of a slow reconcile of a key it owns.
        const slowNamespace = namespaces.find((ns) =>
          b.owned().includes(bucketOfKey(`${ns}/obj-0`, BUCKETS)),
        );
        assert.ok(slowNamespace, `b owns buckets ${b.owned().join()}, none of the namespaces'`);
        const slowKey = `${slowNamespace}/obj-0`;
        const askedAt = Date.now();
        // A new v too, so that its reconcile has something to write.
        await cms.patch(
          'obj-0',
          { data: { slow: 'true', v: 'slow' } },
          { type: 'merge', namespace: slowNamespace },
        );
        await eventually(
          'b reconciling the slow object',
          () =>
            b.lines.some(
              (l) =>
                l.event === 'reconcile-start' && l.key === slowKey && l.at >= askedAt && l.slow && l.pending,
            ),
          20_000,
          5,
        );
        b.child.kill('SIGSTOP');
        const frozenAt = Date.now();
        await eventually('c took over every bucket from the frozen b', () => ownEveryBucketOnce([c]), 20_000);
        // Resumed while c reconciles the slow object too: the two reconciles of it overlap,
        // and only the write guard keeps b's from landing.
        await eventually(
          'c reconciling the slow object',
          () =>
            c.lines.some(
              (l) => l.event === 'reconcile-start' && l.key === slowKey && l.at > frozenAt && l.slow,
            ),
          20_000,
          5,
        );
        b.child.kill('SIGCONT');
        const resumedAt = Date.now();
        // Both slow reconciles go on: c's writes, b's write is the guard's to refuse.
        writeFileSync(releaseSlowFile, '');
        await eventually(
          'b rejoined and b and c own every bucket once',
          // b's last word before the freeze still counts its old buckets; c holds all 16 until it
          // hands some over, so the two add up to 16 only once b has lost them and owns anew.
          () => b.owned().length > 0 && ownEveryBucketOnce([b, c]),
          20_000,
        );
        const rejoinedAt = Date.now();

        bursting = false;
        await burst;
        await forEach(objects, (o) =>
          cms.patch(o.name, { data: { v: 'final' } }, { type: 'merge', namespace: o.namespace }),
        );
        await eventually('every object converged to its last change', () => converged('final'), 30_000, 250);
        const convergedAt = Date.now();
        for (const r of [b, c]) r.child.kill('SIGTERM');
        const codes = await Promise.all([b.exited, c.exited]);

        const reconciles = reconcilesOf(replicas.flatMap((r) => r.lines));
        const byKey = Map.groupBy(reconciles, (r) => r.key);
        // A reconcile of the frozen replica may overlap another's: it was running, or started from
        // its queue, when its bucket passed on. It must not have written, unless its write was
        // attempted (and so guarded) before the freeze, while b still owned the bucket.
        const harmless = (r: Reconcile) =>
          r.identity === b.identity && (!r.wrote || (r.attemptAt !== undefined && r.attemptAt < frozenAt));
        const overlaps: string[] = [];
        let harmlessOverlaps = 0;
        for (const [key, runs] of byKey) {
          for (let i = 0; i < runs.length; i++) {
            for (let j = i + 1; j < runs.length; j++) {
              const [x, y] = [runs[i]!, runs[j]!];
              if (x.identity === y.identity || x.start >= y.end || y.start >= x.end) continue;
              if (harmless(x) || harmless(y)) harmlessOverlaps++;
              else overlaps.push(`${key}: ${JSON.stringify(x)} and ${JSON.stringify(y)}`);
            }
          }
        }
        const refusedAfterFreeze = reconciles.filter((r) => r.identity === b.identity && r.refused);
        const wroteAfterFreezeByB = reconciles.filter(
          (r) =>
            r.identity === b.identity &&
            r.wrote &&
            r.attemptAt !== undefined &&
            r.attemptAt >= frozenAt &&
            r.start < resumedAt,
        );
        const count = (id: string) => reconciles.filter((r) => r.identity === id).length;
        t.diagnostic(
          `setup ${startedAt - t0} ms; c joined after ${joinedAt - startedAt} ms; takeover from the killed a ${tookOverAt - killedAt} ms; ` +
            `b frozen ${resumedAt - frozenAt} ms, rejoined ${rejoinedAt - resumedAt} ms after resuming; converged ${convergedAt - rejoinedAt} ms after the burst (${round} rounds)`,
        );
        t.diagnostic(
          `reconciles: a ${count(a.identity)}, b ${count(b.identity)}, c ${count(c.identity)}; ` +
            `overlaps involving the frozen b, none writing after the freeze: ${harmlessOverlaps}; its writes refused: ${refusedAfterFreeze.length}`,
        );
        assert.deepEqual(overlaps, [], 'a key reconciled by two replicas at once');
        assert.deepEqual(
          wroteAfterFreezeByB,
          [],
          'the frozen replica wrote for a reconcile it ran across the freeze',
        );
        assert.ok(
          refusedAfterFreeze.some((r) => r.key === slowKey),
          'the frozen reconcile of the slow object had its write refused',
        );
        const slowRuns = byKey.get(slowKey) ?? [];
        const overlapsC = (r: Reconcile) =>
          slowRuns.some((o) => o.identity === c.identity && o.start < r.end && r.start < o.end);
        assert.ok(
          slowRuns.some((r) => r.identity === b.identity && r.refused && overlapsC(r)),
          'the frozen reconcile of the slow object overlapped c’s, and its write was refused',
        );
        assert.deepEqual(codes, [0, 0], 'b and c stopped gracefully');
      },
    );
  }
});
