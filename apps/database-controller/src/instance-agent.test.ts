// The instance agent in the Pods the controller writes (--instance-agent-image):
// which engines get it, what the Pod runs, and what its service account may do.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAgentArgs } from '@regulon/instance-agent';
import type { V1Role, V1RoleBinding, V1ServiceAccount, V1StatefulSet } from '@kubernetes/client-node';
import { desiredChildren } from './children.ts';
import { databaseWith } from './testing/parameters-corpus.ts';

const AGENT_IMAGE = 'regulon.local/manager:0.1.0';

const childrenOf = (engine: 'postgres' | 'mariadb' | 'mysql', agentImage?: string) => {
  const db = { ...databaseWith(engine, {}, { name: 'shop', namespace: 'apps' }) };
  db.spec = { ...db.spec, replicas: 3 };
  const all = desiredChildren(db, undefined, undefined, 3, agentImage);
  const find = <T>(kind: string) => all.find((c) => c.type.kind === kind)?.object as T | undefined;
  return {
    sts: find<V1StatefulSet>('StatefulSet')!,
    account: find<V1ServiceAccount>('ServiceAccount')!,
    role: find<V1Role>('Role'),
    binding: find<V1RoleBinding>('RoleBinding'),
  };
};

/** The agent's configuration from its arguments, as the kubelet expands them for Pod shop-1. */
const agentConfigOf = (args: string[]) =>
  parseAgentArgs(
    args.map((a) =>
      a
        .replace('$(POD_NAMESPACE)', 'apps')
        .replace('$(POD_NAME)', 'shop-1')
        .replace('$(POD_UID)', 'uid-1')
        .replaceAll('$$', '$'),
    ),
    {},
  );

test('postgres under the agent: an init container copies it from the image, and it runs the start script after --', () => {
  const { sts, account, role, binding } = childrenOf('postgres', AGENT_IMAGE);
  const spec = sts.spec!.template.spec!;
  assert.deepEqual(
    spec.initContainers?.map((c) => c.image),
    [AGENT_IMAGE],
  );
  const container = spec.containers[0]!;
  const [node, bundle, ...args] = container.command!;
  assert.match(node!, /\/node$/);
  assert.match(bundle!, /\/agent\.mjs$/);
  // The kubelet's expansion of $(POD_NAMESPACE), $(POD_NAME) and $(POD_UID), from the container's variables.
  const names = new Set(container.env!.map((v) => v.name));
  assert.ok(names.has('POD_NAME') && names.has('POD_NAMESPACE') && names.has('POD_UID'));
  assert.equal(
    container.env!.find((v) => v.name === 'POD_UID')?.valueFrom?.fieldRef?.fieldPath,
    'metadata.uid',
  );
  const config = agentConfigOf(args);
  assert.equal(config.lease, 'shop-primary');
  assert.equal(config.identity, 'shop-1');
  assert.equal(config.podUid, 'uid-1', 'it checks that its Pod is still its own');
  assert.match(config.roleCommand ?? '', /pg_is_in_recovery/);
  assert.deepEqual(config.engine.slice(0, 1), ['bash']);
  assert.ok(
    container.volumeMounts!.some((m) => m.mountPath === '/regulon-agent' && m.readOnly),
    'the engine container reads the agent from the volume the init container filled',
  );
  // Its token, and a Role that reads and renews its own Lease only, and reads the instances' Pods by name.
  assert.equal(spec.automountServiceAccountToken, true);
  assert.equal(account.automountServiceAccountToken, true);
  assert.deepEqual(role?.rules, [
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      resourceNames: ['shop-primary'],
      verbs: ['get', 'update'],
    },
    {
      apiGroups: [''],
      resources: ['pods'],
      resourceNames: ['shop-0', 'shop-1', 'shop-2', 'shop-3', 'shop-4'],
      verbs: ['get'],
    },
  ]);
  assert.deepEqual(binding?.subjects, [{ kind: 'ServiceAccount', name: 'shop', namespace: 'apps' }]);
  assert.equal(binding?.roleRef.name, role?.metadata?.name);
});

test('without the image, or for an engine without an agent, the Pods run as before and get no token', () => {
  for (const [engine, image] of [
    ['postgres', undefined],
    ['mysql', AGENT_IMAGE],
  ] as const) {
    const { sts, account, role, binding } = childrenOf(engine, image);
    const spec = sts.spec!.template.spec!;
    assert.equal(spec.initContainers, undefined, engine);
    assert.equal(spec.automountServiceAccountToken, false, engine);
    assert.equal(account.automountServiceAccountToken, false, engine);
    assert.doesNotMatch((spec.containers[0]!.command ?? []).join(' '), /agent/, engine);
    assert.equal(role, undefined, `${engine}: no Role (an existing one is deleted)`);
    assert.equal(binding, undefined);
  }
});

test('mariadb under the agent: its role from read_only, its quorum from the replicas it asks, its members from the topology', () => {
  const { sts, role } = childrenOf('mariadb', AGENT_IMAGE);
  const spec = sts.spec!.template.spec!;
  assert.deepEqual(
    spec.initContainers?.map((c) => c.image),
    [AGENT_IMAGE],
  );
  const [, , ...args] = spec.containers[0]!.command!;
  const config = agentConfigOf(args);
  assert.equal(config.lease, 'shop-primary');
  assert.match(config.roleCommand ?? '', /@@global\.read_only/);
  assert.match(config.quorumCommand ?? '', /Binlog Dump/);
  assert.match(config.quorumCommand ?? '', /Slave_IO_Running: Yes/);
  assert.deepEqual(config.engine.slice(0, 1), ['bash']);
  assert.equal(role?.rules?.[0]?.resourceNames?.[0], 'shop-primary');
});
