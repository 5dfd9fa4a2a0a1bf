// Two real nodes on one machine: Pods on each reach the other's by Pod IP,
// Service and DNS name, and the second node can be lost (kubelet stopped, its
// Pods cut off) and found again. What node-loss tests of the operators rely on.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { remainingCgroups } from './host.ts';
import { ensureImages } from './images.ts';
import { eventually, start, type TestEnv } from './index.ts';
import { loseSecondRealNode } from './faults.ts';
import { SECOND_NODE, secondNodeDir } from './second-node.ts';

const run = promisify(execFile);

interface Pod {
  metadata: { name: string };
  spec: { nodeName?: string };
  status?: { podIP?: string; conditions?: Array<{ type: string; status: string }> };
}
interface Node {
  status?: {
    addresses?: Array<{ type: string; address: string }>;
    conditions?: Array<{ type: string; status: string }>;
  };
}

// Under `npm test` the run's shared control plane (REGULON_TESTENV_DIR) gets the second node for this
// file, which stops it again at the end (the control plane and first node stay for the other files).
const shared = Boolean(process.env['REGULON_TESTENV_DIR']);

describe('two real nodes', () => {
  let env: TestEnv;
  let ns: string;
  let stopped = false;
  const image: Record<string, string> = {};
  const ip: Record<string, string> = {};

  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const child = run(
      env.controlPlane.state.kubectl,
      ['--kubeconfig', env.kubeconfigPath, '-n', ns, ...args],
      {
        maxBuffer: 16 << 20,
      },
    );
    if (input !== undefined) child.child.stdin?.end(input);
    return (await child).stdout;
  };
  const apply = (obj: object) => kubectl(['apply', '-f', '-'], JSON.stringify(obj));
  const pod = async (name: string) => JSON.parse(await kubectl(['get', 'pod', name, '-o', 'json'])) as Pod;
  const node = async (name: string) => JSON.parse(await kubectl(['get', 'node', name, '-o', 'json'])) as Node;
  const readyStatus = (conds?: Array<{ type: string; status: string }>) =>
    conds?.find((c) => c.type === 'Ready')?.status;
  /** What `cmd` printed in `podName`, or the error (with its stderr) when it failed. */
  const exec = (podName: string, cmd: string) => kubectl(['exec', podName, '--', 'sh', '-c', cmd]);
  /** A redis PING from `from` to `host`, given up after 3 s: PONG when the path works. */
  const ping = (from: string, host: string) => exec(from, `timeout 3 redis-cli -h ${host} ping`);
  // Through a Service: each node's kube-proxy writes its rules a moment after the endpoints are
  // ready, refusing connections until then (a Service without endpoints is rejected). CI once saw
  // a ping through node 1's Service hang for 30 s (exit 124, not refused): the path as it stood at
  // the first failure (endpoints, the host's rules, the kube-proxy logs) is then reported, on a
  // late success as a diagnostic, so that such a wait says where it was.
  const pingService = async (
    from: string,
    host: string,
    t: { diagnostic: (message: string) => void },
  ): Promise<void> => {
    const started = Date.now();
    let firstFailure: string | undefined;
    try {
      await eventually(
        `${from} reaches ${host} through its Service`,
        async () => {
          try {
            if ((await ping(from, host)).trim() === 'PONG') return true;
            throw new Error('no PONG');
          } catch (err) {
            firstFailure ??= `${(err as Error).message.split('\n')[0]}\n${await serviceDiagnostics(host.split('.')[0]!)}`;
            throw err;
          }
        },
        60_000,
        500,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}\nat the first failure: ${firstFailure}`, { cause: err });
    }
    if (firstFailure)
      t.diagnostic(
        `${from} reached ${host} through its Service after ${((Date.now() - started) / 1000).toFixed(1)} s; at the first failure: ${firstFailure}`,
      );
  };
  /**
   * Where a Service's path stands when a ping through it failed: its ClusterIP, its endpoints, the
   * host's NAT rules for it (node 0's kube-proxy) and the end of each kube-proxy's log.
   */
  const serviceDiagnostics = async (service: string): Promise<string> => {
    const lines: string[] = [];
    const attempt = async (what: string, get: () => Promise<string>) => {
      try {
        lines.push(`${what}:\n${(await get()).trim()}`);
      } catch (err) {
        lines.push(`${what}: ${(err as Error).message}`);
      }
    };
    const clusterIP = (
      await kubectl(['get', 'service', service, '-o', 'jsonpath={.spec.clusterIP}']).catch(() => '')
    ).trim();
    await attempt(`Service ${service} ${clusterIP}, its EndpointSlices`, () =>
      kubectl(['get', 'endpointslices', '-l', `kubernetes.io/service-name=${service}`, '-o', 'wide']),
    );
    await attempt("the host's NAT rules for it", async () =>
      (await run('iptables-save', ['-t', 'nat'])).stdout
        .split('\n')
        .filter((l) => clusterIP && l.includes(clusterIP))
        .join('\n'),
    );
    for (const dir of [join(env.controlPlane.state.dir, 'node'), secondNodeDir(env.controlPlane.state.dir)])
      await attempt(
        `${dir}/logs/kube-proxy.log, its end`,
        async () => (await run('tail', ['-n', '15', join(dir, 'logs', 'kube-proxy.log')])).stdout,
      );
    return lines.join('\n');
  };

  before(async () => {
    env = await start({ realNodes: 2 });
    ns = await env.newNamespace('two-nodes', { realNode: true });
    for (const img of await ensureImages()) image[img.name] = img.ref;
    // A redis on each node, pinned by nodeName, each behind its own Service; a client on node 1.
    for (const [name, nodeName] of [
      ['redis-0', 'real-node-0'],
      ['redis-1', SECOND_NODE.name],
    ] as const) {
      await apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, labels: { app: name } },
        spec: {
          nodeName,
          containers: [
            {
              name: 'redis',
              image: image['redis'],
              command: ['redis-server', '--bind', '0.0.0.0', '--protected-mode', 'no', '--save', ''],
              readinessProbe: { exec: { command: ['redis-cli', 'ping'] }, periodSeconds: 1 },
            },
          ],
        },
      });
      await apply({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name },
        spec: { selector: { app: name }, ports: [{ port: 6379 }] },
      });
    }
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'client-1' },
      spec: {
        nodeName: SECOND_NODE.name,
        containers: [{ name: 'client', image: image['client'], command: ['sleep', 'infinity'] }],
      },
    });
    for (const name of ['redis-0', 'redis-1', 'client-1']) {
      const p = await eventually(
        `${name} Ready`,
        async () => {
          const got = await pod(name);
          return readyStatus(got.status?.conditions) === 'True' && got;
        },
        180_000,
        500,
      );
      ip[name] = p.status!.podIP!;
    }
    // Both Services have their ready endpoint before any test goes through them.
    await eventually(
      'Service endpoints',
      async () => {
        const slices = JSON.parse(await kubectl(['get', 'endpointslices', '-o', 'json'])) as {
          items: Array<{ endpoints?: Array<{ conditions?: { ready?: boolean } }> }>;
        };
        return slices.items.flatMap((s) => s.endpoints ?? []).filter((e) => e.conditions?.ready).length === 2;
      },
      60_000,
      500,
    );
  });
  after(async () => {
    if (stopped) return;
    // Shared: the second node is this file's alone; the run's control plane and first node go on.
    if (shared) await env?.stopSecondRealNode();
    else await env?.stop();
  });

  test('each node has its own Pod subnet and address, and the Pods run where they were pinned', async () => {
    const n1 = (await node(SECOND_NODE.name)) as Node & { spec?: { taints?: Array<{ key: string }> } };
    assert.ok(
      n1.spec?.taints?.some((t) => t.key === SECOND_NODE.taint),
      'node 1 keeps Pods of real-node namespaces off unless they ask for it',
    );
    assert.equal(readyStatus(n1.status?.conditions), 'True');
    assert.equal(n1.status?.addresses?.find((a) => a.type === 'InternalIP')?.address, '10.245.1.1');
    assert.equal((await pod('redis-0')).spec.nodeName, 'real-node-0');
    assert.equal((await pod('redis-1')).spec.nodeName, SECOND_NODE.name);
    assert.match(ip['redis-0']!, /^10\.245\.0\.\d+$/);
    assert.match(ip['redis-1']!, /^10\.245\.1\.\d+$/);
    assert.match(ip['client-1']!, /^10\.245\.1\.\d+$/);
  });

  test("node 0's Pod reaches node 1's by Pod IP, Service and DNS name", async (t) => {
    assert.equal((await ping('redis-0', ip['redis-1']!)).trim(), 'PONG');
    const serviceIP = (
      await kubectl(['get', 'service', 'redis-1', '-o', 'jsonpath={.spec.clusterIP}'])
    ).trim();
    const resolved = await exec('redis-0', `getent hosts redis-1.${ns}.svc.cluster.local`);
    assert.equal(resolved.split(/\s+/)[0], serviceIP, 'the Service name resolves to its ClusterIP');
    await pingService('redis-0', `redis-1.${ns}.svc.cluster.local`, t);
  });

  test("node 1's Pods reach node 0's by Pod IP, Service and DNS name, and the API in-cluster", async (t) => {
    assert.equal((await ping('redis-1', ip['redis-0']!)).trim(), 'PONG');
    // The short name: the search path and DNS on node 1.
    await pingService('redis-1', 'redis-0', t);
    const serviceIP = (
      await kubectl(['get', 'service', 'redis-0', '-o', 'jsonpath={.spec.clusterIP}'])
    ).trim();
    assert.equal((await exec('client-1', `dig +short redis-0.${ns}.svc.cluster.local`)).trim(), serviceIP);
    const version = await exec(
      'client-1',
      'curl -sS --max-time 5 --cacert /var/run/secrets/kubernetes.io/serviceaccount/ca.crt ' +
        '-H "Authorization: Bearer $(cat /var/run/secrets/kubernetes.io/serviceaccount/token)" ' +
        'https://kubernetes.default.svc/version',
    );
    assert.match(version, /"gitVersion": "v1\.\d+\.\d+"/);
    // Logs come through node 1's kubelet, from the API server on the host.
    assert.match(await kubectl(['logs', 'redis-1']), /Ready to accept connections/);
    // Kept in node 1's own log directory: a kubelet removes the log directories of Pods it does not
    // know, so two kubelets sharing /var/log/pods would delete each other's Pods' logs.
    const uid = (await kubectl(['get', 'pod', 'redis-1', '-o', 'jsonpath={.metadata.uid}'])).trim();
    const logDir = `${ns}_redis-1_${uid}`;
    assert.ok(existsSync(join(secondNodeDir(env.controlPlane.state.dir), 'pod-logs', logDir)), logDir);
    assert.equal(existsSync(join('/var/log/pods', logDir)), false, "not in node 0's directory");
  });

  test('losing node 1: NotReady in the API, its Pod object stays, its containers run, node 0 cannot reach it; healed, all comes back', async () => {
    const ctr = (...args: string[]) =>
      run('ctr', [
        '--address',
        join(secondNodeDir(env.controlPlane.state.dir), 'containerd', 'containerd.sock'),
        '-n',
        'k8s.io',
        ...args,
      ]);
    const loss = loseSecondRealNode(env.controlPlane.state.dir);
    try {
      await eventually(
        'real-node-1 NotReady',
        async () => readyStatus((await node(SECOND_NODE.name)).status?.conditions) !== 'True',
        150_000,
        1000,
      );
      const lost = await pod('redis-1');
      assert.equal(lost.spec.nodeName, SECOND_NODE.name, 'the Pod object on the lost node is still there');
      const tasks = (await ctr('tasks', 'ls')).stdout;
      assert.ok(
        tasks.split('\n').filter((l) => / RUNNING$/.test(l.trim())).length >= 4,
        `node 1's sandboxes and containers still run:\n${tasks}`,
      );
      await assert.rejects(ping('redis-0', ip['redis-1']!), 'node 0 no longer reaches node 1 by Pod IP');
      await assert.rejects(ping('redis-0', `redis-1.${ns}.svc.cluster.local`), 'nor through its Service');
      // Node 0 itself is untouched.
      assert.equal(readyStatus((await node('real-node-0')).status?.conditions), 'True');
      assert.equal((await exec('redis-0', 'redis-cli ping')).trim(), 'PONG');
    } finally {
      loss.heal();
    }
    await eventually(
      'real-node-1 Ready again',
      async () => readyStatus((await node(SECOND_NODE.name)).status?.conditions) === 'True',
      120_000,
      1000,
    );
    await eventually(
      'node 0 reaches node 1 again',
      async () => (await ping('redis-0', ip['redis-1']!)).trim() === 'PONG',
      60_000,
      500,
    );
  });

  test(
    'stopping the environment removes both nodes from the machine',
    {
      skip: shared && "the run's shared control plane is stopped by the test runner",
    },
    async () => {
      const cpDir = env.controlPlane.state.dir;
      stopped = true;
      await env.stop();
      const links = (await run('ip', ['-br', 'link'])).stdout;
      assert.doesNotMatch(links, /regulon/, links);
      assert.equal(existsSync(`/run/netns/${SECOND_NODE.netns}`), false);
      const rules = (await run('iptables-save', [])).stdout;
      assert.doesNotMatch(rules, /REGULON-NODE|KUBE-/, 'no chain of either node is left');
      assert.deepEqual(remainingCgroups(SECOND_NODE.cgroupRoot), []);
      assert.deepEqual(remainingCgroups('regulon-node'), []);
      assert.equal(existsSync(secondNodeDir(cpDir)), false);
    },
  );
});
