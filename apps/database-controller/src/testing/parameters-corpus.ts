// The bad-input corpus for spec.parameters (and the good inputs beside it):
// one row per input, with the message the API server answers a rejected one
// with. Both enforcers run it: the admission test (the CRD's rules, on a real
// API server) and the renderer's unit test (config.ts refuses every rejected
// row too, for objects stored before the rules existed).
import { Database, type DatabaseObject } from '../api.ts';
import { PARAMETER_LIMITS } from '../parameters.ts';
import { RESERVED_PARAMETERS, type Engine } from '../versions.ts';

/** A smallest valid Database of `engine` with these parameters, for both enforcers. */
export function databaseWith(
  engine: Engine,
  parameters: Record<string, string>,
  metadata: { name: string; namespace: string } = { name: 'd', namespace: 'ns' },
): DatabaseObject {
  return Database.object({
    metadata,
    spec: {
      engine,
      version: { postgres: '16.6', mysql: '8.4.4', mariadb: '10.11.11' }[engine],
      replicas: 1,
      storage: { size: '1Gi' },
      parameters,
    },
  });
}

export interface Row {
  what: string;
  engine: Engine;
  parameters: Record<string, string>;
  /** The server's message must match; undefined: the Database is accepted. */
  rejected?: RegExp;
}

export const NAME = /spec\.parameters: Invalid value: name /;
export const RESERVED = /spec\.parameters: Forbidden: parameters may not set settings the operator manages: /;
export const VALUE = (key: string) =>
  new RegExp(
    `spec\\.parameters\\[${key.replace(/[.-]/g, '\\$&')}\\]: Invalid value: ".*": a parameter value may not contain a line break or another control character`,
  );

/**
 * A name in the message, quoted by CEL's strings.quote(): a quote, a backslash and most
 * control characters come escaped (`\n`), a NUL comes through as it is.
 */
export const named = (re: RegExp, name: string) => {
  const char = (c: string) =>
    /\p{Cc}/u.test(c)
      ? `(?:\\\\\\w+|\\u{${c.codePointAt(0)!.toString(16)}})`
      : (c === '"' || c === '\\' ? `\\${c}` : c).replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
  return new RegExp(`${re.source}"${[...name].map(char).join('')}"`, 'u');
};

/** Spelled the way a user might, to slip past a list compared by exact string. */
const variants = (name: string) => {
  const upper = name.toUpperCase();
  const mixed = name.replace(/^./, (c) => c.toUpperCase());
  const swapped = name.includes('-') ? name.replaceAll('-', '_') : name.replaceAll('_', '-');
  return [...new Set([upper, mixed, swapped])].filter((n) => n !== name);
};

export const CONTROL_CHARACTERS = [
  ['LF', '\n'],
  ['CR', '\r'],
  ['NUL', '\0'],
  ['TAB', '\t'],
  ['ESC', '\x1b'],
  ['DEL', '\x7f'],
  ['NEL (C1)', '\u0085'],
] as const;

const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`x.p${i}`, '1']));

export const PARAMETER_ROWS: Row[] = [
  // The reported attack: a value carrying a second line, and `_` for `-`.
  {
    what: 'mysql: value with a newline and a second port line',
    engine: 'mysql',
    parameters: { max_connections: '100\nport = 3307' },
    rejected: VALUE('max_connections'),
  },
  {
    what: 'mysql: bind_address for bind-address',
    engine: 'mysql',
    parameters: { bind_address: '10.1.2.3' },
    rejected: named(RESERVED, 'bind_address'),
  },
  {
    what: 'postgres: PORT in capitals',
    engine: 'postgres',
    parameters: { PORT: '6543' },
    rejected: named(RESERVED, 'PORT'),
  },
  {
    what: 'postgres: a name with a newline injects a line',
    engine: 'postgres',
    parameters: { 'work_mem\nport': '6543' },
    rejected: named(NAME, 'work_mem\nport'),
  },
  // Every reserved name, exactly and as case / `-` / `_` variants.
  ...(['postgres', 'mysql', 'mariadb'] as const).flatMap((engine) =>
    RESERVED_PARAMETERS[engine].flatMap((name) =>
      [name, ...variants(name)]
        // postgres names have no `-`: a swapped spelling is refused as a name instead.
        .map((n): Row => ({
          what: `${engine}: reserved ${n}`,
          engine,
          parameters: { [n]: '1' },
          rejected: engine === 'postgres' && n.includes('-') ? named(NAME, n) : named(RESERVED, n),
        })),
    ),
  ),
  // mysqld strips option prefixes before it looks a name up.
  ...['loose-port', 'loose_bind_address', 'maximum-port', 'loose-skip-grant-tables', 'enable-skip-networking']
    .concat(['LOOSE-SKIP-NETWORKING', 'disable-loose-datadir', 'skip_loose_user'])
    .map((n): Row => ({
      what: `mysql: prefixed ${n}`,
      engine: 'mysql',
      parameters: { [n]: '1' },
      rejected: named(RESERVED, n),
    })),
  // mariadbd strips them the same way, before the replication settings it reserves.
  ...['loose-server-id', 'loose_gtid_strict_mode', 'skip-log-slave-updates', 'disable_read_only']
    .concat(['LOOSE-SYNC-BINLOG', 'maximum-rpl_semi_sync_master_timeout'])
    .map((n): Row => ({
      what: `mariadb: prefixed ${n}`,
      engine: 'mariadb',
      parameters: { [n]: '1' },
      rejected: named(RESERVED, n),
    })),
  // A setting mariadb reserves for replication is mysql's to set (it runs one instance).
  {
    what: 'mysql: accepted sync_binlog, which mariadb reserves',
    engine: 'mysql',
    parameters: { sync_binlog: '0' },
  },
  // Names outside the engine's grammar: directives, comments, sections, separators, whitespace.
  ...(
    [
      ['postgres', 'INCLUDE'],
      ['postgres', 'Include_If_Exists'],
      ['mysql', 'includedir'],
    ] as const
  ).map(([engine, n]): Row => ({
    what: `${engine}: directive ${n}`,
    engine,
    parameters: { [n]: '/etc/passwd' },
    rejected: named(RESERVED, n),
  })),
  ...(
    [
      ['mariadb', '!include'],
      ['mariadb', 'wsrep.a.b'],
      ['mysql', '!include'],
      ['mysql', '!includedir'],
      ['mysql', '[client]'],
      ['mysql', '#port'],
      ['mysql', ';port'],
      ['mysql', 'port=3307'],
      ['mysql', '"port"'],
      ['mysql', "'port'"],
      ['mysql', 'max_connections = 1\nport'],
      ['mysql', ' port'],
      ['mysql', '-port'],
      ['mysql', '_port'],
      ['mysql', 'a.b.c'],
      ['mysql', 'pört'],
      ['mysql', ''],
      ['postgres', 'port=6543'],
      ['postgres', 'port 6543'],
      ['postgres', "work_mem'"],
      ['postgres', '#x'],
      ['postgres', '1work_mem'],
      ['postgres', 'a.b.c'],
      ['postgres', 'a.'],
      ['postgres', 'shared_buffers\r'],
      ['postgres', 'work\0mem'],
      ['postgres', 'pört'],
      ['postgres', ''],
    ] as const
  ).map(([engine, n]): Row => ({
    what: `${engine}: name ${JSON.stringify(n)}`,
    engine,
    parameters: { [n]: '1' },
    rejected: named(NAME, n),
  })),
  // Values: every kind of control character, on both engines.
  ...(['postgres', 'mysql'] as const).flatMap((engine) =>
    CONTROL_CHARACTERS.map(([what, c]): Row => ({
      what: `${engine}: value with ${what}`,
      engine,
      parameters: { work_mem: `4MB${c}port = 1` },
      rejected: VALUE('work_mem'),
    })),
  ),
  // Bounds.
  {
    what: 'a value over the length limit',
    engine: 'postgres',
    parameters: { search_path: 'a'.repeat(PARAMETER_LIMITS.maxValueLength + 1) },
    rejected: /spec\.parameters\.search_path: Too long: may not be more than 256/,
  },
  {
    what: 'a name over the length limit',
    engine: 'postgres',
    parameters: { [`x${'y'.repeat(PARAMETER_LIMITS.maxNameLength)}`]: '1' },
    rejected: /spec\.parameters: Invalid value: parameter names are at most 64 characters/,
  },
  {
    what: 'more entries than the limit',
    engine: 'postgres',
    parameters: many(PARAMETER_LIMITS.maxEntries + 1),
    rejected: /spec\.parameters: Too many: 65: must have at most 64 items/,
  },
  // Accepted: ordinary settings, and values the renderer quotes.
  ...(
    [
      ['postgres', { max_connections: '200', shared_buffers: '256MB', work_mem: '4MB' }],
      ['postgres', { 'auto_explain.log_min_duration': '250ms', _private: 'x', Max_Connections: '10' }],
      ['postgres', { search_path: '"$user", public', log_line_prefix: "%m [%p] it's #1 \\ ; = " }],
      ['postgres', { application_name: 'a'.repeat(PARAMETER_LIMITS.maxValueLength), x: '' }],
      ['postgres', many(PARAMETER_LIMITS.maxEntries)],
      ['mysql', { 'innodb-buffer-pool-size': '1G', max_connections: '200' }],
      ['mysql', { 'skip-name-resolve': 'ON', 'validate_password.length': '12', 'loose-x': '1' }],
      ['mysql', { init_connect: "SET NAMES 'utf8mb4' # ; =", sql_mode: 'STRICT_TRANS_TABLES,NO_ZERO_DATE' }],
      ['mysql', { reportport: '1', portx: '1', 'ssl-ca': '/x', 'Max-Connections': '1' }],
      ['mariadb', { 'innodb-buffer-pool-size': '256M', max_connections: '200', server_audit_logging: 'ON' }],
      ['mariadb', { 'loose-x': '1', slave_parallel_threads: '4', 'report-port': '1' }],
    ] as const
  ).map(([engine, parameters]): Row => ({
    what: `${engine}: accepted ${Object.keys(parameters).slice(0, 3).join(', ')}`,
    engine,
    parameters,
  })),
];
