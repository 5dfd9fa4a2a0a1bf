import {
  Conditions,
  defineKind,
  Immutable,
  ObjectName,
  Type,
  WithRules,
  type KindObject,
  type Static,
} from '@regulon/crd';

export const GROUP = 'regulon.dev';

/**
 * An S3-compatible object store: where a Database's base backups and
 * archived WAL go (spec.backup.objectStore), or where a new Database is
 * recovered from (spec.bootstrap.recovery.source). The keys come from a
 * Secret and reach the database container as environment variables only:
 * never a ConfigMap, a status, an Event or a log line.
 */
const objectStoreFields = {
  endpoint: WithRules(
    Type.String({
      maxLength: 512,
      description:
        "The store's HTTPS URL, such as https://s3.eu-west-1.amazonaws.com or https://minio.storage.svc:9000. Buckets are addressed by path (https://<endpoint>/<bucket>/...).",
    }),
    {
      rule: `self.matches('^https://[^/:?#@ ]+(:[0-9]{1,5})?/?$')`,
      message:
        'endpoint must be an https:// URL of a host and an optional port, with no path (pgBackRest talks to object stores over TLS only)',
    },
  ),
  bucket: WithRules(
    Type.String({
      minLength: 3,
      maxLength: 63,
      description: 'The bucket; it must exist already (the operator never creates one).',
    }),
    {
      rule: `self.matches('^[a-z0-9][a-z0-9.-]*[a-z0-9]$')`,
      message: 'bucket must be an S3 bucket name: lowercase letters, digits, dots and hyphens',
    },
  ),
  path: Type.Optional(
    WithRules(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          "Where in the bucket this Database's repository lives, as a/b/c (default: <namespace>/<name>). Two Databases must never share one.",
      }),
      {
        rule: `self.matches('^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$')`,
        message:
          'path is segments of letters, digits, dots, underscores and hyphens separated by single slashes, with no leading or trailing slash',
      },
    ),
  ),
  region: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      default: 'us-east-1',
      description:
        "The region requests are signed for (the store's own region; any name for most non-AWS stores).",
    }),
  ),
  credentials: Type.Object(
    {
      secretName: ObjectName({ what: 'a Secret', description: 'The Secret holding the access keys.' }),
      accessKeyIdKey: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 253,
          default: 'ACCESS_KEY_ID',
          description: 'Its key of the access key id.',
        }),
      ),
      secretAccessKeyKey: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 253,
          default: 'ACCESS_SECRET_KEY',
          description: 'Its key of the secret access key.',
        }),
      ),
    },
    { description: 'The access keys, from a Secret in the same namespace.' },
  ),
  caSecret: Type.Optional(
    Type.Object(
      {
        name: ObjectName({ what: 'a Secret' }),
        key: Type.Optional(Type.String({ minLength: 1, maxLength: 253, default: 'ca.crt' })),
      },
      {
        description:
          "The CA bundle (PEM) that signed the store's certificate, for a private endpoint; left out, the image's system CAs are trusted. TLS is always verified.",
      },
    ),
  ),
};

export function ObjectStore(description?: string) {
  return Type.Object(objectStoreFields, description ? { description } : {});
}

export type ObjectStoreSpec = Static<ReturnType<typeof ObjectStore>>;

/** maxAge's form: a whole number and a unit (m, h, d, w). */
export const MAX_AGE_PATTERN = /^[1-9][0-9]{0,5}(m|h|d|w)$/;

/**
 * Which succeeded backups the object store keeps (spec.backup.retention):
 * the rest are expired from the repository by pgBackRest (with the WAL only
 * they needed) and their DatabaseBackups deleted. Both limits may be set; a
 * backup stays while it is within every limit set, and the newest succeeded
 * backup always stays.
 */
export function BackupRetention() {
  return WithRules(
    Type.Object(
      {
        count: Type.Optional(
          Type.Integer({
            minimum: 1,
            maximum: 1000,
            description: 'Keep at most this many succeeded backups, the newest.',
          }),
        ),
        maxAge: Type.Optional(
          WithRules(
            Type.String({
              maxLength: 8,
              description:
                'Expire a backup once it is older than this (from when it completed): a whole number and a unit, m (minutes), h (hours), d (days) or w (weeks), such as 30d.',
            }),
            {
              rule: `self.matches('${MAX_AGE_PATTERN.source}')`,
              message:
                'maxAge is a whole number and a unit: m (minutes), h (hours), d (days) or w (weeks), such as 30d',
            },
          ),
        ),
      },
      {
        description:
          "With objectStore: which succeeded backups the store keeps. The others are removed from it (postgres: expired by pgBackRest, with the archived WAL only they needed; mariadb: the backup's stream and manifest), and their DatabaseBackups are deleted (a Normal Event names each). The newest succeeded backup is always kept. Left out, every backup is kept.",
      },
    ),
    {
      rule: 'has(self.count) || has(self.maxAge)',
      message: 'retention names count, maxAge or both (to keep every backup, leave retention out)',
    },
  );
}

/**
 * Backup phases, in order. Derived from the conditions (Succeeded: True is
 * Succeeded, False is Failed; otherwise Ready says whether it has started).
 */
export const BACKUP_PHASES = ['Pending', 'Running', 'Succeeded', 'Failed'] as const;
export type BackupPhase = (typeof BACKUP_PHASES)[number];

export const DatabaseBackupSpec = Type.Object({
  database: Immutable(
    ObjectName({
      what: 'a Database',
      description:
        'The Database to back up (same namespace): a postgres or mariadb Database with spec.backup.objectStore. The backup runs on its current primary.',
    }),
    'database is immutable: create another DatabaseBackup',
  ),
});

export const DatabaseBackupStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer()),
  conditions: Type.Optional(Conditions()),
  phase: Type.Optional(
    Type.Union(
      [Type.Literal('Pending'), Type.Literal('Running'), Type.Literal('Succeeded'), Type.Literal('Failed')],
      { description: 'Pending, Running, Succeeded or Failed: derived from the conditions.' },
    ),
  ),
  instance: Type.Optional(Type.String({ description: 'The Pod (the primary) the backup ran on.' })),
  startedAt: Type.Optional(Type.String({ format: 'date-time' })),
  stoppedAt: Type.Optional(Type.String({ format: 'date-time' })),
  label: Type.Optional(
    Type.String({
      description:
        "The backup's label in the repository (pgBackRest's set name; mariadb: the backup's directory, the UTC time it started).",
    }),
  ),
  type: Type.Optional(Type.String({ description: 'full' })),
  sizeBytes: Type.Optional(Type.Integer({ description: 'The database size the backup holds.' })),
  repositorySizeBytes: Type.Optional(
    Type.Integer({ description: 'What it takes in the repository (compressed).' }),
  ),
  wal: Type.Optional(
    Type.Object(
      {
        startSegment: Type.Optional(Type.String()),
        stopSegment: Type.Optional(Type.String()),
        startLsn: Type.Optional(Type.String()),
        stopLsn: Type.Optional(Type.String()),
      },
      { description: 'The WAL the backup needs to be consistent: restoring it replays at least this range.' },
    ),
  ),
  binlog: Type.Optional(
    Type.Object(
      {
        file: Type.Optional(Type.String()),
        position: Type.Optional(Type.Integer()),
        gtid: Type.Optional(Type.String()),
      },
      {
        description:
          'mariadb: the binlog position the backup is consistent at (file, position, and the GTID of the last transaction it holds).',
      },
    ),
  ),
  repository: Type.Optional(
    Type.Object(
      {
        endpoint: Type.String(),
        bucket: Type.String(),
        path: Type.String(),
        region: Type.String(),
        credentialsSecret: Type.String(),
        accessKeyIdKey: Type.String(),
        secretAccessKeyKey: Type.String(),
        caSecret: Type.Optional(Type.Object({ name: Type.String(), key: Type.String() })),
      },
      {
        description:
          'Where the backup is, as it was when it ran (names of Secrets, never their content): a restore needs nothing else, even once the Database is gone.',
      },
    ),
  ),
});

export const DatabaseBackup = defineKind({
  group: GROUP,
  version: 'v1alpha1',
  kind: 'DatabaseBackup',
  plural: 'databasebackups',
  singular: 'databasebackup',
  shortNames: ['dbbackup'],
  categories: ['regulon'],
  scope: 'Namespaced',
  description:
    'An on-demand physical backup of a Database into its object store (spec.backup.objectStore), taken on the primary: pgBackRest for postgres, mariabackup streamed by rclone for mariadb. Its status says whether the repository lists it complete; a new Database restores from it with spec.bootstrap.recovery.backup.',
  spec: DatabaseBackupSpec,
  status: DatabaseBackupStatus,
  printerColumns: [
    { name: 'Database', type: 'string', jsonPath: '.spec.database' },
    { name: 'Status', type: 'string', jsonPath: '.status.phase' },
    { name: 'Label', type: 'string', jsonPath: '.status.label' },
    { name: 'Started', type: 'date', jsonPath: '.status.startedAt' },
    { name: 'Size', type: 'integer', jsonPath: '.status.sizeBytes', priority: 1 },
    {
      name: 'Message',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Succeeded")].message',
      priority: 1,
    },
  ],
});

export type DatabaseBackupObject = KindObject<typeof DatabaseBackup>;
export type DatabaseBackupStatusType = NonNullable<DatabaseBackupObject['status']>;
