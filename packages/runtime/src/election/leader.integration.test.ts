// Leader election between real manager processes against the real API server:
// exactly one leads; a killed leader is replaced within lease + retry; a
// terminated leader takes no new work, hands over in about one retry period
// plus its in-flight reconcile without cutting it short; a leader that loses
// its Lease aborts its in-flight reconcile and takes no new work.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KubeClient, Kinds, retyped } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import { LeadershipLostError, type Lease } from './leader-election.ts';
import { createLogger } from '../observability/logging.ts';
import type { Manager } from '../manager/manager.ts';
import { testManager } from '../manager/test-manager.ts';
import { microTime } from '../support.ts';
import { spawnElector, type Elector } from '../testing/elector.ts';
import { eventually } from '../testing/wait.ts';

type Proc = Elector;

const timing = { LEASE_MS: '4000', RENEW_MS: '3000', RETRY_MS: '500' };

describe('leader election between manager processes', () => {
  let env: TestEnv;
  let client: KubeClient;
  const procs: Proc[] = [];
  const managers: Manager[] = [];

  before(async () => {
    env = await start();
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 500, burst: 500 });
  });
  after(async () => {
    for (const p of procs) p.child.kill('SIGKILL');
    for (const m of managers) m.stop();
    await env.stop();
  });

  function manager(namespace: string, identity: string, reconcileMs = 0): Proc {
    const proc = spawnElector({
      kubeconfigPath: env.kubeconfigPath,
      namespace,
      identity,
      reconcileMs,
      env: timing,
    });
    procs.push(proc);
    return proc;
  }

  const leads = (p: Proc) => p.lines.some((l) => l.event === 'leading');
  const createConfigMaps = (namespace: string, n: number) =>
    Promise.all(
      Array.from({ length: n }, (_, i) =>
        client
          .resource(Kinds.ConfigMap)
          .create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `queued-${i}`, namespace } }),
      ),
    );
  const reconciled = (p: Proc, key: string) =>
    p.lines.some((l) => l.event === 'reconcile-end' && l.key === key);

  test('two managers: exactly one reconciles; kill -9 of the leader hands over within lease + retry', async () => {
    const ns = await env.newNamespace('le-kill');
    const a = manager(ns, 'a');
    const b = manager(ns, 'b');
    const leader = await eventually('a leader', () => (leads(a) ? a : leads(b) ? b : undefined), 30_000);
    const standby = leader === a ? b : a;
    await client
      .resource(Kinds.ConfigMap)
      .create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one', namespace: ns } });
    await eventually('leader reconciles', () => reconciled(leader, 'one'));
    assert.equal(
      standby.lines.filter((l) => l.event.startsWith('reconcile')).length,
      0,
      'the standby never reconciles',
    );
    assert.equal(leads(standby), false);

    const killedAt = Date.now();
    leader.child.kill('SIGKILL');
    await eventually('standby takes over', () => leads(standby), 30_000);
    const takeover = standby.lines.find((l) => l.event === 'leading')!.at - killedAt;
    const bound = Number(timing.LEASE_MS) + Number(timing.RETRY_MS);
    console.log(
      `# kill -9 handover: ${takeover} ms (lease ${timing.LEASE_MS} ms + retry ${timing.RETRY_MS} ms = ${bound} ms)`,
    );
    // Jitter on the retry period (up to 1.2x) and one API round trip.
    assert.ok(takeover <= bound * 1.25, `handover took ${takeover} ms, bound ${bound} ms`);
    await client
      .resource(Kinds.ConfigMap)
      .create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'two', namespace: ns } });
    await eventually('new leader reconciles', () => reconciled(standby, 'two'));
    standby.child.kill('SIGTERM');
    assert.equal(await standby.exited, 0);
  });

  test('SIGTERM to a leader with 200 queued items: it starts none of them, finishes its in-flight reconcile, releases the Lease, exits 0, and the standby leads within that reconcile plus about one retry period', async () => {
    const ns = await env.newNamespace('le-term');
    const queued = 200;
    const reconcileMs = 1500;
    await createConfigMaps(ns, queued);
    const a = manager(ns, 'a', reconcileMs);
    const b = manager(ns, 'b', reconcileMs);
    const leader = await eventually('a leader', () => (leads(a) ? a : leads(b) ? b : undefined), 30_000);
    const standby = leader === a ? b : a;
    await eventually('leader reconciling', () => leader.lines.some((l) => l.event === 'reconcile-start'));
    const termAt = Date.now();
    leader.child.kill('SIGTERM');
    assert.equal(await leader.exited, 0);
    const starts = leader.lines
      .filter((l) => l.event === 'reconcile-start')
      .map((l) => l.key)
      .sort();
    const ends = leader.lines
      .filter((l) => l.event === 'reconcile-end')
      .map((l) => l.key)
      .sort();
    assert.deepEqual(ends, starts, 'every reconcile that started also finished');
    const stopping = leader.lines.findIndex((l) => l.event === 'stopping');
    assert.ok(stopping >= 0, 'the leader saw SIGTERM');
    assert.deepEqual(
      leader.lines.slice(stopping).filter((l) => l.event === 'reconcile-start'),
      [],
      'reconciles started after SIGTERM',
    );
    assert.ok(starts.length < queued, `${starts.length} of ${queued} items reconciled: the queue was full`);
    const exitAt = leader.lines.find((l) => l.event === 'exit')!.at;
    await eventually('standby leads', () => leads(standby), 30_000);
    const leadingAt = standby.lines.find((l) => l.event === 'leading')!.at;
    const retryMs = Number(timing.RETRY_MS);
    console.log(
      `# SIGTERM with ${queued} queued: drained in ${exitAt - termAt} ms; standby leads ${leadingAt - termAt} ms after SIGTERM, ${leadingAt - exitAt} ms after release (reconcile ${reconcileMs} ms, retry ${retryMs} ms)`,
    );
    // One in-flight reconcile, one jittered retry period, and a few API round trips and process exits.
    const bound = reconcileMs + retryMs * 1.2 + 2000;
    assert.ok(leadingAt - termAt <= bound, `hand-over ${leadingAt - termAt} ms, bound ${bound} ms`);
    standby.child.kill('SIGTERM');
    assert.equal(await standby.exited, 0);
  });

  test('a leader whose Lease is taken over aborts its in-flight reconcile and takes no queued item', async () => {
    const ns = await env.newNamespace('le-lost');
    await createConfigMaps(ns, 30);
    const started: string[] = [];
    const aborted: string[] = [];
    const mgr = testManager(env.kubeConfig, {
      logger: createLogger({ level: 'silent' }),
      namespace: ns,
      leaderElection: {
        enabled: true,
        namespace: ns,
        name: 'lost-test',
        identity: 'holder',
        leaseDurationMs: Number(timing.LEASE_MS),
        renewDeadlineMs: Number(timing.RENEW_MS),
        retryPeriodMs: Number(timing.RETRY_MS),
      },
    });
    mgr
      .controller('lost-test')
      .for(Kinds.ConfigMap)
      .complete({
        // Holds every reconcile open until its signal aborts, as a long write would.
        reconcile: (req, ctx) => {
          started.push(req.name);
          return new Promise((_, reject) => {
            const abort = () => {
              aborted.push(req.name);
              reject(new Error('aborted'));
            };
            if (ctx.signal.aborted) abort();
            else ctx.signal.addEventListener('abort', abort, { once: true });
          });
        },
      });
    managers.push(mgr);
    const running = mgr.start();
    await eventually('a reconcile in flight', () => started.length === 1, 30_000);
    // Another candidate takes the Lease, as one would once this leader's renewals stop landing.
    const leases = client.resource(retyped<Lease>(Kinds.Lease));
    const lease = await leases.get('lost-test', { namespace: ns });
    const now = microTime(new Date());
    await leases.replace({
      ...lease,
      spec: { ...lease.spec, holderIdentity: 'usurper', acquireTime: now, renewTime: now },
    });
    await assert.rejects(running, LeadershipLostError);
    assert.equal(started.length, 1, `reconciles started: ${started.join(', ')}`);
    assert.deepEqual(aborted, started);
  });
});
