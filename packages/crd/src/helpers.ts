// Schema building blocks for shapes Kubernetes APIs share. Each returns a new
// TypeBox schema, so one definition can be embedded in several kinds (MyApp
// embedding Database and Cache spec templates) without aliasing.
import { Type, type TSchema } from 'typebox';
import type { ValidationRule } from './schema.ts';

/**
 * The resource.Quantity grammar (as controller-gen emits it): `1`, `500m`,
 * `1.5Gi`, `2e3`. Only applied to the string form; integers are whole units.
 */
export const QUANTITY_PATTERN =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

// Longer than any sensible quantity, short enough that a CEL rule reading the
// string stays far inside the API server's cost budget.
const QUANTITY_MAX_LENGTH = 64;

/** Attaches CEL rules to any schema node (kept with rules it already has). */
export function WithRules<T extends TSchema>(schema: T, ...rules: ValidationRule[]): T {
  const existing =
    (schema as { 'x-kubernetes-validations'?: ValidationRule[] })['x-kubernetes-validations'] ?? [];
  // Type.With copies TypeBox's hidden modifiers (Optional), so Static<> and
  // the `required` list of the enclosing object stay the same.
  return Type.With(schema, { 'x-kubernetes-validations': [...existing, ...rules] }) as unknown as T;
}

/**
 * The name of another object in the same namespace (a Secret, a StorageClass):
 * a non-empty DNS-1123 subdomain of at most 253 characters, the rule most
 * kinds' names follow, checked with CEL's format library, which is Kubernetes'
 * own name validation.
 */
export function ObjectName(options: { what: string; description?: string }) {
  const { what, ...rest } = options;
  const errors = 'format.dns1123Subdomain().validate(self)';
  return WithRules(Type.String({ minLength: 1, maxLength: 253, ...rest }), {
    rule: `!${errors}.hasValue()`,
    // Kubernetes' own wording; not the list validate() returns, as joining a
    // list of unbounded strings is priced far over the cost budget.
    message: `must be the name of ${what}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com')`,
  });
}

// The image reference grammar the kubelet parses an image with (the
// distribution project's): [registry-host[:port]/]path[:tag][@digest], where
// the path is lower case. Spelled out here so that a reference the kubelet
// would refuse (InvalidImageName, long after the object was accepted) is
// refused when the object is written.
const HOST = '[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(:[0-9]+)?';
const PATH_COMPONENT = '[a-z0-9]+((\\.|_|__|-+)[a-z0-9]+)*';
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
export const IMAGE_PATTERN = `^(${HOST}/)?${PATH_COMPONENT}(/${PATH_COMPONENT})*(:${TAG})?(@${DIGEST})?$`;

/** A container image reference, such as `ghcr.io/example/shop:1.0` or `redis@sha256:<digest>`. */
export function ContainerImage(options: { description?: string } = {}) {
  return WithRules(Type.String({ minLength: 1, maxLength: 512, ...options }), {
    // JSON's string escapes are CEL's.
    rule: `self.matches(${JSON.stringify(IMAGE_PATTERN)})`,
    message:
      'must be an image reference such as ghcr.io/example/shop:1.0: an optional registry host[:port]/, a lower-case repository path, an optional :tag and @digest, with no spaces',
  });
}

/**
 * A resource quantity: integer or string (`x-kubernetes-int-or-string`),
 * `1Gi`-style strings checked against {@link QUANTITY_PATTERN}. CEL sees it as
 * `int | string`; wrap it in `quantity(string(self))` to compare.
 */
export function Quantity(
  options: {
    description?: string | undefined;
    default?: string | number | undefined;
    /** Refuse zero and negative values: for anything that sizes something (a volume, a memory limit). */
    positive?: boolean | undefined;
  } = {},
) {
  const { positive, ...rest } = options;
  const schema = Type.Union([Type.Integer(), Type.String()], {
    ...rest,
    pattern: QUANTITY_PATTERN,
    maxLength: QUANTITY_MAX_LENGTH,
    'x-kubernetes-int-or-string': true,
  });
  if (!positive) return schema;
  // isQuantity(): a malformed string gets the pattern's error, not a CEL
  // runtime error on top of it.
  return WithRules(schema, {
    rule: `!isQuantity(string(self)) || quantity(string(self)).isGreaterThan(quantity('0'))`,
    message: 'must be greater than zero',
  });
}

/**
 * The field can be set on create and never changed (`self == oldSelf`).
 * Transition rules only run when the field exists in both the old and the new
 * object, so an *optional* immutable field can still be added or removed:
 * guard that on the parent (`has(self.x) == has(oldSelf.x)`).
 */
export function Immutable<T extends TSchema>(schema: T, message: string): T {
  return WithRules(schema, { rule: 'self == oldSelf', message });
}

/** A quantity that may only grow (volume sizes): a CEL transition rule. */
export function GrowOnly<T extends TSchema>(schema: T, message: string): T {
  // string(): an int-or-string value reaches CEL as an int when written as a
  // number, and quantity() only takes strings.
  return WithRules(schema, {
    rule: 'quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0',
    message,
  });
}

/**
 * The resources a container may request or limit. Hugepages and extended
 * resources (`example.com/gpu`) are left out: each brings rules of its own
 * (requests equal to limits, whole numbers, page-size multiples) that only the
 * Pod's validation would report.
 */
export const CONTAINER_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'] as const;

/**
 * corev1.ResourceRequirements without claims: `limits` and `requests` maps of
 * positive quantities, keyed by {@link CONTAINER_RESOURCES}, and no request
 * above its limit, as the Pod's validation would demand.
 */
export function ResourceRequirements(options: { description?: string } = {}) {
  const names = `[${CONTAINER_RESOURCES.map((r) => `'${r}'`).join(', ')}]`;
  const unknown = `self.filter(k, !(k in ${names}))`;
  const map = () =>
    Type.Optional(
      WithRules(
        Type.Record(Type.String({ maxLength: 253 }), Quantity({ positive: true }), { maxProperties: 16 }),
        {
          rule: `${unknown}.size() == 0`,
          messageExpression: `'unknown resource ' + strings.quote(${unknown}[0]) + ': use ${CONTAINER_RESOURCES.join(', ')}'`,
        },
      ),
    );
  const q = (m: string) => `quantity(string(self.${m}[k]))`;
  const over = `self.requests.filter(k, k in self.limits && isQuantity(string(self.requests[k])) && isQuantity(string(self.limits[k])) && ${q('requests')}.isGreaterThan(${q('limits')}))`;
  return WithRules(Type.Object({ limits: map(), requests: map() }, options), {
    rule: `!has(self.requests) || !has(self.limits) || ${over}.size() == 0`,
    messageExpression: `'requests.' + ${over}[0] + ' (' + string(self.requests[${over}[0]]) + ') must not be greater than limits.' + ${over}[0] + ' (' + string(self.limits[${over}[0]]) + ')'`,
    fieldPath: '.requests',
    reason: 'FieldValueInvalid',
  });
}

/** metav1.Condition, with the same validations as the upstream type. */
export function Condition() {
  return Type.Object({
    type: Type.String({
      maxLength: 316,
      pattern:
        '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
    }),
    status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0, format: 'int64' })),
    lastTransitionTime: Type.String({ format: 'date-time' }),
    reason: Type.String({
      minLength: 1,
      maxLength: 1024,
      pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
    }),
    message: Type.String({ maxLength: 32768 }),
  });
}

/**
 * `status.conditions`: a list-map keyed by `type`, so server-side apply merges
 * one condition at a time and a duplicate type is rejected.
 */
export function Conditions(options: { maxItems?: number } = {}) {
  return Type.Array(Condition(), {
    maxItems: options.maxItems ?? 32,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['type'],
  });
}

/** corev1.EnvVar restricted to a literal value or one key of a Secret. */
export function EnvVar() {
  return Type.Object({
    // Kubernetes' relaxed rule for variable names: printable ASCII except '='.
    name: WithRules(Type.String({ minLength: 1, maxLength: 253 }), {
      rule: `self.matches('^[ -<>-~]+$')`,
      message: "an environment variable name is printable ASCII characters other than '='",
    }),
    value: Type.Optional(Type.String({ maxLength: 32768 })),
    valueFrom: Type.Optional(
      Type.Object({
        secretKeyRef: Type.Object({
          name: ObjectName({ what: 'a Secret' }),
          // A Secret's data keys: what corev1 validation allows (IsConfigMapKey).
          key: WithRules(Type.String({ minLength: 1, maxLength: 253 }), {
            rule: `self.matches('^[-._a-zA-Z0-9]+$') && self != '.' && !self.startsWith('..')`,
            message: "a Secret key is letters, digits, '-', '_' and '.', and is not '.' or start with '..'",
          }),
          optional: Type.Optional(Type.Boolean()),
        }),
      }),
    ),
  });
}

/** A container's `env`: a list-map keyed by `name` (one entry per variable). */
export function EnvVars(options: { maxItems?: number } = {}) {
  return WithRules(
    Type.Array(EnvVar(), {
      maxItems: options.maxItems ?? 64,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
    }),
    {
      rule: 'self.all(e, !(has(e.value) && has(e.valueFrom)))',
      message: 'an env var has either value or valueFrom, not both',
    },
  );
}

/**
 * The summary phase every Regulon kind reports in `status.phase`: the values
 * @regulon/runtime's derivePhase() returns, derived from the conditions.
 */
export function Phase() {
  return Type.Union(
    [
      Type.Literal('Pending'),
      Type.Literal('Provisioning'),
      Type.Literal('Ready'),
      Type.Literal('Updating'),
      Type.Literal('Degraded'),
    ],
    { description: 'Summary derived from the conditions; never contradicts Ready.' },
  );
}
