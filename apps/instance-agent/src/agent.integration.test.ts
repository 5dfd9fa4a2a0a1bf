// The agent as a process against the real API server, with a stand-in engine
// (testing/engine.ts) whose role is a file the test writes. What is checked is
// the Lease's promise: an engine that accepts writes is fenced before any
// other candidate, watching the Lease, can acquire it; a graceful stop stops
// the engine before the Lease goes. The agent runs in a group of its own so
// that the test can cut it alone off from the API server.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { Kinds, KubeClient, retyped } from '@regulon/client';
import { LeaderElector, type Lease } from '@regulon/runtime';
import { cutOffFromApiServer, eventually, faultsUnsupported, start, type TestEnv } from '@regulon/testenv';
import { FENCED_EXIT_CODE } from './agent.ts';

const MAIN = join(import.meta.dirname, 'main.ts');
const ENGINE = join(import.meta.dirname, 'testing', 'engine.ts');
const LEASE = 'orders-primary';
/** The agent's group: what the partition matches. Any id no other process here uses. */
const AGENT_GID = 47_613;
/** Short Lease timings, in the proportions of the defaults (15 s, 10 s, 2 s). */
const TIMINGS = { lease: 6_000, renew: 4_000, retry: 1_000 };

interface Agent {
  child: ChildProcess;
  dir: string;
  exited: Promise<number | null>;
  /** The stand-in engine's pid, once the agent has logged it. */
  enginePid(): Promise<number>;
  setQuorum(quorum: string): void;
  /** The engine's pid if the agent has logged it. */
  engineStarted(): number | undefined;
  setRole(role: 'primary' | 'replica'): void;
  logs: string[];
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const unsupported = faultsUnsupported();

describe('instance agent and the primary Lease', { skip: unsupported }, () => {
  let env: TestEnv;
  let client: KubeClient;
  const agents: Agent[] = [];
  const electors: LeaderElector[] = [];

  before(async () => {
    env = await start();
    client = KubeClient.fromKubeConfig(env.kubeConfig);
  });
  after(async () => {
    for (const a of agents) {
      a.child.kill('SIGKILL');
      // A killed agent leaves its engine running (in a container, PID 1's
      // end would take it along); the engine leads a process group.
      const pid = a.engineStarted();
      if (pid && alive(pid)) process.kill(-pid, 'SIGKILL');
    }
    await Promise.all(electors.map((e) => e.release()));
    for (const a of agents) rmSync(a.dir, { recursive: true, force: true });
    await env.stop();
  });

  const leases = () => client.resource(retyped<Lease>(Kinds.Lease));
  const holder = async (namespace: string) =>
    (await leases().get(LEASE, { namespace })).spec?.holderIdentity ?? '';

  function startAgent(
    namespace: string,
    identity: string,
    role: 'primary' | 'replica',
    quorum?: string,
    podUid?: string,
    kubeconfigPath = env.kubeconfigPath,
  ): Agent {
    const dir = mkdtempSync(join(tmpdir(), 'regulon-agent-'));
    // The agent and its engine run in another group: they write here.
    chmodSync(dir, 0o777);
    const setRole = (r: string) => writeFileSync(join(dir, 'role'), r);
    setRole(role);
    if (quorum !== undefined) writeFileSync(join(dir, 'quorum'), quorum);
    const child = spawn(
      process.execPath,
      [
        MAIN,
        ...['--namespace', namespace, '--lease', LEASE, '--identity', identity],
        ...['--role-command', `cat ${join(dir, 'role')}`, '--role-interval-ms', '200'],
        ...['--lease-duration-ms', String(TIMINGS.lease), '--renew-deadline-ms', String(TIMINGS.renew)],
        ...['--retry-period-ms', String(TIMINGS.retry), '--acquire-grace-ms', '3000'],
        ...(quorum !== undefined ? ['--quorum-command', `cat ${join(dir, 'quorum')}`] : []),
        ...(podUid !== undefined ? ['--pod-uid', podUid] : []),
        '--',
        process.execPath,
        ENGINE,
        dir,
      ],
      {
        gid: AGENT_GID,
        env: { ...process.env, KUBECONFIG: kubeconfigPath },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const logs: string[] = [];
    let buffered = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      logs.push(...lines);
    });
    const exited = once(child, 'exit').then(([code]) => code as number | null);
    const engineStarted = () => {
      for (const line of logs) {
        const entry = JSON.parse(line) as { msg?: string; pid?: number };
        if (entry.msg === 'engine started' && entry.pid) return entry.pid;
      }
      return undefined;
    };
    const agent: Agent = {
      child,
      dir,
      exited,
      logs,
      setRole,
      setQuorum: (q: string) => writeFileSync(join(dir, 'quorum'), q),
      engineStarted,
      enginePid: () => eventually('the agent to start its engine', engineStarted),
    };
    agents.push(agent);
    return agent;
  }

  function observer(namespace: string, identity: string, onLeading: () => void): LeaderElector {
    const elector = new LeaderElector({
      client,
      namespace,
      name: LEASE,
      identity,
      leaseDurationMs: TIMINGS.lease,
      renewDeadlineMs: TIMINGS.renew,
      retryPeriodMs: TIMINGS.retry,
      onStartedLeading: onLeading,
      onStoppedLeading: () => undefined,
    });
    electors.push(elector);
    elector.run().catch(() => undefined);
    return elector;
  }

  test('holds the Lease while its engine accepts writes; a graceful stop stops the engine, then releases', async () => {
    const namespace = await env.newNamespace('agent-stop');
    const agent = startAgent(namespace, 'orders-0', 'primary');
    await eventually('the agent to hold the Lease', async () => (await holder(namespace)) === 'orders-0');
    await eventually('the engine to handle a stop', () => existsSync(join(agent.dir, 'ready')));
    agent.child.kill('SIGTERM');
    const code = await agent.exited;
    assert.equal(code, 0, `the engine stopped cleanly, and so did the agent:\n${agent.logs.join('\n')}`);
    const stoppedAt = Number(readFileSync(join(agent.dir, 'stopped'), 'utf8'));
    const lease = await leases().get(LEASE, { namespace });
    assert.equal(lease.spec?.holderIdentity, '', 'released: a successor need not wait out the Lease');
    const releasedAt = Date.parse(lease.spec.renewTime!);
    assert.ok(
      releasedAt >= stoppedAt,
      `the Lease was released (${releasedAt}) only after the engine had stopped (${stoppedAt})`,
    );
  });

  test('cut off from the API server, it fences its engine before another candidate can acquire the Lease', async () => {
    const namespace = await env.newNamespace('agent-cut');
    const agent = startAgent(namespace, 'orders-0', 'primary');
    const pid = await agent.enginePid();
    await eventually('the agent to hold the Lease', async () => (await holder(namespace)) === 'orders-0');
    let acquiredAt: number | undefined;
    observer(namespace, 'orders-1', () => (acquiredAt = Date.now()));

    const cut = cutOffFromApiServer(AGENT_GID, env.server);
    const cutAt = Date.now();
    try {
      const fencedAt = await eventually(
        'the engine to be fenced',
        () => !alive(pid) && Date.now(),
        20_000,
        20,
      );
      await eventually('the other candidate to acquire the expired Lease', () => acquiredAt, 20_000);
      assert.ok(
        fencedAt < acquiredAt!,
        `the engine was gone (${fencedAt - cutAt} ms after the cut) before another candidate held the Lease (${acquiredAt! - cutAt} ms)`,
      );
      assert.ok(
        fencedAt - cutAt <= TIMINGS.renew + 1_000,
        `fenced within the renew deadline of the last renewal: ${fencedAt - cutAt} ms after the cut`,
      );
      assert.equal(await agent.exited, FENCED_EXIT_CODE);
      assert.ok(!existsSync(join(agent.dir, 'stopped')), 'killed, not asked to stop');
      assert.ok(agent.logs.some((l) => l.includes('fencing the engine')));
      assert.equal(await holder(namespace), 'orders-1');
    } finally {
      cut.heal();
    }
  });

  test('fences at once an engine that accepts writes while another instance holds the Lease', async () => {
    const namespace = await env.newNamespace('agent-held');
    let leading = false;
    observer(namespace, 'orders-1', () => (leading = true));
    await eventually('the other instance to hold the Lease', () => leading);
    const agent = startAgent(namespace, 'orders-0', 'primary');
    const pid = await agent.enginePid();
    const startedAt = Date.now();
    await eventually('the engine to be fenced', () => !alive(pid), 10_000, 20);
    assert.ok(Date.now() - startedAt < 3_000, 'at once, not after the acquire grace');
    assert.equal(await agent.exited, FENCED_EXIT_CODE);
    assert.ok(agent.logs.some((l) => l.includes('the primary Lease is held by orders-1')));
    assert.equal(await holder(namespace), 'orders-1');
  });

  test('a container that outlived its Pod fences its engine: the object force-deleted, or another Pod in its place', async () => {
    const namespace = await env.newNamespace('agent-outlived');
    const pods = client.resource<V1Pod>(Kinds.Pod);
    // Bound to a node that does not exist: the object stays as made, and nothing runs it.
    const makePod = () =>
      pods.create({
        metadata: { name: 'orders-0', namespace },
        spec: { nodeName: 'nowhere', containers: [{ name: 'engine', image: 'regulon.local/none' }] },
      });
    const own = await makePod();
    const agent = startAgent(namespace, 'orders-0', 'primary', undefined, own.metadata!.uid);
    await eventually('the agent to hold the Lease', async () => (await holder(namespace)) === 'orders-0');
    const pid = await agent.enginePid();
    assert.ok(alive(pid), 'its own Pod: the engine serves');
    const deletedAt = Date.now();
    await pods.delete('orders-0', { namespace, gracePeriodSeconds: 0 });
    await eventually('the engine to be fenced', () => !alive(pid), 10_000, 20);
    const fencedMs = Date.now() - deletedAt;
    // It reads its Pod every half renew deadline.
    assert.ok(fencedMs < TIMINGS.renew, `fenced by its next Pod read, after ${fencedMs} ms`);
    assert.equal(await agent.exited, FENCED_EXIT_CODE);
    assert.ok(
      agent.logs.some((l) => l.includes('is gone: this container outlived its Pod')),
      agent.logs.join('\n'),
    );
    assert.equal(await holder(namespace), 'orders-0', 'not released: it expires, after the fence');

    // Its name now belongs to another Pod, with another uid.
    const successor = await makePod();
    const stale = startAgent(namespace, 'orders-0', 'replica', undefined, own.metadata!.uid);
    const stalePid = await stale.enginePid();
    await eventually('the stale engine to be fenced', () => !alive(stalePid), 10_000, 20);
    assert.equal(await stale.exited, FENCED_EXIT_CODE);
    assert.ok(
      stale.logs.some((l) => l.includes(`is another one now (uid ${successor.metadata!.uid!}`)),
      stale.logs.join('\n'),
    );
  });

  test('a container that outlived its Pod fences its engine when the API server refuses the token bound to that Pod (401)', async () => {
    // In a Pod the agent authenticates with a token bound to it. The API server answers such a token
    // with 404 for the Pod only while it remembers the token's last check (10 s); after that, 401.
    // A token never used before its Pod went meets the 401 at once.
    const namespace = await env.newNamespace('agent-token');
    const sa = 'orders';
    await client.resource(Kinds.ServiceAccount).create({ metadata: { name: sa, namespace } });
    await client.resource(Kinds.Role).create({
      metadata: { name: sa, namespace },
      rules: [
        { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
      ],
    });
    await client.resource(Kinds.RoleBinding).create({
      metadata: { name: sa, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: sa },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace }],
    });
    const own = await client.resource<V1Pod>(Kinds.Pod).create({
      metadata: { name: 'orders-0', namespace },
      spec: {
        nodeName: 'nowhere',
        serviceAccountName: sa,
        containers: [{ name: 'engine', image: 'regulon.local/none' }],
      },
    });
    const uid = own.metadata!.uid!;
    const token = await env.kubeConfig.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
      name: sa,
      namespace,
      body: {
        spec: { audiences: [], boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'orders-0', uid } },
      },
    });
    await client.resource<V1Pod>(Kinds.Pod).delete('orders-0', { namespace, gracePeriodSeconds: 0 });
    const cluster = env.kubeConfig.getCurrentCluster()!;
    const bound = new KubeConfig();
    bound.loadFromOptions({
      clusters: [cluster],
      users: [{ name: sa, token: token.status!.token }],
      contexts: [{ name: sa, cluster: cluster.name, user: sa }],
      currentContext: sa,
    });
    const dir = mkdtempSync(join(tmpdir(), 'regulon-agent-token-'));
    chmodSync(dir, 0o755);
    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, bound.exportConfig(), { mode: 0o644 });
    try {
      const agent = startAgent(namespace, 'orders-0', 'primary', undefined, uid, kubeconfigPath);
      const pid = await agent.enginePid();
      await eventually('the engine to be fenced', () => !alive(pid), 10_000, 20);
      assert.equal(await agent.exited, FENCED_EXIT_CODE);
      // Fenced for the token, by its first Pod read: not by the grace for acquiring the Lease (3 s).
      assert.ok(
        agent.logs.some((l) => l.includes('the API server refuses the token bound to its Pod orders-0')),
        agent.logs.join('\n'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('releases the Lease when its engine stops accepting writes, and leaves the engine running', async () => {
    const namespace = await env.newNamespace('agent-demote');
    const agent = startAgent(namespace, 'orders-0', 'primary');
    const pid = await agent.enginePid();
    await eventually('the agent to hold the Lease', async () => (await holder(namespace)) === 'orders-0');
    agent.setRole('replica');
    await eventually('the Lease to be released', async () => (await holder(namespace)) === '', 10_000);
    assert.ok(alive(pid), 'a replica keeps running');
    await eventually('the engine to handle a stop', () => existsSync(join(agent.dir, 'ready')));
    agent.child.kill('SIGTERM');
    assert.equal(await agent.exited, 0);
  });

  test('cut off from the API server but in touch with a majority, it keeps serving; it fences once the majority is gone', async () => {
    const namespace = await env.newNamespace('agent-failsafe');
    const agent = startAgent(namespace, 'orders-0', 'primary', '2 3');
    const pid = await agent.enginePid();
    await eventually('the agent to hold the Lease', async () => (await holder(namespace)) === 'orders-0');
    const cut = cutOffFromApiServer(AGENT_GID, env.server);
    try {
      const cutAt = Date.now();
      await eventually('the agent to notice the lost Lease and keep the engine up', () =>
        agent.logs.some((l) => l.includes('keeping the engine up without the primary Lease')),
      );
      // Past the whole Lease duration (when a Lease holder without failsafe
      // would long have fenced): still serving. A window of observation, not
      // a wait for something to happen.
      const until = cutAt + TIMINGS.lease + 2_000;
      await eventually(
        'the Lease duration to pass with the engine alive',
        () => {
          assert.ok(alive(pid), `fenced ${Date.now() - cutAt} ms after the cut, with a majority in touch`);
          return Date.now() >= until;
        },
        TIMINGS.lease + 10_000,
        100,
      );
      // One standby stops confirming: 1 of 3 is no majority.
      agent.setQuorum('1 3');
      const lostAt = Date.now();
      const fencedAt = await eventually(
        'the engine to be fenced',
        () => !alive(pid) && Date.now(),
        10_000,
        20,
      );
      assert.ok(fencedAt - lostAt <= 2_000, `fenced ${fencedAt - lostAt} ms after the majority went`);
      assert.equal(await agent.exited, FENCED_EXIT_CODE);
      assert.ok(agent.logs.some((l) => l.includes('in touch with 1 of 3 instances, no majority')));
    } finally {
      cut.heal();
    }
  });

  test('after an API-server outage survived in failsafe, it holds the Lease again', async () => {
    const namespace = await env.newNamespace('agent-failsafe-heal');
    const agent = startAgent(namespace, 'orders-0', 'primary', '3 3');
    const pid = await agent.enginePid();
    await eventually('the agent to hold the Lease', async () => (await holder(namespace)) === 'orders-0');
    const cut = cutOffFromApiServer(AGENT_GID, env.server);
    try {
      await eventually('failsafe', () => agent.logs.some((l) => l.includes('keeping the engine up')));
    } finally {
      cut.heal();
    }
    const before = (await leases().get(LEASE, { namespace })).spec?.renewTime;
    await eventually(
      'a renewal by the same holder',
      async () => {
        const spec = (await leases().get(LEASE, { namespace })).spec;
        return spec?.holderIdentity === 'orders-0' && spec.renewTime !== before;
      },
      15_000,
    );
    assert.ok(alive(pid), 'never fenced');
    await eventually(
      'the agent to say it holds the Lease again',
      () => agent.logs.filter((l) => l.includes('holding the primary Lease')).length >= 2,
    );
  });
});
