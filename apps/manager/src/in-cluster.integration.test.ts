// The manager as users run it: the image built from apps/manager/Dockerfile
// (tools/manager-image, buildah, no Docker), installed by the Helm chart
// deploy/helm/regulon (`helm template … | kubectl apply --server-side`; the
// chart renders what deploy/'s kustomize base does, tools/scripts/chart.test.ts;
// testing/installation.ts says which values it sets), two replicas as Pods on the real node under the
// restricted Pod Security profile, probes the kubelet calls and the memory
// limit the kernel enforces. Its samples (a Database, a Cache, a MyApp) live
// in a namespace of their own, on the real node too: real postgres, redis and
// app Pods, whose images the overlay's catalog names (the testenv's local
// Debian-built images, through deploy/components/image-catalog, as an
// air-gapped user points the manager at their registry). The Database runs
// three instances, so the manager in its Pod drives replication and failover
// over the Pod network, and its instances run under the instance agent that
// deploy/ turns on (--instance-agent-image=self), under the RBAC and the
// admission policy deploy/ grants them.
//
// The overlay here also sets REGULON_DEBUG_BLOCK_ON_SIGNAL=1 (src/debug.ts),
// so the liveness test can hang a manager's event loop with SIGUSR2.
//
// Failover timings go to stderr (`[in-cluster] ...`), measured from the
// `kubectl delete` (or the kill, or the signal) to the first reconcile the new
// leader reports on its own /metrics.
//
//   npx regulon-testenv exec -- npx node --test --test-timeout=1200000 apps/manager/src/in-cluster.integration.test.ts
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import { BLOCK_ON_SIGNAL_ENV } from './debug.ts';
import {
  Installation,
  isCurrent,
  isReady,
  metric,
  objectPath,
  ready,
  say,
  type Pod,
  type Converged,
} from './testing/installation.ts';
import { recordRoll } from './testing/roll.ts';

let env: TestEnv;
let inst: Installation;

/** The samples of deploy/samples, by kind and name: they must stay Ready through everything below. */
const SAMPLES = [
  ['databases', 'orders', 'database.yaml'],
  ['caches', 'sessions', 'cache.yaml'],
  ['myapps', 'shop', 'myapp.yaml'],
] as const;

/** The sample Database's instances here: a primary and two streaming replicas. */
const INSTANCES = 3;

const sample = (resource: string, name: string) =>
  inst.get<Converged>(objectPath(inst.workload, resource, name));

before(async () => {
  env = await start({ realNodes: 1 });
  inst = new Installation(env, {
    name: 'ic',
    engines: 'real',
    via: 'helm',
    env: [{ name: BLOCK_ON_SIGNAL_ENV, value: '1' }],
  });
  await inst.apply();
  for (const [resource, , file] of SAMPLES)
    await inst.applySample(file, resource === 'databases' ? { replicas: INSTANCES } : {});
});

after(async () => {
  if (inst) await inst.remove();
});

test('the Helm chart applied with the image from the Dockerfile: both replicas Ready through /readyz on the real node, under restricted, one leader', async () => {
  const ns = await inst.kubectl.json<{ metadata: { labels: Record<string, string> } }>(
    'get',
    'namespace',
    inst.namespace,
  );
  assert.equal(ns.metadata.labels['pod-security.kubernetes.io/enforce'], 'restricted');
  const { leader, standby, holder } = await inst.twoReadyOneLeader();
  for (const p of [leader, standby]) {
    assert.equal(p.spec.nodeName, 'real-node-0', `${p.metadata.name} runs on the real node`);
    assert.equal(p.spec.containers[0]!.image, inst.image.ref);
  }
  assert.equal(await metric(leader, 'leader_election_master_status'), 1);
  assert.equal(await metric(standby, 'leader_election_master_status'), 0);
  say(`leader ${holder}, standby ${standby.metadata.name}`);
  // The leader reconciles the samples to Ready with the in-cluster ServiceAccount; the standby reconciles nothing.
  for (const [resource, name] of SAMPLES)
    await eventually(
      `${resource}/${name} Ready`,
      async () => isReady(await sample(resource, name)),
      180_000,
      500,
    );
  const reconciled = await metric(leader, 'controller_runtime_reconcile_total', { controller: 'database' });
  if (!(reconciled > 0)) {
    // A leader that lost its Lease exits, and its restarted process counts from zero: say so.
    const now = await inst.pods();
    assert.fail(
      `the leader ${leader.metadata.name} counts ${reconciled} Database reconciles; the Lease names ${(await inst.lease()).spec.holderIdentity} now; restarts: ` +
        now
          .map((p) => `${p.metadata.name} ${p.status.containerStatuses?.[0]?.restartCount ?? '?'}`)
          .join(', '),
    );
  }
  assert.equal(await metric(standby, 'controller_runtime_reconcile_total'), 0);
  // Real engines, from the overlay's catalog: the Database's replicas stream from its primary.
  // Ready says the primary serves; the last replica may still be catching up (CI saw 2 of 3).
  const db = await eventually(
    `orders: ${INSTANCES} instances ready`,
    async () => {
      const d = await orders();
      return d.status?.readyReplicas === INSTANCES && d;
    },
    120_000,
    500,
  );
  assert.deepEqual(
    db.status?.instances?.map((i) => i.state).sort(),
    ['Primary', 'Streaming', 'Streaming'],
    JSON.stringify(db.status?.instances),
  );
  const pods = await inst.api.request<{ items: Pod[] }>({
    method: 'GET',
    path: `/api/v1/namespaces/${inst.workload}/pods`,
  });
  const images = new Set(pods.items.flatMap((p) => p.spec.containers.map((c) => c.image)));
  for (const engine of ['postgres', 'redis'])
    assert.ok(images.has(inst.catalog[engine]![0]!.image), `a Pod runs the catalog's ${engine} image`);
  for (const p of pods.items)
    assert.equal(p.spec.nodeName, 'real-node-0', `${p.metadata.name} on the real node`);
});

test("a Database read and written as v1alpha1: the API server converts through the base install's webhook Service, with the CA the manager injected", async () => {
  const crd = await inst.kubectl.json<{
    spec: {
      conversion: {
        strategy: string;
        webhook: { clientConfig: { service: { namespace: string; name: string } } };
      };
    };
  }>('get', 'crd', 'databases.regulon.dev');
  assert.equal(crd.spec.conversion.strategy, 'Webhook');
  assert.deepEqual(crd.spec.conversion.webhook.clientConfig.service, {
    namespace: inst.namespace,
    name: `${inst.prefix}regulon-webhook`,
    path: '/convert',
    port: 443,
  });
  // Until the manager has injected its CA into the CRD the API server cannot call it.
  const asAlpha = await eventually(
    'orders read as v1alpha1',
    async () => {
      const r = await inst.kubectl.run(
        'get',
        'databases.v1alpha1.regulon.dev',
        'orders',
        '-n',
        inst.workload,
        '-o',
        'json',
      );
      return r.code === 0
        ? (JSON.parse(r.stdout) as { apiVersion: string; spec: Record<string, unknown> })
        : undefined;
    },
    60_000,
    500,
  );
  assert.equal(asAlpha.apiVersion, 'regulon.dev/v1alpha1');
  // A write through v1alpha1 is stored as v1beta1: the bound moves under maxLag.
  await inst.kubectl.ok(
    'patch',
    'databases.v1alpha1.regulon.dev',
    'orders',
    '-n',
    inst.workload,
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { replication: { maxLagBytes: 33_554_432 } } }),
  );
  const hub = await inst.get<{
    spec: { replication?: { maxLag?: { bytes?: number }; maxLagBytes?: number } };
  }>(objectPath(inst.workload, 'databases', 'orders'));
  assert.equal(hub.spec.replication?.maxLag?.bytes, 33_554_432);
  assert.equal(hub.spec.replication?.maxLagBytes, undefined);
  const pods = await inst.pods();
  const served = await Promise.all(pods.map((p) => metric(p, 'controller_runtime_webhook_requests_total')));
  say(`conversion requests per manager Pod: ${served.join(', ')}`);
  assert.ok(served.reduce((a, b) => a + b, 0) > 0, 'the manager Pods served the conversions');
});

test('the replicated Database: its primary Pod deleted, the manager in its Pod promotes a replica over the Pod network', async () => {
  const before = await eventually(
    'orders Ready with every instance serving',
    async () => {
      const db = await orders();
      return isReady(db) && db.status?.readyReplicas === INSTANCES && db.status.currentPrimary ? db : false;
    },
    180_000,
    500,
  );
  const primary = before.status!.currentPrimary!;
  // deploy/ runs the engines under the instance agent (--instance-agent-image=self): copied from
  // the image the manager's own Pod runs, and holding the primary Lease as the primary.
  const pod = await inst.kubectl.json<{ spec: { initContainers?: Array<{ name: string; image: string }> } }>(
    'get',
    'pod',
    '-n',
    inst.workload,
    primary,
  );
  assert.equal(pod.spec.initContainers?.find((c) => c.name === 'install-agent')?.image, inst.image.ref);
  await eventually(
    `the primary Lease held by ${primary}`,
    async () => {
      const lease = await inst.kubectl.json<{ spec: { holderIdentity?: string } }>(
        'get',
        'lease',
        '-n',
        inst.workload,
        'orders-primary',
      );
      return lease.spec.holderIdentity === primary;
    },
    30_000,
    500,
  );
  const t0 = Date.now();
  await inst.kubectl.ok('delete', 'pod', '-n', inst.workload, primary, '--wait=false');
  const promoted = await eventually(
    'another instance primary',
    async () => {
      const db = await orders();
      const now = db.status?.currentPrimary;
      return now && now !== primary ? now : false;
    },
    120_000,
    200,
  );
  const promotedMs = Date.now() - t0;
  const healed = await eventually(
    'orders Ready again, the old primary streaming from the new one',
    async () => {
      const db = await orders();
      const states = db.status?.instances?.map((i) => `${i.name}=${i.state}`).sort() ?? [];
      return isReady(db) &&
        db.status?.currentPrimary === promoted &&
        db.status.instances?.filter((i) => i.state === 'Streaming').length === INSTANCES - 1
        ? states
        : false;
    },
    180_000,
    500,
  );
  const events = await inst.kubectl.json<{ items: Array<{ reason: string; message: string }> }>(
    'get',
    'events',
    '-n',
    inst.workload,
    '--field-selector',
    `involvedObject.kind=Database,involvedObject.name=orders,reason=Promoted`,
  );
  assert.ok(
    events.items.some((e) => e.message.includes(promoted)),
    `a Promoted Event names ${promoted}: ${JSON.stringify(events.items)}`,
  );
  say(
    `replicated Database failover in the cluster: ${primary} deleted, ${promoted} primary after ${promotedMs} ms, all ${INSTANCES} serving after ${Date.now() - t0} ms (${healed.join(' ')})`,
  );
});

test('kubectl delete pod <leader>: another replica leads; deletion to its first reconcile', async () => {
  const { leader, standby, holder } = await inst.twoReadyOneLeader();
  const t0 = Date.now();
  await inst.kubectl.ok('delete', 'pod', '-n', inst.namespace, leader.metadata.name, '--wait=false');
  const took = await inst.takeover(t0, holder);
  // The released Lease goes to whichever candidate tries first: the standby
  // (retrying every 2 s) or the Pod the ReplicaSet starts in the deleted one's
  // place, which can be up and trying within that time.
  assert.notEqual(took.leader.metadata.name, leader.metadata.name, 'the deleted replica does not lead');
  say(
    `delete pod (SIGTERM, Lease released): new Lease holder ${took.leader.metadata.name === standby.metadata.name ? '(the standby)' : '(the replacement Pod)'} after ${took.leaseMs} ms, first reconcile after ${took.reconcileMs} ms`,
  );
});

test('kill -9 of the leader process in its container: the kubelet restarts it, a new holder leads; kill to its first reconcile', async () => {
  const { leader, holder } = await inst.twoReadyOneLeader();
  const restarts = leader.status.containerStatuses?.[0]?.restartCount ?? 0;
  const t0 = Date.now();
  await inst.signalNode(leader, 'KILL');
  const took = await inst.takeover(t0, holder);
  say(
    `kill -9 (Lease not released): new Lease holder ${took.leader.metadata.name === leader.metadata.name ? '(the restarted replica)' : '(the standby)'} after ${took.leaseMs} ms, first reconcile after ${took.reconcileMs} ms`,
  );
  const restarted = await eventually(
    `${leader.metadata.name} restarted by the kubelet`,
    async () => {
      const pod = (await inst.pods()).find((p) => p.metadata.uid === leader.metadata.uid);
      const cs = pod?.status.containerStatuses?.[0];
      return cs && cs.restartCount > restarts && ready(pod) ? cs : false;
    },
    120_000,
    500,
  );
  assert.equal(restarted.lastState?.terminated?.exitCode, 137, 'the container ended by SIGKILL');
  await inst.twoReadyOneLeader();
});

test('rolling update (an env var changed): never two leaders acting, reconciles only from the leader, every sample stays Ready, a Database changed during the roll converges', async () => {
  const { leader, standby } = await inst.twoReadyOneLeader();
  const old = new Set([leader.metadata.name, standby.metadata.name]);
  for (const [resource, name] of SAMPLES)
    await eventually(
      `${resource}/${name} Ready`,
      async () => isReady(await sample(resource, name)),
      180_000,
      500,
    );
  // A Database of its own for the changes during the roll (changing a sample
  // would take it out of Ready for a moment, by design).
  await applyRolled(1);
  await eventually('rolled Ready', async () => isReady(await rolled()), 180_000, 500);

  const roll = recordRoll(inst, {
    samples: SAMPLES.map(([resource, name]) => ({
      what: `${resource}/${name}`,
      ready: async () => isReady(await sample(resource, name)),
    })),
    // Each time the set of manager Pods changes (a surge Pod appears, an old
    // one starts terminating, goes), the Database changes: some changes land
    // while no replica leads.
    onPodsChanged: (n) => applyRolled((n % 3) + 1),
  });
  const t0 = Date.now();
  await inst.kubectl.ok(
    'set',
    'env',
    '-n',
    inst.namespace,
    `deployment/${inst.deployment}`,
    'REGULON_KUBE_API_QPS=60',
  );
  await inst.kubectl.ok(
    'rollout',
    'status',
    '-n',
    inst.namespace,
    `deployment/${inst.deployment}`,
    '--timeout=300s',
  );
  const after = await inst.twoReadyOneLeader();
  const rollMs = Date.now() - t0;
  const record = await roll.stop();

  for (const p of [after.leader, after.standby])
    assert.ok(!old.has(p.metadata.name), `${p.metadata.name} is new`);
  assert.deepEqual(record.overlaps, [], 'never two replicas leading at once');
  assert.deepEqual(record.reconcilesWithoutLeading, [], 'reconciles only from the leader');
  assert.deepEqual(record.notReady, [], 'every sample Ready at every look');
  assert.deepEqual(record.restarts, [], 'no container restarted');
  assert.ok(record.changes >= 3, `the Database changed during the roll (${record.changes} times)`);
  // Every Lease holder seen reported leading on its own /metrics. (The last leader is a new Pod:
  // asserted above of after.leader; the sampler may stop before it sees the final handover.)
  for (const h of record.holders)
    assert.ok(
      record.leaders.some((pod) => h.holder === pod || h.holder.startsWith(`${pod}_`)),
      `${h.holder} reported leading`,
    );

  const converged = await eventually(
    'the Database changed during the roll converged',
    async () => {
      const db = await rolled();
      return isCurrent(db) && isReady(db) && db.status?.readyReplicas === db.spec.replicas ? db : false;
    },
    120_000,
    500,
  );
  say(
    `rolling update: ${rollMs} ms to both new replicas Ready; leaders in turn ${record.leaders.join(' -> ')}; ` +
      `handovers (last "leading" of one to first of the next) ${record.handoverMs.join(', ')} ms; ` +
      `${record.scrapes} scrapes, ${record.changes} Database changes during the roll, converged to ` +
      `generation ${converged.metadata.generation} with ${converged.status?.readyReplicas} replicas`,
  );
});

test('liveness: a manager whose event loop is blocked is restarted by the kubelet through its /healthz probe', async () => {
  const { leader, holder } = await inst.twoReadyOneLeader();
  const restarts = leader.status.containerStatuses?.[0]?.restartCount ?? 0;
  const t0 = Date.now();
  await inst.signalNode(leader, 'USR2');
  // The hung leader renews nothing: the standby takes the Lease once it expires.
  const took = await inst.takeover(t0, holder);
  const restarted = await eventually(
    `${leader.metadata.name} restarted by the kubelet`,
    async () => {
      const pod = (await inst.pods()).find((p) => p.metadata.uid === leader.metadata.uid);
      const cs = pod?.status.containerStatuses?.[0];
      return cs && cs.restartCount > restarts ? cs : false;
    },
    180_000,
    500,
  );
  const restartMs = Date.now() - t0;
  // A blocked event loop runs no SIGTERM handler: the kubelet kills it after the probe's grace period.
  assert.equal(restarted.lastState?.terminated?.exitCode, 137, 'the hung process was killed');
  const events = await inst.kubectl.json<{
    items: Array<{ reason: string; message: string; count?: number }>;
  }>('get', 'events', '-n', inst.namespace, '--field-selector', `involvedObject.uid=${leader.metadata.uid}`);
  const unhealthy = events.items.filter(
    (e) => e.reason === 'Unhealthy' && e.message.startsWith('Liveness probe failed'),
  );
  assert.ok(
    unhealthy.length > 0,
    `an Unhealthy "Liveness probe failed" event: ${JSON.stringify(events.items)}`,
  );
  assert.ok(
    events.items.some((e) => e.reason === 'Killing' && /failed liveness probe/.test(e.message)),
    'the kubelet says it restarts the container for its liveness probe',
  );
  say(
    `liveness: SIGUSR2 blocked the leader; new Lease holder after ${took.leaseMs} ms, its first reconcile after ${took.reconcileMs} ms; ` +
      `container restarted after ${restartMs} ms (${unhealthy.map((e) => `${e.message} x${e.count ?? 1}`).join('; ')})`,
  );
  await inst.twoReadyOneLeader();
});

/** The sample Database, with its replication status. */
const orders = () =>
  inst.get<
    Converged & {
      status?: {
        readyReplicas?: number;
        currentPrimary?: string;
        instances?: Array<{ name: string; state: string }>;
      };
    }
  >(objectPath(inst.workload, 'databases', 'orders'));

/** The Database the rolling update changes. */
const ROLLED = 'rolled';
const rolled = () =>
  inst.get<Converged & { spec: { replicas: number }; status?: { readyReplicas?: number } }>(
    objectPath(inst.workload, 'databases', ROLLED),
  );
/**
 * The rolled Database, in its `variant`th form: a parameter changes (a configuration roll of
 * its StatefulSet). One instance, to keep the real node's load down: the replicated sample
 * stays Ready through the roll beside it.
 */
async function applyRolled(variant: number): Promise<void> {
  const r = await inst.kubectl.runWithInput(
    JSON.stringify({
      apiVersion: 'regulon.dev/v1beta1',
      kind: 'Database',
      metadata: { name: ROLLED, namespace: inst.workload },
      spec: {
        engine: 'postgres',
        version: inst.catalog['postgres']![0]!.version,
        replicas: 1,
        storage: { size: '1Gi' },
        backup: { enabled: false },
        parameters: { max_connections: String(100 + variant) },
      },
    }),
    'apply',
    '--server-side',
    '--field-manager=in-cluster-test',
    '-f',
    '-',
  );
  assert.equal(r.code, 0, r.stderr);
}
