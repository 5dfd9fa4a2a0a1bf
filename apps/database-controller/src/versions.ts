import { ImageCatalog } from '@regulon/image-catalog';

/**
 * The versions this operator can run, oldest first per engine: the order is
 * what "no downgrades" compares, so keep it sorted. Each maps to the official
 * image tag, unless the manager is given an image catalog.
 */
export const ENGINE_VERSIONS = {
  postgres: ['15.10', '15.12', '16.6', '16.8', '17.2', '17.4'],
  mysql: ['8.0.40', '8.0.41', '8.4.3', '8.4.4'],
  mariadb: ['10.11.10', '10.11.11', '11.4.4', '11.4.5'],
} as const;

export type Engine = keyof typeof ENGINE_VERSIONS;

/** Every engine, in the order above. What each one does is its EngineBehaviour (engines/). */
export const ENGINE_NAMES = Object.keys(ENGINE_VERSIONS) as Engine[];

/** The catalog when the manager is given none: every version above, as its official image. */
export const OFFICIAL_IMAGES = ImageCatalog.official({
  postgres: { repository: 'postgres', versions: ENGINE_VERSIONS.postgres },
  mysql: { repository: 'mysql', versions: ENGINE_VERSIONS.mysql },
  mariadb: { repository: 'mariadb', versions: ENGINE_VERSIONS.mariadb },
});

export function majorOf(version: string): string {
  return version.split('.')[0] ?? version;
}

export const ENGINE_DEFAULTS = {
  postgres: {
    image: 'postgres',
    port: 5432,
    user: 'postgres',
    dataDir: '/var/lib/postgresql/data',
    scheme: 'postgresql',
  },
  mysql: { image: 'mysql', port: 3306, user: 'root', dataDir: '/var/lib/mysql', scheme: 'mysql' },
  mariadb: { image: 'mariadb', port: 3306, user: 'root', dataDir: '/var/lib/mysql', scheme: 'mysql' },
} as const;

const MYSQL_RESERVED = [
  'port',
  'bind-address',
  'socket',
  'datadir',
  'user',
  'pid-file',
  // Authentication and the network are what the generated credentials and the Services rely on.
  'skip-grant-tables',
  'skip-networking',
  // `!include` and `!includedir` need a `!` no name may have; the bare words are refused too.
  'include',
  'includedir',
] as const;

/**
 * Settings the operator owns: a user may not set them through spec.parameters.
 * Compared the way the engine compares names (see parameters.ts): postgres
 * ignoring case; mysql also with `-` and `_` the same and option prefixes
 * (`loose-`, `skip-`, ...) stripped, so `loose_bind_address` is `bind-address`.
 */
export const RESERVED_PARAMETERS = {
  postgres: [
    // Where it listens: the Services, probes and backup Jobs connect to port 5432 on every address.
    'port',
    'listen_addresses',
    'unix_socket_directories',
    'unix_socket_group',
    'unix_socket_permissions',
    // The files the image and the StatefulSet lay out.
    'data_directory',
    'config_file',
    'hba_file',
    'ident_file',
    'external_pid_file',
    // Directives that read more configuration from other files.
    'include',
    'include_dir',
    'include_if_exists',
    // No certificates are provisioned.
    'ssl',
    // Replication is the operator's: a standby's upstream and slot, the WAL standbys and pg_rewind need.
    'primary_conninfo',
    'primary_slot_name',
    'synchronous_standby_names',
    'wal_level',
    'hot_standby',
    'wal_log_hints',
    // How fast a replication connection to a lost peer ends, which failover's timing relies on.
    'wal_receiver_timeout',
    'wal_sender_timeout',
    // Shell commands the server runs: whoever may edit a Database would run
    // commands beside its credentials without being allowed to read them.
    'archive_command',
    // WAL archiving is the operator's (spec.backup.objectStore): off, a point in time could not be recovered.
    'archive_mode',
    'archive_timeout',
    'archive_cleanup_command',
    'restore_command',
    'recovery_end_command',
    'ssl_passphrase_command',
  ],
  mysql: MYSQL_RESERVED,
  mariadb: [
    // Everything mysql reserves, and what replication and its durability rest on (see mariadb/start-script.ts).
    ...MYSQL_RESERVED,
    'server-id',
    'report-host',
    'read-only',
    'log-bin',
    'log-bin-index',
    'relay-log',
    'relay-log-index',
    'binlog-format',
    'log-slave-updates',
    'gtid-strict-mode',
    'gtid-domain-id',
    // An acknowledged commit is on disk: failover loses nothing a client was told is committed.
    'sync-binlog',
    'innodb-flush-log-at-trx-commit',
    'relay-log-recovery',
    'skip-slave-start',
    'rpl-semi-sync-master-enabled',
    'rpl-semi-sync-slave-enabled',
    'rpl-semi-sync-master-timeout',
    'rpl-semi-sync-master-wait-point',
  ],
} as const;
