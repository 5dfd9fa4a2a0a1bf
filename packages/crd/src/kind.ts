import type { ObjectMeta, ResourceType } from '@regulon/client';
import type { Static, TSchema } from 'typebox';
import {
  SchemaError,
  schemaAt,
  sortSchema,
  toStructural,
  type JSONSchemaProps,
  type ValidationRule,
} from './schema.ts';
import type { CrdConversion } from './versions.ts';

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string | undefined;
  /** 0 shows in `kubectl get`; higher only with `-o wide`. */
  priority?: number | undefined;
  format?: string | undefined;
}

export interface ScaleSubresource {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath?: string | undefined;
}

export interface KindDefinition<Spec extends TSchema = TSchema, Status extends TSchema = TSchema> {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames?: string[] | undefined;
  categories?: string[] | undefined;
  scope: 'Namespaced' | 'Cluster';
  /** TypeBox schema of `.spec`; must be a Type.Object. */
  spec: Spec;
  /** TypeBox schema of `.status`; must be a Type.Object. */
  status: Status;
  /** Columns for `kubectl get`; an `Age` column is added last. */
  printerColumns?: PrinterColumn[] | undefined;
  scale?: ScaleSubresource | undefined;
  /** CEL rules on `.spec` as a whole (cross-field rules). */
  validations?: ValidationRule[] | undefined;
  /**
   * CEL rules on the whole object: the only place a rule can read
   * `self.metadata.name` (see ChildNamingRules). The API server runs them on
   * every write, status writes too, so a rule that must not strand objects
   * stored before it existed checks on create only (`optionalOldSelf`).
   */
  objectValidations?: ValidationRule[] | undefined;
  /** Description of the kind, shown by `kubectl explain`. */
  description?: string | undefined;
}

/** An apiextensions.k8s.io/v1 CustomResourceDefinition: one version (defineKind) or several (versionedCRD). */
export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  spec: {
    group: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames?: string[] | undefined;
      categories?: string[] | undefined;
    };
    scope: 'Namespaced' | 'Cluster';
    versions: Array<{
      name: string;
      served: boolean;
      storage: boolean;
      deprecated?: boolean | undefined;
      deprecationWarning?: string | undefined;
      schema: { openAPIV3Schema: JSONSchemaProps };
      subresources: {
        status: Record<string, never>;
        scale?: ScaleSubresource | undefined;
      };
      additionalPrinterColumns: PrinterColumn[];
    }>;
    /** Set for several versions (versionedCRD); absent: the API server's `None`. */
    conversion?: CrdConversion | undefined;
  };
}

/** A custom object of a kind: what the API server stores and returns. */
export interface CustomObject<Spec, Status> {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status | undefined;
}

/**
 * A kind defined here is itself its typed resource handle: `client.resource(K)`,
 * `.for(K)` and `informerFor(K)` all read `CustomObject<Static<Spec>, Static<Status>>`.
 */
export interface Kind<Spec extends TSchema = TSchema, Status extends TSchema = TSchema> extends ResourceType<
  CustomObject<Static<Spec>, Static<Status>>
> {
  readonly definition: Readonly<KindDefinition<Spec, Status>>;
  /** The plain resource handle (the kind itself is one too). */
  readonly type: ResourceType<CustomObject<Static<Spec>, Static<Status>>>;
  /** `group/version`. */
  readonly apiVersion: string;
  readonly kind: string;
  /** The CRD's name: `plural.group`. */
  readonly crdName: string;
  /** The whole object's structural schema (a fresh copy). */
  schema(): JSONSchemaProps;
  /** The CustomResourceDefinition (a fresh copy). */
  crd(): CustomResourceDefinition;
  /** An object of this kind with apiVersion and kind filled in. */
  object(init: {
    metadata: ObjectMeta;
    spec: Static<Spec>;
    status?: Static<Status> | undefined;
  }): CustomObject<Static<Spec>, Static<Status>>;
}

export type KindSpec<K> = K extends Kind<infer S, TSchema> ? Static<S> : never;
export type KindStatus<K> = K extends Kind<TSchema, infer S> ? Static<S> : never;
/** `{ apiVersion, kind, metadata, spec: Static<spec>, status?: Static<status> }` of a kind. */
export type KindObject<K> = K extends Kind<infer Sp, infer St> ? CustomObject<Static<Sp>, Static<St>> : never;

const AGE: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;

/**
 * One definition per kind: the TypeScript type (via {@link KindObject}) and the
 * CRD both come from it. Throws a SchemaError here, at import time, for a
 * schema or name the API server would refuse.
 */
export function defineKind<Spec extends TSchema, Status extends TSchema>(
  def: KindDefinition<Spec, Status>,
): Kind<Spec, Status> {
  checkNames(def);
  const schema = rootSchema(def);
  checkPaths(def, schema);
  const apiVersion = `${def.group}/${def.version}`;
  const crdName = `${def.plural}.${def.group}`;
  const type: ResourceType<CustomObject<Static<Spec>, Static<Status>>> = Object.freeze({
    group: def.group,
    version: def.version,
    kind: def.kind,
    plural: def.plural,
    namespaced: def.scope === 'Namespaced',
  });
  const crd = buildCRD(def, crdName, schema);
  return Object.freeze({
    ...type,
    definition: def,
    type,
    apiVersion,
    kind: def.kind,
    crdName,
    schema: () => structuredClone(schema),
    crd: () => structuredClone(crd),
    object: (init) => ({ apiVersion, kind: def.kind, ...init }),
  } satisfies Kind<Spec, Status>);
}

function checkNames(def: KindDefinition<TSchema, TSchema>): void {
  const fail = (what: string, value: unknown, rule: string) => {
    throw new SchemaError('', `${what} ${JSON.stringify(value)} ${rule}`);
  };
  if (!DNS_SUBDOMAIN.test(def.group) || !def.group.includes('.'))
    fail('group', def.group, 'must be a DNS subdomain with at least one dot');
  if (!VERSION.test(def.version)) fail('version', def.version, 'must look like v1, v1alpha1 or v2beta3');
  if (!KIND.test(def.kind)) fail('kind', def.kind, 'must be UpperCamelCase');
  for (const [what, value] of [
    ['plural', def.plural],
    ['singular', def.singular],
    ...(def.shortNames ?? []).map((s) => ['shortName', s]),
    ...(def.categories ?? []).map((s) => ['category', s]),
  ] as const)
    if (!DNS_LABEL.test(value)) fail(what, value, 'must be a lower-case DNS label');
  if (def.scope !== 'Namespaced' && def.scope !== 'Cluster')
    fail('scope', def.scope, 'must be Namespaced or Cluster');
}

function rootSchema(def: KindDefinition<TSchema, TSchema>): JSONSchemaProps {
  const spec = toStructural(def.spec, '.spec');
  const status = toStructural(def.status, '.status');
  if (spec.type !== 'object') throw new SchemaError('.spec', 'spec must be a Type.Object');
  if (status.type !== 'object') throw new SchemaError('.status', 'status must be a Type.Object');
  if (def.validations?.length) {
    const withRules = toStructural({ type: 'object', 'x-kubernetes-validations': def.validations }, '.spec');
    spec['x-kubernetes-validations'] = [
      ...(spec['x-kubernetes-validations'] ?? []),
      ...(withRules['x-kubernetes-validations'] ?? []),
    ];
  }
  const root: JSONSchemaProps = {
    type: 'object',
    properties: {
      apiVersion: {
        type: 'string',
        description: 'APIVersion defines the versioned schema of this representation of an object.',
      },
      kind: {
        type: 'string',
        description: 'Kind is a string value representing the REST resource this object represents.',
      },
      metadata: { type: 'object' },
      spec,
      status,
    },
    required: ['spec'],
  };
  if (def.objectValidations?.length)
    root['x-kubernetes-validations'] = toStructural(
      { type: 'object', 'x-kubernetes-validations': def.objectValidations },
      '',
    )['x-kubernetes-validations'];
  if (def.description) root.description = def.description;
  return sortSchema(root);
}

// The API server takes any JSONPath here and shows <none> or never scales
// when it names no field, so a typo is only ever noticed in production.
function checkPaths(def: KindDefinition<TSchema, TSchema>, root: JSONSchemaProps): void {
  const expect = (jsonPath: string, what: string, types: string[], prefix?: string) => {
    if (prefix && !jsonPath.startsWith(prefix))
      throw new SchemaError('', `${what} must start with ${prefix}`);
    // Filters and indexes (conditions[?(@.type=="Ready")]) are not checked.
    if (jsonPath.includes('[') || jsonPath.startsWith('.metadata.')) return;
    const node = schemaAt(root, jsonPath);
    if (!node) throw new SchemaError('', `${what} ${jsonPath} names no field of the schema`);
    if (node.type && types.length > 0 && !types.includes(node.type))
      throw new SchemaError('', `${what} ${jsonPath} is a ${node.type}, expected ${types.join(' or ')}`);
  };
  for (const col of def.printerColumns ?? []) {
    const types =
      col.type === 'date' ? ['string'] : col.type === 'number' ? ['number', 'integer'] : [col.type];
    // Columns render objects and arrays as JSON, so any type is fine for strings.
    expect(col.jsonPath, `printer column ${col.name}`, col.type === 'string' ? [] : types);
  }
  if (def.scale) {
    expect(def.scale.specReplicasPath, 'scale.specReplicasPath', ['integer'], '.spec.');
    expect(def.scale.statusReplicasPath, 'scale.statusReplicasPath', ['integer'], '.status.');
    if (def.scale.labelSelectorPath !== undefined) {
      const p = def.scale.labelSelectorPath;
      if (!p.startsWith('.spec.') && !p.startsWith('.status.'))
        throw new SchemaError('', 'scale.labelSelectorPath must start with .spec. or .status.');
      expect(p, 'scale.labelSelectorPath', ['string']);
    }
  }
}

function buildCRD(
  def: KindDefinition<TSchema, TSchema>,
  name: string,
  schema: JSONSchemaProps,
): CustomResourceDefinition {
  const names: CustomResourceDefinition['spec']['names'] = {
    kind: def.kind,
    listKind: `${def.kind}List`,
    plural: def.plural,
    singular: def.singular,
  };
  if (def.shortNames?.length) names.shortNames = [...def.shortNames];
  if (def.categories?.length) names.categories = [...def.categories];
  const columns = (def.printerColumns ?? []).map((c) => ({ ...c }));
  if (!columns.some((c) => c.name === AGE.name)) columns.push({ ...AGE });
  const subresources: CustomResourceDefinition['spec']['versions'][number]['subresources'] = { status: {} };
  if (def.scale) subresources.scale = { ...def.scale };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name },
    spec: {
      group: def.group,
      names,
      scope: def.scope,
      versions: [
        {
          name: def.version,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: schema },
          subresources,
          additionalPrinterColumns: columns,
        },
      ],
    },
  };
}
