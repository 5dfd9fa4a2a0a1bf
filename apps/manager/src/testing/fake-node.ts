// A KWOK fake node of a test's own, big enough for a load test's Pods: the
// control plane's three fake nodes hold 110 Pods each, and other tests of the
// run share them. The node is tainted, and the test's namespace carries the
// API server's PodNodeSelector and PodTolerationRestriction annotations, so
// that namespace's Pods, whatever renders them, land there and nobody else's do.
import { KWOK_NODE_ANNOTATION } from '@regulon/testenv';
import type { Installation } from './installation.ts';

export interface FakeNode {
  name: string;
  remove(): Promise<void>;
}

export async function fakeNodeForNamespace(
  inst: Installation,
  namespace: string,
  pods: number,
): Promise<FakeNode> {
  const name = `${inst.prefix}fake`;
  const key = 'regulon.dev/load-test';
  const node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [KWOK_NODE_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        [key]: name,
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        type: 'kwok',
      },
    },
    spec: { taints: [{ key, value: name, effect: 'NoSchedule' }] },
    status: {
      allocatable: { cpu: '1000', memory: '4Ti', pods: String(pods) },
      capacity: { cpu: '1000', memory: '4Ti', pods: String(pods) },
      nodeInfo: {
        kubeletVersion: 'fake',
        kubeProxyVersion: 'fake',
        architecture: 'amd64',
        operatingSystem: 'linux',
      },
    },
  };
  const created = await inst.kubectl.runWithInput(JSON.stringify(node), 'create', '-f', '-');
  if (created.code !== 0) throw new Error(`creating fake node ${name}: ${created.stderr}`);
  await inst.kubectl.ok(
    'annotate',
    'namespace',
    namespace,
    '--overwrite',
    `scheduler.alpha.kubernetes.io/node-selector=${key}=${name}`,
    `scheduler.alpha.kubernetes.io/defaultTolerations=${JSON.stringify([
      { key, operator: 'Equal', value: name, effect: 'NoSchedule' },
    ])}`,
  );
  await inst.kubectl.ok('wait', '--for=condition=Ready', '--timeout=60s', `node/${name}`);
  return {
    name,
    remove: async () => {
      await inst.kubectl.run('delete', 'node', name, '--ignore-not-found', '--wait=false');
    },
  };
}
