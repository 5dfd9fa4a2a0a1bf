import {
  ChildNamingRules,
  Conditions,
  defineKind,
  ObjectName,
  Quantity,
  Type,
  WithRules,
  type KindObject,
  Phase,
} from '@regulon/crd';
import { MAX_NAME_LENGTH, MAX_REPLICAS } from './names.ts';
import { celVersionAtLeast, VERSION_PATTERN } from '@regulon/image-catalog';
import { EVICTION_POLICIES } from './versions.ts';

export const GROUP = 'regulon.dev';

/** The memory limit a Cache may ask for: below the floor an engine barely starts, above the ceiling is a typo. */
export const MIN_MEMORY = '32Mi';
export const MAX_MEMORY = '64Gi';

/**
 * CEL: `v` is a well-formed version. Which versions exist is the image
 * catalog's to say (@regulon/image-catalog), and it can change while Caches
 * exist, so the schema checks the form and the reconciler the rest.
 */
const wellFormed = (v: string) => `${v}.matches('${VERSION_PATTERN.source}')`;
const PERSISTENT = (o: string) => `(has(${o}.persistence) && ${o}.persistence.enabled)`;
// Quantities reach CEL as int or string: string() first, and isQuantity() so a
// malformed value gets the schema's pattern error rather than a CEL runtime error.
const q = (x: string) => `quantity(string(${x}))`;

const MODE = (o: string) => `(has(${o}.mode) ? ${o}.mode : 'standalone')`;
const MODE_CHANGE_REASON =
  'independent instances hold different keys and a replica drops its data to copy the primary. Create a new Cache with the mode you want and move clients to it';
export const REPLICATED_MEMCACHED_MESSAGE =
  'mode: replicated is only supported by redis: memcached has no replication; its clients shard keys across the independent instances of the headless Service';

export const PERSISTENCE_ON_MESSAGE =
  'persistence cannot be turned on after creation: a persistent Cache is a StatefulSet with a volume per Pod, this one is a Deployment without volumes. Create a new Cache with persistence.enabled: true and move clients to it';
export const PERSISTENCE_OFF_MESSAGE =
  'persistence cannot be turned off after creation: that would throw away the data volumes. Create a new Cache without persistence and move clients to it';

export const CacheSpec = WithRules(
  Type.Object({
    engine: Type.Union([Type.Literal('redis'), Type.Literal('memcached')], {
      description: 'Cache engine; fixed at creation.',
      maxLength: 16,
    }),
    version: Type.String({
      maxLength: 16,
      description: "Engine version, such as 7.4.11: one the manager's image catalog lists.",
    }),
    mode: Type.Optional(
      Type.Union([Type.Literal('standalone'), Type.Literal('replicated')], {
        default: 'standalone',
        maxLength: 16,
        description:
          'standalone: independent instances (clients shard across the headless Service). replicated (redis only): one primary behind the client Service and replicas behind <name>-ro, with automatic failover. Fixed at creation.',
      }),
    ),
    replicas: Type.Integer({
      minimum: 1,
      maximum: MAX_REPLICAS,
      default: 1,
      description:
        'Pods. standalone: independent instances. replicated: the primary and replicas - 1 replicas.',
    }),
    replication: Type.Optional(
      Type.Object(
        {
          failoverDelaySeconds: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 300,
              default: 10,
              description:
                'How long the primary may be unreachable or not ready before a replica is promoted.',
            }),
          ),
          minReplicasToWrite: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 4,
              description:
                'How many replicas must be linked, each within half the failover delay, for the primary to accept a write (redis min-replicas-to-write). Default 1 (0 with no replica): a primary cut off from every replica stops acknowledging writes a replica may soon be promoted without. 0 keeps writing, and may lose them.',
            }),
          ),
          maxLagBytes: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 1024 ** 3,
              default: 1024 ** 2,
              description:
                'How far (replication offset, bytes) a replica may trail the primary and still be in the -ro Service.',
            }),
          ),
        },
        { description: 'mode: replicated only: failover and read-replica settings.' },
      ),
    ),
    memory: WithRules(
      Quantity({
        default: '256Mi',
        description: `The container memory limit (${MIN_MEMORY} to ${MAX_MEMORY}); the engine's own limit is maxMemoryPercent of it.`,
      }),
      {
        rule: `!isQuantity(string(self)) || (${q('self')}.compareTo(quantity('${MIN_MEMORY}')) >= 0 && ${q('self')}.compareTo(quantity('${MAX_MEMORY}')) <= 0)`,
        message: `memory must be between ${MIN_MEMORY} and ${MAX_MEMORY}`,
      },
    ),
    maxMemoryPercent: Type.Integer({
      minimum: 10,
      maximum: 95,
      default: 75,
      description:
        "The engine's max memory (redis maxmemory, memcached -m) as a percentage of the memory limit; the rest is left for connections, buffers and fragmentation.",
    }),
    evictionPolicy: Type.Optional(
      Type.Enum(EVICTION_POLICIES, { description: 'Redis only: maxmemory-policy. Defaults to allkeys-lru.' }),
    ),
    persistence: Type.Optional(
      WithRules(
        Type.Object(
          {
            enabled: Type.Boolean({
              description:
                'Run as a StatefulSet with a volume per Pod (append-only file). Fixed at creation.',
            }),
            size: Quantity({
              default: '1Gi',
              positive: true,
              description: 'Volume size per Pod; fixed at creation.',
            }),
            storageClassName: Type.Optional(
              ObjectName({ what: 'a StorageClass', description: "Left out: the cluster's default class." }),
            ),
          },
          { description: 'Redis only: keep data across restarts.' },
        ),
        {
          rule: `!(self.enabled && oldSelf.enabled) || !isQuantity(string(self.size)) || !isQuantity(string(oldSelf.size)) || ${q('self.size')}.compareTo(${q('oldSelf.size')}) == 0`,
          message:
            'persistence.size cannot change after creation: the StatefulSet volume template is immutable',
          fieldPath: '.size',
        },
        {
          rule: `!(self.enabled && oldSelf.enabled) || (has(self.storageClassName) ? self.storageClassName : '') == (has(oldSelf.storageClassName) ? oldSelf.storageClassName : '')`,
          message:
            'persistence.storageClassName cannot change after creation: the StatefulSet volume template is immutable',
          fieldPath: '.storageClassName',
        },
      ),
    ),
    auth: Type.Optional(
      WithRules(
        Type.Object(
          {
            enabled: Type.Optional(Type.Boolean({ default: true, description: 'Require a password.' })),
            secretName: Type.Optional(
              ObjectName({
                what: 'a Secret',
                description:
                  'Use this existing Secret (key password; for memcached also username) instead of generating one.',
              }),
            ),
          },
          { description: 'Password authentication. Left out: no auth.' },
        ),
        {
          rule: '!has(self.secretName) || self.enabled',
          message: 'auth.secretName needs auth.enabled: true (or leave enabled out)',
        },
      ),
    ),
  }),
  // First, and on the spec rather than on .engine: the API server runs a node's
  // rules before its fields' and lists the failures in that order, so an engine
  // change is reported before what follows from it (a version, eviction policy
  // or persistence the other engine lacks).
  {
    rule: 'self.engine == oldSelf.engine',
    message: 'engine is immutable: create a new Cache instead',
    fieldPath: '.engine',
  },
  {
    // Fixed at creation: independent instances hold different keys, and a replica drops its own
    // data to copy the primary's, so turning them into replicas (or back) would lose or split data.
    rule: `${MODE('self')} == ${MODE('oldSelf')}`,
    messageExpression: `'mode cannot change after creation (' + ${MODE('oldSelf')} + ' to ' + ${MODE('self')} + '): ${MODE_CHANGE_REASON}'`,
    fieldPath: '.mode',
  },
  {
    rule: `self.engine == 'redis' || ${MODE('self')} != 'replicated'`,
    message: REPLICATED_MEMCACHED_MESSAGE,
    fieldPath: '.mode',
    reason: 'FieldValueForbidden',
  },
  {
    rule: '!has(self.replication) || !has(self.replication.minReplicasToWrite) || self.replication.minReplicasToWrite < self.replicas',
    message:
      'replication.minReplicasToWrite must be less than replicas: the primary counts the replicas linked to it, and there are replicas - 1',
    fieldPath: '.replication.minReplicasToWrite',
  },
  {
    rule: `!has(self.replication) || ${MODE('self')} == 'replicated'`,
    message: 'replication settings apply to mode: replicated only',
    fieldPath: '.replication',
    reason: 'FieldValueForbidden',
  },
  {
    rule: wellFormed('self.version'),
    message: "version must be a dotted number such as 7.4.11 (one the manager's image catalog lists)",
    fieldPath: '.version',
    reason: 'FieldValueInvalid',
  },
  {
    rule: `self.engine == 'redis' || !has(self.evictionPolicy)`,
    message:
      'evictionPolicy is only supported by redis: memcached always evicts the least recently used items',
    fieldPath: '.evictionPolicy',
    reason: 'FieldValueForbidden',
  },
  {
    rule: `self.engine == 'redis' || !${PERSISTENT('self')}`,
    message: 'persistence is only supported by redis: memcached keeps its data in memory only',
    fieldPath: '.persistence',
    reason: 'FieldValueForbidden',
  },
  {
    // The one decision on persistence: fixed at creation, both ways (the workload kind depends on it).
    // Silent on an engine change, which the engine rule already refuses.
    rule: `self.engine != oldSelf.engine || ${PERSISTENT('self')} == ${PERSISTENT('oldSelf')}`,
    messageExpression: `${PERSISTENT('self')} ? '${PERSISTENCE_ON_MESSAGE}' : '${PERSISTENCE_OFF_MESSAGE}'`,
    fieldPath: '.persistence',
  },
  {
    // Data files written by a newer redis can't be loaded by an older one; without persistence nothing is kept.
    rule: `self.engine != oldSelf.engine || !${PERSISTENT('self')} || !${wellFormed('self.version')} || !${wellFormed('oldSelf.version')} || ${celVersionAtLeast('self.version', 'oldSelf.version')}`,
    messageExpression: `'version cannot be downgraded from ' + oldSelf.version + ' to ' + self.version + ' while persistence is enabled: an older redis cannot read the newer data files'`,
    fieldPath: '.version',
  },
);

export const CacheStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer()),
  conditions: Type.Optional(Conditions()),
  phase: Type.Optional(Phase()),
  replicas: Type.Optional(Type.Integer()),
  readyReplicas: Type.Optional(Type.Integer()),
  selector: Type.Optional(Type.String()),
  currentVersion: Type.Optional(Type.String({ description: 'The version every Pod runs.' })),
  binding: Type.Optional(Type.Object({ name: Type.String() })),
  endpoint: Type.Optional(Type.String()),
  currentPrimary: Type.Optional(
    Type.String({
      description: 'mode: replicated: the Pod that accepts writes (behind the client Service).',
    }),
  ),
  instances: Type.Optional(
    Type.Array(
      Type.Object({
        name: Type.String(),
        role: Type.String({ description: 'primary, replica (in the -ro Service) or standby (in neither).' }),
        state: Type.String({
          description: 'Primary, Linked, Lagging, NotLinked, Writable (fenced next), Unreachable, Missing.',
        }),
        offset: Type.Optional(Type.Integer({ description: 'Its replication offset (bytes).' })),
        lagBytes: Type.Optional(Type.Integer({ description: "How far it trails the primary's offset." })),
      }),
      { maxItems: 16 },
    ),
  ),
});

export const Cache = defineKind({
  group: GROUP,
  version: 'v1alpha1',
  kind: 'Cache',
  plural: 'caches',
  singular: 'cache',
  shortNames: ['kc'],
  categories: ['regulon'],
  scope: 'Namespaced',
  description:
    'A redis or memcached cache: a Deployment, or a StatefulSet when redis persists its data or replicates.',
  spec: CacheSpec,
  status: CacheStatus,
  objectValidations: ChildNamingRules({
    kind: 'Cache',
    maxLength: MAX_NAME_LENGTH,
    children: 'Deployment or StatefulSet and Services',
  }),
  scale: {
    specReplicasPath: '.spec.replicas',
    statusReplicasPath: '.status.replicas',
    labelSelectorPath: '.status.selector',
  },
  printerColumns: [
    { name: 'Engine', type: 'string', jsonPath: '.spec.engine' },
    { name: 'Version', type: 'string', jsonPath: '.spec.version' },
    // Replicas, Ready, Status: the shape every Regulon kind shows (see packages/crd/src/shipped.test.ts).
    { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
    { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' },
    { name: 'Status', type: 'string', jsonPath: '.status.phase' },
    { name: 'Endpoint', type: 'string', jsonPath: '.status.endpoint', priority: 1 },
    { name: 'Primary', type: 'string', jsonPath: '.status.currentPrimary', priority: 1 },
    {
      name: 'Message',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].message',
      priority: 1,
    },
  ],
});

export type CacheObject = KindObject<typeof Cache>;
