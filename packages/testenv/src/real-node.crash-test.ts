// `down` after the test process was killed with SIGKILL leaves the machine as
// it was: no process, mount, network namespace, bridge, iptables rule, cgroup
// or sysctl of either node behind (the machine's two real nodes: the second
// one in its own network namespace, see second-node.ts). It needs the machine's one real node to
// itself, so `npm test` runs it as its own step, before the shared control
// plane of the other tests starts (tools/scripts/test.ts); the file name keeps
// it out of the packages' `*.test.ts` globs.
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { addedIptables, containerdRunEntries, nodeMounts, remainingCgroups, snapshotHost } from './host.ts';
import { NODE_NETWORK } from './node-config.ts';
import { ensureNodeBinaries } from './binaries.ts';
import {
  clearOrphanKubeProxyChains,
  nodeDir,
  REAL_NODE_LOCK,
  reclaimCrashedRealNode,
  shimPids,
  type RealNodeState,
} from './real-node.ts';
import { isAlive } from './process.ts';
import { SECOND_NODE, secondNodeDir } from './second-node.ts';

const run = promisify(execFile);
const cli = join(import.meta.dirname, 'cli.ts');

// The child: a control plane with the real node and one running Pod (so there
// are shims, mounts, a network namespace and Pod cgroups to clean up), then it
// waits to be killed.
const child = `
import { start, eventually } from ${JSON.stringify(join(import.meta.dirname, 'index.ts'))};
const env = await start({ dir: process.env.CRASH_DIR, realNodes: 2 });
const ns = await env.newNamespace('crash', { realNode: true });
const { CoreV1Api } = await import('@kubernetes/client-node');
const core = env.kubeConfig.makeApiClient(CoreV1Api);
const { ensureImages } = await import(${JSON.stringify(join(import.meta.dirname, 'images.ts'))});
const client = (await ensureImages(['client'])).find((i) => i.name === 'client').ref;
for (const [name, nodeName] of [['sleeper', 'real-node-0'], ['sleeper-1', 'real-node-1']]) {
  await core.createNamespacedPod({ namespace: ns, body: { metadata: { name },
    spec: { nodeName, containers: [{ name: 'main', image: client, command: ['sleep', 'infinity'] }] } } });
  await eventually(name + ' running', async () =>
    (await core.readNamespacedPod({ namespace: ns, name })).status?.phase === 'Running', 180_000, 500);
}
process.stdout.write('READY\\n');
setInterval(() => {}, 1 << 30);
`;

void test('down after kill -9 of the test process leaves nothing of the node behind', async (t) => {
  // A node an earlier crashed run left behind would make the snapshot below
  // already hold this node's chains and bridge, and hide what this run adds.
  await reclaimCrashedRealNode();
  clearOrphanKubeProxyChains((await ensureNodeBinaries()).kubeProxy);
  const dir = mkdtempSync(join(tmpdir(), 'regulon-crash-'));
  t.after(async () => {
    // A failed assertion must not leave this node on the machine for the next run.
    if (existsSync(dir)) {
      await run(process.execPath, [cli, 'down'], { env: { ...process.env, REGULON_CLUSTER_DIR: dir } }).catch(
        () => {},
      );
      rmSync(dir, { recursive: true, force: true });
    }
  });
  const before = snapshotHost(NODE_NETWORK.bridge, 'regulon-node', [dir]);
  const sysctls = ['net/ipv4/ip_forward', 'net/bridge/bridge-nf-call-iptables'].map((p) =>
    readFileSync(join('/proc/sys', p), 'utf8').trim(),
  );
  const proc = spawn(process.execPath, ['--input-type=module', '-e', child], {
    env: { ...process.env, CRASH_DIR: dir, REGULON_TESTENV_DIR: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('READY')) resolve();
    });
    proc.on('exit', (code) => reject(new Error(`the child exited with ${code} before its Pod ran`)));
  });
  const state = JSON.parse(readFileSync(join(nodeDir(dir), 'state.json'), 'utf8')) as RealNodeState;
  const second = JSON.parse(readFileSync(join(secondNodeDir(dir), 'state.json'), 'utf8')) as RealNodeState;
  proc.kill('SIGKILL');
  await new Promise((r) => proc.once('exit', r));

  // The crash left the node running: each check below has something to find.
  assert.ok(
    Object.values({ ...state.components, ...second.components }).every((c) => isAlive(c.pid)),
    'node processes outlive the test process',
  );
  assert.ok(shimPids(nodeDir(dir)).length > 0, 'a containerd shim runs the Pod');
  assert.ok(shimPids(secondNodeDir(dir)).length > 0, "a containerd shim runs node 1's Pod");
  assert.ok(existsSync(`/run/netns/${SECOND_NODE.netns}`), "node 1's network namespace exists");
  assert.ok(existsSync(`/sys/class/net/${SECOND_NODE.hostLink}`), "node 1's veth exists");
  assert.ok(remainingCgroups(SECOND_NODE.cgroupRoot).length > 0, 'node 1 has cgroups');
  assert.ok(nodeMounts(state.host).length > 0, 'the node has mounts');
  assert.ok(existsSync(`/sys/class/net/${NODE_NETWORK.bridge}`), 'the bridge exists');
  assert.ok(remainingCgroups('regulon-node').length > 0, 'the node has cgroups');
  assert.ok(
    addedIptables(before.iptablesBefore.v4, execFileSync('iptables-save', { encoding: 'utf8' })).chains
      .length > 0,
  );

  await run(process.execPath, [cli, 'down'], { env: { ...process.env, REGULON_CLUSTER_DIR: dir } });

  for (const c of Object.values({ ...state.components, ...second.components }))
    assert.equal(isAlive(c.pid), false, `${c.name} still runs`);
  assert.deepEqual(shimPids(nodeDir(dir)), []);
  assert.deepEqual(shimPids(secondNodeDir(dir)), []);
  assert.deepEqual(existsSync('/run/netns') ? readdirSync('/run/netns') : [], before.netnsBefore);
  assert.equal(existsSync(`/sys/class/net/${SECOND_NODE.hostLink}`), false, "node 1's veth removed");
  assert.deepEqual(remainingCgroups(SECOND_NODE.cgroupRoot), []);
  assert.deepEqual(nodeMounts(before), []);
  assert.equal(existsSync(`/sys/class/net/${NODE_NETWORK.bridge}`), false, 'bridge removed');
  assert.deepEqual(remainingCgroups('regulon-node'), []);
  assert.deepEqual(
    containerdRunEntries(),
    before.containerdRunBefore,
    'no shim sockets left in /run/containerd',
  );
  for (const [family, save] of [
    ['v4', 'iptables-save'],
    ['v6', 'ip6tables-save'],
  ] as const) {
    const now = execFileSync(save, { encoding: 'utf8' });
    assert.deepEqual(addedIptables(before.iptablesBefore[family], now), { rules: [], chains: [] }, save);
    assert.deepEqual(
      addedIptables(now, before.iptablesBefore[family]),
      { rules: [], chains: [] },
      `${save}: nothing removed`,
    );
  }
  assert.deepEqual(
    ['net/ipv4/ip_forward', 'net/bridge/bridge-nf-call-iptables'].map((p) =>
      readFileSync(join('/proc/sys', p), 'utf8').trim(),
    ),
    sysctls,
  );
  assert.equal(existsSync(REAL_NODE_LOCK), false, 'lock released');
  assert.equal(existsSync(dir), false, 'down removes the directory');
  rmSync(dir, { recursive: true, force: true });
});
