// TypeBox is re-exported so that every kind, and every schema embedded in
// another kind, is built with the one TypeBox this package understands.
export { Type, type Static, type TSchema } from 'typebox';
export {
  defineKind,
  type CustomObject,
  type CustomResourceDefinition,
  type Kind,
  type KindDefinition,
  type KindObject,
  type KindSpec,
  type KindStatus,
  type PrinterColumn,
  type ScaleSubresource,
} from './kind.ts';
export { crdYaml } from './yaml.ts';
export {
  Condition,
  Conditions,
  EnvVar,
  EnvVars,
  GrowOnly,
  Phase,
  Immutable,
  Quantity,
  QUANTITY_PATTERN,
  ResourceRequirements,
  WithRules,
} from './helpers.ts';
export { SchemaError, toStructural, type JSONSchemaProps, type ValidationRule } from './schema.ts';
