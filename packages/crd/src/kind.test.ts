import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { Type } from 'typebox';
import { Conditions, Immutable, Quantity } from './helpers.ts';
import { defineKind, type KindDefinition, type KindObject, type KindSpec, type KindStatus } from './kind.ts';
import { SchemaError, type JSONSchemaProps } from './schema.ts';
import { crdYaml } from './yaml.ts';

const DatabaseSpec = Type.Object(
  {
    engine: Immutable(Type.Union([Type.Literal('postgres'), Type.Literal('mysql')]), 'engine is immutable'),
    version: Type.String({ maxLength: 16 }),
    replicas: Type.Optional(Type.Integer({ minimum: 1, maximum: 5, default: 1 })),
    storage: Quantity({ default: '1Gi' }),
  },
  { $id: 'DatabaseSpec' },
);

const definition = {
  group: 'example.regulon.dev',
  version: 'v1alpha1',
  kind: 'Database',
  plural: 'databases',
  singular: 'database',
  shortNames: ['db'],
  categories: ['regulon'],
  scope: 'Namespaced',
  spec: DatabaseSpec,
  status: Type.Object({
    replicas: Type.Optional(Type.Integer()),
    phase: Type.Optional(Type.String()),
    conditions: Type.Optional(Conditions()),
  }),
  printerColumns: [
    { name: 'Engine', type: 'string', jsonPath: '.spec.engine' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  ],
  scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' },
  validations: [
    { rule: "self.engine != 'mysql' || self.replicas <= 3", message: 'mysql runs at most 3 replicas' },
  ],
} satisfies KindDefinition;

const Database = defineKind(definition);

/** Every own key, enumerable or not, symbols included, of every nested object. */
function allKeys(value: unknown, out = new Set<string>()): Set<string> {
  if (typeof value !== 'object' || value === null) return out;
  for (const key of Reflect.ownKeys(value)) {
    out.add(String(key));
    allKeys((value as Record<PropertyKey, unknown>)[key], out);
  }
  return out;
}

describe('defineKind', () => {
  test('type and apiVersion address the custom resource', () => {
    assert.deepEqual(Database.type, {
      group: 'example.regulon.dev',
      version: 'v1alpha1',
      kind: 'Database',
      plural: 'databases',
      namespaced: true,
    });
    assert.equal(Database.apiVersion, 'example.regulon.dev/v1alpha1');
    assert.equal(Database.crdName, 'databases.example.regulon.dev');
    assert.equal(defineKind({ ...definition, scope: 'Cluster' }).type.namespaced, false);
  });

  test('the CRD has names, scope, one served storage version and both subresources', () => {
    const crd = Database.crd();
    assert.equal(crd.apiVersion, 'apiextensions.k8s.io/v1');
    assert.equal(crd.kind, 'CustomResourceDefinition');
    assert.deepEqual(crd.metadata, { name: 'databases.example.regulon.dev' });
    assert.equal(crd.spec.group, 'example.regulon.dev');
    assert.equal(crd.spec.scope, 'Namespaced');
    assert.deepEqual(crd.spec.names, {
      kind: 'Database',
      listKind: 'DatabaseList',
      plural: 'databases',
      singular: 'database',
      shortNames: ['db'],
      categories: ['regulon'],
    });
    assert.equal(crd.spec.versions.length, 1);
    const [v] = crd.spec.versions;
    assert.equal(v?.name, 'v1alpha1');
    assert.equal(v?.served, true);
    assert.equal(v?.storage, true);
    assert.deepEqual(v?.subresources, {
      status: {},
      scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' },
    });
  });

  test('status subresource always; no scale unless asked', () => {
    const { scale: _scale, ...noScale } = definition;
    assert.deepEqual(defineKind(noScale).crd().spec.versions[0]?.subresources, { status: {} });
  });

  test('printer columns end with Age, unless one is already called Age', () => {
    const cols = Database.crd().spec.versions[0]?.additionalPrinterColumns;
    assert.deepEqual(
      cols?.map((c) => c.name),
      ['Engine', 'Phase', 'Ready', 'Age'],
    );
    assert.deepEqual(cols?.at(-1), { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' });
    const custom = defineKind({
      ...definition,
      printerColumns: [{ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', priority: 1 }],
    });
    assert.deepEqual(custom.crd().spec.versions[0]?.additionalPrinterColumns, [
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', priority: 1 },
    ]);
  });

  test('the openAPIV3Schema is structural, without TypeBox internals, and requires spec', () => {
    const schema = Database.crd().spec.versions[0]?.schema.openAPIV3Schema as JSONSchemaProps;
    const keys = allKeys(schema);
    for (const internal of ['$id', '~kind', '~optional', 'const', 'patternProperties'])
      assert.ok(!keys.has(internal), internal);
    assert.deepEqual(Object.getOwnPropertySymbols(schema), []);
    assert.equal(schema.type, 'object');
    assert.deepEqual(schema.required, ['spec']);
    assert.deepEqual(Object.keys(schema.properties ?? {}), [
      'apiVersion',
      'kind',
      'metadata',
      'spec',
      'status',
    ]);
    assert.deepEqual(schema.properties?.['metadata'], { type: 'object' });
    const spec = schema.properties?.['spec'];
    // storage has a default, so the API server never needs it from a writer.
    assert.deepEqual(spec?.required, ['engine', 'version']);
    assert.equal(spec?.properties?.['replicas']?.default, 1);
    assert.equal(spec?.properties?.['storage']?.default, '1Gi');
    assert.deepEqual(spec?.properties?.['engine'], {
      enum: ['postgres', 'mysql'],
      type: 'string',
      'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'engine is immutable' }],
    });
    assert.deepEqual(spec?.['x-kubernetes-validations'], [
      { rule: "self.engine != 'mysql' || self.replicas <= 3", message: 'mysql runs at most 3 replicas' },
    ]);
  });

  test('objectValidations go on the root schema, where a rule can read metadata.name', () => {
    const rule = {
      rule: "!self.metadata.name.contains('.')",
      message: 'no dots',
      fieldPath: '.metadata',
      optionalOldSelf: false,
    };
    const root = defineKind({ ...definition, objectValidations: [rule] }).schema();
    assert.deepEqual(root['x-kubernetes-validations'], [rule]);
    // Only on the root: the spec keeps just its own rules.
    assert.equal(root.properties?.['spec']?.['x-kubernetes-validations']?.length, 1);
    assert.equal(Database.schema()['x-kubernetes-validations'], undefined);
    assert.throws(
      () => defineKind({ ...definition, objectValidations: [{ rule: 'true', severity: 'x' } as never] }),
      (e: unknown) => e instanceof SchemaError && /unknown key "severity"/.test(e.message),
    );
  });

  test('crd() and schema() return copies', () => {
    const a = Database.crd();
    a.spec.names.kind = 'Changed';
    a.spec.versions[0]!.schema.openAPIV3Schema.properties = {};
    assert.equal(Database.crd().spec.names.kind, 'Database');
    assert.deepEqual(Database.schema(), Database.crd().spec.versions[0]?.schema.openAPIV3Schema);
  });

  test('object() fills apiVersion and kind; KindObject types spec and status from the schemas', () => {
    const db: KindObject<typeof Database> = Database.object({
      metadata: { name: 'orders', namespace: 'shop' },
      spec: { engine: 'postgres', version: '16', storage: '10Gi' },
    });
    assert.equal(db.apiVersion, 'example.regulon.dev/v1alpha1');
    assert.equal(db.kind, 'Database');
    const spec: KindSpec<typeof Database> = db.spec;
    // @ts-expect-error engine is a closed enum
    const bad: KindSpec<typeof Database> = { ...spec, engine: 'oracle' };
    assert.ok(bad);
    const status: KindStatus<typeof Database> = { phase: 'Ready' };
    assert.ok(status);
  });

  test('names and paths the API server would refuse or silently ignore throw', () => {
    const refuse = (patch: Partial<KindDefinition>, pattern: RegExp) =>
      assert.throws(
        () => defineKind({ ...definition, ...patch }),
        (e: unknown) => e instanceof SchemaError && pattern.test(e.message),
      );
    refuse({ group: 'nodots' }, /group/);
    refuse({ version: '1.0' }, /version/);
    refuse({ kind: 'database' }, /UpperCamelCase/);
    refuse({ plural: 'Databases' }, /plural/);
    refuse({ shortNames: ['d_b'] }, /shortName/);
    refuse({ spec: Type.String() }, /spec must be a Type.Object/);
    refuse({ printerColumns: [{ name: 'Eng', type: 'string', jsonPath: '.spec.engin' }] }, /names no field/);
    refuse({ printerColumns: [{ name: 'R', type: 'integer', jsonPath: '.spec.version' }] }, /is a string/);
    refuse(
      { scale: { specReplicasPath: '.spec.version', statusReplicasPath: '.status.replicas' } },
      /specReplicasPath .spec.version is a string/,
    );
    refuse(
      { scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.spec.replicas' } },
      /\.status\./,
    );
    refuse({ validations: [{ rule: '' }] }, /needs a rule/);
  });
});

describe('crdYaml', () => {
  test('is deterministic and starts with a do-not-edit header', () => {
    const a = crdYaml(Database);
    assert.equal(a, crdYaml(Database));
    assert.equal(a, crdYaml(defineKind(definition)));
    assert.match(a.split('\n')[0] ?? '', /^# Code generated by @regulon\/crd .*DO NOT EDIT\.$/);
    assert.deepEqual(parse(a), Database.crd());
  });

  test('does not change when fields or options are declared in another order', () => {
    const reordered = defineKind({
      ...definition,
      spec: Type.Object({
        storage: Quantity({ default: '1Gi' }),
        replicas: Type.Optional(Type.Integer({ default: 1, maximum: 5, minimum: 1 })),
        engine: Immutable(
          Type.Union([Type.Literal('postgres'), Type.Literal('mysql')]),
          'engine is immutable',
        ),
        version: Type.String({ maxLength: 16 }),
      }),
    });
    const strip = (y: string) => y.replace(/^ *- (engine|version|storage)\n/gm, '');
    // Only the order of `required` follows the declaration.
    assert.equal(strip(crdYaml(reordered)), strip(crdYaml(Database)));
  });

  test('keeps long patterns and rules on one line', () => {
    const y = crdYaml(Database);
    assert.ok(y.includes(`rule: self.engine != 'mysql' || self.replicas <= 3\n`));
    assert.ok(y.split('\n').some((l) => l.trimStart().startsWith('pattern: ^(\\+|-)?')));
  });
});
