/**
 * The versions this operator can run, oldest first per engine: the order is
 * what "no downgrades" compares, so keep it sorted. Each maps to the official
 * image tag.
 */
export const ENGINE_VERSIONS = {
  postgres: ['15.10', '15.12', '16.6', '16.8', '17.2', '17.4'],
  mysql: ['8.0.40', '8.0.41', '8.4.3', '8.4.4'],
} as const;

export type Engine = keyof typeof ENGINE_VERSIONS;

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
} as const;

/** Settings the operator owns: a user may not override them through spec.parameters. */
export const RESERVED_PARAMETERS = {
  postgres: [
    'port',
    'listen_addresses',
    'data_directory',
    'hba_file',
    'ident_file',
    'unix_socket_directories',
    'ssl',
  ],
  mysql: ['port', 'bind-address', 'datadir', 'socket', 'user', 'pid-file'],
} as const;
