// Turns a TypeBox schema (JSON Schema 2020-12 flavoured) into the OpenAPI v3
// subset that apiextensions.k8s.io/v1 accepts as a *structural* schema. The
// API server rejects a non-structural CRD outright and, worse, silently drops
// what it does not know, so every shape is either translated to its Kubernetes
// spelling or refused here, at definition time, with the path of the node.
import type { TSchema } from 'typebox';

/** One CEL rule (`x-kubernetes-validations` entry). */
export interface ValidationRule {
  rule: string;
  message?: string | undefined;
  messageExpression?: string | undefined;
  reason?:
    'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate' | undefined;
  fieldPath?: string | undefined;
  optionalOldSelf?: boolean | undefined;
}

/** apiextensions.k8s.io/v1 JSONSchemaProps, as it is written in a CRD (not client-node's camelCase model). */
export interface JSONSchemaProps {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean' | undefined;
  description?: string | undefined;
  title?: string | undefined;
  format?: string | undefined;
  default?: unknown;
  example?: unknown;
  enum?: unknown[] | undefined;
  nullable?: boolean | undefined;
  maximum?: number | undefined;
  exclusiveMaximum?: boolean | undefined;
  minimum?: number | undefined;
  exclusiveMinimum?: boolean | undefined;
  multipleOf?: number | undefined;
  maxLength?: number | undefined;
  minLength?: number | undefined;
  pattern?: string | undefined;
  maxItems?: number | undefined;
  minItems?: number | undefined;
  maxProperties?: number | undefined;
  minProperties?: number | undefined;
  required?: string[] | undefined;
  properties?: Record<string, JSONSchemaProps> | undefined;
  additionalProperties?: JSONSchemaProps | undefined;
  items?: JSONSchemaProps | undefined;
  anyOf?: JSONSchemaProps[] | undefined;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-validations'?: ValidationRule[];
}

/** Thrown for a schema shape the API server would refuse or silently mangle. */
export class SchemaError extends Error {
  readonly path: string;
  constructor(path: string, message: string) {
    super(`@regulon/crd: ${path || '<root>'}: ${message}`);
    this.name = 'SchemaError';
    this.path = path;
  }
}

// Keywords copied as they are: same name and meaning in both dialects.
const PASS_THROUGH = new Set([
  'description',
  'title',
  'format',
  'default',
  'multipleOf',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'maxProperties',
  'minProperties',
  'nullable',
  'example',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-int-or-string',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
]);

// Keywords with no Kubernetes meaning that TypeBox or JSON Schema authors add
// for their own tooling; dropping them loses nothing the API server would use.
const DROPPED = new Set(['$id', '$schema', '$comment', 'readOnly', 'writeOnly']);

// Handled explicitly below.
const STRUCTURAL = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'items',
  'anyOf',
  'const',
  'enum',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'examples',
  'uniqueItems',
  'x-kubernetes-validations',
]);

const TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);
// TypeBox's key pattern for Type.Record(Type.String(), ...).
const ANY_STRING_KEY = '^.*$';
const RULE_KEYS = new Set(['rule', 'message', 'messageExpression', 'reason', 'fieldPath', 'optionalOldSelf']);
const REASONS = new Set([
  'FieldValueInvalid',
  'FieldValueForbidden',
  'FieldValueRequired',
  'FieldValueDuplicate',
]);

type Node = Record<string, unknown>;

function isNode(v: unknown): v is Node {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The structural OpenAPI v3 schema for a TypeBox schema. Keys come out sorted
 * (and property names too) so that reordering a TypeScript definition does not
 * churn the generated YAML.
 */
export function toStructural(schema: TSchema, path = ''): JSONSchemaProps {
  return sortSchema(convert(schema, path));
}

function convert(raw: unknown, path: string): JSONSchemaProps {
  if (!isNode(raw)) throw new SchemaError(path, 'expected a schema object');
  const node: Node = { ...raw };
  const out: Node = {};

  if ('anyOf' in node) return convertUnion(node, path);
  if (Array.isArray(node['type'])) return convertTypeArray(node, path);

  for (const key of Object.keys(node)) {
    if (DROPPED.has(key)) continue;
    if (key === '$ref' || key === '$defs' || key === 'definitions')
      throw new SchemaError(path, `"${key}" is not allowed in a CRD: embed the schema object itself`);
    if (key === 'allOf')
      throw new SchemaError(
        path,
        'intersections (allOf) are not structural; flatten with Type.Evaluate(Type.Intersect([...])) or Type.Interface',
      );
    if (key === 'oneOf' || key === 'not' || key === 'if' || key === 'then' || key === 'else')
      throw new SchemaError(
        path,
        `"${key}" is not supported; express the constraint as an x-kubernetes-validations rule`,
      );
    if (key === 'prefixItems' || key === 'additionalItems' || (key === 'items' && Array.isArray(node[key])))
      throw new SchemaError(path, 'tuples are not structural; use an array of one item schema, or an object');
    if (PASS_THROUGH.has(key)) {
      out[key] = structuredClone(node[key]);
      continue;
    }
    if (!STRUCTURAL.has(key))
      throw new SchemaError(path, `"${key}" is not a Kubernetes OpenAPI v3 schema keyword`);
  }

  if ('examples' in node && Array.isArray(node['examples']) && node['examples'].length > 0)
    out['example'] = structuredClone(node['examples'][0]);

  if (node['uniqueItems'] === true)
    throw new SchemaError(
      path,
      'uniqueItems is forbidden by the API server (quadratic cost); use "x-kubernetes-list-type": "set"',
    );

  bounds(node, out, 'minimum', 'exclusiveMinimum', path);
  bounds(node, out, 'maximum', 'exclusiveMaximum', path);

  if ('x-kubernetes-validations' in node) out['x-kubernetes-validations'] = rules(node, path);

  let type = node['type'];
  if ('const' in node) out['enum'] = [structuredClone(node['const'])];
  if ('enum' in node) {
    if (!Array.isArray(node['enum']) || node['enum'].length === 0)
      throw new SchemaError(path, 'enum must be a non-empty array');
    out['enum'] = structuredClone(node['enum']);
  }
  if (out['enum'] !== undefined && type === undefined) type = typeOfValues(out['enum'] as unknown[], path);
  if (type === 'number' && out['enum'] && (out['enum'] as unknown[]).every((v) => Number.isInteger(v)))
    type = 'integer';

  if (type === undefined) {
    if (out['x-kubernetes-int-or-string'] === true || out['x-kubernetes-preserve-unknown-fields'] === true)
      return out;
    // Type.Unknown() / Type.Any(): any JSON value, which a structural schema spells this way.
    if (Object.keys(node).every((k) => DROPPED.has(k) || k === 'description' || k === 'title')) {
      out['x-kubernetes-preserve-unknown-fields'] = true;
      return out;
    }
    throw new SchemaError(
      path,
      'every node needs a type (or x-kubernetes-int-or-string / preserve-unknown-fields)',
    );
  }
  if (type === 'null') throw new SchemaError(path, 'a null-only type cannot be stored; use a nullable type');
  if (typeof type !== 'string' || !TYPES.has(type))
    throw new SchemaError(path, `type ${JSON.stringify(type)} cannot be stored in a custom resource`);
  out['type'] = type;

  if (type === 'object') objectShape(node, out, path);
  else if ('properties' in node || 'additionalProperties' in node || 'patternProperties' in node)
    throw new SchemaError(path, `properties on a non-object (${type})`);
  if (type === 'array') {
    const items = node['items'];
    if (!isNode(items)) throw new SchemaError(path, 'arrays need an items schema');
    out['items'] = convert(items, `${path}[*]`);
  } else if ('items' in node) throw new SchemaError(path, `items on a non-array (${type})`);
  return out;
}

function objectShape(node: Node, out: Node, path: string): void {
  const props = node['properties'];
  const converted: Record<string, JSONSchemaProps> = {};
  if (props !== undefined) {
    if (!isNode(props)) throw new SchemaError(path, 'properties must be an object');
    for (const [name, value] of Object.entries(props)) converted[name] = convert(value, `${path}.${name}`);
    out['properties'] = converted;
  }
  // The API server fills a defaulted field before it validates, so no writer
  // ever has to give it. Listed as required, `kubectl explain` would say
  // -required- and offline validators (kubeconform --strict) would refuse
  // objects the server accepts. Static<> still reads it as present.
  const required: unknown = node['required'];
  const needed = Array.isArray(required)
    ? required.map(String).filter((name) => converted[name]?.default === undefined)
    : [];
  if (needed.length > 0) out['required'] = needed;

  let additional: unknown = node['additionalProperties'];
  const pattern = node['patternProperties'];
  if (pattern !== undefined) {
    const entries = isNode(pattern) ? Object.entries(pattern) : [];
    const [first] = entries;
    if (entries.length !== 1 || first === undefined || first[0] !== ANY_STRING_KEY)
      throw new SchemaError(
        path,
        'patternProperties is not supported; only Type.Record(Type.String(), ...) maps (additionalProperties)',
      );
    if (additional !== undefined && additional !== false)
      throw new SchemaError(path, 'both patternProperties and additionalProperties');
    additional = first[1];
  }
  if (additional === undefined || additional === false) return; // pruning already drops unknown fields
  if (additional === true) {
    out['x-kubernetes-preserve-unknown-fields'] = true;
    return;
  }
  if (out['properties'] !== undefined)
    throw new SchemaError(path, 'properties and additionalProperties cannot both be set on one node');
  out['additionalProperties'] = convert(additional, `${path}[*]`);
}

// JSON Schema 2020-12 writes exclusive bounds as numbers, OpenAPI v3.0 (and so
// Kubernetes) as booleans next to minimum/maximum.
function bounds(node: Node, out: Node, inclusive: string, exclusive: string, path: string): void {
  const ex = node[exclusive];
  if (typeof ex === 'number') {
    out[inclusive] = ex;
    out[exclusive] = true;
    return;
  }
  if (ex !== undefined && typeof ex !== 'boolean')
    throw new SchemaError(path, `${exclusive} must be a number`);
  if (node[inclusive] !== undefined) out[inclusive] = node[inclusive];
  if (ex === true) out[exclusive] = true;
}

function rules(node: Node, path: string): ValidationRule[] {
  const list = node['x-kubernetes-validations'];
  if (!Array.isArray(list)) throw new SchemaError(path, 'x-kubernetes-validations must be an array');
  return list.map((r: unknown, i) => {
    if (!isNode(r) || typeof r['rule'] !== 'string' || r['rule'] === '')
      throw new SchemaError(path, `x-kubernetes-validations[${i}] needs a rule`);
    for (const key of Object.keys(r))
      if (!RULE_KEYS.has(key))
        throw new SchemaError(path, `x-kubernetes-validations[${i}]: unknown key "${key}"`);
    if (r['reason'] !== undefined && !REASONS.has(r['reason'] as string))
      throw new SchemaError(
        path,
        `x-kubernetes-validations[${i}]: reason must be one of ${[...REASONS].join(', ')}`,
      );
    // Fixed key order, so YAML output does not depend on how a rule was written.
    const out: Node = {};
    for (const key of RULE_KEYS) if (r[key] !== undefined) out[key] = r[key];
    return out as unknown as ValidationRule;
  });
}

function typeOfValues(values: unknown[], path: string): string {
  const types = new Set(
    values.map((v) => (typeof v === 'number' && Number.isInteger(v) ? 'integer' : typeof v)),
  );
  if (types.size === 2 && types.has('integer') && types.has('number')) return 'number';
  const [only] = types;
  if (types.size !== 1 || only === undefined || !TYPES.has(only))
    throw new SchemaError(path, `enum values must share one type, got ${[...types].join(', ')}`);
  return only;
}

// TypeBox spells several Kubernetes shapes as unions: literal unions (enums),
// T | null (nullable) and integer | string (int-or-string). Anything else is a
// real union of typed schemas, which a structural schema cannot express.
function convertUnion(node: Node, path: string): JSONSchemaProps {
  const members = node['anyOf'];
  if (!Array.isArray(members) || members.length === 0 || !members.every(isNode))
    throw new SchemaError(path, 'anyOf must be a non-empty array of schemas');
  const rest: Node = { ...node };
  delete rest['anyOf'];

  const nonNull = members.filter((m) => m['type'] !== 'null');
  if (nonNull.length !== members.length) {
    if (nonNull.length === 0) throw new SchemaError(path, 'a null-only union cannot be stored');
    const inner = nonNull.length === 1 ? { ...nonNull[0], ...rest } : { ...rest, anyOf: nonNull };
    const out = convert(inner, path);
    // kube-apiserver checks a null against the enum and refuses it even when
    // null is listed, so a nullable enum could never hold null.
    if (out.enum)
      throw new SchemaError(
        path,
        'a nullable enum cannot hold null in a CRD; make the field Type.Optional instead',
      );
    return { ...out, nullable: true };
  }

  if (members.every(isLiteral)) {
    const values = members.flatMap((m) =>
      Array.isArray(m['enum']) ? (m['enum'] as unknown[]) : [m['const']],
    );
    return convert({ ...rest, enum: values }, path);
  }

  const types = members.map((m) => m['type']).sort();
  const bare = members.every((m) => Object.keys(m).every((k) => k === 'type'));
  if (types.length === 2 && types[0] === 'integer' && types[1] === 'string') {
    if (!bare)
      throw new SchemaError(
        path,
        'int-or-string members must be bare { type } schemas; put pattern/maxLength on the union itself',
      );
    const out = convert({ ...rest, 'x-kubernetes-int-or-string': true }, path);
    // The one anyOf a structural schema allows: it only restates the two types.
    return { ...out, anyOf: [{ type: 'integer' }, { type: 'string' }] };
  }
  throw new SchemaError(
    path,
    'unions of typed schemas are not structural; use literal unions (enum), T | null, Quantity(), or one object with optional fields and a CEL rule',
  );
}

function isLiteral(m: Node): boolean {
  const keys = Object.keys(m).filter((k) => k !== 'type' && k !== 'description' && k !== 'title');
  return keys.length === 1 && (keys[0] === 'const' || keys[0] === 'enum');
}

function convertTypeArray(node: Node, path: string): JSONSchemaProps {
  const types = node['type'] as unknown[];
  const nonNull = types.filter((t) => t !== 'null');
  if (nonNull.length !== 1) throw new SchemaError(path, `type ${JSON.stringify(types)} is not structural`);
  const out = convert({ ...node, type: nonNull[0] }, path);
  return nonNull.length === types.length ? out : { ...out, nullable: true };
}

/** Sorts schema keys and property names, recursively (not inside default values or rules). */
export function sortSchema(s: JSONSchemaProps): JSONSchemaProps {
  const out: Node = {};
  for (const key of Object.keys(s).sort()) {
    const v = (s as Node)[key];
    if (key === 'properties' && isNode(v)) {
      const props: Node = {};
      for (const name of Object.keys(v).sort()) props[name] = sortSchema(v[name] as JSONSchemaProps);
      out[key] = props;
    } else if ((key === 'items' || key === 'additionalProperties') && isNode(v)) {
      out[key] = sortSchema(v);
    } else if (key === 'anyOf' && Array.isArray(v)) {
      out[key] = v.map((m) => sortSchema(m as JSONSchemaProps));
    } else {
      out[key] = v;
    }
  }
  return out;
}

/**
 * The schema node a simple JSONPath (`.spec.a.b`) points at, or undefined when
 * it names no field. Map values and preserve-unknown-fields nodes accept any key.
 */
export function schemaAt(root: JSONSchemaProps, jsonPath: string): JSONSchemaProps | undefined {
  if (!jsonPath.startsWith('.')) return undefined;
  let node: JSONSchemaProps | undefined = root;
  for (const part of jsonPath.slice(1).split('.')) {
    if (node === undefined || part === '') return undefined;
    if (node.properties?.[part]) node = node.properties[part];
    else if (node.additionalProperties) node = node.additionalProperties;
    else if (node['x-kubernetes-preserve-unknown-fields']) return {};
    else return undefined;
  }
  return node;
}
