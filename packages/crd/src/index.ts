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
export { versionedCRD, type CrdConversion, type VersionedCRDOptions } from './versions.ts';
export { CRON_FIELDS, CronSchedule } from './cron.ts';
export { ChildNamingRules } from './names.ts';
export {
  Condition,
  Conditions,
  EnvVar,
  EnvVars,
  CONTAINER_RESOURCES,
  ContainerImage,
  GrowOnly,
  IMAGE_PATTERN,
  Phase,
  Immutable,
  ObjectName,
  Quantity,
  QUANTITY_PATTERN,
  ResourceRequirements,
  WithRules,
} from './helpers.ts';
export { SchemaError, toStructural, type JSONSchemaProps, type ValidationRule } from './schema.ts';
