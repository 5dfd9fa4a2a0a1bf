// The CRDs and samples the repository ships (deploy/crds, deploy/samples), read
// the way tools outside the API server read them: `kubectl explain`, and offline
// validators such as kubeconform --strict, which apply no defaults.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { repoRoot } from '@regulon/testenv';
import { Errors } from 'typebox/schema';
import { parse } from 'yaml';
import type { CustomResourceDefinition } from './kind.ts';
import type { JSONSchemaProps } from './schema.ts';

const deploy = join(repoRoot(), 'deploy');
const yamlIn = <T>(dir: string): Array<[string, T]> =>
  readdirSync(join(deploy, dir))
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => [f, parse(readFileSync(join(deploy, dir, f), 'utf8')) as T]);
const crds = yamlIn<CustomResourceDefinition>('crds');
const schemaOf = (crd: CustomResourceDefinition) => crd.spec.versions[0]!.schema.openAPIV3Schema;

/** Calls `visit` on every object node with properties, with its JSONPath. */
function walk(s: JSONSchemaProps, path: string, visit: (node: JSONSchemaProps, path: string) => void): void {
  if (s.properties) {
    visit(s, path);
    for (const [name, p] of Object.entries(s.properties)) walk(p, `${path}.${name}`, visit);
  }
  if (s.items) walk(s.items, `${path}[*]`, visit);
  if (s.additionalProperties) walk(s.additionalProperties, `${path}[*]`, visit);
}

/**
 * The published schema as a strict offline validator reads it: JSON Schema
 * with the OpenAPI v3.0 spellings translated, unknown fields refused (what
 * kubeconform's --strict adds) and `default` an annotation that fills nothing.
 */
function strictJsonSchema(s: JSONSchemaProps): Record<string, unknown> {
  const out: Record<string, unknown> = { ...s };
  if (s.nullable && s.type) out['type'] = [s.type, 'null'];
  for (const [bound, exclusive] of [
    ['minimum', 'exclusiveMinimum'],
    ['maximum', 'exclusiveMaximum'],
  ] as const)
    if (s[exclusive] === true) {
      out[exclusive] = s[bound];
      delete out[bound];
    }
  if (s.properties) {
    out['properties'] = Object.fromEntries(
      Object.entries(s.properties).map(([k, v]) => [k, strictJsonSchema(v)]),
    );
    if (!s['x-kubernetes-preserve-unknown-fields']) out['additionalProperties'] = false;
  }
  if (s.additionalProperties) out['additionalProperties'] = strictJsonSchema(s.additionalProperties);
  if (s.items) out['items'] = strictJsonSchema(s.items);
  return out;
}

describe('shipped CRDs', () => {
  test('there is one CRD per kind', () => {
    assert.deepEqual(
      crds.map(([f]) => f),
      [
        'caches.regulon.dev.yaml',
        'databasebackups.regulon.dev.yaml',
        'databases.regulon.dev.yaml',
        'myapps.regulon.dev.yaml',
      ],
    );
  });

  test('no field is both defaulted and required: the API server fills it, so no writer has to give it', () => {
    const both: string[] = [];
    for (const [file, crd] of crds)
      walk(schemaOf(crd), '', (node, path) => {
        for (const name of node.required ?? [])
          if (node.properties?.[name]?.default !== undefined) both.push(`${file} ${path}.${name}`);
      });
    assert.deepEqual(both, []);
  });

  test('every sample validates against its published schema with no defaults applied', () => {
    const samples = yamlIn<{ apiVersion: string; kind: string }>('samples');
    assert.ok(samples.length >= 3, 'a sample per kind');
    for (const [file, sample] of samples) {
      const match = crds.find(
        ([, c]) => c.spec.names.kind === sample.kind && sample.apiVersion.startsWith(`${c.spec.group}/`),
      );
      assert.ok(match, `${file}: no shipped CRD for ${sample.apiVersion} ${sample.kind}`);
      const [ok, errors] = Errors(strictJsonSchema(schemaOf(match[1])), sample);
      assert.deepEqual(
        errors.map((e) => `${e.instancePath || '/'}: ${e.message}`),
        [],
        `${file} is invalid for a strict validator`,
      );
      assert.ok(ok);
      // The same validator refuses what a strict one must: a missing required field, an unknown one.
      const spec: Record<string, unknown> = { ...(sample as { spec?: object }).spec, noSuchField: 1 };
      delete spec[schemaOf(match[1]).properties?.['spec']?.required?.[0] ?? ''];
      const [, broken] = Errors(strictJsonSchema(schemaOf(match[1])), { ...sample, spec });
      assert.deepEqual(
        broken.map((e) => e.keyword).sort(),
        ['additionalProperties', 'boolean', 'required'],
        `${file}: ${JSON.stringify(broken)}`,
      );
    }
  });

  test('every kind has its own short name, Status and Age last; a kind that runs Pods leads with Replicas, Ready, Status', () => {
    const shortNames = crds.flatMap(([, c]) => c.spec.names.shortNames ?? []);
    for (const [file, crd] of crds) {
      assert.ok(crd.spec.names.shortNames?.length, `${file}: a short name for kubectl get`);
      const columns = crd.spec.versions[0]!.additionalPrinterColumns;
      const shown = columns.filter((c) => (c.priority ?? 0) === 0).map((c) => c.name);
      assert.equal(shown.at(-1), 'Age', file);
      assert.ok(shown.includes('Status'), `${file}: a Status column`);
      // A DatabaseBackup runs nothing: it has no replicas to show.
      if (!schemaOf(crd).properties?.['spec']?.properties?.['replicas']) continue;
      const common = shown.filter((n) => ['Replicas', 'Ready', 'Status'].includes(n));
      assert.deepEqual(common, ['Replicas', 'Ready', 'Status'], `${file}: ${shown.join(', ')}`);
      assert.equal(
        shown.indexOf('Ready'),
        shown.indexOf('Replicas') + 1,
        `${file}: Ready right after Replicas`,
      );
      assert.equal(shown.indexOf('Status'), shown.indexOf('Ready') + 1, `${file}: Status right after Ready`);
      assert.equal(shown.at(-1), 'Age', file);
    }
    assert.equal(new Set(shortNames).size, shortNames.length, `short names shared: ${shortNames.join(', ')}`);
  });
});
