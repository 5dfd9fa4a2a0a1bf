// LeaderElector against a real API server. Short durations keep the suite
// fast; the ratios are the production ones (lease > renew deadline > retry).
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient, Kinds, isNotFound, retyped } from '@regulon/client';
import { realClock, type Clock } from '@regulon/util';
import { start, type TestEnv } from '@regulon/testenv';
import { Registry, type Gauge } from 'prom-client';
import {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  LEADER_ELECTION_METRIC_NAME,
  LeaderElector,
  LeadershipLostError,
  RETRY_JITTER_FACTOR,
  defaultIdentity,
  type Lease,
} from './leader-election.ts';
import { eventually } from '../testing/wait.ts';

const LEASE_MS = 3_000;
const RENEW_MS = 2_000;
const RETRY_MS = 500;
const LEASE_NAME = 'test-election';
// One API round trip and timer latency on a loaded machine.
const SLACK_MS = 500;

interface Candidate {
  identity: string;
  elector: LeaderElector;
  registry: Registry;
  client: KubeClient;
  startedAt: number[];
  stoppedAt: number[];
  leaders: string[];
  leadingSignal?: AbortSignal;
  stop: AbortController;
  /** How run() settled: 'resolved', or the error it rejected with. */
  outcome: Promise<unknown>;
  settledAt?: number;
}

async function gaugeValue(c: Candidate): Promise<number | undefined> {
  const gauge = c.registry.getSingleMetric(LEADER_ELECTION_METRIC_NAME) as Gauge | undefined;
  return (await gauge?.get())?.values.find((v) => v.labels['name'] === LEASE_NAME)?.value;
}

describe('LeaderElector (real API server)', () => {
  let env: TestEnv;
  let admin: KubeClient;
  const candidates: Candidate[] = [];

  before(async () => {
    env = await start();
    admin = KubeClient.fromKubeConfig(env.kubeConfig);
  });
  after(async () => {
    for (const c of candidates) {
      c.stop.abort();
      await c.outcome;
      c.client.close();
    }
    admin.close();
    await env.stop();
  });

  function candidate(
    namespace: string,
    identity: string,
    kubeConfig: KubeConfig = env.kubeConfig,
  ): Candidate {
    const registry = new Registry();
    const client = KubeClient.fromKubeConfig(kubeConfig);
    const c = {
      identity,
      registry,
      client,
      startedAt: [],
      stoppedAt: [],
      leaders: [],
      stop: new AbortController(),
    } as unknown as Candidate;
    c.elector = new LeaderElector({
      client,
      namespace,
      name: LEASE_NAME,
      identity,
      leaseDurationMs: LEASE_MS,
      renewDeadlineMs: RENEW_MS,
      retryPeriodMs: RETRY_MS,
      registry,
      onStartedLeading: (signal) => {
        c.leadingSignal = signal;
        c.startedAt.push(Date.now());
      },
      onStoppedLeading: () => {
        c.stoppedAt.push(Date.now());
      },
      onNewLeader: (leader) => c.leaders.push(leader),
    });
    c.outcome = c.elector.run(c.stop.signal).then(
      () => 'resolved',
      (err: unknown) => err,
    );
    void c.outcome.then(() => (c.settledAt = Date.now()));
    candidates.push(c);
    return c;
  }

  const leading = (c: Candidate) => c.startedAt.length > c.stoppedAt.length;
  const getLease = (ns: string) =>
    admin.resource(retyped<Lease>(Kinds.Lease)).get(LEASE_NAME, { namespace: ns });

  test('two candidates on one Lease: exactly one leads, the other stands by', async () => {
    const ns = await env.newNamespace('le-one');
    const a = candidate(ns, 'a');
    const b = candidate(ns, 'b');
    const leader = await eventually('a leader', () => (leading(a) ? a : leading(b) ? b : undefined));
    const standby = leader === a ? b : a;

    const first = await getLease(ns);
    assert.equal(first.spec?.holderIdentity, leader.identity);
    assert.equal(first.spec?.leaseDurationSeconds, LEASE_MS / 1000);
    assert.equal(first.spec?.leaseTransitions, 0, 'created by the winner');
    assert.match(first.spec?.renewTime ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    // Let the leader renew a few times, several lease durations' worth of
    // standby attempts, and check the standby never stepped in.
    let renewals = 0;
    let lastRenew = first.spec?.renewTime;
    await eventually(
      'three renewals',
      async () => {
        const l = await getLease(ns);
        if (l.spec?.renewTime !== lastRenew) {
          renewals++;
          lastRenew = l.spec?.renewTime;
          assert.equal(l.spec?.holderIdentity, leader.identity);
          assert.equal(l.spec?.acquireTime, first.spec?.acquireTime, 'renewals keep acquireTime');
        }
        return renewals >= 3;
      },
      LEASE_MS * 3,
    );
    assert.equal(standby.startedAt.length, 0, 'the standby never led');
    assert.equal(leader.elector.isLeader, true);
    assert.equal(standby.elector.isLeader, false);
    assert.equal(standby.elector.leader, leader.identity);
    assert.deepEqual(standby.leaders, [leader.identity]);
    assert.equal(await gaugeValue(leader), 1);
    assert.equal(await gaugeValue(standby), 0);
    assert.equal(leader.leadingSignal?.aborted, false);

    // A plain stop ends leadership but keeps the lease held (no release).
    leader.stop.abort();
    assert.equal(await leader.outcome, 'resolved');
    assert.equal(leader.leadingSignal?.aborted, true);
    assert.equal(leader.stoppedAt.length, 1);
    assert.equal(await gaugeValue(leader), 0);
    assert.equal((await getLease(ns)).spec?.holderIdentity, leader.identity);
    standby.stop.abort();
    await standby.outcome;
  });

  test('release(): the standby takes over within about one retry period', async () => {
    const ns = await env.newNamespace('le-release');
    const a = candidate(ns, 'a');
    await eventually('a leads', () => leading(a));
    const b = candidate(ns, 'b');
    await eventually('b has seen a as leader', () => b.leaders.includes('a'));

    await a.elector.release();
    const releasedAt = Date.now();
    assert.equal(a.stoppedAt.length, 1, 'work stopped before the lease was given up');
    assert.ok(a.stoppedAt[0]! <= releasedAt);
    assert.equal(a.leadingSignal?.aborted, true);
    assert.equal(await a.outcome, 'resolved');
    assert.equal(await gaugeValue(a), 0);

    await eventually('b leads', () => leading(b), LEASE_MS * 2);
    const handover = b.startedAt[0]! - releasedAt;
    const bound = RETRY_MS * (1 + RETRY_JITTER_FACTOR) + SLACK_MS;
    console.log(`# release handover: ${handover} ms (retry period ${RETRY_MS} ms, lease ${LEASE_MS} ms)`);
    assert.ok(handover <= bound, `handover took ${handover} ms, bound ${bound} ms`);
    const lease = await getLease(ns);
    assert.equal(lease.spec?.holderIdentity, 'b');
    assert.equal(lease.spec?.leaseTransitions, 1);
    assert.equal(lease.spec?.leaseDurationSeconds, LEASE_MS / 1000);
    assert.equal(await gaugeValue(b), 1);
    await assert.rejects(a.elector.run(), /already released/);

    await b.elector.release();
    const released = await getLease(ns);
    assert.equal(released.spec?.holderIdentity, '');
    assert.equal(released.spec?.leaseDurationSeconds, 1);
  });

  test('a leader cut off from the API server stops within the renew deadline, before anyone else leads', async () => {
    const ns = await env.newNamespace('le-partition');
    const proxy = await tcpProxy(new URL(env.server));
    try {
      const a = candidate(ns, 'a', viaProxy(env.kubeConfig, proxy.port));
      await eventually('a leads', () => leading(a));
      const b = candidate(ns, 'b');
      await eventually('b has seen a as leader', () => b.leaders.includes('a'));

      // Requests now hang, as in a network partition: the renewal must not
      // wait for them.
      const cutAt = Date.now();
      proxy.blackhole();
      const outcome = await a.outcome;
      assert.ok(outcome instanceof LeadershipLostError, `run() rejected with ${String(outcome)}`);
      assert.equal(outcome.identity, 'a');
      assert.equal(outcome.lease, `${ns}/${LEASE_NAME}`);
      const stoppedAt = a.stoppedAt[0]!;
      assert.equal(a.leadingSignal?.aborted, true);
      assert.equal(await gaugeValue(a), 0);
      const lastRenew = Date.parse((await getLease(ns)).spec?.renewTime ?? '');
      console.log(
        `# partition: leader stopped ${stoppedAt - cutAt} ms after the cut, ${stoppedAt - lastRenew} ms after its last renewal (renew deadline ${RENEW_MS} ms)`,
      );
      assert.ok(
        stoppedAt - lastRenew <= RENEW_MS + 100,
        'stopped within the renew deadline of its last renewal',
      );
      assert.ok(stoppedAt - cutAt <= RENEW_MS + SLACK_MS);
      assert.ok(a.settledAt! - stoppedAt <= 100, 'run() rejected right away, not after the hanging request');

      await eventually('b takes over once the lease expired', () => leading(b), LEASE_MS * 3);
      const takeover = b.startedAt[0]!;
      console.log(`# partition: standby led ${takeover - stoppedAt} ms after the old leader stopped`);
      assert.ok(takeover > stoppedAt, 'never two leaders at once');
      assert.ok(takeover - lastRenew >= LEASE_MS, 'the standby waited out the full lease');
    } finally {
      proxy.close();
    }
  });

  test('a leader resumed after a freeze (its clock past the renew deadline, its timers not yet run) writes nothing: the guarded client refuses before sending, and leadership is lost at once', async () => {
    const ns = await env.newNamespace('le-frozen');
    // Real timers; `now()` jumps ahead on demand, as a process's clock does across a SIGSTOP
    // while none of its timers has had a turn yet.
    let frozenMs = 0;
    const clock: Clock = {
      now: () => realClock.now() + frozenMs,
      setTimeout: (fn, ms) => realClock.setTimeout(fn, ms),
      clearTimeout: (h) => realClock.clearTimeout(h),
    };
    const client = KubeClient.fromKubeConfig(env.kubeConfig);
    let leadingSignal: AbortSignal | undefined;
    const elector = new LeaderElector({
      client,
      namespace: ns,
      name: LEASE_NAME,
      identity: 'frozen',
      leaseDurationMs: LEASE_MS,
      renewDeadlineMs: RENEW_MS,
      retryPeriodMs: RETRY_MS,
      clock,
      onStartedLeading: (signal) => {
        leadingSignal = signal;
      },
      onStoppedLeading: () => {},
    });
    client.guardWrites(() => elector.assertLeading());
    const outcome = elector.run().then(
      () => 'resolved',
      (err: unknown) => err,
    );
    const configMaps = client.resource(Kinds.ConfigMap);
    try {
      await eventually('leading', () => elector.isLeader);
      await configMaps.create({ metadata: { name: 'while-leading', namespace: ns } });
      elector.assertLeading();

      frozenMs = RENEW_MS;
      await assert.rejects(
        configMaps.create({ metadata: { name: 'after-the-freeze', namespace: ns } }),
        LeadershipLostError,
      );
      assert.equal(elector.isLeader, false, 'lost at the first write, not at its timer');
      assert.equal(leadingSignal?.aborted, true);
      assert.throws(() => elector.assertLeading(), LeadershipLostError);
      await assert.rejects(
        admin.resource(Kinds.ConfigMap).get('after-the-freeze', { namespace: ns }),
        (err: unknown) => isNotFound(err),
        'the refused write was never sent',
      );
      assert.ok((await outcome) instanceof LeadershipLostError, 'run() rejects with the loss');
      // Reads still go: the guard is for writes only.
      await configMaps.get('while-leading', { namespace: ns });
    } finally {
      client.close();
    }
  });

  test('stopped rather than lost, the elector lets writes through (a release after a graceful stop)', async () => {
    const ns = await env.newNamespace('le-stopped');
    const client = KubeClient.fromKubeConfig(env.kubeConfig);
    const elector = new LeaderElector({
      client,
      namespace: ns,
      name: LEASE_NAME,
      identity: 'stopped',
      leaseDurationMs: LEASE_MS,
      renewDeadlineMs: RENEW_MS,
      retryPeriodMs: RETRY_MS,
      onStartedLeading: () => {},
      onStoppedLeading: () => {},
    });
    client.guardWrites(() => elector.assertLeading());
    const stop = new AbortController();
    const running = elector.run(stop.signal);
    try {
      await eventually('leading', () => elector.isLeader);
      stop.abort();
      await running;
      elector.assertLeading();
      await elector.release();
      assert.equal((await getLease(ns)).spec?.holderIdentity ?? '', '', 'released: the holder cleared');
    } finally {
      client.close();
    }
  });

  test('someone else takes the Lease: the leader stops at its next renewal', async () => {
    const ns = await env.newNamespace('le-taken');
    const a = candidate(ns, 'a');
    await eventually('a leads', () => leading(a));
    const leases = admin.resource(retyped<Lease>(Kinds.Lease));
    await leases.delete(LEASE_NAME, { namespace: ns });
    const takenAt = Date.now();
    const now = new Date().toISOString().replace('Z', '000Z');
    await leases.create({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: LEASE_NAME, namespace: ns },
      spec: {
        holderIdentity: 'intruder',
        leaseDurationSeconds: 3600,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: 7,
      },
    });
    const outcome = await a.outcome;
    assert.ok(outcome instanceof LeadershipLostError, `run() rejected with ${String(outcome)}`);
    assert.match(outcome.message, /intruder/);
    const after = a.stoppedAt[0]! - takenAt;
    console.log(`# lease taken over: leader stopped after ${after} ms (retry period ${RETRY_MS} ms)`);
    assert.ok(after <= RETRY_MS + SLACK_MS, `stopped after ${after} ms`);
    assert.equal(await gaugeValue(a), 0);
    assert.equal(a.elector.leader, 'intruder');
    assert.equal((await getLease(ns)).spec?.holderIdentity, 'intruder', 'the new holder is left alone');
  });

  test('an expired lease of a dead holder is taken over after the lease duration, counting a transition', async () => {
    const ns = await env.newNamespace('le-expired');
    const past = '2000-01-01T00:00:00.000000Z';
    await admin.resource(retyped<Lease>(Kinds.Lease)).create({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: LEASE_NAME, namespace: ns },
      // A renewTime far in the past must not count: expiry is judged by what
      // the candidate itself observed, not by comparing clocks.
      spec: {
        holderIdentity: 'dead',
        leaseDurationSeconds: 2,
        acquireTime: past,
        renewTime: past,
        leaseTransitions: 4,
      },
    });
    const startedAt = Date.now();
    const a = candidate(ns, 'a');
    await eventually('a leads', () => leading(a), 10_000);
    const waited = a.startedAt[0]! - startedAt;
    assert.ok(waited >= 2000, `took over after ${waited} ms, before the 2 s lease could expire`);
    assert.deepEqual(a.leaders, ['dead', 'a']);
    const lease = await getLease(ns);
    assert.equal(lease.spec?.holderIdentity, 'a');
    assert.equal(lease.spec?.leaseTransitions, 5);
    a.stop.abort();
    await a.outcome;
  });
});

describe('LeaderElector options', () => {
  const base = {
    client: { resource: () => ({}) as never },
    namespace: 'ns',
    name: 'n',
    identity: 'me',
    onStartedLeading: () => {},
    onStoppedLeading: () => {},
  };
  test('defaults are controller-runtime’s', () => {
    assert.equal(DEFAULT_LEASE_DURATION_MS, 15_000);
    assert.equal(DEFAULT_RENEW_DEADLINE_MS, 10_000);
    assert.equal(DEFAULT_RETRY_PERIOD_MS, 2_000);
    assert.doesNotThrow(() => new LeaderElector(base));
  });
  test('rejects timings that could let two leaders overlap', () => {
    assert.throws(
      () => new LeaderElector({ ...base, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }),
      RangeError,
    );
    assert.throws(
      () => new LeaderElector({ ...base, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 }),
      RangeError,
    );
    assert.throws(() => new LeaderElector({ ...base, retryPeriodMs: 0 }), RangeError);
    assert.throws(() => new LeaderElector({ ...base, identity: '' }), TypeError);
  });
  test('defaultIdentity: POD_NAME or host name, plus a unique suffix', () => {
    const saved = process.env['POD_NAME'];
    try {
      process.env['POD_NAME'] = 'op-7d9f';
      const id = defaultIdentity();
      assert.match(id, /^op-7d9f_[0-9a-f-]{36}$/);
      assert.notEqual(defaultIdentity(), id);
    } finally {
      if (saved === undefined) delete process.env['POD_NAME'];
      else process.env['POD_NAME'] = saved;
    }
  });
  test('one gauge per registry, shared by electors', () => {
    const registry = new Registry();
    new LeaderElector({ ...base, registry });
    assert.doesNotThrow(() => new LeaderElector({ ...base, name: 'other', registry }));
  });
});

/** A kubeconfig like `kc` whose server is 127.0.0.1:`port` (TLS still ends at the API server). */
function viaProxy(kc: KubeConfig, port: number): KubeConfig {
  const copy = new KubeConfig();
  copy.loadFromOptions({
    clusters: kc.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${port}` })),
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return copy;
}

/** A TCP forwarder that can be switched into a black hole: connections are accepted and never answered. */
async function tcpProxy(target: URL): Promise<{ port: number; blackhole(): void; close(): void }> {
  const sockets = new Set<Socket>();
  let dead = false;
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server: Server = createServer((downstream) => {
    track(downstream);
    if (dead) return;
    const upstream = connect(Number(target.port), target.hostname);
    track(upstream);
    downstream.pipe(upstream).pipe(downstream);
    upstream.on('close', () => downstream.destroy());
    downstream.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    blackhole() {
      dead = true;
      for (const s of sockets) s.destroy();
    },
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
