// Against a real API server: what the CRD promises (defaults, enums, CEL
// rules, subresources, printer columns) only counts if kube-apiserver agrees.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { InvalidError, KubeClient, Kinds, resourcePath, type ResourceClient } from '@regulon/client';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import { Type } from 'typebox';
import { CronSchedule } from './cron.ts';
import {
  Conditions,
  EnvVars,
  GrowOnly,
  Immutable,
  Quantity,
  ResourceRequirements,
  WithRules,
} from './helpers.ts';
import { defineKind, type KindDefinition, type KindObject } from './kind.ts';
import { ChildNamingRules } from './names.ts';

const GizmoSpec = Type.Object({
  color: Type.Optional(
    Type.Union([Type.Literal('red'), Type.Literal('green'), Type.Literal('blue')], { default: 'red' }),
  ),
  serial: Immutable(Type.String({ minLength: 1, maxLength: 63 }), 'serial cannot be changed once set'),
  replicas: Type.Optional(Type.Integer({ minimum: 0, maximum: 10, default: 1 })),
  maxReplicas: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 })),
  storage: WithRules(Quantity(), {
    rule: 'quantity(self).compareTo(quantity(oldSelf)) >= 0',
    message: 'storage can only grow',
  }),
  cache: Type.Optional(GrowOnly(Quantity(), 'cache can only grow')),
  resources: Type.Optional(ResourceRequirements()),
  env: Type.Optional(EnvVars()),
  labels: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 63 }))),
  // default {} on the object, or its inner defaults only apply when the client sends it.
  tuning: Type.Optional(
    Type.Object(
      { maxConnections: Type.Optional(Type.Integer({ minimum: 1, default: 100 })) },
      { default: {} },
    ),
  ),
  extras: Type.Optional(Type.Object({ level: Type.Optional(Type.Integer({ default: 3 })) })),
  // Present in Static<> (readers always see it) but not required in the schema: defaulting fills it.
  mode: Type.Union([Type.Literal('fast'), Type.Literal('safe')], { default: 'fast' }),
  note: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
});

const Gizmo = defineKind({
  group: 'crdtest.regulon.dev',
  version: 'v1alpha1',
  kind: 'Gizmo',
  plural: 'gizmos',
  singular: 'gizmo',
  shortNames: ['gz'],
  categories: ['regulon-test'],
  scope: 'Namespaced',
  spec: GizmoSpec,
  status: Type.Object({
    replicas: Type.Optional(Type.Integer({ minimum: 0 })),
    selector: Type.Optional(Type.String()),
    conditions: Type.Optional(Conditions()),
  }),
  validations: [
    {
      rule: '!has(self.maxReplicas) || self.replicas <= self.maxReplicas',
      message: 'replicas must not exceed maxReplicas',
      fieldPath: '.replicas',
    },
  ],
  scale: {
    specReplicasPath: '.spec.replicas',
    statusReplicasPath: '.status.replicas',
    labelSelectorPath: '.status.selector',
  },
  printerColumns: [
    { name: 'Color', type: 'string', jsonPath: '.spec.color' },
    { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
    { name: 'Storage', type: 'string', jsonPath: '.spec.storage', priority: 1 },
  ],
});
type Gizmo = KindObject<typeof Gizmo>;

// A composite kind embedding the Gizmo spec schema as a template, as MyApp
// embeds the Database and Cache specs.
const Fleet = defineKind({
  group: 'crdtest.regulon.dev',
  version: 'v1alpha1',
  kind: 'Fleet',
  plural: 'fleets',
  singular: 'fleet',
  scope: 'Cluster',
  spec: Type.Object({ template: GizmoSpec, size: Type.Integer({ minimum: 0, maximum: 100 }) }),
  status: Type.Object({}),
});

interface Table {
  columnDefinitions: Array<{ name: string }>;
  rows: Array<{ cells: unknown[] }>;
}

/** The API server's message for a rejected write, or a failure if it was accepted. */
async function rejection(write: Promise<unknown>): Promise<string> {
  try {
    await write;
  } catch (err) {
    assert.ok(err instanceof InvalidError, `expected InvalidError, got ${String(err)}`);
    return err.message;
  }
  assert.fail('the API server accepted the write');
}

/**
 * Until a CRD's changed rules are enforced: the API server acknowledges the update and then
 * rebuilds the kind's validation a moment later, and says nothing when it has. `write` is a dry
 * run that the new rules refuse.
 */
function enforced(what: string, write: () => Promise<unknown>): Promise<true> {
  return eventually(
    `${what} enforced`,
    async () => {
      try {
        await write();
        return false;
      } catch (err) {
        if (err instanceof InvalidError) return true;
        throw err;
      }
    },
    10_000,
    100,
  );
}

describe('a kind installed on a real API server', () => {
  let env: TestEnv;
  let client: KubeClient;
  let gizmos: ResourceClient<Gizmo>;
  let ns: string;
  let n = 0;
  const create = (spec: Partial<Gizmo['spec']>) =>
    gizmos.create(
      Gizmo.object({
        metadata: { name: `g${++n}`, namespace: ns },
        // mode left out on purpose (see GizmoSpec).
        spec: { serial: 'SN-1', storage: '1Gi', ...spec } as Gizmo['spec'],
      }),
    );

  before(async () => {
    env = await start();
    await env.installCRDs([Gizmo.crd(), Fleet.crd()]);
    ns = await env.newNamespace('crd');
    client = KubeClient.fromKubeConfig(env.kubeConfig);
    gizmos = client.resource<Gizmo>(Gizmo.type);
  });

  after(async () => {
    client?.close();
    await env?.stop();
  });

  test('defaults are applied by the API server', async () => {
    const g = await create({});
    assert.equal(g.spec.color, 'red');
    assert.equal(g.spec.replicas, 1);
    assert.equal(g.spec.mode, 'fast');
    assert.equal(g.apiVersion, 'crdtest.regulon.dev/v1alpha1');
    assert.deepEqual(g.spec.tuning, { maxConnections: 100 });
    assert.equal(g.spec.extras, undefined);
    const withExtras = await create({ extras: {} });
    assert.deepEqual(withExtras.spec.extras, { level: 3 });
    const withNull = await create({ note: null });
    assert.equal(withNull.spec.note, null);
  });

  test('helper shapes are accepted: quantities in both forms, env vars checked by their rule', async () => {
    const g = await create({
      resources: { limits: { cpu: '1500m', memory: '1Gi' }, requests: { cpu: 1 } },
      env: [
        { name: 'A', value: 'x' },
        { name: 'B', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
      ],
    });
    assert.deepEqual(g.spec.resources?.requests, { cpu: 1 });
    const message = await rejection(
      create({ env: [{ name: 'A', value: 'x', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] }),
    );
    assert.match(message, /spec\.env: Invalid value: .*an env var has either value or valueFrom, not both/);
  });

  test('an embedded spec schema keeps its defaults and rules inside another kind', async () => {
    const fleets = client.resource<KindObject<typeof Fleet>>(Fleet.type);
    const name = `fleet-${ns}`;
    const f = await fleets.create(
      Fleet.object({
        metadata: { name },
        spec: { size: 2, template: { serial: 'T-1', storage: '1Gi', mode: 'safe' } },
      }),
    );
    try {
      assert.equal(f.spec.template.color, 'red');
      assert.equal(f.spec.template.replicas, 1);
      const message = await rejection(
        fleets.patch(name, { spec: { template: { serial: 'T-2' } } }, { type: 'merge' }),
      );
      assert.match(
        message,
        /spec\.template\.serial: Invalid value: "T-2": serial cannot be changed once set/,
      );
    } finally {
      await fleets.delete(name);
    }
  });

  test('an enum violation is rejected with the allowed values', async () => {
    const message = await rejection(create({ color: 'purple' as 'red' }));
    assert.match(
      message,
      /spec\.color: Unsupported value: "purple": supported values: "red", "green", "blue"/,
    );
  });

  test('integer bounds are enforced', async () => {
    const message = await rejection(create({ replicas: 11 }));
    assert.match(
      message,
      /spec\.replicas: Invalid value: 11: spec\.replicas in body should be less than or equal to 10/,
    );
  });

  test('a quantity that does not parse is rejected by the pattern', async () => {
    const message = await rejection(create({ storage: '1 gig' }));
    assert.match(message, /spec\.storage: Invalid value: "1 gig": spec\.storage in body should match/);
  });

  test('an immutable field cannot change, with our message', async () => {
    const g = await create({});
    const message = await rejection(
      gizmos.patch(g.metadata.name!, { spec: { serial: 'SN-2' } }, { type: 'merge', namespace: ns }),
    );
    assert.match(message, /spec\.serial: Invalid value: "SN-2": serial cannot be changed once set/);
    const same = await gizmos.patch(
      g.metadata.name!,
      { spec: { color: 'blue' } },
      { type: 'merge', namespace: ns },
    );
    assert.equal(same.spec.color, 'blue');
  });

  test('a grow-only quantity cannot shrink, and can grow', async () => {
    const g = await create({ storage: '2Gi', cache: 512 });
    const patch = (spec: Partial<Gizmo['spec']>) =>
      gizmos.patch(g.metadata.name!, { spec }, { type: 'merge', namespace: ns });
    assert.match(
      await rejection(patch({ storage: '1Gi' })),
      /spec\.storage: Invalid value: "1Gi": storage can only grow/,
    );
    assert.equal((await patch({ storage: '3Gi' })).spec.storage, '3Gi');
    // GrowOnly() also copes with the integer form (bytes) on either side.
    assert.match(await rejection(patch({ cache: '256' })), /cache can only grow/);
    assert.equal((await patch({ cache: '1Ki' })).spec.cache, '1Ki');
    assert.match(await rejection(patch({ cache: 1000 })), /cache can only grow/);
  });

  test('quantity(self) on a Quantity strands an object once a number is stored; GrowOnly() does not', async () => {
    const g = await create({ storage: 1073741824, cache: 1024 });
    const name = g.metadata.name!;
    // Every later write runs the transition rule, even a status write that leaves spec alone,
    // and the rule cannot evaluate an int: the object can no longer be changed, only deleted.
    const stuck = /spec\.storage: .*no such overload: quantity\(int\).*storage can only grow/;
    assert.match(
      await rejection(gizmos.patchStatus(name, { status: { replicas: 0 } }, { namespace: ns })),
      stuck,
    );
    assert.match(
      await rejection(gizmos.patch(name, { spec: { storage: '2Gi' } }, { type: 'merge', namespace: ns })),
      stuck,
    );
    await gizmos.delete(name, { namespace: ns });
  });

  test('a cross-field rule on spec is enforced, with its field path', async () => {
    const message = await rejection(create({ replicas: 5, maxReplicas: 3 }));
    assert.match(message, /spec\.replicas: Invalid value: replicas must not exceed maxReplicas/);
    const g = await create({ replicas: 3, maxReplicas: 3 });
    assert.equal(g.spec.replicas, 3);
  });

  test('the status subresource takes status writes and the main resource ignores them', async () => {
    const g = await gizmos.create(
      Gizmo.object({
        metadata: { name: 'with-status', namespace: ns },
        spec: { serial: 'SN-9', storage: '1Gi', mode: 'safe' },
        status: { replicas: 7 },
      }),
    );
    assert.equal(g.status, undefined);
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const condition = {
      type: 'Ready',
      status: 'True' as const,
      reason: 'AllGood',
      message: 'ready',
      lastTransitionTime: now,
    };
    const updated = await gizmos.patchStatus(
      'with-status',
      { status: { replicas: 1, selector: 'app=gizmo', conditions: [condition] } },
      { namespace: ns },
    );
    assert.equal(updated.status?.replicas, 1);
    assert.equal(updated.status?.conditions?.[0]?.reason, 'AllGood');
    // Conditions() is a list-map keyed by type: two entries of one type are refused.
    const message = await rejection(
      gizmos.patchStatus(
        'with-status',
        { status: { conditions: [condition, condition] } },
        { namespace: ns },
      ),
    );
    assert.match(message, /status\.conditions\[1\]: Duplicate value: \{"type":"Ready"\}/);
  });

  test('the scale subresource reads and writes spec.replicas', async () => {
    await create({ replicas: 2 });
    const name = `g${n}`;
    await gizmos.patchStatus(name, { status: { replicas: 2, selector: 'app=gizmo' } }, { namespace: ns });
    const path = resourcePath(Gizmo.type, ns, name, 'scale');
    const scale = await client.request<{
      kind: string;
      spec: { replicas: number };
      status: { replicas: number; selector: string };
    }>({ method: 'GET', path });
    assert.equal(scale.kind, 'Scale');
    assert.deepEqual(scale.spec, { replicas: 2 });
    assert.deepEqual(scale.status, { replicas: 2, selector: 'app=gizmo' });
    await gizmos.patch(
      name,
      { spec: { replicas: 4 } },
      { type: 'merge', namespace: ns, subresource: 'scale' },
    );
    assert.equal((await gizmos.get(name, { namespace: ns })).spec.replicas, 4);
  });

  test('printer columns, with Age, are installed and served as a table', async () => {
    const crds = client.resource(Kinds.CustomResourceDefinition);
    const installed = await crds.get(Gizmo.crdName);
    const version = installed.spec.versions[0];
    assert.deepEqual(
      version?.additionalPrinterColumns?.map((c) => c.name),
      ['Color', 'Replicas', 'Storage', 'Age'],
    );
    assert.deepEqual(installed.spec.names.shortNames, ['gz']);
    const g = await create({ color: 'green' });
    const table = await client.request<Table>({
      method: 'GET',
      path: resourcePath(Gizmo.type, ns, g.metadata.name),
      accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
    });
    assert.deepEqual(
      table.columnDefinitions.map((c) => c.name),
      ['Name', 'Color', 'Replicas', 'Storage', 'Age'],
    );
    assert.deepEqual(table.rows[0]?.cells.slice(0, 4), [g.metadata.name, 'green', 1, '1Gi']);
  });

  test('resources: a request above its limit, an unknown resource and a quantity not above zero are refused', async () => {
    const refused = async (resources: Record<string, Record<string, string | number>>) =>
      rejection(create({ resources }));
    assert.match(
      await refused({ limits: { memory: '1Gi' }, requests: { memory: '2Gi' } }),
      /spec\.resources\.requests: Invalid value: requests\.memory \(2Gi\) must not be greater than limits\.memory \(1Gi\)/,
    );
    // The int form is compared as a quantity too: 2 cpus against 1500 millicpus.
    assert.match(
      await refused({ limits: { cpu: '1500m' }, requests: { cpu: 2 } }),
      /requests\.cpu \(2\) must not be greater than limits\.cpu \(1500m\)/,
    );
    assert.match(
      await refused({ requests: { gpu: '1' } }),
      /spec\.resources\.requests: Invalid value: unknown resource "gpu": use cpu, memory, ephemeral-storage/,
    );
    assert.match(
      await refused({ limits: { cpu: 0 } }),
      /spec\.resources\.limits\[cpu\]: Invalid value: 0: must be greater than zero/,
    );
    // Equal is fine, and a request with no limit beside it is not compared.
    await create({ resources: { limits: { cpu: 1 }, requests: { cpu: '1000m', memory: '64Gi' } } });
  });

  test('a name rule on the whole object checks creates only, so an object stored before it stays writable', async () => {
    const def = {
      group: 'crdtest.regulon.dev',
      version: 'v1alpha1',
      kind: 'Named',
      plural: 'nameds',
      singular: 'named',
      scope: 'Namespaced',
      spec: Type.Object({ size: Type.Integer() }),
      status: Type.Object({ seen: Type.Optional(Type.Integer()) }),
    } satisfies KindDefinition;
    const Before = defineKind(def);
    const named = () => client.resource<KindObject<typeof Before>>(Before.type);
    const object = (name: string) => Before.object({ metadata: { name, namespace: ns }, spec: { size: 1 } });
    await env.installCRDs([Before.crd()]);
    await named().create(object('stored.before'));

    await env.installCRDs([
      defineKind({
        ...def,
        objectValidations: ChildNamingRules({ kind: 'Named', maxLength: 20, children: 'Services' }),
      }).crd(),
    ]);
    await enforced('the name rule', () => named().create(object('probe.dots'), { dryRun: true }));
    assert.match(
      await rejection(named().create(object('made.after'))),
      /metadata: Invalid value: name "made\.after" cannot be used: a Named names its Services after itself, and a Service name must be a DNS-1035 label/,
    );
    assert.match(
      await rejection(named().create(object('a-name-of-21-letters'.padEnd(21, 'x')))),
      /metadata: Invalid value: name "a-name-of-21-lettersx" is too long: a Named name is at most 20 characters/,
    );
    await named().patch('stored.before', { spec: { size: 2 } }, { type: 'merge', namespace: ns });
    await named().patchStatus('stored.before', { status: { seen: 2 } }, { type: 'merge', namespace: ns });

    // The same check as a plain rule runs on every write, the status writes of
    // its controller too: the object stored before it could never be reported on.
    await env.installCRDs([
      defineKind({
        ...def,
        objectValidations: [
          { rule: "!self.metadata.name.contains('.')", message: 'no dots', fieldPath: '.metadata' },
        ],
      }).crd(),
    ]);
    await enforced('the plain rule', () =>
      named().patchStatus(
        'stored.before',
        { status: { seen: 3 } },
        { type: 'merge', namespace: ns, dryRun: true },
      ),
    );
    assert.match(
      await rejection(
        named().patchStatus('stored.before', { status: { seen: 3 } }, { type: 'merge', namespace: ns }),
      ),
      /metadata: Invalid value: no dots/,
    );
  });

  test('a CronSchedule takes the schedules a CronJob takes, and refuses the ones it refuses', async () => {
    const Timer = defineKind({
      group: 'crdtest.regulon.dev',
      version: 'v1alpha1',
      kind: 'Timer',
      plural: 'timers',
      singular: 'timer',
      scope: 'Namespaced',
      spec: Type.Object({ schedule: CronSchedule() }),
      status: Type.Object({}),
    });
    await env.installCRDs([Timer.crd()]);
    const accepted = async (write: Promise<unknown>) =>
      write.then(
        () => true,
        (err: unknown) => {
          if (err instanceof InvalidError) return false;
          throw err;
        },
      );
    const cronJob = (schedule: string) => ({
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'probe', namespace: ns },
      spec: {
        schedule,
        jobTemplate: {
          spec: {
            template: {
              spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] },
            },
          },
        },
      },
    });
    // Refused here on purpose, though the CronJob's parser takes them: schedules nobody means.
    const stricter = ['1,,2 * * * *', '*-5 * * * *', '@every 500ms', '@every -1h'];
    const schedules = [
      ...[
        '* * * * *',
        '*/5 * * * *',
        '0 3 * * *',
        '0 0 29 2 *',
        '0 0 31 2 *',
        '59 23 31 12 6',
        '0 3 ? * MON-FRI',
      ],
      ...['0,30 9-17/2 * * 1-5', '0 0 1 jan,JUL *', '5/15 * * * *', '+5 003 * * *', '0 3 * * sun-sat'],
      ...['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly', '@every 1h30m'],
      ...['60 * * * *', '0 24 * * *', '0 0 0 * *', '0 0 32 * *', '0 0 * 0 *', '0 0 * 13 *', '0 0 * * 7'],
      ...['0 0 * * sunday', '0 0 L * *', '0 0 * * 1#2', '*/0 * * * *', '30-10 * * * *', '0 0 * dec-jan *'],
      ...['0 3 * *', '0 0 3 * * *', '@reboot', '@Daily', '@daily ', 'TZ=UTC 0 3 * * *', '-1 * * * *'],
      ...stricter,
    ];
    const timers = client.resource<KindObject<typeof Timer>>(Timer.type);
    const cronJobs = client.resource(Kinds.CronJob);
    const differ: string[] = [];
    for (const schedule of schedules) {
      const ours = await accepted(
        timers.create(Timer.object({ metadata: { name: 'probe', namespace: ns }, spec: { schedule } }), {
          dryRun: true,
        }),
      );
      const theirs = await accepted(cronJobs.create(cronJob(schedule), { dryRun: true }));
      if (ours !== theirs) differ.push(`${JSON.stringify(schedule)}: ours ${ours}, CronJob ${theirs}`);
    }
    assert.deepEqual(
      differ,
      stricter.map((s) => `${JSON.stringify(s)}: ours false, CronJob true`),
    );
  });

  test('a CEL rule over unbounded strings and lists exceeds the cost budget and the CRD is refused', async () => {
    const Unbounded = defineKind({
      group: 'crdtest.regulon.dev',
      version: 'v1',
      kind: 'Unbounded',
      plural: 'unboundeds',
      singular: 'unbounded',
      scope: 'Namespaced',
      spec: Type.Object({ hosts: Type.Array(Type.String()) }),
      status: Type.Object({}),
      validations: [
        { rule: "self.hosts.all(h, self.hosts.exists_one(o, o == h) && h.matches('^[a-z.]+$'))" },
      ],
    });
    await assert.rejects(env.installCRDs([Unbounded.crd()]), /estimated rule cost exceeds budget/);
    const Bounded = defineKind({
      ...Unbounded.definition,
      spec: Type.Object({ hosts: Type.Array(Type.String({ maxLength: 253 }), { maxItems: 16 }) }),
    });
    await env.installCRDs([Bounded.crd()]);
  });
});
