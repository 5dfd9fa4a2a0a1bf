// The guard's decisions on a fake clock with a scripted campaign; the real
// Lease against the real API server is in agent.integration.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FakeClock, silentLogger } from '@regulon/util';
import {
  PrimaryGuard,
  QUESTION_TIMEOUT_MS,
  QUORUM_EVIDENCE_MS,
  type Campaign,
  type CampaignCallbacks,
  type Quorum,
} from './primary-guard.ts';

interface Script {
  role: boolean | undefined;
  /** What the quorum question answers; 'none' leaves the guard without one (no failsafe). */
  quorum: Quorum | 'no answer' | 'none';
  quorumAsked: number;
  /** The clock when the latest question was asked that got an answer (of any count). */
  answeredAskedAt?: number;
  campaigns: { callbacks: CampaignCallbacks; released: boolean }[];
  fences: string[];
}

/** `answerMs`: how long each question (role, quorum) takes to answer on the fake clock. */
function harness(grace = 5_000, quorum: Script['quorum'] = 'none', answerMs = 0) {
  const clock = new FakeClock();
  // The answer as it stands when the question is asked, given once answerMs has passed.
  const answer = <T>(value: T): Promise<T> =>
    answerMs === 0
      ? Promise.resolve(value)
      : new Promise((resolve) => clock.setTimeout(() => resolve(value), answerMs));
  const script: Script = { role: false, quorum, quorumAsked: 0, campaigns: [], fences: [] };
  const guard = new PrimaryGuard({
    identity: 'db-0',
    clock,
    log: silentLogger,
    roleIntervalMs: 1_000,
    acquireGraceMs: grace,
    acceptsWrites: () => answer(script.role),
    quorum:
      quorum === 'none'
        ? undefined
        : () => {
            script.quorumAsked++;
            if (typeof script.quorum !== 'string') script.answeredAskedAt = clock.now();
            return answer(typeof script.quorum === 'string' ? undefined : script.quorum);
          },
    fence: (reason) => script.fences.push(reason),
    campaign: (callbacks): Campaign => {
      const entry = { callbacks, released: false };
      script.campaigns.push(entry);
      return {
        run: () => new Promise(() => undefined),
        release: () => {
          entry.released = true;
          return Promise.resolve();
        },
      };
    },
  });
  const running = guard.run();
  /** Lets the role loop take one turn: its answer, then its timer. */
  const tick = async (ms = 1_000) => {
    // Every promise settled first (a macrotask runs after all microtasks): the loop's turn is done.
    await new Promise((resolve) => setImmediate(resolve));
    clock.advance(ms);
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { clock, script, guard, running, tick };
}

describe('PrimaryGuard', () => {
  test('campaigns once the engine accepts writes, and holds the Lease once the campaign leads', async () => {
    const h = harness();
    await h.tick();
    assert.equal(h.script.campaigns.length, 0, 'a replica does not campaign');
    h.script.role = true;
    await h.tick();
    assert.equal(h.script.campaigns.length, 1);
    assert.equal(h.guard.holdsLease, false);
    h.script.campaigns[0]!.callbacks.onNewLeader('db-0');
    h.script.campaigns[0]!.callbacks.onStartedLeading();
    assert.equal(h.guard.holdsLease, true);
    await h.tick();
    await h.tick();
    assert.equal(h.script.campaigns.length, 1, 'one campaign while the role stays');
    assert.deepEqual(h.script.fences, []);
    await h.guard.stop();
    await h.running;
  });

  test('fences an engine that accepts writes when the Lease is not acquired within the grace', async () => {
    const h = harness(3_000);
    h.script.role = true;
    await h.tick();
    assert.equal(h.script.campaigns.length, 1);
    h.clock.advance(2_900);
    assert.deepEqual(h.script.fences, [], 'not before the grace');
    h.clock.advance(200);
    assert.equal(h.script.fences.length, 1);
    assert.match(h.script.fences[0]!, /without this instance acquiring the primary Lease/);
    assert.match(h.guard.fencedBecause ?? '', /3000 ms/);
    assert.equal(h.script.campaigns[0]!.released, false, 'a fenced engine never releases: the Lease expires');
    await h.running;
  });

  test('fences at once when another instance holds the Lease', async () => {
    const h = harness();
    h.script.role = true;
    await h.tick();
    h.script.campaigns[0]!.callbacks.onNewLeader('db-1');
    assert.equal(h.script.fences.length, 1);
    assert.match(h.script.fences[0]!, /held by db-1/);
    await h.running;
  });

  test('fences when the held Lease is lost, and only once', async () => {
    const h = harness();
    h.script.role = true;
    await h.tick();
    const { callbacks } = h.script.campaigns[0]!;
    callbacks.onStartedLeading();
    callbacks.onStoppedLeading();
    callbacks.onNewLeader('db-2');
    assert.equal(h.script.fences.length, 1);
    assert.match(h.script.fences[0]!, /not renewed within the renew deadline/);
    await h.running;
  });

  test('releases the Lease when the engine stops accepting writes, without fencing', async () => {
    const h = harness();
    h.script.role = true;
    await h.tick();
    h.script.campaigns[0]!.callbacks.onStartedLeading();
    h.script.role = false;
    await h.tick();
    assert.equal(h.script.campaigns[0]!.released, true);
    // The release ends the campaign's leading; that is no loss.
    h.script.campaigns[0]!.callbacks.onStoppedLeading();
    assert.equal(h.guard.holdsLease, false);
    assert.deepEqual(h.script.fences, []);
    // Writable again: a new campaign.
    h.script.role = true;
    await h.tick();
    assert.equal(h.script.campaigns.length, 2);
    await h.guard.stop();
    assert.equal(h.script.campaigns[1]!.released, true, 'stop() gives the Lease up');
    await h.running;
  });

  test('an engine that does not answer changes nothing', async () => {
    const h = harness();
    h.script.role = true;
    await h.tick();
    h.script.campaigns[0]!.callbacks.onStartedLeading();
    h.script.role = undefined;
    await h.tick();
    await h.tick();
    assert.equal(h.guard.holdsLease, true);
    assert.equal(h.script.campaigns[0]!.released, false);
    assert.deepEqual(h.script.fences, []);
    await h.guard.stop();
    await h.running;
  });

  describe('failsafe: a lost Lease with a majority in touch', () => {
    const lead = async (h: ReturnType<typeof harness>) => {
      h.script.role = true;
      await h.tick();
      h.script.campaigns[0]!.callbacks.onStartedLeading();
      assert.equal(h.guard.holdsLease, true);
    };

    test('keeps the engine up and campaigns again; fences once the majority is gone', async () => {
      const h = harness(5_000, { inTouch: 2, members: 3 });
      await lead(h);
      h.script.campaigns[0]!.callbacks.onStoppedLeading();
      await h.tick();
      assert.deepEqual(h.script.fences, [], 'an API-server outage alone does not stop the primary');
      assert.equal(h.script.campaigns.length, 2, 'a new campaign tries to win the Lease back');
      const asked = h.script.quorumAsked;
      await h.tick();
      assert.ok(h.script.quorumAsked > asked, 'the quorum is asked again every role interval');
      assert.deepEqual(h.script.fences, []);
      h.script.quorum = { inTouch: 1, members: 3 };
      await h.tick();
      assert.equal(h.script.fences.length, 1);
      assert.match(h.script.fences[0]!, /in touch with 1 of 3 instances, no majority/);
      await h.running;
    });

    test('is back to holding the Lease once the new campaign wins it', async () => {
      const h = harness(5_000, { inTouch: 3, members: 3 });
      await lead(h);
      h.script.campaigns[0]!.callbacks.onStoppedLeading();
      await h.tick();
      h.script.campaigns[1]!.callbacks.onNewLeader('db-0');
      h.script.campaigns[1]!.callbacks.onStartedLeading();
      assert.equal(h.guard.holdsLease, true);
      const asked = h.script.quorumAsked;
      h.script.quorum = { inTouch: 1, members: 3 };
      await h.tick();
      assert.equal(h.script.quorumAsked, asked, 'holding the Lease, it needs no quorum');
      assert.deepEqual(h.script.fences, []);
      await h.guard.stop();
      await h.running;
    });

    test('a Lease taken by another instance fences at once, whatever the quorum says', async () => {
      const h = harness(5_000, { inTouch: 3, members: 3 });
      await lead(h);
      h.script.campaigns[0]!.callbacks.onStoppedLeading();
      await h.tick();
      h.script.campaigns[1]!.callbacks.onNewLeader('db-1');
      assert.equal(h.script.fences.length, 1);
      assert.match(h.script.fences[0]!, /held by db-1/);
      await h.running;
    });

    test('fences when the quorum has no majority, or gives no answer', async () => {
      for (const answer of [{ inTouch: 1, members: 2 }, 'no answer' as const]) {
        const h = harness(5_000, answer);
        await lead(h);
        h.script.campaigns[0]!.callbacks.onStoppedLeading();
        await h.tick();
        assert.equal(h.script.fences.length, 1, `fenced with ${JSON.stringify(answer)}`);
        assert.match(
          h.script.fences[0]!,
          /not renewed within the renew deadline, and (in touch with 1 of 2|no answer)/,
        );
        await h.running;
      }
    });

    test('serving in failsafe, an unanswered question changes nothing until the latest majority answer is QUORUM_EVIDENCE_MS old', async () => {
      const h = harness(5_000, { inTouch: 2, members: 3 });
      await lead(h);
      h.script.campaigns[0]!.callbacks.onStoppedLeading();
      await h.tick();
      assert.deepEqual(h.script.fences, []);
      // The answers stop (psql slow to start, say): the latest majority answer counts until it is
      // QUORUM_EVIDENCE_MS old, from when its question was asked, and not a tick longer.
      const fencedAfter = async () => {
        h.script.quorum = 'no answer';
        const since = h.script.answeredAskedAt!;
        while (h.script.fences.length === 0 && h.clock.now() - since < 2 * QUORUM_EVIDENCE_MS) await h.tick();
        return h.clock.now() - since;
      };
      const first = h.script.answeredAskedAt!;
      h.script.quorum = 'no answer';
      await h.tick();
      assert.deepEqual(h.script.fences, [], 'a question without an answer does not stop the primary');
      // An answer in time: the window runs from it.
      h.script.quorum = { inTouch: 2, members: 3 };
      await h.tick();
      const renewed = h.script.answeredAskedAt!;
      const waited = await fencedAfter();
      assert.ok(renewed > first, 'the window was renewed by the later answer');
      assert.equal(h.script.fences.length, 1, 'fenced once the latest majority answer is too old');
      assert.ok(
        waited >= QUORUM_EVIDENCE_MS && waited < QUORUM_EVIDENCE_MS + 1_000,
        `fenced ${waited} ms after the latest majority answer was asked`,
      );
      assert.match(
        h.script.fences[0]!,
        new RegExp(`no answer since ${QUORUM_EVIDENCE_MS} ms ago has shown a majority`),
      );
      await h.running;
    });

    test('serving in failsafe, answers that each take 2 s, one of them none, do not fence: the quorum is asked beside the role, a turn as soon as the slower answer is in', async () => {
      const h = harness(60_000, { inTouch: 2, members: 3 }, 2_000);
      // Steps of 100 ms, as answers and timeouts would fall in one step of a second.
      const ticksUntil = async (what: string, done: () => boolean) => {
        for (let i = 0; i < 300 && !done(); i++) await h.tick(100);
        assert.ok(done(), `${what}: fenced ${JSON.stringify(h.script.fences)}`);
      };
      h.script.role = true;
      await ticksUntil('a campaign', () => h.script.campaigns.length === 1);
      h.script.campaigns[0]!.callbacks.onStartedLeading();
      h.script.campaigns[0]!.callbacks.onStoppedLeading();
      await ticksUntil('failsafe: a new campaign', () => h.script.campaigns.length === 2);
      // One question gets no answer; the ones before and after answer, each after 2 s.
      let asked = h.script.quorumAsked;
      await ticksUntil('the quorum asked again', () => h.script.quorumAsked > asked);
      h.script.quorum = 'no answer';
      asked = h.script.quorumAsked;
      await ticksUntil('the unanswered question asked', () => h.script.quorumAsked > asked);
      h.script.quorum = { inTouch: 2, members: 3 };
      const until = h.clock.now() + 3 * QUORUM_EVIDENCE_MS;
      while (h.clock.now() < until && h.script.fences.length === 0) await h.tick(100);
      // Asked one after the other, role and quorum in turn, then an interval, a turn would take
      // 5 s, and the question after the unanswered one would be asked 10 s after the last
      // majority answer's.
      assert.deepEqual(h.script.fences, [], 'slow answers and one missing one keep a majority primary up');
      await h.guard.stop();
      // The scripted questions ignore the abort: the turn under way ends with its answers.
      h.clock.advance(QUESTION_TIMEOUT_MS);
      await h.running;
    });

    test('a single instance is its own majority: never fenced for the API server alone', async () => {
      const h = harness(2_000, { inTouch: 1, members: 1 });
      h.script.role = true;
      await h.tick();
      h.clock.advance(2_000);
      await h.tick();
      assert.deepEqual(h.script.fences, [], 'the grace ran out, yet no other instance can be promoted');
      assert.equal(h.script.campaigns.length, 1, 'the first campaign goes on');
      await h.guard.stop();
      await h.running;
    });
  });
});
