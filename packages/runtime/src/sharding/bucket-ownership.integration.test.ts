// BucketOwnership against the real API server: members of one group in this process, short
// Lease timings (the production ratios), and a sampler that every 50 ms checks that no
// bucket is owned (or has a live work signal) on two members. The tests run in order on one
// group: start, a join, a kill, a member cut off from the API server, a freeze.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KubeClient, Kinds, retyped } from '@regulon/client';
import { realClock, type Clock } from '@regulon/util';
import { start, type TestEnv } from '@regulon/testenv';
import { Registry, type Counter } from 'prom-client';
import { LeadershipLostError, type Lease } from '../election/leader-election.ts';
import { eventually } from '../testing/wait.ts';
import {
  BUCKET_HANDOVERS_METRIC_NAME,
  BucketNotOwnedError,
  BucketOwnership,
  DEFAULT_BUCKET_COUNT,
} from './bucket-ownership.ts';

const LEASE_MS = 3_000;
const RENEW_MS = 2_000;
const RETRY_MS = 500;
const GROUP = 'shards';
/** Short enough that the killed and the cut-off members' Leases are gone by the last test. */
const STALE_MEMBER_AFTER_MS = 6_000;
/** How long each member's onRevoked takes, standing in for in-flight reconciles. */
const DRAIN_MS = 300;

type EventKind = 'acquired' | 'drain-start' | 'drain-end' | 'work-aborted';
interface OwnershipEvent {
  seq: number;
  at: number;
  member: string;
  bucket: number;
  kind: EventKind;
}

interface Member {
  identity: string;
  ownership: BucketOwnership;
  client: KubeClient;
  registry: Registry;
  stop: AbortController;
  running: Promise<void>;
  /** The work signal of each bucket's latest acquisition. */
  work: Map<number, AbortSignal>;
  /** Writes fail while set: renewals stop landing, as when cut off from the API server. */
  cut: boolean;
  /** Added to the clock, as across a SIGSTOP before any timer had a turn. */
  frozenMs: number;
}

describe('BucketOwnership (real API server)', () => {
  let env: TestEnv;
  let admin: KubeClient;
  let namespace: string;
  const members: Member[] = [];
  const events: OwnershipEvent[] = [];
  const violations: string[] = [];
  let sampler: NodeJS.Timeout | undefined;
  let seq = 0;

  const record = (member: string, bucket: number, kind: EventKind) =>
    events.push({ seq: seq++, at: Date.now(), member, bucket, kind });

  /** Members whose work signal for `bucket` has not aborted. */
  const working = (bucket: number) =>
    members.filter((m) => m.work.get(bucket)?.aborted === false).map((m) => m.identity);

  function checkExclusive(when: string): void {
    for (let bucket = 0; bucket < DEFAULT_BUCKET_COUNT; bucket++) {
      const owners = members.filter((m) => m.ownership.owned().has(bucket)).map((m) => m.identity);
      const workers = working(bucket);
      if (owners.length > 1 || workers.length > 1) {
        violations.push(
          `${when}: bucket ${bucket} owned by [${owners.join()}], worked on by [${workers.join()}]`,
        );
      }
    }
    for (const m of members) {
      for (const bucket of m.ownership.owned()) {
        if (m.work.get(bucket)?.aborted !== false)
          violations.push(`${when}: ${m.identity} owns ${bucket} with its work signal aborted`);
      }
    }
  }

  before(async () => {
    env = await start();
    admin = KubeClient.fromKubeConfig(env.kubeConfig);
    namespace = await env.newNamespace('shards');
    sampler = setInterval(() => checkExclusive('sampler'), 50);
  });
  after(async () => {
    clearInterval(sampler);
    for (const m of members) {
      m.stop.abort();
      await m.running;
      m.client.close();
    }
    admin.close();
    await env.stop();
  });

  function member(identity: string): Member {
    const client = KubeClient.fromKubeConfig(env.kubeConfig);
    const registry = new Registry();
    const m: Member = {
      identity,
      client,
      registry,
      stop: new AbortController(),
      running: Promise.resolve(),
      work: new Map(),
      cut: false,
      frozenMs: 0,
      ownership: undefined as unknown as BucketOwnership,
    };
    client.guardWrites(() => {
      if (m.cut) throw new Error(`${identity} is cut off from the API server`);
    });
    const clock: Clock = {
      now: () => realClock.now() + m.frozenMs,
      setTimeout: (fn, ms) => realClock.setTimeout(fn, ms),
      clearTimeout: (h) => realClock.clearTimeout(h),
    };
    m.ownership = new BucketOwnership({
      client,
      namespace,
      name: GROUP,
      identity,
      leaseDurationMs: LEASE_MS,
      renewDeadlineMs: RENEW_MS,
      retryPeriodMs: RETRY_MS,
      staleMemberAfterMs: STALE_MEMBER_AFTER_MS,
      clock,
      registry,
      onAcquired: (bucket, signal) => {
        // The exact check, at the moment of acquisition: nobody else may still be working on it.
        const others = working(bucket).filter((id) => id !== identity);
        if (others.length > 0)
          violations.push(`${identity} acquired ${bucket} while [${others.join()}] still work on it`);
        m.work.set(bucket, signal);
        record(identity, bucket, 'acquired');
        signal.addEventListener('abort', () => record(identity, bucket, 'work-aborted'), { once: true });
      },
      onRevoked: async (bucket) => {
        record(identity, bucket, 'drain-start');
        await new Promise((resolve) => setTimeout(resolve, DRAIN_MS));
        record(identity, bucket, 'drain-end');
      },
    });
    m.running = m.ownership.start(m.stop.signal);
    members.push(m);
    return m;
  }

  const live = () => members.filter((m) => !m.stop.signal.aborted && !m.cut && m.frozenMs === 0);
  /** True once the live members own every bucket between them, each within one of its fair share. */
  function balanced(among: Member[]): boolean {
    const counts = among.map((m) => m.ownership.owned().size);
    const total = counts.reduce((a, b) => a + b, 0);
    return total === DEFAULT_BUCKET_COUNT && Math.max(...counts) - Math.min(...counts) <= 1;
  }
  const lastEvent = (member: string, bucket: number, kind: EventKind, beforeSeq = Infinity) =>
    events
      .filter((e) => e.member === member && e.bucket === bucket && e.kind === kind && e.seq < beforeSeq)
      .at(-1);
  /** The member's regulon_sharding_bucket_handovers_total{outcome="handed_over"}. */
  async function handedOver(m: Member): Promise<number> {
    const counter = m.registry.getSingleMetric(BUCKET_HANDOVERS_METRIC_NAME) as Counter | undefined;
    const values = (await counter?.get())?.values ?? [];
    return values.find((v) => v.labels['outcome'] === 'handed_over')?.value ?? 0;
  }
  const leaseOf = (bucket: number) =>
    admin.resource(retyped<Lease>(Kinds.Lease)).get(`${GROUP}-bucket-${bucket}`, { namespace });

  test('three members: every bucket owned, balanced 6/5/5, each by its Lease', async () => {
    const startedAt = Date.now();
    for (const id of ['alpha', 'bravo', 'charlie']) member(id);
    await eventually('all buckets owned and balanced', () => balanced(members), 20_000);
    console.log(
      `# 3 members: all ${DEFAULT_BUCKET_COUNT} buckets owned and balanced after ${Date.now() - startedAt} ms`,
    );
    for (const m of members) {
      for (const bucket of m.ownership.owned()) {
        assert.equal((await leaseOf(bucket)).spec?.holderIdentity, m.identity);
        m.ownership.assertOwns(bucket);
      }
      const notMine = [...Array(DEFAULT_BUCKET_COUNT).keys()].find((b) => !m.ownership.owned().has(b))!;
      assert.throws(() => m.ownership.assertOwns(notMine), BucketNotOwnedError);
    }
    checkExclusive('after start');
    assert.deepEqual(violations, []);
  });

  test('a fourth member joins and gets its share; every bucket moves only after its old owner drained', async () => {
    const before = new Map(members.map((m) => [m.identity, new Set(m.ownership.owned())]));
    const joinedAt = seq;
    const joinedAtMs = Date.now();
    const delta = member('delta');
    await eventually(
      'balanced over four',
      () => balanced(members) && delta.ownership.owned().size === 4,
      20_000,
    );
    console.log(`# join: delta owns its 4 buckets ${Date.now() - joinedAtMs} ms after the join`);

    const acquisitions = events.filter((e) => e.seq >= joinedAt && e.kind === 'acquired');
    for (const acquired of acquisitions) {
      const previous = [...before].find(([, owned]) => owned.has(acquired.bucket))?.[0];
      if (previous === undefined || previous === acquired.member) continue;
      const drainStart = lastEvent(previous, acquired.bucket, 'drain-start', acquired.seq);
      const drainEnd = lastEvent(previous, acquired.bucket, 'drain-end', acquired.seq);
      const aborted = lastEvent(previous, acquired.bucket, 'work-aborted', acquired.seq);
      assert.ok(
        drainStart && drainEnd && aborted,
        `bucket ${acquired.bucket}: ${previous} drained before ${acquired.member} acquired`,
      );
      assert.ok(
        drainEnd.seq < aborted.seq,
        `bucket ${acquired.bucket}: the work stopped after the drain, not during it`,
      );
      assert.ok(drainEnd.at - drainStart.at >= DRAIN_MS - 5);
    }
    const handOvers = await Promise.all(members.map(handedOver));
    const moved = [...before].reduce(
      (n, [id, owned]) =>
        n +
        [...owned].filter(
          (b) =>
            !members
              .find((m) => m.identity === id)!
              .ownership.owned()
              .has(b),
        ).length,
      0,
    );
    assert.ok(moved >= 4, `${moved} buckets changed owner`);
    assert.ok(handOvers.reduce((a, b) => a + b, 0) >= moved, 'each moved bucket counted as a hand-over');
    assert.deepEqual(violations, []);
  });

  test('a member stopped abruptly (as by kill -9): its buckets are taken over only after their Leases expired', async () => {
    const victim = members.find((m) => m.identity === 'bravo')!;
    const lost = [...victim.ownership.owned()];
    assert.ok(lost.length > 0);
    const killedAt = Date.now();
    victim.stop.abort();
    await victim.running;
    assert.equal(victim.ownership.owned().size, 0, 'a stopped member claims nothing');
    const lastRenewals = new Map(
      await Promise.all(
        lost.map(async (b) => [b, Date.parse((await leaseOf(b)).spec?.renewTime ?? '')] as const),
      ),
    );
    await eventually('the survivors own everything', () => balanced(live()), 20_000);
    for (const bucket of lost) {
      const takeover = events.find((e) => e.bucket === bucket && e.kind === 'acquired' && e.at >= killedAt)!;
      assert.ok(
        takeover.at - lastRenewals.get(bucket)! >= LEASE_MS,
        `bucket ${bucket} taken ${takeover.at - lastRenewals.get(bucket)!} ms after its last renewal`,
      );
    }
    const slowest =
      Math.max(...events.filter((e) => e.at >= killedAt && e.kind === 'acquired').map((e) => e.at)) -
      killedAt;
    console.log(
      `# kill: the last of ${lost.length} buckets taken over ${slowest} ms after the stop (lease ${LEASE_MS} ms, retry ${RETRY_MS} ms)`,
    );
    // The membership's expiry, then the pass and the elector's first try: one lease duration,
    // two jittered retry periods and a few round trips, not a second lease duration.
    assert.ok(slowest <= LEASE_MS + 2 * RETRY_MS * 1.2 + 1000, `taken over ${slowest} ms after the stop`);
    assert.deepEqual(violations, []);
  });

  test("a member whose renewals fail stops its buckets' work before anyone else acquires them", async () => {
    const victim = members.find((m) => m.identity === 'charlie')!;
    const held = [...victim.ownership.owned()];
    assert.ok(held.length > 0);
    const cutAt = Date.now();
    victim.cut = true;
    await eventually('the others own everything', () => balanced(live()), 20_000);
    for (const bucket of held) {
      const aborted = lastEvent(victim.identity, bucket, 'work-aborted');
      const takeover = events.find(
        (e) => e.bucket === bucket && e.kind === 'acquired' && e.member !== victim.identity && e.at >= cutAt,
      );
      assert.ok(
        aborted && takeover && aborted.seq < takeover.seq,
        `bucket ${bucket}: stopped before taken over`,
      );
      assert.ok(
        aborted.at - cutAt <= RENEW_MS + RETRY_MS * 1.2 + 500,
        `stopped ${aborted.at - cutAt} ms after the cut`,
      );
    }
    assert.equal(victim.ownership.owned().size, 0);
    for (const bucket of held) assert.throws(() => victim.ownership.assertOwns(bucket), BucketNotOwnedError);
    assert.deepEqual(violations, []);
  });

  test('release(): a leaving member drains and releases every bucket, and the one left owns them within about a retry period', async () => {
    const leaving = members.find((m) => m.identity === 'delta')!;
    const stays = members.find((m) => m.identity === 'alpha')!;
    const held = [...leaving.ownership.owned()];
    assert.ok(held.length > 0);
    const handedOverBefore = await handedOver(leaving);
    await leaving.ownership.release();
    const releasedAt = Date.now();
    await leaving.running;
    leaving.stop.abort();
    assert.equal(leaving.ownership.owned().size, 0);
    const leases = await admin.resource(retyped<Lease>(Kinds.Lease)).list({ namespace });
    const membership = leases.items.filter((l) => l.metadata?.name?.startsWith(`${GROUP}-member-`));
    assert.ok(
      membership.every((l) => l.spec?.holderIdentity !== 'delta'),
      'delta deleted its membership Lease',
    );
    await eventually(
      'alpha owns every bucket',
      () => stays.ownership.owned().size === DEFAULT_BUCKET_COUNT,
      10_000,
    );
    for (const bucket of held) {
      const drained = lastEvent(leaving.identity, bucket, 'drain-end')!;
      const stopped = lastEvent(leaving.identity, bucket, 'work-aborted')!;
      const taken = lastEvent(stays.identity, bucket, 'acquired')!;
      assert.ok(
        drained.seq < stopped.seq && stopped.seq < taken.seq,
        `bucket ${bucket}: drained, stopped, then taken`,
      );
      assert.equal((await leaseOf(bucket)).spec?.holderIdentity, stays.identity);
    }
    const slowest = Math.max(...held.map((b) => lastEvent(stays.identity, b, 'acquired')!.at)) - releasedAt;
    console.log(
      `# release: ${held.length} buckets taken over at most ${slowest} ms after release() resolved`,
    );
    assert.ok(slowest <= RETRY_MS * 1.2 + 500, `taken over ${slowest} ms after the release`);
    assert.equal(await handedOver(leaving), handedOverBefore + held.length);
    assert.deepEqual(violations, []);
  });

  test('a member resumed after a freeze past its renew deadline owns nothing from its first check, before its timers run', () => {
    const frozen = members.find((m) => m.identity === 'alpha')!;
    const held = [...frozen.ownership.owned()];
    assert.ok(held.length > 0);
    frozen.frozenMs = RENEW_MS;
    for (const bucket of held) {
      assert.throws(
        () => frozen.ownership.assertOwns(bucket),
        (err: unknown) => err instanceof BucketNotOwnedError && err.cause instanceof LeadershipLostError,
      );
      assert.equal(frozen.work.get(bucket)?.aborted, true, 'its work signal aborted in the same turn');
    }
    assert.equal(frozen.ownership.owned().size, 0);
    assert.deepEqual(violations, []);
  });

  test("the killed and the cut-off members' Leases are deleted once they stayed expired past staleMemberAfterMs", async () => {
    const leases = admin.resource(retyped<Lease>(Kinds.Lease));
    const memberHolders = async () =>
      (await leases.list({ namespace })).items
        .filter((l) => l.metadata?.name?.startsWith(`${GROUP}-member-`))
        .map((l) => l.spec?.holderIdentity)
        .sort();
    await eventually('only alpha announced', async () => (await memberHolders()).join() === 'alpha', 20_000);
  });
});
