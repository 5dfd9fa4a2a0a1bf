import { versionedCRD, type CrdConversion } from '@regulon/crd';
import type { SpokeConverter, WebhookServer } from '@regulon/runtime';
import { Database, DatabaseV1alpha1, type DatabaseObject, type DatabaseV1alpha1Object } from './api.ts';

type HubReplication = NonNullable<DatabaseObject['spec']['replication']>;
type SpokeReplication = NonNullable<DatabaseV1alpha1Object['spec']['replication']>;

/**
 * v1alpha1 ⇄ v1beta1. The versions differ in one place: v1alpha1's
 * `replication.maxLagBytes` and `replication.maxLagTransactions` are v1beta1's
 * `replication.maxLag.bytes` and `replication.maxLag.transactions`. Every
 * other field, the status included, is the same at both, so each object
 * converts both ways and a round trip gives back what went in: no field of
 * either version lacks a place in the other, and nothing needs stashing in an
 * annotation.
 *
 * An empty `maxLag` has no v1alpha1 form but never reaches a conversion: the
 * schema defaults both bounds, so the API server holds them set.
 */
export const DATABASE_V1ALPHA1_CONVERSION: SpokeConverter<DatabaseV1alpha1Object, DatabaseObject> = {
  toHub: ({ metadata, spec, status }) =>
    Database.object({ metadata, spec: specToHub(spec), ...(status ? { status } : {}) }),
  fromHub: ({ metadata, spec, status }) =>
    DatabaseV1alpha1.object({ metadata, spec: specFromHub(spec), ...(status ? { status } : {}) }),
};

/**
 * A v1alpha1 Database spec as v1beta1's: for the conversion webhook, and for
 * what embeds a v1alpha1 spec as a template (MyApp v1alpha1's spec.database).
 */
export function specToHub(spec: DatabaseV1alpha1Object['spec']): DatabaseObject['spec'] {
  const { replication, ...rest } = spec;
  return { ...rest, ...(replication ? { replication: replicationToHub(replication) } : {}) };
}

function specFromHub(spec: DatabaseObject['spec']): DatabaseV1alpha1Object['spec'] {
  const { replication, ...rest } = spec;
  return { ...rest, ...(replication ? { replication: replicationFromHub(replication) } : {}) };
}

function replicationToHub(replication: SpokeReplication): HubReplication {
  const { maxLagBytes, maxLagTransactions, ...rest } = replication;
  const maxLag = {
    ...(maxLagBytes !== undefined ? { bytes: maxLagBytes } : {}),
    ...(maxLagTransactions !== undefined ? { transactions: maxLagTransactions } : {}),
  };
  return { ...rest, ...(Object.keys(maxLag).length > 0 ? { maxLag } : {}) };
}

function replicationFromHub(replication: HubReplication): SpokeReplication {
  const { maxLag, ...rest } = replication;
  return {
    ...rest,
    ...(maxLag?.bytes !== undefined ? { maxLagBytes: maxLag.bytes } : {}),
    ...(maxLag?.transactions !== undefined ? { maxLagTransactions: maxLag.transactions } : {}),
  };
}

/** Serves the Database's conversions on the manager's webhook server (the CRD's `spec.conversion` names it). */
export function setupDatabaseConversion(webhooks: WebhookServer): void {
  webhooks.conversion(Database).spoke(DatabaseV1alpha1, DATABASE_V1ALPHA1_CONVERSION);
}

/**
 * The Database CRD serving both versions, v1beta1 stored, converted by the
 * webhook `conversion` names (the runtime's `crdConversion()` makes it for a
 * URL or a Service).
 */
export function databaseCRD(conversion: CrdConversion) {
  return versionedCRD({ storage: Database, served: [DatabaseV1alpha1], conversion });
}
