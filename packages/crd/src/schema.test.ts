import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Type, type Static } from 'typebox';
import {
  Conditions,
  ContainerImage,
  EnvVars,
  GrowOnly,
  IMAGE_PATTERN,
  Immutable,
  ObjectName,
  Quantity,
  QUANTITY_PATTERN,
  ResourceRequirements,
  WithRules,
} from './helpers.ts';
import { ChildNamingRules } from './names.ts';
import { SchemaError, toStructural, type JSONSchemaProps } from './schema.ts';

const TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);

/** Every node is typed (or int-or-string / preserve-unknown-fields) and carries no TypeBox internals. */
function assertStructural(s: JSONSchemaProps, path = ''): void {
  assert.deepEqual(Object.getOwnPropertySymbols(s), [], `${path}: symbol keys`);
  for (const key of Object.getOwnPropertyNames(s)) {
    assert.ok(!key.startsWith('~') && !key.startsWith('$'), `${path}: TypeBox key ${key}`);
    assert.ok(!['const', 'patternProperties', 'allOf', 'oneOf', 'not'].includes(key), `${path}: ${key}`);
  }
  if (s['x-kubernetes-int-or-string']) {
    assert.deepEqual(s.anyOf, [{ type: 'integer' }, { type: 'string' }], path);
    assert.equal(s.type, undefined, path);
  } else if (!s['x-kubernetes-preserve-unknown-fields']) {
    assert.ok(s.type && TYPES.has(s.type), `${path}: type ${String(s.type)}`);
    assert.equal(s.anyOf, undefined, path);
  }
  for (const [name, p] of Object.entries(s.properties ?? {})) assertStructural(p, `${path}.${name}`);
  if (s.items) assertStructural(s.items, `${path}[]`);
  if (s.additionalProperties) assertStructural(s.additionalProperties, `${path}{}`);
}

describe('toStructural', () => {
  test('literal unions and Type.Enum become a typed enum', () => {
    const s = toStructural(
      Type.Object({
        engine: Type.Union([Type.Literal('postgres'), Type.Literal('mysql')], { default: 'postgres' }),
        tier: Type.Enum(['small', 'large']),
        port: Type.Union([Type.Literal(5432), Type.Literal(3306)]),
        ratio: Type.Literal(0.5),
        on: Type.Literal(true),
      }),
    );
    assert.deepEqual(s.properties?.['engine'], {
      default: 'postgres',
      enum: ['postgres', 'mysql'],
      type: 'string',
    });
    assert.deepEqual(s.properties?.['tier'], { enum: ['small', 'large'], type: 'string' });
    assert.deepEqual(s.properties?.['port'], { enum: [5432, 3306], type: 'integer' });
    assert.deepEqual(s.properties?.['ratio'], { enum: [0.5], type: 'number' });
    assert.deepEqual(s.properties?.['on'], { enum: [true], type: 'boolean' });
    assertStructural(s);
  });

  test('optional fields are left out of required; T | null is nullable', () => {
    const s = toStructural(
      Type.Object({
        a: Type.String(),
        b: Type.Optional(Type.Integer()),
        c: Type.Union([Type.String(), Type.Null()]),
      }),
    );
    assert.deepEqual(s.required, ['a', 'c']);
    assert.deepEqual(s.properties?.['c'], { nullable: true, type: 'string' });
  });

  test('a defaulted field is not required in the schema, yet stays present in the static type', () => {
    const obj = Type.Object({
      name: Type.String(),
      port: Type.Integer({ default: 8080 }),
      size: Quantity({ default: '1Gi' }),
      tuning: Type.Object({ level: Type.Integer({ default: 3 }) }, { default: {} }),
    });
    const s = toStructural(obj);
    assert.deepEqual(s.required, ['name']);
    assert.equal(s.properties?.['port']?.default, 8080);
    assert.equal(s.properties?.['tuning']?.required, undefined);
    // Readers always get it (the API server defaults on every read): not `port?: number`.
    const read: Static<typeof obj> = { name: 'a', port: 8080, size: '1Gi', tuning: { level: 3 } };
    const port: number = read.port;
    assert.equal(port, 8080);
  });

  test('records become additionalProperties maps; unknown becomes preserve-unknown-fields', () => {
    const s = toStructural(
      Type.Object({
        labels: Type.Record(Type.String(), Type.String()),
        raw: Type.Unknown(),
        any: Type.Any(),
      }),
    );
    assert.deepEqual(s.properties?.['labels'], { additionalProperties: { type: 'string' }, type: 'object' });
    assert.deepEqual(s.properties?.['raw'], { 'x-kubernetes-preserve-unknown-fields': true });
    assert.deepEqual(s.properties?.['any'], { 'x-kubernetes-preserve-unknown-fields': true });
    assertStructural(s);
  });

  test('numeric exclusive bounds become OpenAPI v3.0 booleans', () => {
    assert.deepEqual(toStructural(Type.Number({ exclusiveMinimum: 0, maximum: 1 })), {
      exclusiveMinimum: true,
      maximum: 1,
      minimum: 0,
      type: 'number',
    });
  });

  test('TypeBox-only keys are stripped, Kubernetes extensions kept, keys sorted', () => {
    const s = toStructural(
      Type.Object(
        {
          z: Type.String({ $id: 'Z', examples: ['zz'] }),
          a: Type.String({ 'x-kubernetes-map-type': 'atomic' }),
        },
        { $id: 'Thing', description: 'a thing', 'x-kubernetes-preserve-unknown-fields': false },
      ),
    );
    assert.deepEqual(s, {
      description: 'a thing',
      properties: {
        a: { type: 'string', 'x-kubernetes-map-type': 'atomic' },
        z: { example: 'zz', type: 'string' },
      },
      required: ['z', 'a'],
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': false,
    });
    assert.deepEqual(Object.keys(s.properties ?? {}), ['a', 'z']);
  });

  test('rules are allowed at any node, with a fixed key order', () => {
    const s = toStructural(
      Type.Object(
        {
          items: Type.Array(Type.String({ maxLength: 10 }), {
            maxItems: 3,
            'x-kubernetes-validations': [{ rule: 'size(self) > 0' }],
          }),
        },
        { 'x-kubernetes-validations': [{ message: 'm', rule: 'true', reason: 'FieldValueForbidden' }] },
      ),
    );
    assert.deepEqual(s['x-kubernetes-validations'], [
      { rule: 'true', message: 'm', reason: 'FieldValueForbidden' },
    ]);
    assert.deepEqual(Object.keys(s['x-kubernetes-validations']?.[0] ?? {}), ['rule', 'message', 'reason']);
    assert.deepEqual(s.properties?.['items']?.['x-kubernetes-validations'], [{ rule: 'size(self) > 0' }]);
  });

  test('shapes the API server would refuse are refused here, with the path', () => {
    const refuse = (schema: unknown, pattern: RegExp) =>
      assert.throws(
        () => toStructural(Type.Object({ f: schema as never })),
        (e: unknown) => e instanceof SchemaError && e.path === '.f' && pattern.test(e.message),
      );
    refuse(Type.Union([Type.String(), Type.Integer({ minimum: 1 })]), /int-or-string members must be bare/);
    refuse(
      Type.Union([Type.Object({ a: Type.String() }), Type.Object({ b: Type.String() })]),
      /not structural/,
    );
    refuse(
      Type.Intersect([Type.Object({ a: Type.String() }), Type.Object({ b: Type.String() })]),
      /Type\.Evaluate/,
    );
    refuse(Type.Tuple([Type.String(), Type.Integer()]), /tuples/);
    refuse(Type.Ref('Other'), /"\$ref" is not allowed/);
    refuse(Type.Array(Type.String(), { uniqueItems: true }), /x-kubernetes-list-type/);
    refuse(Type.Record(Type.String({ pattern: '^[a-z]+$' }), Type.String()), /patternProperties/);
    refuse(Type.Null(), /null/);
    refuse(Type.Union([Type.Literal('a'), Type.Null()]), /nullable enum/);
    refuse(Type.BigInt(), /cannot be stored/);
    refuse(Type.String({ 'x-custom': 1 }), /"x-custom" is not a Kubernetes/);
    refuse(
      Type.String({ 'x-kubernetes-validations': [{ rule: 'true', severity: 'high' }] }),
      /unknown key "severity"/,
    );
    refuse(
      Type.String({ 'x-kubernetes-validations': [{ rule: 'true', reason: 'Nope' }] }),
      /reason must be one of/,
    );
  });
});

describe('helpers', () => {
  test('Quantity is int-or-string with the quantity pattern', () => {
    const q = toStructural(Quantity({ default: '1Gi' }));
    assert.deepEqual(q.anyOf, [{ type: 'integer' }, { type: 'string' }]);
    assert.equal(q['x-kubernetes-int-or-string'], true);
    assert.equal(q.default, '1Gi');
    assert.equal(q.pattern, QUANTITY_PATTERN);
    assertStructural(q);
    const re = new RegExp(QUANTITY_PATTERN);
    for (const good of ['1', '500m', '1.5Gi', '2e3', '+1Ki', '.5', '10M']) assert.ok(re.test(good), good);
    for (const bad of ['1 gig', 'Gi', '1GB', '', '1.5.2']) assert.ok(!re.test(bad), bad);
    const value: Static<ReturnType<typeof Quantity>> = 5;
    assert.equal(value, 5);
  });

  test('Immutable adds a transition rule, keeps Optional and leaves the original alone', () => {
    const base = Type.Optional(Type.String({ maxLength: 63 }));
    const obj = Type.Object({
      a: Immutable(base, 'a is immutable'),
      b: Immutable(Type.Integer(), 'b is immutable'),
    });
    const s = toStructural(obj);
    assert.deepEqual(s.required, ['b']);
    assert.deepEqual(s.properties?.['a']?.['x-kubernetes-validations'], [
      { rule: 'self == oldSelf', message: 'a is immutable' },
    ]);
    assert.equal((base as unknown as Record<string, unknown>)['x-kubernetes-validations'], undefined);
  });

  test('WithRules appends to existing rules; GrowOnly compares the string form', () => {
    const s = toStructural(
      WithRules(GrowOnly(Quantity(), 'only grows'), { rule: 'true', message: 'second' }),
    );
    assert.deepEqual(
      s['x-kubernetes-validations']?.map((r) => r.message),
      ['only grows', 'second'],
    );
    assert.match(s['x-kubernetes-validations']?.[0]?.rule ?? '', /quantity\(string\(self\)\)/);
  });

  test('Conditions is a list-map keyed by type with metav1.Condition fields', () => {
    const s = toStructural(Conditions());
    assert.equal(s['x-kubernetes-list-type'], 'map');
    assert.deepEqual(s['x-kubernetes-list-map-keys'], ['type']);
    assert.equal(s.maxItems, 32);
    assert.deepEqual(s.items?.required, ['type', 'status', 'lastTransitionTime', 'reason', 'message']);
    assert.deepEqual(s.items?.properties?.['status']?.enum, ['True', 'False', 'Unknown']);
    assertStructural(s);
  });

  test('ResourceRequirements and EnvVars are structural and bounded', () => {
    const r = toStructural(ResourceRequirements());
    assert.equal(r.properties?.['limits']?.additionalProperties?.['x-kubernetes-int-or-string'], true);
    assert.equal(r.required, undefined);
    assertStructural(r);
    const e = toStructural(EnvVars());
    assert.deepEqual(e['x-kubernetes-list-map-keys'], ['name']);
    assert.equal(e.maxItems, 64);
    assertStructural(e);
  });

  test('Quantity({ positive }) refuses zero and below with a rule; a plain Quantity has none', () => {
    assert.equal(toStructural(Quantity())['x-kubernetes-validations'], undefined);
    const rules = toStructural(Quantity({ positive: true }))['x-kubernetes-validations'];
    assert.equal(rules?.length, 1);
    // string(): an int-or-string reaches CEL as an int when written as a number.
    assert.match(
      rules?.[0]?.rule ?? '',
      /^!isQuantity\(string\(self\)\) \|\| quantity\(string\(self\)\)\.isGreaterThan\(quantity\('0'\)\)$/,
    );
    assert.equal(rules?.[0]?.message, 'must be greater than zero');
  });

  test('ResourceRequirements: positive quantities, known resource names, requests no higher than limits', () => {
    const r = toStructural(ResourceRequirements());
    for (const map of ['limits', 'requests']) {
      const m = r.properties?.[map];
      assert.match(
        m?.['x-kubernetes-validations']?.[0]?.rule ?? '',
        /'cpu', 'memory', 'ephemeral-storage'/,
        map,
      );
      assert.equal(
        m?.additionalProperties?.['x-kubernetes-validations']?.[0]?.message,
        'must be greater than zero',
      );
    }
    const [cross] = r['x-kubernetes-validations'] ?? [];
    assert.equal(cross?.fieldPath, '.requests');
    assert.match(cross?.rule ?? '', /isGreaterThan\(quantity\(string\(self\.limits\[k\]\)\)\)/);
  });

  test("ObjectName is a non-empty DNS-1123 subdomain checked by Kubernetes' own validation", () => {
    const s = toStructural(ObjectName({ what: 'a Secret' }));
    assert.equal(s.minLength, 1);
    assert.equal(s.maxLength, 253);
    const [rule] = s['x-kubernetes-validations'] ?? [];
    assert.equal(rule?.rule, '!format.dns1123Subdomain().validate(self).hasValue()');
    assert.match(rule?.message ?? '', /^must be the name of a Secret: /);
  });

  test('ContainerImage takes image references and refuses what the kubelet could not parse', () => {
    const s = toStructural(ContainerImage());
    assert.equal(s.minLength, 1);
    assert.ok(s['x-kubernetes-validations']?.[0]?.rule.includes(JSON.stringify(IMAGE_PATTERN)));
    const re = new RegExp(IMAGE_PATTERN);
    const digest = `sha256:${'a'.repeat(64)}`;
    for (const good of [
      'shop',
      'library/redis:8.0',
      'ghcr.io/example/shop:1.0',
      'localhost:5000/a/b_c__d-e.f:v1',
      'Registry.Example.com/shop:latest',
      `redis@${digest}`,
      `ghcr.io/example/shop:1.0@${digest}`,
    ])
      assert.ok(re.test(good), good);
    for (const bad of [
      'shöp :1',
      'Shop:1',
      'shop:',
      'shop:-1',
      ' shop',
      'shop ',
      'a//b',
      'shop@sha256:xyz',
      '-shop',
    ])
      assert.ok(!re.test(bad), bad);
  });

  test('ChildNamingRules check the name on create only, and report it against metadata', () => {
    const rules = ChildNamingRules({ kind: 'Gizmo', maxLength: 40, children: 'Services' });
    assert.equal(rules.length, 2);
    for (const r of rules) {
      assert.equal(r.optionalOldSelf, true);
      assert.match(r.rule, /^oldSelf\.hasValue\(\) \|\| /);
      assert.equal(r.fieldPath, '.metadata');
    }
    assert.match(rules[0]!.rule, /format\.dns1035Label\(\)\.validate\(self\.metadata\.name\)/);
    assert.match(rules[1]!.rule, /size\(self\.metadata\.name\) <= 40$/);
  });

  test('helpers return fresh schemas, so embedding one in two kinds shares nothing', () => {
    assert.notEqual(Conditions(), Conditions());
    assert.notEqual(Quantity(), Quantity());
  });
});
