// Leader election between real manager processes against the real API server:
// exactly one leads; a killed leader is replaced within lease + retry; a
// terminated leader hands over in about one retry period without cutting a
// reconcile short.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KubeClient, Kinds } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import { eventually } from './testing/wait.ts';

interface Line {
  event: string;
  identity: string;
  at: number;
  key?: string;
  code?: number;
}

interface Proc {
  child: ChildProcess;
  lines: Line[];
  exited: Promise<number | null>;
}

const timing = { LEASE_MS: '4000', RENEW_MS: '3000', RETRY_MS: '500' };

describe('leader election between manager processes', () => {
  let env: TestEnv;
  let client: KubeClient;
  const procs: Proc[] = [];

  before(async () => {
    env = await start();
    client = KubeClient.fromKubeConfig(env.kubeConfig);
  });
  after(async () => {
    for (const p of procs) p.child.kill('SIGKILL');
    await env.stop();
  });

  function manager(namespace: string, identity: string, reconcileMs = 0): Proc {
    const child = spawn(process.execPath, [join(import.meta.dirname, 'testing', 'elector-process.ts')], {
      env: {
        ...process.env,
        NAMESPACE: namespace,
        IDENTITY: identity,
        KUBECONFIG: env.kubeconfigPath,
        RECONCILE_MS: String(reconcileMs),
        ...timing,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines: Line[] = [];
    let buf = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      const parts = buf.split('\n');
      buf = parts.pop()!;
      for (const p of parts) if (p.trim()) lines.push(JSON.parse(p) as Line);
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const proc = { child, lines, exited };
    procs.push(proc);
    return proc;
  }

  const leads = (p: Proc) => p.lines.some((l) => l.event === 'leading');
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

  test('SIGTERM to the leader: it finishes in-flight reconciles, releases the Lease, exits 0, and the standby leads within ~2 s', async () => {
    const ns = await env.newNamespace('le-term');
    const a = manager(ns, 'a', 1500);
    const b = manager(ns, 'b', 1500);
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
    const exitAt = leader.lines.find((l) => l.event === 'exit')!.at;
    await eventually('standby leads', () => leads(standby), 30_000);
    const handover = standby.lines.find((l) => l.event === 'leading')!.at - exitAt;
    console.log(
      `# SIGTERM: drained in ${exitAt - termAt} ms; handover after release ${handover} ms (retry ${timing.RETRY_MS} ms)`,
    );
    assert.ok(handover <= 2000 + Number(timing.RETRY_MS), `handover ${handover} ms`);
    standby.child.kill('SIGTERM');
    assert.equal(await standby.exited, 0);
  });
});
