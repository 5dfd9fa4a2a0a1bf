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
 * A resource quantity: integer or string (`x-kubernetes-int-or-string`),
 * `1Gi`-style strings checked against {@link QUANTITY_PATTERN}. CEL sees it as
 * `int | string`; wrap it in `quantity(string(self))` to compare.
 */
export function Quantity(options: { description?: string; default?: string | number } = {}) {
  return Type.Union([Type.Integer(), Type.String()], {
    ...options,
    pattern: QUANTITY_PATTERN,
    maxLength: QUANTITY_MAX_LENGTH,
    'x-kubernetes-int-or-string': true,
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

/** corev1.ResourceRequirements without claims: `limits` and `requests` maps of quantities. */
export function ResourceRequirements(options: { description?: string } = {}) {
  const map = () =>
    Type.Optional(Type.Record(Type.String({ maxLength: 253 }), Quantity(), { maxProperties: 16 }));
  return Type.Object({ limits: map(), requests: map() }, options);
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
    name: Type.String({ minLength: 1, maxLength: 253 }),
    value: Type.Optional(Type.String({ maxLength: 32768 })),
    valueFrom: Type.Optional(
      Type.Object({
        secretKeyRef: Type.Object({
          name: Type.String({ minLength: 1, maxLength: 253 }),
          key: Type.String({ minLength: 1, maxLength: 253 }),
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
