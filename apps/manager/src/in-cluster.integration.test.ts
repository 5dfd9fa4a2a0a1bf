// The manager as users run it: the image built from apps/manager/Dockerfile
// (tools/manager-image, buildah, no Docker), deploy/ applied with
// `kubectl apply --server-side -k` through an overlay, two replicas as Pods on
// the real node under the restricted Pod Security profile, probes the kubelet
// calls and the memory limit the kernel enforces.
//
// The overlay sets what a user's would:
// - the image (`images:`), the one built here: regulon.local/manager:<version>;
// - `namespace` and `namePrefix`, so this installation lives beside the ones
//   other tests of the run apply (deploy/README.md shows both);
// - REGULON_NAMESPACE: the manager watches one namespace (the test's
//   Databases, on fake nodes) rather than every test's objects;
// and one thing only a test needs: the real node's annotations on the
// manager's namespace, so its Pods run there and not on a fake node.
//
// Failover timings go to stderr (`[in-cluster] ...`), measured from the
// `kubectl delete` (or the kill) to the first reconcile the new leader reports
// on its own /metrics.
//
//   npx regulon-testenv exec -- npx node --test --test-timeout=1200000 apps/manager/src/in-cluster.integration.test.ts
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import {
  eventually,
  loadImagesIntoRealNode,
  realNodeNamespaceAnnotations,
  start,
  type TestEnv,
} from '@regulon/testenv';
import { stringify } from 'yaml';
import { ensureManagerImage, type ManagerImage } from '../../../tools/manager-image/image.ts';

const root = join(import.meta.dirname, '..', '..', '..');
const suffix = randomBytes(3).toString('hex');
const PREFIX = `ic${suffix}-`;
const NAMESPACE = `regulon-ic-${suffix}`;
/** --leader-election-id's default: the Lease keeps its name under a namePrefix. */
const LEASE = 'regulon-manager';
const SELECTOR = 'app.kubernetes.io/name=regulon-manager';

const dir = mkdtempSync(join(tmpdir(), 'regulon-in-cluster-'));
const overlayDir = join(dir, 'overlay');
let env: TestEnv;
let image: ManagerImage;
let workload: string;

const say = (line: string) => process.stderr.write(`[in-cluster] ${line}\n`);

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function kubectl(...args: string[]): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(env.controlPlane.state.kubectl, ['--kubeconfig', env.kubeconfigPath, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function ok(...args: string[]): Promise<string> {
  const r = await kubectl(...args);
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}:\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

async function json<T>(...args: string[]): Promise<T> {
  return JSON.parse(await ok(...args, '-o', 'json')) as T;
}

interface Pod {
  metadata: { name: string; uid: string; deletionTimestamp?: string; labels?: Record<string, string> };
  spec: { nodeName?: string; containers: Array<{ name: string; image: string }> };
  status: {
    podIP?: string;
    phase?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{
      name: string;
      ready: boolean;
      restartCount: number;
      lastState?: { terminated?: { exitCode: number; reason?: string } };
    }>;
  };
}

interface Lease {
  spec: { holderIdentity?: string; leaseTransitions?: number };
}

const managerPods = async () =>
  (await json<{ items: Pod[] }>('get', 'pods', '-n', NAMESPACE, '-l', SELECTOR)).items.filter(
    (p) => !p.metadata.deletionTimestamp,
  );
const ready = (p: Pod) =>
  p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const lease = () => json<Lease>('get', 'lease', '-n', NAMESPACE, LEASE);
/** The Pod whose name the Lease's holder identity starts with (POD_NAME or the host name, plus a suffix). */
const holderPod = (pods: Pod[], holder: string | undefined) =>
  pods.find((p) => holder?.startsWith(`${p.metadata.name}_`) || holder === p.metadata.name);

/** Both replicas Ready (the kubelet's /readyz probe), each answering /readyz itself, and one of them holding the Lease. */
async function twoReadyOneLeader(
  timeoutMs = 180_000,
): Promise<{ leader: Pod; standby: Pod; holder: string }> {
  return eventually(
    'two Ready manager Pods and a leader among them',
    async () => {
      const pods = await managerPods();
      if (pods.length !== 2 || !pods.every(ready)) return false;
      const holder = (await lease()).spec.holderIdentity;
      const leader = holderPod(pods, holder);
      if (!leader || !holder) return false;
      for (const p of pods) {
        const res = await fetch(`http://${p.status.podIP}:8081/readyz`);
        if (!res.ok) return false;
      }
      return { leader, standby: pods.find((p) => p !== leader)!, holder };
    },
    timeoutMs,
    500,
  );
}

/** Sum of a counter's samples, as a Pod's own /metrics reports it (the host reaches Pod IPs on the bridge). */
async function metric(pod: Pod, name: string, match: string): Promise<number> {
  const text = await (await fetch(`http://${pod.status.podIP}:8080/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) && line.includes(match))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/**
 * Waits for the Lease to name a holder other than `previous`, then for that
 * holder's first Database reconcile on its own /metrics (a fresh leader starts
 * its controllers, which reconcile every object they list). Returns the times
 * from `t0` in ms, and the new leader.
 */
async function takeover(
  t0: number,
  previous: string,
): Promise<{ leaseMs: number; reconcileMs: number; leader: Pod }> {
  const { leader, holder } = await eventually(
    'a new Lease holder',
    async () => {
      const h = (await lease()).spec.holderIdentity;
      if (!h || h === previous) return false;
      const pod = holderPod(await managerPods(), h);
      return pod?.status.podIP ? { leader: pod, holder: h } : false;
    },
    120_000,
    100,
  );
  const leaseMs = Date.now() - t0;
  await eventually(
    `the first reconcile of ${holder}`,
    async () => (await metric(leader, 'controller_runtime_reconcile_total', 'controller="database"')) > 0,
    60_000,
    100,
  );
  return { leaseMs, reconcileMs: Date.now() - t0, leader };
}

before(async () => {
  env = await start({ realNodes: 1 });
  const t = Date.now();
  image = await ensureManagerImage((l) => say(l));
  say(
    `image ${image.ref}: ${(image.size / 2 ** 20).toFixed(0)} MiB archive, built in ${image.buildSeconds} s; ensured in ${Date.now() - t} ms`,
  );
  loadImagesIntoRealNode(env.controlPlane.state.dir, [image], say);
  workload = await env.newNamespace('in-cluster-work');

  mkdirSync(overlayDir);
  writeFileSync(
    join(overlayDir, 'kustomization.yaml'),
    stringify({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      namespace: NAMESPACE,
      namePrefix: PREFIX,
      resources: [relative(overlayDir, join(root, 'deploy'))],
      images: [
        { name: 'regulon-manager', newName: image.ref.split(':')[0], newTag: image.ref.split(':')[1] },
      ],
      patches: [
        {
          target: { kind: 'Namespace' },
          patch: stringify([
            { op: 'add', path: '/metadata/annotations', value: realNodeNamespaceAnnotations() },
          ]),
        },
        {
          target: { kind: 'Deployment', name: 'regulon-manager' },
          patch: stringify([
            {
              op: 'add',
              path: '/spec/template/spec/containers/0/env/-',
              value: { name: 'REGULON_NAMESPACE', value: workload },
            },
          ]),
        },
      ],
    }),
  );
  // --force-conflicts: the CRDs are shared with the run's other tests, which install them with their own field manager.
  await ok('apply', '--server-side', '--force-conflicts', '-k', overlayDir);
  await ok('wait', '--for=condition=Established', '--timeout=60s', 'crd/databases.regulon.dev');
  // A Database for the manager to reconcile (its Pods land on fake nodes).
  await ok('apply', '-n', workload, '-f', join(root, 'deploy', 'samples', 'database.yaml'));
});

after(async () => {
  if (env) {
    const logs = await kubectl('logs', '-n', NAMESPACE, '-l', SELECTOR, '--tail=30', '--prefix');
    if (logs.stdout) say(`manager logs (last lines):\n${logs.stdout}`);
    // Not `delete -k`: that would delete the CRDs every other test of the run uses.
    await kubectl('delete', 'namespace', NAMESPACE, '--wait=false');
    await kubectl(
      'delete',
      'clusterrole,clusterrolebinding',
      `${PREFIX}regulon-manager`,
      '--ignore-not-found',
    );
  }
  rmSync(dir, { recursive: true, force: true });
});

test('deploy/ applied with the image from the Dockerfile: both replicas Ready through /readyz on the real node, under restricted, one leader', async () => {
  const ns = await json<{ metadata: { labels: Record<string, string> } }>('get', 'namespace', NAMESPACE);
  assert.equal(ns.metadata.labels['pod-security.kubernetes.io/enforce'], 'restricted');
  const { leader, standby, holder } = await twoReadyOneLeader();
  for (const p of [leader, standby]) {
    assert.equal(p.spec.nodeName, 'real-node-0', `${p.metadata.name} runs on the real node`);
    assert.equal(p.spec.containers[0]!.image, image.ref);
  }
  assert.equal(await metric(leader, 'leader_election_master_status', ''), 1);
  assert.equal(await metric(standby, 'leader_election_master_status', ''), 0);
  say(`leader ${holder}, standby ${standby.metadata.name}`);
  // The leader reconciles the sample to Ready with the in-cluster ServiceAccount; the standby reconciles nothing.
  await eventually(
    'the sample Database Ready',
    async () => {
      const db = await json<{ status?: { conditions?: Array<{ type: string; status: string }> } }>(
        'get',
        'database',
        '-n',
        workload,
        'orders',
      );
      return db.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    },
    120_000,
    500,
  );
  assert.ok((await metric(leader, 'controller_runtime_reconcile_total', 'controller="database"')) > 0);
  assert.equal(await metric(standby, 'controller_runtime_reconcile_total', 'controller="database"'), 0);
});

test('kubectl delete pod <leader>: another replica leads; deletion to its first reconcile', async () => {
  const { leader, standby, holder } = await twoReadyOneLeader();
  const t0 = Date.now();
  await ok('delete', 'pod', '-n', NAMESPACE, leader.metadata.name, '--wait=false');
  const took = await takeover(t0, holder);
  // The released Lease goes to whichever candidate tries first: the standby
  // (retrying every 2 s) or the Pod the ReplicaSet starts in the deleted one's
  // place, which can be up and trying within that time.
  assert.notEqual(took.leader.metadata.name, leader.metadata.name, 'the deleted replica does not lead');
  say(
    `delete pod (SIGTERM, Lease released): new Lease holder ${took.leader.metadata.name === standby.metadata.name ? '(the standby)' : '(the replacement Pod)'} after ${took.leaseMs} ms, first reconcile after ${took.reconcileMs} ms`,
  );
});

test('kill -9 of the leader process in its container: the kubelet restarts it, a new holder leads; kill to its first reconcile', async () => {
  const { leader, holder } = await twoReadyOneLeader();
  const restarts = leader.status.containerStatuses?.[0]?.restartCount ?? 0;
  const t0 = Date.now();
  // tini is PID 1; node is its child. sh, tr and /proc are all the image has for finding it.
  const killed = await ok(
    'exec',
    '-n',
    NAMESPACE,
    leader.metadata.name,
    '--',
    'sh',
    '-c',
    'for p in /proc/[0-9]*; do case "$(tr "\\0" " " <"$p/cmdline" 2>/dev/null)" in "node apps/manager/src/main.ts"*) kill -9 "${p#/proc/}" && echo "${p#/proc/}" ;; esac; done',
  );
  assert.match(killed, /^\d+\s*$/, `one node process killed: ${JSON.stringify(killed)}`);
  const took = await takeover(t0, holder);
  say(
    `kill -9 (Lease not released): new Lease holder ${took.leader.metadata.name === leader.metadata.name ? '(the restarted replica)' : '(the standby)'} after ${took.leaseMs} ms, first reconcile after ${took.reconcileMs} ms`,
  );
  const restarted = await eventually(
    `${leader.metadata.name} restarted by the kubelet`,
    async () => {
      const pod = (await managerPods()).find((p) => p.metadata.uid === leader.metadata.uid);
      const cs = pod?.status.containerStatuses?.[0];
      return cs && cs.restartCount > restarts && ready(pod) ? cs : false;
    },
    120_000,
    500,
  );
  assert.equal(restarted.lastState?.terminated?.exitCode, 137, 'the container ended by SIGKILL');
  await twoReadyOneLeader();
});
