import {
  ChildNamingRules,
  Conditions,
  CronSchedule,
  defineKind,
  GrowOnly,
  ObjectName,
  Quantity,
  ResourceRequirements,
  Type,
  WithRules,
  type KindObject,
  Phase,
  type TSchema,
} from '@regulon/crd';
import { MAX_NAME_LENGTH, MAX_REPLICAS } from './names.ts';
import {
  CONTROL_CEL_PATTERN,
  NAME_PATTERN,
  NAME_RULE_TEXT,
  PARAMETER_LIMITS,
  reservedCel,
  reservedText,
} from './parameters.ts';
import { celVersionAtLeast, VERSION_PATTERN } from '@regulon/image-catalog';
import type { Engine } from './versions.ts';
import { BackupRetention, ObjectStore } from './backup/api.ts';

export const GROUP = 'regulon.dev';

/** ConfigMaps of user-defined metrics queries a Database may name (each a volume of its Pods). */
export const MAX_QUERY_CONFIGMAPS = 8;

/**
 * CEL: `v` is a well-formed version. Which versions exist is the image
 * catalog's to say (@regulon/image-catalog), and it can change while
 * Databases exist, so the schema checks the form and the reconciler the rest.
 */
const wellFormed = (v: string) => `${v}.matches('${VERSION_PATTERN.source}')`;
/** A CEL string literal (CEL's double-quoted escapes are JSON's). */
const celStr = (s: string) => JSON.stringify(s);
/** CEL: `of(engine)` for the Database's engine; each branch keeps its regex a constant. */
const perEngine = (of: (engine: Engine) => string) =>
  `(self.engine == 'postgres' ? ${of('postgres')} : self.engine == 'mariadb' ? ${of('mariadb')} : ${of('mysql')})`;
/** CEL: the parameter names `bad(k)` holds for, on the Database's engine. */
const namesWhere = (bad: (engine: Engine) => string) =>
  perEngine((engine) => `self.parameters.filter(k, ${bad(engine)})`);
const notAName = (engine: Engine) => `!k.matches('${NAME_PATTERN[engine]}')`;
const reserved = (engine: Engine) => reservedCel(engine, 'k');
/**
 * CEL: the first of them, quoted and escaped (a name may hold a line break,
 * which a message may not). Only the first: listing them all (map + join)
 * costs the API server's estimate over 100 times its budget.
 */
const first = (list: string) => `strings.quote(${list}[0])`;

/**
 * Why backups that name no destination are refused, and what to do instead.
 * Without an object store the only backup was the CronJob's dump onto a
 * scratch volume (an emptyDir), deleted with the Job's Pod: nothing that could
 * ever be restored. `enabled` defaults to true, so `backup: {}` is this too.
 */
export const NO_BACKUP_DESTINATION_MESSAGE =
  'backup.enabled (the default) needs backup.objectStore: without one each scheduled dump would reach only a scratch volume deleted with its Pod, and could never be restored. Name an object store in backup.objectStore (postgres, mariadb), or set backup.enabled: false. mysql has no object-store backup yet, so a mysql Database sets backup.enabled: false';

/** What both versions' `spec.replication` hold. */
const replicationCommon = {
  synchronous: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        'Commit only once a replica has the transaction too (postgres: synchronous standby; mariadb: semi-synchronous replication), so failover loses no acknowledged write; writes wait while no replica streams.',
    }),
  ),
  failoverDelaySeconds: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 3600,
      default: 10,
      description:
        'How long the primary may be lost (Pod gone, not ready, unreachable) before a replica is promoted.',
    }),
  ),
  switchoverCatchUpSeconds: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 3600,
      default: 60,
      description:
        'How long a requested switchover (the regulon.dev/switchover-to annotation) waits for a target that streams beyond maxLag to catch up; the primary serves meanwhile, and the request is refused after it. 0: refused at once.',
    }),
  ),
  divergedData: Type.Optional(
    Type.Union([Type.Literal('Discard'), Type.Literal('Keep')], {
      description:
        "A former primary that returns holding transactions the new primary never had (asynchronous replication's loss, or a commit that waited for a confirmation that never came) has them counted and named first. Discard: it is then rewound (postgres) or cloned afresh (mariadb) onto the primary's history, and a DivergedTransactionsDiscarded Warning Event and status.instances[].discarded say what went. Keep: it stays out, nothing of its data discarded, and the Database says so (Degraded, InstanceFailing, with the count) until this is set to Discard or its PersistentVolumeClaim is deleted. Default: Discard for postgres (a rewind, as CloudNativePG and Patroni do), Keep for mariadb (errant transactions keep an instance out, as MOCO does).",
    }),
  ),
};

const maxLagBytes = () =>
  Type.Integer({
    minimum: 0,
    default: 16777216,
    description:
      'postgres: a replica further behind the primary than this (WAL bytes) leaves the read-only Service until it catches up.',
  });
const maxLagTransactions = () =>
  Type.Integer({
    minimum: 0,
    default: 1000,
    description:
      'mariadb: a replica more transactions (GTID sequence numbers) behind the primary than this leaves the read-only Service until it catches up.',
  });

/** v1beta1: how far a replica may trail and still serve reads, one bound per engine's measure, under `maxLag`. */
const REPLICATION_V1BETA1 = Type.Object({
  ...replicationCommon,
  maxLag: Type.Optional(
    Type.Object(
      { bytes: Type.Optional(maxLagBytes()), transactions: Type.Optional(maxLagTransactions()) },
      {
        default: {},
        description:
          'How far behind the primary a replica may be and still serve reads through the read-only Service; each engine reads the bound in its own measure.',
      },
    ),
  ),
});

/** v1alpha1: the same bounds as two fields of their own (maxLagBytes, maxLagTransactions). */
const REPLICATION_V1ALPHA1 = Type.Object({
  ...replicationCommon,
  maxLagBytes: Type.Optional(maxLagBytes()),
  maxLagTransactions: Type.Optional(maxLagTransactions()),
});

/**
 * A Database's spec at either version: they differ only in `replication`
 * (v1alpha1's lag bounds are two flat fields, v1beta1 groups them).
 */
const databaseSpec = <R extends TSchema>(replication: R) =>
  WithRules(
    Type.Object({
      engine: Type.Union([Type.Literal('postgres'), Type.Literal('mariadb'), Type.Literal('mysql')], {
        description: 'Database engine; fixed at creation.',
        maxLength: 16,
      }),
      version: Type.String({
        maxLength: 16,
        description: "Engine version, such as 16.8: one the manager's image catalog lists.",
      }),
      allowMajorVersionUpgrade: Type.Optional(
        Type.Boolean({
          default: false,
          description: 'Opt in to a major version upgrade (e.g. postgres 16 to 17).',
        }),
      ),
      replicas: Type.Integer({
        minimum: 1,
        maximum: MAX_REPLICAS,
        default: 1,
        description:
          'Instances: one primary and replicas - 1 streaming replicas (postgres, mariadb; mysql runs one). The primary starts on ordinal 0 and moves on failover or switchover.',
      }),
      replication: Type.Optional(replication),
      storage: Type.Object({
        size: GrowOnly(
          Quantity({ positive: true, description: 'Volume size per Pod; can grow, never shrink.' }),
          'storage.size can grow but never shrink',
        ),
        storageClassName: Type.Optional(
          ObjectName({ what: 'a StorageClass', description: "Left out: the cluster's default class." }),
        ),
      }),
      backup: Type.Optional(
        WithRules(
          Type.Object({
            enabled: Type.Boolean({
              default: true,
              description:
                'Take scheduled backups into objectStore, which must then be set. false: no backups (the only choice for mysql so far).',
            }),
            schedule: CronSchedule({
              default: '0 3 * * *',
              field: 'backup.schedule',
              description: "When to back up, as a CronJob schedule: '0 3 * * *', '@daily'.",
            }),
            historyLimit: Type.Integer({ minimum: 1, maximum: 30, default: 3 }),
            objectStore: Type.Optional(
              ObjectStore(
                "postgres: where base backups (DatabaseBackup objects) and the continuously archived WAL go, with pgBackRest in the database container. Required while backups are enabled; schedule makes a DatabaseBackup per slot. (A Database stored before it was required may lack it: its CronJob's dump reaches only a scratch volume, and its status says so, BackupSucceeded reason NoBackupDestination.) Its repository path must be this Database's alone. mariadb: where full physical backups (mariabackup, streamed by rclone) go; no binlog is archived.",
              ),
            ),
            retention: Type.Optional(BackupRetention()),
            storeTimeoutSeconds: Type.Optional(
              Type.Integer({
                minimum: 5,
                maximum: 600,
                description:
                  "How long one request to objectStore may wait for the store to connect or answer before it fails (pgBackRest's io-timeout; rclone's --contimeout and --timeout). Each tool retries a failed request a few times, so a store that hangs fails a backup, or a WAL segment's archiving, after a few times this. Left out: pgBackRest's 60 s; rclone's 15 s to connect and 5 min for an answer.",
              }),
            ),
          }),
          {
            // On backup itself, not on the spec: the API server's validation ratcheting then
            // lets a Database stored before this rule keep its unchanged backup while other
            // fields change (the controller reports it: NoBackupDestination).
            rule: '!self.enabled || has(self.objectStore)',
            message: NO_BACKUP_DESTINATION_MESSAGE,
          },
          {
            rule: '!has(self.retention) || has(self.objectStore)',
            message:
              'backup.retention needs backup.objectStore: it says which backups the object store keeps',
            fieldPath: '.retention',
          },
        ),
      ),
      bootstrap: Type.Optional(
        Type.Object(
          {
            recovery: WithRules(
              Type.Object({
                backup: Type.Optional(
                  ObjectName({
                    what: 'a DatabaseBackup',
                    description:
                      'A succeeded DatabaseBackup in this namespace: the new Database holds exactly what it holds (recovery stops where the backup became consistent).',
                  }),
                ),
                source: Type.Optional(
                  ObjectStore(
                    "Another Database's repository (its spec.backup.objectStore, path included): the new Database recovers its latest backup and replays the archived WAL, to the end or to targetTime.",
                  ),
                ),
                targetTime: Type.Optional(
                  Type.String({
                    format: 'date-time',
                    maxLength: 64,
                    description:
                      'With source: recover to this moment (RFC 3339, such as 2026-11-24T12:00:00Z) instead of the latest archived WAL: point-in-time recovery.',
                  }),
                ),
              }),
              {
                rule: 'has(self.backup) != has(self.source)',
                message:
                  'recovery names exactly one of backup (a DatabaseBackup) or source (an object store)',
              },
              {
                rule: '!has(self.targetTime) || has(self.source)',
                message:
                  'targetTime needs source: a DatabaseBackup restores to where it ended; recover to a point in time from its repository (source) instead',
                fieldPath: '.targetTime',
              },
              {
                rule: '!has(self.source) || has(self.source.path)',
                message:
                  "source.path is required: the path of the repository to recover from (the source Database's <namespace>/<name> by default)",
                fieldPath: '.source',
              },
            ),
          },
          {
            description:
              "postgres: how a new Database gets its first data instead of an empty cluster. The operator-managed roles' passwords (the credentials Secret's user, the replication role) are set to this Database's own at restore; other roles keep the passwords they had in the source. mariadb: from a DatabaseBackup or the latest backup of a source path (no targetTime); the credentials Secret's user and the replication account get this Database's passwords the same way.",
          },
        ),
      ),
      resources: Type.Optional(ResourceRequirements()),
      parameters: Type.Optional(
        WithRules(
          Type.Record(
            Type.String({ maxLength: PARAMETER_LIMITS.maxNameLength }),
            WithRules(Type.String({ maxLength: PARAMETER_LIMITS.maxValueLength }), {
              rule: `!self.matches(r'${CONTROL_CEL_PATTERN}')`,
              message:
                'a parameter value may not contain a line break or another control character: each setting is one line of the configuration file',
            }),
            {
              maxProperties: PARAMETER_LIMITS.maxEntries,
              description:
                'Engine settings, one per name: postgresql.conf (the value is quoted for you) or my.cnf (the value is written as my.cnf syntax). Settings the operator manages (port, listen address, data directory, ...) are refused.',
            },
          ),
          {
            // The schema can't bound map keys (no propertyNames), so their length is a rule.
            rule: `self.all(k, size(k) <= ${PARAMETER_LIMITS.maxNameLength})`,
            message: `parameter names are at most ${PARAMETER_LIMITS.maxNameLength} characters`,
          },
        ),
      ),
      credentials: Type.Optional(
        Type.Object({
          secretName: ObjectName({
            what: 'a Secret',
            description:
              'Use this existing Secret (keys username, password) instead of generating credentials.',
          }),
        }),
      ),
      monitoring: Type.Optional(
        Type.Object(
          {
            customQueriesConfigMap: Type.Optional(
              Type.Array(
                Type.Object({
                  name: ObjectName({
                    what: 'a ConfigMap',
                    description: "A ConfigMap in the Database's namespace.",
                  }),
                  key: Type.String({
                    minLength: 1,
                    maxLength: 253,
                    pattern: '^[-._a-zA-Z0-9]+$',
                    description: 'The key whose value is the YAML of the queries.',
                  }),
                }),
                {
                  maxItems: MAX_QUERY_CONFIGMAPS,
                  description:
                    "User-defined metrics queries, as CloudNativePG's: each key's value is a YAML map of query names to {query, metrics}, each metric a column with its usage (LABEL, GAUGE, COUNTER or DISCARD) and description. Every instance's agent runs them at each scrape (at most 1 s and 1000 rows each, read-only) and publishes <pg|mysql>_<query>_<column>. A missing ConfigMap or a query with a mistake is reported in the MetricsQueriesValid condition; the instances run regardless. An edit to a ConfigMap applies without a restart.",
                },
              ),
            ),
          },
          {
            description:
              "postgres and mariadb: what the instances' metrics endpoints publish beyond the built-in series.",
          },
        ),
      ),
      pvcRetentionPolicy: Type.Optional(
        Type.Union([Type.Literal('Retain'), Type.Literal('Delete')], {
          default: 'Retain',
          description: 'What happens to the data volumes when the Database is deleted.',
        }),
      ),
    }),
    // First, and on the spec rather than on .engine: the API server runs a node's
    // rules before its fields' and lists the failures in that order, so an engine
    // change is reported before what follows from it (a version the other engine
    // lacks).
    {
      rule: 'self.engine == oldSelf.engine',
      message: 'engine is immutable: create a new Database and migrate the data instead',
      fieldPath: '.engine',
    },
    {
      rule: '!has(self.replication) || !has(self.replication.synchronous) || !self.replication.synchronous || self.replicas >= 2',
      message:
        'synchronous replication needs replicas >= 2: with no replica to confirm them, every write would wait forever',
      fieldPath: '.replication.synchronous',
    },
    {
      rule: '!has(self.bootstrap) == !has(oldSelf.bootstrap) && (!has(self.bootstrap) || self.bootstrap == oldSelf.bootstrap)',
      message:
        'bootstrap is how the Database was first filled: it cannot be added, changed or removed later. Create a new Database to restore',
      fieldPath: '.bootstrap',
    },
    {
      rule: "self.engine != 'mysql' || !has(self.backup) || !has(self.backup.objectStore)",
      message:
        'backup.objectStore is supported for postgres and mariadb: mysql backups to an object store are not implemented yet, so a mysql Database sets backup.enabled: false',
      fieldPath: '.backup.objectStore',
    },
    {
      rule: "self.engine != 'mysql' || !has(self.bootstrap)",
      message: 'bootstrap.recovery is supported for postgres and mariadb only so far',
      fieldPath: '.bootstrap',
    },
    {
      rule: "self.engine != 'mariadb' || !has(self.bootstrap) || !has(self.bootstrap.recovery) || !has(self.bootstrap.recovery.targetTime)",
      message:
        'bootstrap.recovery.targetTime is postgres only: a mariadb Database is restored to the end of a backup (point in time from binary logs is not implemented yet)',
      fieldPath: '.bootstrap.recovery.targetTime',
    },
    {
      rule: "self.engine != 'mysql' || !has(self.monitoring) || !has(self.monitoring.customQueriesConfigMap)",
      message:
        'monitoring.customQueriesConfigMap is supported for postgres and mariadb: a mysql instance runs without the instance agent, which runs the queries and publishes their metrics',
      fieldPath: '.monitoring.customQueriesConfigMap',
    },
    {
      rule: "self.engine != 'mysql' || self.replicas == 1",
      message:
        'a mysql Database runs one instance (replicas: 1): its replication is not tested against a real MySQL server, and independent servers would hold different data. Use postgres or mariadb for replicas',
      fieldPath: '.replicas',
    },
    {
      rule: wellFormed('self.version'),
      message: "version must be a dotted number such as 16.8 (one the manager's image catalog lists)",
      fieldPath: '.version',
      reason: 'FieldValueInvalid',
    },
    {
      rule: `!has(self.parameters) || ${namesWhere(notAName)}.size() == 0`,
      message: `every name must be a setting name of the engine: postgres ${NAME_RULE_TEXT.postgres}; mysql and mariadb ${NAME_RULE_TEXT.mysql}`,
      messageExpression: `'name ' + ${first(namesWhere(notAName))} + ' is not a ' + self.engine + ' setting name; use ' + ${perEngine((e) => celStr(NAME_RULE_TEXT[e]))}`,
      fieldPath: '.parameters',
      reason: 'FieldValueInvalid',
    },
    {
      rule: `!has(self.parameters) || ${namesWhere(reserved)}.size() == 0`,
      message: `parameters may not set settings the operator manages: ${reservedText('postgres')}. ${reservedText('mysql')}. ${reservedText('mariadb')}`,
      messageExpression: `'parameters may not set settings the operator manages: ' + ${first(namesWhere(reserved))} + ' (' + ${perEngine((e) => celStr(reservedText(e)))} + ')'`,
      fieldPath: '.parameters',
      reason: 'FieldValueForbidden',
    },
    {
      // Silent when another rule already names the cause: an engine change, or a malformed version.
      rule: `self.engine != oldSelf.engine || !${wellFormed('self.version')} || !${wellFormed('oldSelf.version')} || ${celVersionAtLeast('self.version', 'oldSelf.version')}`,
      messageExpression: `'version cannot be downgraded from ' + oldSelf.version + ' to ' + self.version`,
      fieldPath: '.version',
    },
    {
      // Silent when another rule already names the cause: an engine change, a
      // malformed version, or a downgrade (17.2 to 16.8 is no upgrade).
      rule: `self.engine != oldSelf.engine || !${wellFormed('self.version')} || !${wellFormed('oldSelf.version')} || !${celVersionAtLeast('self.version', 'oldSelf.version')} || self.version.split('.')[0] == oldSelf.version.split('.')[0] || (has(self.allowMajorVersionUpgrade) && self.allowMajorVersionUpgrade)`,
      messageExpression: `'upgrading from ' + oldSelf.version + ' to ' + self.version + ' is a major version upgrade: set spec.allowMajorVersionUpgrade: true to confirm it'`,
      fieldPath: '.version',
    },
  );

export const DatabaseSpec = databaseSpec(REPLICATION_V1BETA1);
/** The spec of v1alpha1, the first version: still served, converted to and from v1beta1 (conversion.ts). */
export const DatabaseSpecV1alpha1 = databaseSpec(REPLICATION_V1ALPHA1);

export const DatabaseStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer()),
  conditions: Type.Optional(Conditions()),
  phase: Type.Optional(Phase()),
  replicas: Type.Optional(Type.Integer()),
  readyReplicas: Type.Optional(Type.Integer()),
  selector: Type.Optional(Type.String()),
  currentVersion: Type.Optional(Type.String({ description: 'The version every Pod runs.' })),
  lastBackup: Type.Optional(Type.String({ format: 'date-time' })),
  binding: Type.Optional(Type.Object({ name: Type.String() })),
  currentPrimary: Type.Optional(
    Type.String({ description: 'The instance (Pod) that accepts writes; absent while none does.' }),
  ),
  switchover: Type.Optional(
    Type.Object(
      {
        target: Type.String(),
        state: Type.String({ description: 'Waiting (for the target to catch up), Refused, or Started' }),
        message: Type.String(),
        since: Type.String({ format: 'date-time' }),
      },
      { description: 'The last requested switchover and what became of it.' },
    ),
  ),
  systemIdentifier: Type.Optional(
    Type.String({
      description:
        "The cluster's identity (postgres: its system identifier; mariadb: the id written at initialisation): an instance of another cluster is never promoted.",
    }),
  ),
  instances: Type.Optional(
    Type.Array(
      Type.Object({
        name: Type.String(),
        role: Type.String({
          description: 'primary, replica, or standby (not serving reads: starting, lagging or not streaming)',
        }),
        state: Type.String({
          description:
            'Primary, Streaming, Lagging, NotStreaming, Unreachable, Missing; Fencing (a person fenced it, its engine still stops) and Fenced (its engine stopped; see the Fenced condition)',
        }),
        timeline: Type.Optional(
          Type.Integer({
            description:
              'postgres: the timeline. mariadb: the server_id that wrote the last applied transaction (the primary of its term).',
          }),
        ),
        lsn: Type.Optional(
          Type.String({
            description:
              'postgres: the write position (primary) or received position (replica), as an LSN. mariadb: the last applied GTID.',
          }),
        ),
        lagBytes: Type.Optional(
          Type.Integer({
            description:
              "postgres: WAL the replica has not replayed yet, behind the primary's write position.",
          }),
        ),
        lagTransactions: Type.Optional(
          Type.Integer({
            description:
              "mariadb: transactions the replica has not applied yet, behind the primary's GTID position.",
          }),
        ),
        discarded: Type.Optional(
          Type.String({
            description:
              'What this instance held that the primary never had and was discarded when it rejoined (when, how many transactions, which positions); see spec.replication.divergedData.',
          }),
        ),
        replicationError: Type.Optional(
          Type.String({
            description:
              "Why it does not replicate, in its server's words, while it does not (mariadb: a replication thread's last error). One stopped for good on an error is restarted after 30 s (a ReplicaRestarted Event).",
            maxLength: 320,
          }),
        ),
      }),
      { maxItems: 10 },
    ),
  ),
  endpoint: Type.Optional(Type.String()),
});

/** The kind at `version` with `spec`: both versions share the rest. */
const databaseKind = <S extends TSchema>(version: string, spec: S) =>
  defineKind({
    version,
    spec,
    group: GROUP,
    kind: 'Database',
    plural: 'databases',
    singular: 'database',
    shortNames: ['db'],
    categories: ['regulon'],
    scope: 'Namespaced',
    description: 'A PostgreSQL, MariaDB or MySQL database run as a StatefulSet.',
    status: DatabaseStatus,
    objectValidations: ChildNamingRules({
      kind: 'Database',
      maxLength: MAX_NAME_LENGTH,
      children: 'StatefulSet, Services and backup CronJob',
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
      { name: 'Primary', type: 'string', jsonPath: '.status.currentPrimary' },
      { name: 'Last Backup', type: 'date', jsonPath: '.status.lastBackup' },
      { name: 'Endpoint', type: 'string', jsonPath: '.status.endpoint', priority: 1 },
      {
        name: 'Message',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].message',
        priority: 1,
      },
    ],
  });

/**
 * The Database as the manager reads and writes it, and as the API server
 * stores it. v1alpha1 objects are converted to it by the manager's conversion
 * webhook (conversion.ts) and migrated on upgrade.
 */
export const Database = databaseKind('v1beta1', DatabaseSpec);

/** The first version, still served: `replication.maxLagBytes` and `maxLagTransactions` instead of `replication.maxLag`. */
export const DatabaseV1alpha1 = databaseKind('v1alpha1', DatabaseSpecV1alpha1);

export type DatabaseObject = KindObject<typeof Database>;
export type DatabaseV1alpha1Object = KindObject<typeof DatabaseV1alpha1>;
