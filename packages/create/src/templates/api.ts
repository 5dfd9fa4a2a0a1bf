// The files `regulon create api` adds for one kind: its schema, its
// controller (a ConfigMap it owns, a status that says what happened) and the
// test of both against a real control plane. A starting point the user edits:
// it already follows the rules Regulon's own controllers do (observedGeneration,
// a Ready condition, a phase derived from it, exactly the RBAC it uses).
import type { KindNames } from '../names.ts';

export function apiFiles(n: KindNames): Map<string, string> {
  return new Map([
    [`src/api/${n.kebab}.ts`, kindTs(n)],
    [`src/controllers/${n.kebab}.ts`, controllerTs(n)],
    [`src/controllers/${n.kebab}.test.ts`, controllerTestTs(n)],
  ]);
}

/** The lines `regulon create api` puts at the markers of src/kinds.ts and src/controllers.ts. */
export function registrations(n: KindNames) {
  return {
    kindImport: `import { ${n.kind} } from './api/${n.kebab}.ts';`,
    kind: `${n.kind},`,
    controllerImport: `import { ${n.camel}Controller } from './controllers/${n.kebab}.ts';`,
    controller: `${n.camel}Controller,`,
  };
}

const kindTs = (n: KindNames) => `import { Conditions, Phase, Type, defineKind } from '@regulon/crd';

export const ${n.kind} = defineKind({
  group: '${n.group}',
  version: '${n.version}',
  kind: '${n.kind}',
  plural: '${n.plural}',
  singular: '${n.singular}',
  scope: 'Namespaced',
  spec: Type.Object({
    message: Type.String({
      minLength: 1,
      maxLength: 1024,
      description: 'What the controller writes into the ConfigMap it owns.',
    }),
  }),
  status: Type.Object({
    observedGeneration: Type.Optional(Type.Integer()),
    conditions: Type.Optional(Conditions()),
    phase: Type.Optional(Phase()),
  }),
  printerColumns: [
    { name: 'Status', type: 'string', jsonPath: '.status.phase' },
    {
      name: 'Message',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].message',
      priority: 1,
    },
  ],
});
`;

const controllerTs = (n: KindNames) => `import { Kinds } from '@regulon/client';
import { setCondition } from '@regulon/runtime';
import { ${n.kind} } from '../api/${n.kebab}.ts';
import type { Controller } from '../controller.ts';

/** A ${n.kind} owns a ConfigMap of its name holding spec.message. */
export const ${n.camel}Controller: Controller = {
  name: '${n.kebab}',
  rbac: [
    // Reads come from the shared cache: list and watch, never get.
    { apiGroups: ['${n.group}'], resources: ['${n.plural}'], verbs: ['list', 'watch'] },
    { apiGroups: ['${n.group}'], resources: ['${n.plural}/status'], verbs: ['patch'] },
    // Children carry a controller ownerReference that blocks the owner's deletion.
    { apiGroups: ['${n.group}'], resources: ['${n.plural}/finalizers'], verbs: ['update'] },
    // Server-side apply is a patch, and create when it makes the object.
    { apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch', 'create', 'patch'] },
    // Warning Events when something stops a reconcile.
    { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  ],
  setup(mgr, { maxConcurrentReconciles }) {
    mgr
      .controller('${n.kebab}')
      .for(${n.kind})
      .owns(Kinds.ConfigMap)
      .withOptions({ maxConcurrentReconciles })
      .withStatus((obj, problem, ctx) => {
        // The API server sets a custom object's generation; 0 never matches one.
        const generation = obj.metadata.generation ?? 0;
        // Ready only when the ConfigMap the cache holds says what the spec asks.
        const served = ctx.get(Kinds.ConfigMap, obj.metadata.name)?.data?.['message'] === obj.spec.message;
        const ready = !problem && served;
        const conditions = setCondition(obj.status?.conditions, {
          type: 'Ready',
          status: ready ? 'True' : 'False',
          reason: problem?.reason ?? (ready ? 'Served' : 'Applying'),
          message: problem?.message ?? (ready ? 'the ConfigMap holds the message' : 'writing the ConfigMap'),
          observedGeneration: generation,
        });
        return {
          observedGeneration: generation,
          conditions,
          phase: ready ? 'Ready' : problem ? 'Degraded' : 'Provisioning',
        };
      })
      .reconcile(async (obj, ctx) => {
        await ctx.apply([
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: obj.metadata.name },
            data: { message: obj.spec.message },
          },
        ]);
      });
  },
};
`;

const controllerTestTs = (n: KindNames) => `import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Kinds, KubeClient } from '@regulon/client';
import { testManager, type Manager } from '@regulon/runtime';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import { ${n.kind} } from '../api/${n.kebab}.ts';
import { ${n.camel}Controller } from './${n.kebab}.ts';

let env: TestEnv;
let client: KubeClient;
let mgr: Manager;
let running: Promise<void>;

before(async () => {
  env = await start();
  await env.installCRDs([${n.kind}.crd()]);
  client = KubeClient.fromKubeConfig(env.kubeConfig);
  mgr = testManager(env.kubeConfig);
  ${n.camel}Controller.setup(mgr, { maxConcurrentReconciles: 1 });
  running = mgr.start();
});

after(async () => {
  mgr.stop();
  await running;
  client.close();
  await env.stop();
});

test('a ${n.kind} gets its ConfigMap, reports Ready for its generation, and follows a changed spec', async () => {
  const namespace = await env.newNamespace('${n.kebab}');
  const objects = client.resource(${n.kind});
  const configMaps = client.resource(Kinds.ConfigMap);
  await objects.create(${n.kind}.object({ metadata: { name: 'sample', namespace }, spec: { message: 'hello' } }));

  const readyFor = (generation: number) =>
    eventually(\`Ready for generation \${generation}\`, async () => {
      const { status } = await objects.get('sample', { namespace });
      const ready = status?.conditions?.find((c) => c.type === 'Ready');
      return status?.observedGeneration === generation && ready?.status === 'True' ? status : undefined;
    });
  assert.equal((await readyFor(1)).phase, 'Ready');
  const configMap = await configMaps.get('sample', { namespace });
  assert.equal(configMap.data?.['message'], 'hello');
  assert.equal(configMap.metadata?.ownerReferences?.[0]?.kind, '${n.kind}');

  await objects.patch('sample', { spec: { message: 'changed' } }, { type: 'merge', namespace });
  await readyFor(2);
  assert.equal((await configMaps.get('sample', { namespace })).data?.['message'], 'changed');
});

test('the API server refuses a ${n.kind} without a message, saying why', async () => {
  const namespace = await env.newNamespace('${n.kebab}-invalid');
  const refused = await client
    .resource(${n.kind})
    .create(${n.kind}.object({ metadata: { name: 'empty', namespace }, spec: { message: '' } }))
    .then(
      () => undefined,
      (err: Error) => err,
    );
  assert.match(refused?.message ?? 'created', /spec\\.message/);
});
`;
