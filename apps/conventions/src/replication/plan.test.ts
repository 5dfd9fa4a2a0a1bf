import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  OUT_OF_TOUCH_MARGIN_MS,
  STOPPED_REPLICA_RESTART_MS,
  plan,
  type Member,
  type PlanInput,
  type Server,
} from './plan.ts';
import type { LeaseJudgement } from './primary-lease.ts';

const NOW = 1_000_000;
const SYSTEM = '7300000000000000001';

const primary = (lsn = 1000n): Server => ({
  writable: true,
  systemId: SYSTEM,
  timeline: 1,
  lsn,
  replayLsn: lsn,
  streaming: false,
});
const standby = (lsn: bigint, extra: Partial<Server> = {}): Server => ({
  writable: false,
  systemId: SYSTEM,
  timeline: 1,
  lsn,
  replayLsn: lsn,
  streaming: true,
  ...extra,
});
const member = (ordinal: number, server: Server | undefined, extra: Partial<Member> = {}): Member => ({
  pod: `db-${ordinal}`,
  ordinal,
  uid: `uid-${ordinal}`,
  createdAt: NOW - 600_000,
  deleting: false,
  ready: server !== undefined,
  troubleSince: server === undefined ? NOW - 60_000 : undefined,
  server,
  ...extra,
});
const input = (members: Member[], extra: Partial<PlanInput> = {}): PlanInput => ({
  replicas: 3,
  members,
  topology: { primary: 'db-0', initialized: true, since: NOW - 3_600_000 },
  systemId: SYSTEM,
  failoverDelayMs: 10_000,
  maxLag: 100n,
  now: NOW,
  switchoverTo: undefined,
  ...extra,
});

describe('replication plan', () => {
  test('fenced instances: no role label, never a candidate for failover or switchover; a fenced primary is not failed over', () => {
    const fenced = new Set(['db-1']);
    const steady = plan(
      input([member(0, primary()), member(1, standby(1000n)), member(2, standby(1000n))], { fenced }),
    );
    assert.equal(steady.roles.get('db-1'), undefined, 'a fenced replica leaves the read-only Service');
    assert.equal(steady.roles.get('db-2'), 'replica');
    const refused = plan(
      input([member(0, primary()), member(1, standby(1000n)), member(2, standby(1000n))], {
        fenced,
        switchoverTo: 'db-1',
      }),
    );
    assert.equal(refused.step?.kind, 'refuseSwitchover');
    // The primary is lost: db-1 is the most advanced standby, but fenced; db-2 takes over.
    const lost = plan(
      input([member(0, undefined), member(1, standby(1000n)), member(2, standby(900n))], { fenced }),
    );
    assert.equal(lost.step?.kind === 'topology' && lost.step.topology.primary, 'db-2');
    const onlyFenced = plan(
      input([member(0, undefined), member(1, standby(1000n))], { replicas: 2, fenced }),
    );
    assert.equal(onlyFenced.step, undefined);
    // A person fenced the primary: it stopped on purpose, and nothing takes over.
    const primaryFenced = plan(
      input([member(0, undefined), member(1, standby(1000n)), member(2, standby(1000n))], {
        fenced: new Set(['db-0']),
      }),
    );
    assert.equal(primaryFenced.step, undefined);
    assert.match(primaryFenced.waiting ?? '', /db-0 is fenced/);
    const stopping = plan(
      input([member(0, primary()), member(1, standby(1000n))], { fenced: new Set(['db-0']) }),
    );
    assert.equal(stopping.roles.get('db-0'), undefined, 'a fenced primary serves no client while it stops');
    assert.equal(stopping.currentPrimary, 'db-0');
  });

  test('steady state: no step; the primary and the streaming replicas within the lag bound get their roles', () => {
    const p = plan(input([member(0, primary(1000n)), member(1, standby(990n)), member(2, standby(500n))]));
    assert.equal(p.step, undefined);
    assert.equal(p.currentPrimary, 'db-0');
    assert.equal(p.roles.get('db-0'), 'primary');
    assert.equal(p.roles.get('db-1'), 'replica');
    assert.equal(
      p.roles.get('db-2'),
      undefined,
      '500 bytes behind a 100-byte bound: out of the read-only Service',
    );
  });

  test('a standby that is not streaming serves no reads', () => {
    const p = plan(input([member(0, primary()), member(1, standby(1000n, { streaming: false }))]));
    assert.equal(p.roles.get('db-1'), undefined);
  });

  test('the first primary is recorded as initialised once it is writable; before that nothing fails over', () => {
    const fresh = { primary: 'db-0', initialized: false, since: undefined };
    const up = plan(input([member(0, primary()), member(1, undefined)], { topology: fresh }));
    assert.deepEqual(up.step && up.step.kind === 'topology' && up.step.topology, {
      ...fresh,
      initialized: true,
    });
    const down = plan(input([member(0, undefined), member(1, standby(0n))], { topology: fresh }));
    assert.equal(down.step, undefined, 'a cluster that never existed has nothing to take over');
    assert.match(down.waiting ?? '', /initialise/);
  });

  test('a lost primary is replaced only after the failover delay', () => {
    const members = (since: number) => [
      member(0, undefined, { troubleSince: since }),
      member(1, standby(900n)),
      member(2, standby(950n)),
    ];
    const early = plan(input(members(NOW - 4_000)));
    assert.equal(early.step, undefined);
    assert.equal(early.recheckInMs, 6_000);
    assert.equal(
      early.roles.get('db-1'),
      undefined,
      'no replica serves reads without a primary to measure lag against',
    );
    const late = plan(input(members(NOW - 10_000)));
    assert.equal(late.step?.kind, 'topology');
    assert.equal(late.step.kind === 'topology' && late.step.reason, 'Failover');
    assert.equal(
      late.step.kind === 'topology' && late.step.topology.primary,
      'db-2',
      'the most advanced standby',
    );
  });

  test('candidates: never another cluster, never an ordinal being scaled away, never a writable one', () => {
    const lost = member(0, undefined, { troubleSince: NOW - 60_000 });
    const other = member(1, standby(5000n, { systemId: 'another' }));
    const leaving = member(3, standby(4000n));
    const good = member(2, standby(100n));
    const p = plan(input([lost, other, leaving, good]));
    assert.equal(p.step?.kind === 'topology' && p.step.topology.primary, 'db-2');
    const none = plan(input([lost, other, leaving]));
    assert.equal(none.step, undefined);
    assert.match(none.waiting ?? '', /no standby can take over/);
  });

  test('the named primary running as a standby is promoted once every other instance is known not to write', () => {
    const moved = { primary: 'db-1', initialized: true, since: NOW - 5_000 };
    // The old primary's Pod predates the change and does not answer: it is stopped first.
    const old = member(0, undefined, { ready: false, createdAt: NOW - 600_000 });
    const p1 = plan(input([old, member(1, standby(900n)), member(2, standby(800n))], { topology: moved }));
    assert.deepEqual(p1.step && { ...p1.step, message: '' }, {
      kind: 'fence',
      pod: 'db-0',
      uid: 'uid-0',
      graceful: false,
      message: '',
    });
    // While its Pod is being deleted with the short grace of a fence: wait.
    const p2 = plan(
      input([{ ...old, deleting: true, deletionGraceSeconds: 1 }, member(1, standby(900n))], {
        topology: moved,
      }),
    );
    assert.equal(p2.step, undefined);
    assert.match(p2.waiting ?? '', /db-0 to stop/);
    // Being deleted with its whole grace: a clean shutdown gets its few seconds...
    const stopping = { ...old, deleting: true, deletionGraceSeconds: 30, deletingSince: NOW - 4_000 };
    const patient = plan(input([stopping, member(1, standby(900n))], { topology: moved }));
    assert.equal(patient.step, undefined);
    assert.match(patient.waiting ?? '', /db-0 to stop/);
    assert.equal(patient.recheckInMs, 6_000);
    // ...and one that outlasts them (its preStop shutdown hung) has its grace shortened, once;
    // then it waits as above.
    const slow = plan(
      input([{ ...stopping, deletingSince: NOW - 10_000 }, member(1, standby(900n))], {
        topology: moved,
      }),
    );
    assert.deepEqual(slow.step && { ...slow.step, message: '' }, {
      kind: 'fence',
      pod: 'db-0',
      uid: 'uid-0',
      graceful: false,
      message: '',
    });
    assert.match(
      slow.step?.kind === 'fence' ? slow.step.message : '',
      /10 s into its 30 s grace period, db-1 having received nothing from it for 10 s: shortening it to 1 s/,
    );
    // A target that is still receiving (it was behind, and the shutdown sends it the rest) is not
    // cut off from what it lacks: patience counts from its last move.
    const receiving = member(1, standby(900n), { positionMovedAt: NOW - 2_000 });
    const catchingUp = plan(
      input([{ ...stopping, deletingSince: NOW - 25_000 }, receiving], { topology: moved }),
    );
    assert.equal(catchingUp.step, undefined);
    assert.match(catchingUp.waiting ?? '', /db-0 to stop/);
    assert.equal(catchingUp.recheckInMs, 8_000);
    const stalled = plan(
      input(
        [
          { ...stopping, deletingSince: NOW - 25_000 },
          { ...receiving, positionMovedAt: NOW - 10_000 },
        ],
        { topology: moved },
      ),
    );
    assert.equal(stalled.step?.kind, 'fence', 'received nothing for the whole patience: cut short');
    // Its new Pod started after the change (it read the new name): no longer in the way.
    const recreated = member(0, undefined, { uid: 'uid-0b', createdAt: NOW - 3_000, ready: false });
    const p3 = plan(input([recreated, member(1, standby(900n))], { topology: moved }));
    assert.deepEqual(p3.step, { kind: 'promote', pod: 'db-1' });
    // A new Pod of the same second as the change may have read the old name: not trusted yet.
    const sameSecond = member(0, undefined, {
      uid: 'uid-0c',
      createdAt: Math.floor((NOW - 5_000) / 1000) * 1000,
    });
    assert.equal(
      plan(input([sameSecond, member(1, standby(900n))], { topology: moved })).step?.kind,
      'fence',
    );
    // Created in the next whole second, but less than a second after the change was written: the
    // kubelet may not have had the new name yet when it filled the Pod's volume.
    const writtenLate = { ...moved, since: NOW - 5_000 + 900 };
    const nextSecond = member(0, undefined, { uid: 'uid-0d', createdAt: NOW - 4_000 });
    assert.equal(
      plan(input([nextSecond, member(1, standby(900n))], { topology: writtenLate })).step?.kind,
      'fence',
    );
  });

  test('never two writable: another writable instance is fenced before anything else, cleanly if it serves', () => {
    const moved = { primary: 'db-1', initialized: true, since: NOW - 5_000 };
    const p = plan(input([member(0, primary(2000n)), member(1, standby(2000n))], { topology: moved }));
    assert.equal(p.step?.kind, 'fence');
    assert.equal(p.step?.kind === 'fence' && p.step.pod, 'db-0');
    assert.equal(
      p.step?.kind === 'fence' && p.step.graceful,
      true,
      'a ready primary shuts down cleanly: its last WAL reaches the standbys',
    );
    assert.equal(p.roles.get('db-0'), undefined, 'and leaves the client Service at once');
    assert.equal(p.currentPrimary, undefined);
    // Both writable, the named one included: the other is fenced; the named one stays primary.
    const both = plan(input([member(0, primary()), member(1, primary())]));
    assert.equal(both.step?.kind === 'fence' && both.step.pod, 'db-1');
    assert.equal(both.currentPrimary, 'db-0');
  });

  test('no promotion while a ready instance does not answer, or of an instance of another cluster', () => {
    const moved = { primary: 'db-1', initialized: true, since: NOW - 5_000 };
    const silent = member(0, undefined, { ready: true });
    const p = plan(input([silent, member(1, standby(900n))], { topology: moved }));
    assert.equal(
      p.step?.kind,
      'fence',
      'a ready Pod that does not answer may be a writable primary: stopped first',
    );
    const foreign = plan(
      input([member(1, standby(900n, { systemId: 'another' }))], { topology: moved, replicas: 2 }),
    );
    assert.equal(foreign.step, undefined);
    assert.match(foreign.waiting ?? '', /another data set/);
  });

  test('switchover: to a ready streaming standby; refused otherwise', () => {
    const members = [
      member(0, primary()),
      member(1, standby(1000n)),
      member(2, standby(1000n, { streaming: false })),
    ];
    const ok = plan(input(members, { switchoverTo: 'db-1' }));
    assert.equal(ok.step?.kind === 'topology' && ok.step.reason, 'Switchover');
    assert.equal(ok.step?.kind === 'topology' && ok.step.topology.primary, 'db-1');
    assert.equal(plan(input(members, { switchoverTo: 'db-2' })).step?.kind, 'refuseSwitchover');
    assert.equal(plan(input(members, { switchoverTo: 'db-7' })).step?.kind, 'refuseSwitchover');
    assert.equal(plan(input(members, { switchoverTo: 'db-0' })).step, undefined, 'already the primary');
    // Streaming but far behind (maxLag 100): refused, and the primary keeps serving.
    const lagging = [member(0, primary(1000n)), member(1, standby(850n)), member(2, standby(900n))];
    const refused = plan(input(lagging, { switchoverTo: 'db-1' }));
    assert.equal(refused.step?.kind, 'refuseSwitchover');
    assert.match(
      refused.step?.kind === 'refuseSwitchover' ? refused.step.message : '',
      /it is 150 behind the primary, beyond the lag bound \(100\); the primary keeps serving/,
    );
    assert.equal(refused.currentPrimary, 'db-0');
    assert.equal(plan(input(lagging, { switchoverTo: 'db-2' })).step?.kind, 'topology', 'within the bound');
    assert.deepEqual(plan(input(lagging, { switchoverTo: 'db-2' })).switchover, {
      target: 'db-2',
      state: 'Started',
      message: 'switchover requested: db-0 hands the primary role to db-2',
    });
  });

  test('switchover to a target beyond the lag bound: the primary keeps serving while it catches up, then the request is refused', () => {
    const lagging = [member(0, primary(1000n)), member(1, standby(850n)), member(2, standby(900n))];
    const asked = (since: number) =>
      plan(
        input(lagging, {
          switchoverTo: 'db-1',
          switchoverRequestedAt: NOW - since,
          switchoverCatchUpMs: 60_000,
        }),
      );
    const waiting = asked(10_000);
    assert.equal(waiting.step, undefined, 'no handover yet, no refusal');
    assert.equal(waiting.currentPrimary, 'db-0');
    assert.equal(waiting.roles.get('db-0'), 'primary', 'the primary keeps serving');
    assert.equal(waiting.switchover?.state, 'Waiting');
    assert.equal(
      waiting.waiting,
      'switchover to db-1 waits for it to catch up: 150 behind the primary, beyond the lag bound (100); db-0 keeps serving, for up to 50 s more',
    );
    assert.equal(waiting.recheckInMs, 2000, 'looked at again soon: its position moves without an event');
    assert.equal(asked(59_500).recheckInMs, 500);

    const late = asked(61_000);
    assert.equal(late.step?.kind, 'refuseSwitchover');
    assert.equal(late.switchover?.state, 'Refused');
    assert.match(
      late.switchover?.message ?? '',
      /150 behind the primary, beyond the lag bound \(100\), after 61 s to catch up; the primary keeps serving/,
    );

    // Caught up within the time: handed over.
    const caughtUp = plan(
      input([member(0, primary(1000n)), member(1, standby(950n)), member(2, standby(900n))], {
        switchoverTo: 'db-1',
        switchoverRequestedAt: NOW - 20_000,
        switchoverCatchUpMs: 60_000,
      }),
    );
    assert.equal(caughtUp.step?.kind === 'topology' && caughtUp.step.topology.primary, 'db-1');
    assert.equal(caughtUp.switchover?.state, 'Started');

    // A target that does not stream now (reconnecting after a pause) is given the same time.
    const reconnecting = (since: number) =>
      plan(
        input([member(0, primary(1000n)), member(1, standby(850n, { streaming: false }))], {
          switchoverTo: 'db-1',
          switchoverRequestedAt: NOW - since,
          switchoverCatchUpMs: 60_000,
        }),
      );
    assert.equal(reconnecting(5_000).switchover?.state, 'Waiting');
    assert.match(
      reconnecting(5_000).waiting ?? '',
      /waits for it to catch up: not a ready, streaming standby/,
    );
    assert.equal(reconnecting(61_000).step?.kind, 'refuseSwitchover');
  });

  test('a rolling update waits while a requested switchover waits for its target', () => {
    const p = plan(
      input(
        [
          member(0, primary(1000n)),
          member(1, standby(850n), { outdated: true }),
          member(2, standby(1000n), { outdated: true }),
        ],
        { switchoverTo: 'db-1', switchoverRequestedAt: NOW, switchoverCatchUpMs: 60_000 },
      ),
    );
    assert.equal(p.step, undefined, 'no Pod replaced meanwhile');
    assert.equal(p.switchover?.state, 'Waiting');
  });

  test('scaling below the primary moves it first to a streaming standby that stays', () => {
    const topology = { primary: 'db-2', initialized: true, since: NOW - 60_000 };
    const p = plan(
      input([member(0, standby(900n)), member(1, standby(1000n)), member(2, primary())], {
        replicas: 2,
        topology,
      }),
    );
    assert.equal(p.step?.kind === 'topology' && p.step.topology.primary, 'db-1');
    assert.equal(p.step?.kind === 'topology' && p.step.reason, 'Switchover');
  });

  test('scaling below the primary waits, saying why, while no standby that stays can take over without loss', () => {
    const topology = { primary: 'db-2', initialized: true, since: NOW - 60_000 };
    const behind = plan(
      input([member(0, standby(700n)), member(1, standby(800n)), member(2, primary(1000n))], {
        replicas: 2,
        topology,
      }),
    );
    assert.equal(behind.step, undefined, 'the primary is not moved to a standby missing writes');
    assert.equal(behind.currentPrimary, 'db-2', 'it keeps serving');
    assert.match(behind.waiting ?? '', /scaling to 2: db-2, the primary, is removed once/);
    assert.match(
      behind.waiting ?? '',
      /db-1, the most advanced standby, is 200 behind the primary, beyond the lag bound \(100\)/,
    );
    assert.equal(behind.recheckInMs, 2000, 'looked at again: positions move without an event');
    assert.equal(behind.switchover, undefined, 'no switchover was requested');
    const notStreaming = plan(
      input(
        [member(0, standby(990n, { streaming: false })), member(1, undefined), member(2, primary(1000n))],
        {
          replicas: 2,
          topology,
        },
      ),
    );
    assert.match(
      notStreaming.waiting ?? '',
      /db-0, the most advanced standby, is not a ready, streaming standby/,
    );
    const none = plan(
      input([member(0, undefined), member(1, undefined), member(2, primary(1000n))], {
        replicas: 2,
        topology,
      }),
    );
    assert.equal(none.step, undefined);
  });

  test('a manager that resumes a half-done failover promotes the named standby, and never a second one', () => {
    const moved = { primary: 'db-2', initialized: true, since: NOW - 2_000 };
    // db-1 is more advanced than db-2 by now, but the choice was made: the record is kept.
    const members = [
      member(0, undefined, { uid: undefined, ready: false }),
      member(1, standby(5000n)),
      member(2, standby(4000n)),
    ];
    assert.deepEqual(plan(input(members, { topology: moved })).step, { kind: 'promote', pod: 'db-2' });
    // Once promoted, nothing else is.
    const after = plan(
      input([members[0]!, member(1, standby(5000n)), member(2, primary(6000n))], { topology: moved }),
    );
    assert.equal(after.step, undefined);
    assert.equal(after.currentPrimary, 'db-2');
  });

  test('a primary whose Pod is being deleted hands over at once, and is waited for before the promotion', () => {
    const deleting = member(0, primary(1000n), { deleting: true });
    const p = plan(input([deleting, member(1, standby(990n)), member(2, standby(1000n))]));
    assert.equal(p.step?.kind === 'topology' && p.step.topology.primary, 'db-2', 'no failover delay');
    // Named now, db-2 waits while db-0 still writes (its fast shutdown hands over the last WAL).
    const moved = { primary: 'db-2', initialized: true, since: NOW };
    const next = plan(
      input([deleting, member(1, standby(990n)), member(2, standby(1000n))], { topology: moved }),
    );
    assert.equal(next.step, undefined);
    assert.match(next.waiting ?? '', /db-0 to stop/);
    // With no standby to take over, nothing moves: it comes back as the primary.
    assert.equal(plan(input([deleting], { replicas: 1 })).step, undefined);
  });

  test('a primary whose Pod is being deleted is handed only to a standby that streamed from it', () => {
    const deleting = member(0, primary(1000n), { deleting: true });
    // Ready and answering, but still catching up (or cloned and not yet connected): it lacks the latest writes.
    const catchingUp = member(1, standby(1000n, { streaming: false }));
    const seen = { lsn: 1000n, followers: new Set<string>() };
    const p = plan(input([deleting, catchingUp], { replicas: 2, lastAnswer: seen }));
    assert.equal(p.step, undefined, 'no handover');
    assert.equal(p.currentPrimary, 'db-0', 'it still writes until it stops');
    assert.match(p.waiting ?? '', /no standby streamed from it: it is not handed over/);
    // A less advanced standby that streamed is the one taken: a clean shutdown sends it the rest.
    const streamed = member(2, standby(900n));
    const q = plan(
      input([deleting, catchingUp, streamed], { lastAnswer: { lsn: 1000n, followers: new Set(['db-2']) } }),
    );
    assert.equal(q.step?.kind === 'topology' && q.step.topology.primary, 'db-2');
    // A manager that never saw the primary answer (a new leader) takes the most advanced standby.
    const r = plan(input([deleting, catchingUp], { replicas: 2 }));
    assert.equal(r.step?.kind === 'topology' && r.step.topology.primary, 'db-1');
  });

  test('a crashed primary whose Pod is then deleted is handed to a standby that streamed until it stopped answering', () => {
    // Its server is gone, and with it the standby's stream; the manager remembers who followed it.
    const crashed = member(0, undefined, { deleting: true, ready: false, troubleSince: NOW });
    const follower = member(1, standby(1000n, { streaming: false }));
    const p = plan(
      input([crashed, follower], { replicas: 2, lastAnswer: { lsn: 1000n, followers: new Set(['db-1']) } }),
    );
    assert.equal(
      p.step?.kind === 'topology' && p.step.topology.primary,
      'db-1',
      'handed over, no failover delay',
    );
  });

  test('a lost primary is replaced by a standby that streamed from it or holds its last seen writes, never one behind them', () => {
    const lost = member(0, undefined);
    const behind = member(1, standby(900n, { streaming: false }));
    const seen = { lsn: 1000n, followers: new Set<string>() };
    const p = plan(input([lost, behind], { replicas: 2, lastAnswer: seen }));
    assert.equal(p.step, undefined, 'not promoted: it lacks writes the primary had');
    assert.match(
      p.waiting ?? '',
      /no standby streamed from it or holds its last writes: waiting for it to return/,
    );
    const level = member(1, standby(1000n, { streaming: false }));
    const q = plan(input([lost, level], { replicas: 2, lastAnswer: seen }));
    assert.equal(q.step?.kind === 'topology' && q.step.topology.primary, 'db-1', 'it holds every write seen');
    const follower = plan(
      input([lost, behind], { replicas: 2, lastAnswer: { lsn: 1000n, followers: new Set(['db-1']) } }),
    );
    assert.equal(
      follower.step?.kind === 'topology' && follower.step.topology.primary,
      'db-1',
      'it streamed until the primary was lost',
    );
  });

  test('a replica whose replication stopped for good is restarted after a while, one that reconnects or lags is not', () => {
    const diverged = {
      streaming: false,
      replicationError: { message: 'IO thread stopped (error 1236): not in the master binlog', fatal: true },
    };
    const stoppedFor = (ms: number) =>
      plan(
        input([
          member(0, primary()),
          member(1, standby(1000n)),
          member(2, standby(900n, diverged), { outOfTouchSince: NOW - ms }),
        ]),
      );
    assert.equal(stoppedFor(STOPPED_REPLICA_RESTART_MS - 1).step, undefined, 'not yet: it may be settling');
    const restart = stoppedFor(STOPPED_REPLICA_RESTART_MS);
    assert.equal(restart.step?.kind, 'replace');
    assert.equal(restart.step?.kind === 'replace' && restart.step.pod, 'db-2');
    assert.equal(restart.step?.kind === 'replace' && restart.step.reason, 'ReplicationStopped');
    assert.match(
      restart.step?.kind === 'replace' ? restart.step.message : '',
      /^db-2 stopped replicating from db-0 30 s ago \(IO thread stopped \(error 1236\): not in the master binlog\): restarting it/,
    );
    assert.equal(restart.roles.get('db-2'), undefined, 'it serves no reads meanwhile');
    // Reconnecting (a primary not there yet) or stopped on purpose: the server mends it, or a person does.
    const reconnecting = plan(
      input([
        member(0, primary()),
        member(1, standby(1000n)),
        member(
          2,
          standby(900n, {
            streaming: false,
            replicationError: { message: 'IO thread connecting', fatal: false },
          }),
          { outOfTouchSince: NOW - 600_000 },
        ),
      ]),
    );
    assert.equal(reconnecting.step, undefined);
    // Being deleted already, or no primary serving: nothing to restart it against.
    assert.equal(
      plan(
        input([
          member(0, primary()),
          member(1, standby(1000n)),
          member(2, standby(900n, diverged), { outOfTouchSince: NOW - 600_000, deleting: true }),
        ]),
      ).step,
      undefined,
    );
    const noPrimary = plan(
      input([
        member(0, undefined),
        member(1, standby(1000n)),
        member(2, standby(900n, diverged), { outOfTouchSince: NOW - 600_000 }),
      ]),
    );
    assert.notEqual(noPrimary.step?.kind === 'replace' && noPrimary.step.pod, 'db-2');
  });

  test('rolling update: replicas one at a time, highest first, each once every instance serves again', () => {
    const old = { outdated: true };
    const first = plan(
      input([member(0, primary(), old), member(1, standby(1000n), old), member(2, standby(1000n), old)]),
    );
    assert.equal(first.step?.kind, 'replace');
    assert.equal(first.step?.kind === 'replace' && first.step.pod, 'db-2');
    // db-2 came back from the new template but does not stream yet: nothing else is replaced.
    const catchingUp = plan(
      input([
        member(0, primary(), old),
        member(1, standby(1000n), old),
        member(2, standby(400n, { streaming: false })),
      ]),
    );
    assert.equal(catchingUp.step, undefined);
    assert.match(catchingUp.waiting ?? '', /waiting for db-2 to serve/);
    const gone = plan(
      input([
        member(0, primary(), old),
        member(1, standby(1000n), old),
        member(2, undefined, { uid: undefined }),
      ]),
    );
    assert.equal(gone.step, undefined, 'a missing Pod is waited for');
    const next = plan(
      input([member(0, primary(), old), member(1, standby(1000n), old), member(2, standby(1000n))]),
    );
    assert.equal(next.step?.kind === 'replace' && next.step.pod, 'db-1');
  });

  test('rolling update: the primary goes last, after one switchover to the most advanced updated replica', () => {
    const p = plan(
      input([
        member(0, primary(2000n), { outdated: true }),
        member(1, standby(1990n)),
        member(2, standby(1995n)),
      ]),
    );
    assert.equal(p.step?.kind, 'topology');
    assert.equal(p.step?.kind === 'topology' && p.step.reason, 'Switchover');
    assert.equal(p.step?.kind === 'topology' && p.step.topology.primary, 'db-2');
    // The primary on a higher ordinal: the replicas below it are still replaced first.
    const high = plan(
      input(
        [
          member(0, standby(1000n), { outdated: true }),
          member(1, standby(1000n)),
          member(2, primary(), { outdated: true }),
        ],
        {
          topology: { primary: 'db-2', initialized: true, since: NOW - 3_600_000 },
        },
      ),
    );
    assert.equal(high.step?.kind === 'replace' && high.step.pod, 'db-0');
    // Nothing outdated: nothing to do.
    assert.equal(plan(input([member(0, primary()), member(1, standby(1000n))])).step, undefined);
  });

  test('rolling update: a requested switchover, a scale-down move and a failover come before it', () => {
    const p = plan(
      input(
        [
          member(0, primary(), { outdated: true }),
          member(1, standby(1000n), { outdated: true }),
          member(2, standby(1000n)),
        ],
        {
          switchoverTo: 'db-1',
        },
      ),
    );
    assert.equal(p.step?.kind === 'topology' && p.step.topology.primary, 'db-1');
    const lost = plan(
      input([
        member(0, undefined, { outdated: true }),
        member(1, standby(1000n), { outdated: true }),
        member(2, standby(1000n)),
      ]),
    );
    assert.notEqual(lost.step?.kind, 'replace', 'no Pod is replaced while the primary is lost');
  });

  describe('a manager that cannot reach the instances (their Pods Ready, by the kubelet)', () => {
    /** Ready by the kubelet, carrying `label`, its server unreachable from this manager. */
    const unseen = (ordinal: number, label: 'primary' | 'replica' | undefined) =>
      member(ordinal, undefined, { ready: true, troubleSince: undefined, label });

    test('reaching none: no step, every role label kept, the primary still serving; it says why', () => {
      const p = plan(input([unseen(0, 'primary'), unseen(1, 'replica'), unseen(2, 'replica')]));
      assert.equal(p.step, undefined);
      assert.deepEqual(Object.fromEntries(p.roles), {
        'db-0': 'primary',
        'db-1': 'replica',
        'db-2': 'replica',
      });
      assert.equal(p.currentPrimary, undefined, 'no server answered writable');
      assert.equal(p.servingPrimary, 'db-0', 'the kubelet says the labelled primary serves');
      assert.deepEqual(p.unobserved, ['db-0', 'db-1', 'db-2']);
      assert.match(p.waiting ?? '', /cannot reach db-0, whose Pod is Ready/);
      assert.equal(p.recheckInMs, undefined, 'no failover clock runs');
    });

    test('the named primary unreachable past any delay while standbys answer: no failover', () => {
      // The standbys answer, and one no longer streams: the manager cannot tell a primary cut off
      // from everyone from a manager cut off from the primary. The kubelet says it serves.
      const p = plan(
        input(
          [unseen(0, 'primary'), member(1, standby(900n, { streaming: false })), member(2, standby(950n))],
          {
            failoverDelayMs: 0,
          },
        ),
      );
      assert.equal(p.step, undefined, "no failover on this manager's word alone");
      assert.equal(p.roles.get('db-0'), 'primary');
      assert.equal(p.roles.get('db-1'), undefined, 'known not to stream: out of -ro');
      assert.equal(
        p.roles.get('db-2'),
        undefined,
        'streaming, but it had no label: its lag cannot be measured, so it gains none',
      );
      const labelled = plan(
        input([unseen(0, 'primary'), member(1, standby(950n), { label: 'replica' })], { failoverDelayMs: 0 }),
      );
      assert.equal(labelled.roles.get('db-1'), 'replica', 'a streaming replica keeps the label it has');
    });

    test('labels are kept, never gained: an unlabelled or wrongly labelled instance gets none', () => {
      const p = plan(input([unseen(0, undefined), unseen(1, 'primary'), unseen(2, undefined)]));
      assert.equal(p.roles.get('db-0'), undefined, 'never confirmed the primary: not put behind the Service');
      assert.equal(
        p.roles.get('db-1'),
        undefined,
        'a primary label on an instance that is not the named one',
      );
      assert.equal(p.servingPrimary, undefined);
      assert.equal(p.step, undefined);
    });

    test('an unreachable instance that is also not Ready is in trouble: the primary fails over after the delay', () => {
      // A hang (SIGSTOP) or a crash fails the kubelet's readiness probe: that is what starts the clock.
      const hung = member(0, undefined, { ready: false, troubleSince: NOW - 10_000, label: 'primary' });
      const p = plan(input([hung, member(1, standby(1000n)), member(2, standby(990n))]));
      assert.equal(p.step?.kind === 'topology' && p.step.topology.primary, 'db-1');
      assert.equal(p.roles.get('db-0'), undefined, 'not ready: out of the Service');
    });

    test('a writable instance the manager sees beside an unreachable named primary is still fenced', () => {
      const stray = member(1, primary(2000n));
      const p = plan(input([unseen(0, 'primary'), stray]));
      assert.equal(p.step?.kind, 'fence');
      assert.equal(p.step?.kind === 'fence' && p.step.pod, 'db-1');
      assert.equal(p.roles.get('db-1'), undefined);
      assert.equal(p.roles.get('db-0'), 'primary');
    });
  });

  describe('with the primary Lease the agents hold', () => {
    const held = (holder: string, expiresInMs = 9_000): LeaseJudgement => ({
      state: 'held',
      holder,
      expiresInMs,
      resourceVersion: '41',
    });
    const expired = (holder: string): LeaseJudgement => ({ state: 'expired', holder, resourceVersion: '42' });
    /** Ready by the kubelet, its server unreachable from this manager: a lost node, before the node controller notices. */
    const unseenPrimary = member(0, undefined, { ready: true, troubleSince: undefined, label: 'primary' });

    test('a primary whose Lease expired unrenewed is lost at once, though its Pod still reads Ready', () => {
      const others = [member(1, standby(1000n)), member(2, standby(990n))];
      const p = plan(input([unseenPrimary, ...others], { primaryLease: expired('db-0') }));
      assert.equal(p.step?.kind === 'topology' && p.step.topology.primary, 'db-1');
      assert.match(p.step?.kind === 'topology' ? p.step.message : '', /Lease expired/);
      // Still renewed: the kubelet's word stands, as without the Lease.
      const renewing = plan(input([unseenPrimary, ...others], { primaryLease: held('db-0') }));
      assert.equal(renewing.step, undefined);
      assert.match(renewing.waiting ?? '', /cannot reach db-0/);
      // Expired, but another's: not this primary's loss (the failover delay still runs for a Pod in trouble).
      const notTheirs = plan(input([unseenPrimary, ...others], { primaryLease: expired('db-2') }));
      assert.equal(notTheirs.step, undefined);
    });

    test('a lost node: the old Pod object stays (deleting, never confirmed); promoted once the Lease is clear', () => {
      const moved = { primary: 'db-1', initialized: true, since: NOW - 20_000 };
      const stuck = member(0, undefined, {
        ready: true,
        troubleSince: undefined,
        deleting: true,
        deletionGraceSeconds: 1,
        deletingSince: NOW - 15_000,
      });
      const members = [stuck, member(1, standby(1000n)), member(2, standby(990n))];
      const without = plan(input(members, { topology: moved }));
      assert.equal(without.step, undefined, 'without the Lease, only the kubelet can end the old role');
      assert.match(without.waiting ?? '', /waiting for db-0 to stop/);
      const p = plan(input(members, { topology: moved, primaryLease: expired('db-0') }));
      assert.deepEqual(p.step, { kind: 'promote', pod: 'db-1', lease: expired('db-0') });
    });

    test('a Lease still held by another keeps the promotion waiting until it expires, unless its Pod is gone', () => {
      const moved = { primary: 'db-1', initialized: true, since: NOW - 20_000 };
      const fenced = member(0, undefined, { ready: false, troubleSince: NOW - 20_000, deleting: true });
      const members = [fenced, member(1, standby(1000n)), member(2, standby(990n))];
      const p = plan(input(members, { topology: moved, primaryLease: held('db-0', 4_200) }));
      assert.equal(p.step, undefined);
      assert.match(p.waiting ?? '', /db-0 holds the primary Lease: db-1 is promoted once .* \(in 5 s/);
      assert.equal(p.recheckInMs, 4_200);
      // Its Pod object gone: the kubelet stopped its containers, agent and engine alike.
      const gone = member(0, undefined, { uid: undefined, ready: false, troubleSince: NOW - 20_000 });
      const q = plan(
        input([gone, members[1]!, members[2]!], { topology: moved, primaryLease: held('db-0') }),
      );
      assert.equal(q.step?.kind, 'promote');
      // Already written to the target (a manager that stopped between the transfer and the promotion):
      // the old Pod, not being deleted yet, is still stopped first, then not waited for.
      const notDeleting = member(0, undefined, { ready: false, troubleSince: NOW - 20_000 });
      const r = plan(
        input([notDeleting, members[1]!, members[2]!], { topology: moved, primaryLease: held('db-1') }),
      );
      assert.equal(r.step?.kind === 'fence' && r.step.pod, 'db-0');
      assert.equal(
        plan(input(members, { topology: moved, primaryLease: held('db-1') })).step?.kind,
        'promote',
      );
    });

    test('an old primary that may keep serving in failsafe: promoted only once it cannot reach a majority', () => {
      const moved = { primary: 'db-1', initialized: true, since: NOW - 20_000 };
      // Fenced by Pod deletion already, on a lost node: its object stays.
      const stuck = member(0, undefined, {
        ready: true,
        troubleSince: undefined,
        deleting: true,
        deletionGraceSeconds: 1,
        deletingSince: NOW - 15_000,
      });
      const MARGIN = OUT_OF_TOUCH_MARGIN_MS;
      const out = (ordinal: number, sinceMs: number) =>
        member(ordinal, standby(1000n, { streaming: false }), { outOfTouchSince: NOW - sinceMs });
      const failsafe = { topology: moved, primaryLease: expired('db-0'), primaryFailsafe: true };
      // Both standbys out of touch with db-0 for the margin: db-0 has 1 of 3, no majority, and fenced.
      const clear = plan(input([stuck, out(1, MARGIN), out(2, MARGIN + 1_000)], failsafe));
      assert.equal(clear.step?.kind, 'promote');
      // db-2 still streams (from db-0, the only primary there was): db-0 may serve with db-2.
      const following = plan(input([stuck, out(1, MARGIN + 1_000), member(2, standby(990n))], failsafe));
      assert.equal(following.step, undefined);
      assert.match(following.waiting ?? '', /db-2 may still be in touch with it/);
      assert.equal(following.recheckInMs, undefined);
      // db-2 unseen by this manager: it may be in touch all the same.
      const unseen = member(2, undefined, { ready: true, troubleSince: undefined, label: 'replica' });
      assert.equal(plan(input([stuck, out(1, MARGIN + 1_000), unseen], failsafe)).step, undefined);
      // Out for less than the margin: db-0 may not have noticed yet; asked again when the margin ends.
      const recent = plan(input([stuck, out(1, MARGIN + 1_000), out(2, MARGIN - 5_000)], failsafe));
      assert.equal(recent.step, undefined);
      assert.equal(recent.recheckInMs, 5_000);
      // db-2's Pod gone: no engine runs there.
      const gone = member(2, undefined, { uid: undefined, ready: false, troubleSince: NOW - 20_000 });
      assert.equal(plan(input([stuck, out(1, MARGIN + 1_000), gone], failsafe)).step?.kind, 'promote');
      // Five instances: three of the four others out leave db-0 two of five.
      const five = [
        stuck,
        out(1, MARGIN + 1_000),
        out(2, MARGIN + 1_000),
        out(3, MARGIN + 1_000),
        member(4, standby(990n)),
      ];
      assert.equal(plan(input(five, { ...failsafe, replicas: 5 })).step?.kind, 'promote');
      const fiveTwo = [
        stuck,
        out(1, MARGIN + 1_000),
        out(2, MARGIN + 1_000),
        member(3, standby(990n)),
        member(4, standby(990n)),
      ];
      assert.equal(plan(input(fiveTwo, { ...failsafe, replicas: 5 })).step, undefined);
      // Without failsafe, or with the Lease released (its agent stepped down): no such wait.
      const streaming = [stuck, out(1, MARGIN + 1_000), member(2, standby(990n))];
      assert.equal(plan(input(streaming, { ...failsafe, primaryFailsafe: false })).step?.kind, 'promote');
      assert.equal(
        plan(input(streaming, { ...failsafe, primaryLease: { state: 'free', resourceVersion: '9' } })).step
          ?.kind,
        'promote',
      );
    });

    test("a person's order to promote stops an old primary that may serve in failsafe, then promotes", () => {
      const moved = { primary: 'db-1', initialized: true, since: NOW - 20_000 };
      const order = {
        topology: moved,
        primaryLease: expired('db-0'),
        primaryFailsafe: true,
        forcePromote: 'db-1',
      };
      // db-0 and db-2 hung: the kubelet still reports them Ready, and db-2 may keep db-0 serving.
      const hungPrimary = member(0, undefined, { ready: true, troubleSince: undefined, label: 'primary' });
      const hungStandby = member(2, undefined, { ready: true, troubleSince: undefined, label: 'replica' });
      const named = member(1, standby(900n, { streaming: false }));
      const without = plan(input([hungPrimary, named, hungStandby], { ...order, forcePromote: undefined }));
      assert.equal(without.step, undefined, 'without the order the failsafe is waited out');
      const fenced = plan(input([hungPrimary, named, hungStandby], order));
      assert.equal(fenced.step?.kind === 'fence' && fenced.step.pod, 'db-0');
      assert.equal(fenced.step?.kind === 'fence' && fenced.step.graceful, false);
      assert.match(
        fenced.step?.kind === 'fence' ? fenced.step.message : '',
        /by a person's order to promote db-1/,
      );
      // Its Pod being deleted: the kubelet's word is waited for, and the message says how a lost node ends it.
      const stopping = {
        ...hungPrimary,
        deleting: true,
        deletingSince: NOW - 1_000,
        deletionGraceSeconds: 1,
      };
      const waits = plan(input([stopping, named, hungStandby], order));
      assert.equal(waits.step, undefined);
      assert.match(waits.waiting ?? '', /only deleting its Pod with --force/);
      // Its successor read the new name: nothing serves with db-2 now, which is stopped next (it
      // started before the move and does not answer), then db-1 is promoted.
      const successor = member(0, undefined, { ready: false, troubleSince: NOW, createdAt: NOW - 2_000 });
      const next = plan(input([successor, named, hungStandby], order));
      assert.equal(next.step?.kind === 'fence' && next.step.pod, 'db-2');
      const gone = member(2, undefined, { uid: undefined, ready: false, troubleSince: NOW });
      assert.equal(plan(input([successor, named, gone], order)).step?.kind, 'promote');
      // The same replaced Pod ends the failsafe wait without an order, too.
      assert.equal(
        plan(input([successor, named, gone], { ...order, forcePromote: undefined })).step?.kind,
        'promote',
      );
    });

    test('a Lease that could not be read keeps everything still; a free one lets the promotion through', () => {
      const moved = { primary: 'db-1', initialized: true, since: NOW - 20_000 };
      const gone = member(0, undefined, { uid: undefined, ready: false, troubleSince: NOW - 20_000 });
      const members = [gone, member(1, standby(1000n)), member(2, standby(990n))];
      const unknown = plan(input(members, { topology: moved, primaryLease: { state: 'unknown' } }));
      assert.equal(unknown.step, undefined);
      assert.match(unknown.waiting ?? '', /could not be read/);
      const free = plan(
        input(members, { topology: moved, primaryLease: { state: 'free', resourceVersion: '7' } }),
      );
      assert.deepEqual(free.step, {
        kind: 'promote',
        pod: 'db-1',
        lease: { state: 'free', resourceVersion: '7' },
      });
    });
  });

  describe('synchronous mode: a failover promotes only under the quorum rule', () => {
    const sync = { synchronous: { confirmations: 1 } };
    const lost = member(0, undefined, { troubleSince: NOW - 60_000 });
    // db-1 confirmed the last commits and hung with the primary; db-2 fell behind.
    const hung = member(1, undefined, { troubleSince: NOW - 60_000 });
    const lagging = member(2, standby(900n, { streaming: false }));
    const seen = { lsn: 800n, followers: new Set(['db-1', 'db-2']) };

    test('too few standbys answer: nothing is promoted, with or without memory, and the plan names whom it waits for', () => {
      for (const lastAnswer of [seen, undefined]) {
        const p = plan(input([lost, hung, lagging], { ...sync, lastAnswer }));
        assert.equal(p.step, undefined, 'the lagging follower is never promoted');
        assert.deepEqual(p.quorum, { silent: ['db-1'], answered: ['db-2'], needed: 2 });
        assert.match(p.waiting ?? '', /needs 2 standby\(s\) to answer .* 1 answer, waiting for db-1/);
      }
      const async = plan(input([lost, hung, lagging], { lastAnswer: seen }));
      assert.equal(
        async.step?.kind === 'topology' && async.step.topology.primary,
        'db-2',
        'asynchronous mode takes the follower: its loss is bounded, not zero',
      );
    });

    test('every standby answers: the most advanced is promoted, whatever the memory says', () => {
      const back = member(1, standby(1200n, { streaming: false }));
      for (const lastAnswer of [{ lsn: 800n, followers: new Set(['db-2']) }, undefined]) {
        const p = plan(input([lost, back, lagging], { ...sync, lastAnswer }));
        assert.equal(p.step?.kind === 'topology' && p.step.topology.primary, 'db-1');
        assert.equal(p.step?.kind === 'topology' && p.step.reason, 'Failover');
        assert.equal(p.quorum, undefined);
      }
    });

    test('W of N: five instances confirming each commit on two need three of the four standbys', () => {
      const five = (answering: number[]) => [
        lost,
        ...[1, 2, 3, 4].map((i) =>
          answering.includes(i) ? member(i, standby(BigInt(900 + i))) : member(i, undefined),
        ),
      ];
      const two = { replicas: 5, synchronous: { confirmations: 2 } };
      const short = plan(input(five([1, 2]), two));
      assert.equal(short.step, undefined);
      assert.deepEqual(short.quorum, { silent: ['db-3', 'db-4'], answered: ['db-1', 'db-2'], needed: 3 });
      const enough = plan(input(five([1, 2, 3]), two));
      assert.equal(enough.step?.kind === 'topology' && enough.step.topology.primary, 'db-3');
    });

    test('a missing Pod is a silent standby: its volume may hold the last commits', () => {
      const gone = member(1, undefined, { uid: undefined, ready: false });
      const p = plan(input([lost, gone, lagging], sync));
      assert.equal(p.step, undefined);
      assert.deepEqual(p.quorum?.silent, ['db-1']);
    });

    test('while the failover delay runs nothing is reported; once it is due the wait is', () => {
      const early = plan(input([member(0, undefined, { troubleSince: NOW - 4_000 }), hung, lagging], sync));
      assert.equal(early.step, undefined);
      assert.equal(early.quorum, undefined);
      assert.equal(early.recheckInMs, 6_000, 'looked at again when the delay runs out');
    });

    test('the most advanced answering standby is leaving: only one level with it is promoted', () => {
      const leaving = member(3, standby(1200n));
      const p = plan(input([lost, member(1, standby(1000n)), member(2, standby(900n)), leaving], sync));
      assert.equal(p.step, undefined, 'db-1 lacks commits only db-3 may hold');
      assert.match(p.waiting ?? '', /db-3 holds the most recent commits but cannot take over/);
      const level = plan(input([lost, member(1, standby(1200n)), member(2, standby(900n)), leaving], sync));
      assert.equal(level.step?.kind === 'topology' && level.step.topology.primary, 'db-1');
    });

    test('an expired Lease ends the wait for the old primary, not the wait for a quorum', () => {
      const readyButGone = member(0, undefined, { ready: true, troubleSince: undefined, label: 'primary' });
      const lease: LeaseJudgement = { state: 'expired', holder: 'db-0', resourceVersion: '5' };
      const p = plan(input([readyButGone, hung, lagging], { ...sync, primaryLease: lease }));
      assert.equal(p.step, undefined);
      assert.deepEqual(p.quorum?.silent, ['db-1']);
    });

    test("a person's order promotes an answering standby, and the message says what is lost", () => {
      const p = plan(input([lost, hung, lagging], { ...sync, forcePromote: 'db-2' }));
      assert.equal(p.step?.kind === 'topology' && p.step.reason, 'ForcedFailover');
      assert.equal(p.step?.kind === 'topology' && p.step.topology.primary, 'db-2');
      assert.match(
        p.step?.kind === 'topology' ? p.step.message : '',
        /db-2 takes over by a person's order, at position 900, .*db-1 did not answer and may hold acknowledged commits it lacks; any such write is lost$/,
      );
      const silentOne = plan(input([lost, hung, lagging], { ...sync, forcePromote: 'db-1' }));
      assert.equal(silentOne.step, undefined, 'an instance that does not answer cannot be promoted');
      const asyncStuck = plan(
        input([lost, member(1, standby(700n, { streaming: false }))], {
          replicas: 2,
          lastAnswer: { lsn: 800n, followers: new Set() },
          forcePromote: 'db-1',
        }),
      );
      assert.equal(asyncStuck.step?.kind === 'topology' && asyncStuck.step.reason, 'ForcedFailover');
      assert.match(
        asyncStuck.step?.kind === 'topology' ? asyncStuck.step.message : '',
        /writes the lost primary made after position 800 may be missing/,
      );
      const needless = plan(
        input([lost, member(1, standby(1200n)), lagging], { ...sync, forcePromote: 'db-2' }),
      );
      assert.equal(
        needless.step?.kind === 'topology' && needless.step.topology.primary,
        'db-1',
        'with a quorum the rule decides: the order is not needed',
      );
    });
  });
});
