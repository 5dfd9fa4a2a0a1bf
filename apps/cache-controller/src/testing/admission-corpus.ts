// The Cache's bad-input corpus at admission: one row per input, each a change
// to one field of a valid Cache, with what the API server must say. The
// accepted rows are the edges the rules must not refuse. Run by
// api.integration.test.ts and by tools/scripts/corpus-table.ts.
import type { AdmissionCase, AdmissionCorpus } from '@regulon/crd/testing';
import { Cache, MAX_MEMORY, MIN_MEMORY, type CacheObject } from '../api.ts';
import { MAX_NAME_LENGTH } from '../names.ts';

/** Messages, as the API server words them. */
export const M = {
  positive: /^Invalid value: .*: must be greater than zero$/,
  memoryRange: new RegExp(`memory must be between ${MIN_MEMORY} and ${MAX_MEMORY}`),
  notAQuantity: /in body should match '\^\(\\\+\|-\)\?/,
  type: (t: string) => new RegExp(`in body must be of type ${t}`),
  unsupported: /^Unsupported value: .*: supported values: /,
  empty: /should be at least 1 chars long/,
  atLeast: (n: number) => new RegExp(`should be greater than or equal to ${n}`),
  atMost: (n: number) => new RegExp(`should be less than or equal to ${n}`),
  secret: /must be the name of a Secret: a lowercase RFC 1123 subdomain/,
  storageClass: /must be the name of a StorageClass: a lowercase RFC 1123 subdomain/,
  version: /^Invalid value: version must be a dotted number such as 7\.4\.11/,
  serviceName:
    /cannot be used: a Cache names its .* after itself, and a Service name must be a DNS-1035 label/,
  nameTooLong: new RegExp(`is too long: a Cache name is at most ${MAX_NAME_LENGTH} characters`),
  objectName: /a lowercase RFC 1123 subdomain must consist of/,
  redisOnly: (what: string) => new RegExp(`^Forbidden: ${what} is only supported by redis`),
  replicatedOnly: /^Forbidden: replication settings apply to mode: replicated only/,
};

const rejected = (
  field: string,
  form: string,
  values: unknown[],
  message: RegExp,
  other?: Record<string, unknown>,
) =>
  values.map((value): AdmissionCase => ({
    field,
    value,
    form,
    rejected: message,
    ...(other ? { with: other } : {}),
  }));
const accepted = (field: string, form: string, values: unknown[], other?: Record<string, unknown>) =>
  values.map((value): AdmissionCase => ({ field, value, form, ...(other ? { with: other } : {}) }));

const PERSISTENT = { 'spec.persistence.enabled': true };
const MEMCACHED = { 'spec.engine': 'memcached', 'spec.version': '1.6.45' };
const REPLICATED = { 'spec.mode': 'replicated' };

export const CACHE_CASES: AdmissionCase[] = [
  // spec.memory: the container's memory limit.
  ...rejected('spec.memory', 'zero', ['0', 0], M.memoryRange),
  ...rejected('spec.memory', 'negative', ['-1Gi', -268435456], M.memoryRange),
  ...rejected('spec.memory', 'below the floor', ['1Mi', '31Mi'], M.memoryRange),
  ...rejected('spec.memory', 'above the ceiling', ['65Gi', '1Ti'], M.memoryRange),
  ...rejected('spec.memory', 'absurd unit', ['256MB', '256 Mi', 'lots'], M.notAQuantity),
  ...rejected('spec.memory', 'empty', [''], M.notAQuantity),
  ...accepted('spec.memory', 'edge', [MIN_MEMORY, MAX_MEMORY, 33554432, '0.5Gi']),

  // spec.persistence: redis's volumes.
  ...rejected('spec.persistence.size', 'zero', ['0', 0], M.positive, PERSISTENT),
  ...rejected('spec.persistence.size', 'negative', ['-1Gi'], M.positive, PERSISTENT),
  ...rejected('spec.persistence.size', 'absurd unit', ['1GB'], M.notAQuantity, PERSISTENT),
  ...accepted('spec.persistence.size', 'smallest', ['1Mi', 1], PERSISTENT),
  ...rejected('spec.persistence.storageClassName', 'empty', [''], M.empty, PERSISTENT),
  ...rejected(
    'spec.persistence.storageClassName',
    'not a name',
    ['Fast_SSD', 'fast ssd'],
    M.storageClass,
    PERSISTENT,
  ),
  ...rejected('spec.persistence.enabled', 'wrong type', ['true'], M.type('boolean')),
  ...rejected('spec.persistence', 'on memcached', [{ enabled: true }], M.redisOnly('persistence'), MEMCACHED),

  // spec.mode: independent instances, or one primary and replicas (redis).
  ...rejected('spec.mode', 'unknown mode', ['cluster', 'Replicated'], M.unsupported),
  ...rejected(
    'spec.mode',
    'replicated memcached',
    ['replicated'],
    M.redisOnly('mode: replicated'),
    MEMCACHED,
  ),
  ...accepted('spec.mode', 'either', ['standalone', 'replicated']),
  ...accepted('spec.mode', 'replicated, persistent', ['replicated'], PERSISTENT),
  ...rejected('spec.replication.failoverDelaySeconds', 'zero', [0], M.atLeast(1), REPLICATED),
  ...rejected('spec.replication.failoverDelaySeconds', 'too long', [301], M.atMost(300), REPLICATED),
  ...rejected('spec.replication.maxLagBytes', 'negative', [-1], M.atLeast(0), REPLICATED),
  ...accepted('spec.replication.failoverDelaySeconds', 'edge', [1, 300], REPLICATED),
  ...rejected('spec.replication', 'on a standalone Cache', [{ failoverDelaySeconds: 5 }], M.replicatedOnly),
  ...rejected('spec.replication.minReplicasToWrite', 'negative', [-1], M.atLeast(0), REPLICATED),
  ...rejected(
    'spec.replication.minReplicasToWrite',
    'as many as the instances',
    [3],
    /^Invalid value: .*replication\.minReplicasToWrite must be less than replicas: the primary counts the replicas linked to it/,
    { ...REPLICATED, 'spec.replicas': 3 },
  ),
  ...accepted('spec.replication.minReplicasToWrite', 'none, or all the replicas', [0, 2], {
    ...REPLICATED,
    'spec.replicas': 3,
  }),

  // spec.auth.secretName: names a Secret.
  ...rejected('spec.auth.secretName', 'empty', [''], M.empty),
  ...rejected('spec.auth.secretName', 'not a name', ['UPPER', 'has space', '.hidden', 'a_b'], M.secret),
  ...accepted('spec.auth.secretName', 'a Secret name', ['sessions-auth']),

  // Sizing and counts.
  ...rejected('spec.maxMemoryPercent', 'too small', [5], M.atLeast(10)),
  ...rejected('spec.maxMemoryPercent', 'too large', [100], M.atMost(95)),
  ...rejected('spec.maxMemoryPercent', 'wrong type', ['75'], M.type('integer')),
  ...rejected('spec.replicas', 'zero', [0], M.atLeast(1)),
  ...rejected('spec.replicas', 'too many', [6], M.atMost(5)),

  // The engine, its version and its options.
  ...rejected('spec.engine', 'unknown engine', ['valkey', 'Redis'], M.unsupported),
  ...rejected('spec.version', 'not a version', ['latest', '7.0-alpine', ''], M.version),
  // Which versions exist is the image catalog's to say, at reconcile time (VersionNotInCatalog).
  ...accepted('spec.version', 'well-formed, whatever the catalog has', ['9.9.9', '7']),
  ...rejected('spec.evictionPolicy', 'unknown policy', ['random'], M.unsupported),
  ...rejected(
    'spec.evictionPolicy',
    'on memcached',
    ['allkeys-lru'],
    M.redisOnly('evictionPolicy'),
    MEMCACHED,
  ),

  // metadata.name: the workload and Services are named after it.
  ...rejected('metadata.name', 'dots (not a Service name)', ['my.cache'], M.serviceName),
  ...rejected('metadata.name', 'starts with a digit', ['9lives'], M.serviceName),
  ...rejected('metadata.name', 'upper case', ['Sessions'], M.objectName),
  ...rejected('metadata.name', 'too long for its children', ['c'.repeat(MAX_NAME_LENGTH + 1)], M.nameTooLong),
  ...accepted('metadata.name', 'edge', ['c'.repeat(MAX_NAME_LENGTH)]),
];

export const CACHE_CORPUS: AdmissionCorpus<CacheObject> = {
  kind: Cache,
  valid: (metadata) =>
    Cache.object({
      metadata,
      spec: { engine: 'redis', version: '8.0.6', replicas: 1, memory: '256Mi', maxMemoryPercent: 75 },
    }),
  cases: CACHE_CASES,
};
