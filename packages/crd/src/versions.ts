import type { TSchema } from 'typebox';
import type { CustomResourceDefinition, Kind } from './kind.ts';
import { SchemaError } from './schema.ts';

/**
 * `spec.conversion` of a CRD: how the API server turns an object stored at
 * one version into another. `None` changes only `apiVersion` (versions whose
 * schemas are the same); `Webhook` calls a conversion webhook (the runtime's
 * `crdConversion()` makes one for its WebhookServer).
 */
export type CrdConversion =
  | { strategy: 'None' }
  | {
      strategy: 'Webhook';
      webhook: {
        conversionReviewVersions: string[];
        clientConfig: {
          url?: string | undefined;
          service?:
            | { namespace: string; name: string; path?: string | undefined; port?: number | undefined }
            | undefined;
          caBundle?: string | undefined;
        };
      };
    };

export interface VersionedCRDOptions {
  /** The version the API server stores objects at: the hub of the conversions, usually the newest. */
  storage: Kind<TSchema, TSchema>;
  /** The other versions, served too (each a `defineKind` of the same kind and names). */
  served: ReadonlyArray<Kind<TSchema, TSchema>>;
  /**
   * Versions still served but on their way out: clients using them get the
   * API server's warning (`deprecationWarning`, or its default one).
   */
  deprecated?: ReadonlyArray<{ version: string; warning?: string | undefined }> | undefined;
  /** Required with more than one version whose schemas differ: the API server does not guess. */
  conversion: CrdConversion;
}

/**
 * One CustomResourceDefinition serving several versions of a kind, each
 * defined on its own with `defineKind` (its own schema, printer columns and
 * subresources), one of them stored. The versions must agree on everything
 * the CRD holds once (group, kind, names, scope): a mismatch is a SchemaError
 * here rather than a version that silently loses its names.
 */
export function versionedCRD(options: VersionedCRDOptions): CustomResourceDefinition {
  const all = [options.storage, ...options.served];
  const hub = options.storage.crd();
  const seen = new Set<string>();
  for (const kind of all) {
    const version = kind.definition.version;
    if (seen.has(version)) throw new SchemaError('', `version ${version} is given twice`);
    seen.add(version);
    const crd = kind.crd();
    for (const [what, a, b] of [
      ['group', crd.spec.group, hub.spec.group],
      ['scope', crd.spec.scope, hub.spec.scope],
      ['names', JSON.stringify(crd.spec.names), JSON.stringify(hub.spec.names)],
    ] as const)
      if (a !== b)
        throw new SchemaError(
          '',
          `${kind.kind} ${version} has ${what} ${a}, but the stored version ${options.storage.definition.version} has ${b}: one CRD has one of each`,
        );
  }
  const deprecated = new Map((options.deprecated ?? []).map((d) => [d.version, d.warning]));
  for (const version of deprecated.keys()) {
    if (!seen.has(version))
      throw new SchemaError('', `deprecated version ${version} is not one of the versions`);
    if (version === options.storage.definition.version)
      throw new SchemaError(
        '',
        `the stored version ${version} cannot be deprecated: store a newer one first`,
      );
  }
  if (options.conversion.strategy === 'None' && all.length > 1) {
    const schemas = new Set(all.map((k) => JSON.stringify(k.schema())));
    if (schemas.size > 1)
      throw new SchemaError(
        '',
        `the versions of ${hub.spec.names.kind} have different schemas: conversion strategy None would serve one's fields as the other's; use a conversion webhook`,
      );
  }
  const versions = all.map((kind) => {
    const [v] = kind.crd().spec.versions;
    const version = kind.definition.version;
    const isStorage = kind === options.storage;
    return {
      ...v!,
      storage: isStorage,
      ...(deprecated.has(version)
        ? {
            deprecated: true,
            ...(deprecated.get(version) ? { deprecationWarning: deprecated.get(version)! } : {}),
          }
        : {}),
    };
  });
  return { ...hub, spec: { ...hub.spec, versions, conversion: structuredClone(options.conversion) } };
}
