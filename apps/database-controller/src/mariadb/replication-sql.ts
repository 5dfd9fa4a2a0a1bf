/**
 * The replication statements, as pure functions, for the two MySQL-family
 * engines. They differ in words, not in steps:
 *
 * | step                 | MariaDB 10.11                                | MySQL 8.4                                          |
 * | -------------------- | -------------------------------------------- | -------------------------------------------------- |
 * | follow a primary     | CHANGE MASTER TO MASTER_HOST=..., MASTER_USE_GTID=slave_pos | CHANGE REPLICATION SOURCE TO SOURCE_HOST=..., SOURCE_AUTO_POSITION=1 |
 * | start, stop          | START SLAVE, STOP SLAVE                      | START REPLICA, STOP REPLICA                        |
 * | forget the primary   | RESET SLAVE ALL                              | RESET REPLICA ALL                                  |
 * | refuse writes        | read_only (READ_ONLY ADMIN bypasses it)      | super_read_only (binds every account)              |
 * | its state            | SHOW SLAVE STATUS (Slave_IO_Running, ...)    | SHOW REPLICA STATUS (Replica_IO_Running, ...)      |
 * | position             | @@gtid_binlog_pos, @@gtid_slave_pos          | @@gtid_executed (a GTID set)                       |
 * | wait until applied   | MASTER_GTID_WAIT(pos, s)                     | WAIT_FOR_EXECUTED_GTID_SET(set, s)                 |
 *
 * Only MariaDB runs in this project's tests (on the real node); no MySQL
 * server is available to them, so the MySQL statements are what the unit
 * tests pin, checked against MySQL 8.4's reference manual, not a server.
 */

export type Flavor = 'mariadb' | 'mysql';

/**
 * A string literal, escaped as the server's own mysql_real_escape_string
 * does (backslash, both quotes, NUL, line breaks, ^Z). Backslash escapes
 * need NO_BACKSLASH_ESCAPES off, the default sql_mode of both engines, which
 * the operator's sessions never change.
 */
export function quoteString(value: string): string {
  return `'${Array.from(value, (c) => STRING_ESCAPES[c] ?? c).join('')}'`;
}
const STRING_ESCAPES: Record<string, string> = {
  '\0': '\\0',
  '\n': '\\n',
  '\r': '\\r',
  '\x1a': '\\Z',
  "'": "\\'",
  '"': '\\"',
  '\\': '\\\\',
};

/** A value of a result row as text (NULL and anything else but a scalar as ''). */
export function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value);
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return '';
}

/** An identifier (database, table): backticks, a backtick doubled. */
export function quoteIdentifier(name: string): string {
  if (name.includes('\0')) throw new Error('an identifier cannot contain NUL');
  return `\`${name.replace(/`/g, '``')}\``;
}

/** An account, `'user'@'host'`. */
export function quoteAccount(user: string, host = '%'): string {
  return `${quoteString(user)}@${quoteString(host)}`;
}

export interface Source {
  host: string;
  port: number;
  user: string;
  password: string;
  /** Seconds between reconnection attempts (default 2: a failover is over in seconds). */
  connectRetrySeconds?: number;
}

function positiveInteger(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 1 || n > 65535 * 1000)
    throw new Error(`${what} must be a positive integer, not ${n}`);
  return n;
}

/** Point replication at `source`, positioned by GTID (the replica's own applied set). */
export function changeSource(flavor: Flavor, source: Source): string {
  const port = positiveInteger(source.port, 'port');
  const retry = positiveInteger(source.connectRetrySeconds ?? 2, 'connectRetrySeconds');
  if (flavor === 'mariadb')
    return (
      `CHANGE MASTER TO MASTER_HOST=${quoteString(source.host)}, MASTER_PORT=${port}, ` +
      `MASTER_USER=${quoteString(source.user)}, MASTER_PASSWORD=${quoteString(source.password)}, ` +
      `MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=${retry}`
    );
  // GET_SOURCE_PUBLIC_KEY: caching_sha2_password (8.4's default) over a connection without TLS
  // needs the source's RSA key to send the password; without it the replica cannot log in.
  return (
    `CHANGE REPLICATION SOURCE TO SOURCE_HOST=${quoteString(source.host)}, SOURCE_PORT=${port}, ` +
    `SOURCE_USER=${quoteString(source.user)}, SOURCE_PASSWORD=${quoteString(source.password)}, ` +
    `SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=${retry}, GET_SOURCE_PUBLIC_KEY=1`
  );
}

export const startReplica = (flavor: Flavor): string =>
  flavor === 'mariadb' ? 'START SLAVE' : 'START REPLICA';
export const stopReplica = (flavor: Flavor): string => (flavor === 'mariadb' ? 'STOP SLAVE' : 'STOP REPLICA');
/** Stops fetching from the primary only; what was fetched is still applied. */
export const stopReceiving = (flavor: Flavor): string =>
  flavor === 'mariadb' ? 'STOP SLAVE IO_THREAD' : 'STOP REPLICA IO_THREAD';
export const resetReplicaAll = (flavor: Flavor): string =>
  flavor === 'mariadb' ? 'RESET SLAVE ALL' : 'RESET REPLICA ALL';
export const replicaStatus = (flavor: Flavor): string =>
  flavor === 'mariadb' ? 'SHOW SLAVE STATUS' : 'SHOW REPLICA STATUS';

/**
 * Makes the server refuse (or accept) writes. MySQL's `super_read_only`
 * binds every account and turns `read_only` on with it; turning it off
 * leaves `read_only` on, hence two statements. MariaDB's `read_only` binds
 * every account without READ_ONLY ADMIN, which the application's does not get.
 */
export function setReadOnly(flavor: Flavor, readOnly: boolean): string[] {
  if (flavor === 'mariadb') return [`SET GLOBAL read_only = ${readOnly ? 'ON' : 'OFF'}`];
  return readOnly
    ? ['SET GLOBAL super_read_only = ON']
    : ['SET GLOBAL super_read_only = OFF', 'SET GLOBAL read_only = OFF'];
}

/** The statement whose one row says whether the server refuses writes (column `read_only`, 0 or 1). */
export const readOnlyQuery = (flavor: Flavor): string =>
  flavor === 'mariadb'
    ? 'SELECT @@global.read_only AS read_only'
    : 'SELECT @@global.super_read_only AS read_only';

/** Waits (up to `timeoutSeconds`) until `position` is applied; one row, column `waited`: 0 done, -1 timed out (MariaDB) / 1 (MySQL). */
export function waitApplied(flavor: Flavor, position: string, timeoutSeconds: number): string {
  const t = positiveInteger(timeoutSeconds, 'timeoutSeconds');
  return flavor === 'mariadb'
    ? `SELECT MASTER_GTID_WAIT(${quoteString(position)}, ${t}) AS waited`
    : `SELECT WAIT_FOR_EXECUTED_GTID_SET(${quoteString(position)}, ${t}) AS waited`;
}

/**
 * A replica's promotion once its primary is gone (fenced): what it received
 * is applied first (the caller waits with {@link waitApplied} between
 * `stopReceiving` and these), then it forgets the primary and accepts writes.
 */
export function promote(flavor: Flavor, opts: { synchronous?: boolean } = {}): string[] {
  return [
    stopReplica(flavor),
    resetReplicaAll(flavor),
    ...(opts.synchronous ? [setSemiSyncSource(flavor, true)] : []),
    ...setReadOnly(flavor, false),
  ];
}

/**
 * The primary's side of semi-synchronous replication, on only where it is
 * the primary: a replica with it on waits for an ACK for each transaction
 * it applies and writes to its own binlog, which no one sends. MySQL 8.4's
 * plugin (semisync_source) must be installed; MariaDB's is built in.
 */
export function setSemiSyncSource(flavor: Flavor, on: boolean): string {
  const value = on ? 'ON' : 'OFF';
  return flavor === 'mariadb'
    ? `SET GLOBAL rpl_semi_sync_master_enabled = ${value}`
    : `SET GLOBAL rpl_semi_sync_source_enabled = ${value}`;
}

/**
 * A (former) primary becomes a replica of `source`: writes refused first, so
 * nothing is written after its position is taken. On MariaDB its position is
 * then its own binlog's (gtid_current_pos), which `slave_pos` replication
 * starts from; MySQL's auto-positioning sends what gtid_executed lacks.
 */
export function demote(flavor: Flavor, source: Source): string[] {
  return [
    ...setReadOnly(flavor, true),
    setSemiSyncSource(flavor, false),
    stopReplica(flavor),
    ...(flavor === 'mariadb' ? ['SET GLOBAL gtid_slave_pos = @@gtid_current_pos'] : []),
    changeSource(flavor, source),
    startReplica(flavor),
  ];
}

/**
 * The replication account's privileges: replicate, watch, promote and
 * demote, and read everything for a new replica's logical clone (it reads
 * all data through the binlog anyway). Never SUPER or ALL.
 * MariaDB 10.11 splits SUPER: SLAVE MONITOR (SHOW SLAVE STATUS), BINLOG
 * MONITOR (SHOW MASTER STATUS, formerly REPLICATION CLIENT), REPLICATION
 * SLAVE ADMIN (START/STOP/RESET SLAVE, CHANGE MASTER, gtid_slave_pos),
 * READ_ONLY ADMIN (SET GLOBAL read_only), REPLICATION MASTER ADMIN
 * (rpl_semi_sync_master_*). MySQL 8.4: REPLICATION CLIENT
 * (SHOW REPLICA STATUS), REPLICATION_SLAVE_ADMIN, SYSTEM_VARIABLES_ADMIN
 * (super_read_only), BACKUP_ADMIN for a clone.
 */
export function replicationAccount(flavor: Flavor, user: string, password: string): string[] {
  const account = quoteAccount(user);
  const read = 'SELECT, SHOW VIEW, TRIGGER, EVENT, LOCK TABLES, RELOAD, PROCESS';
  const privileges =
    flavor === 'mariadb'
      ? `REPLICATION SLAVE, SLAVE MONITOR, BINLOG MONITOR, REPLICATION SLAVE ADMIN, READ_ONLY ADMIN, REPLICATION MASTER ADMIN, ${read}`
      : `REPLICATION SLAVE, REPLICATION CLIENT, REPLICATION_SLAVE_ADMIN, SYSTEM_VARIABLES_ADMIN, BACKUP_ADMIN, ${read}`;
  return [
    `CREATE USER ${account} IDENTIFIED BY ${quoteString(password)}`,
    `GRANT ${privileges} ON *.* TO ${account}`,
  ];
}

/** The server settings GTID replication needs beside the common ones (see start-script.ts for MariaDB's). */
export function gtidSettings(flavor: Flavor): [string, string][] {
  return flavor === 'mariadb'
    ? [
        ['log_bin', 'binlog'],
        ['binlog_format', 'ROW'],
        ['log_slave_updates', 'ON'],
        ['gtid_strict_mode', 'ON'],
      ]
    : [
        ['log_bin', 'binlog'],
        ['gtid_mode', 'ON'],
        ['enforce_gtid_consistency', 'ON'],
        ['log_replica_updates', 'ON'],
      ];
}

/** What SHOW SLAVE/REPLICA STATUS says, in the same words for both. */
export interface ReplicaStatus {
  sourceHost: string;
  ioRunning: boolean;
  sqlRunning: boolean;
  /** Received GTIDs: MariaDB's Gtid_IO_Pos, MySQL's Retrieved_Gtid_Set. */
  received: string;
  secondsBehind: number | undefined;
  /** The IO thread's state as the server words it: Yes, No, Connecting (retrying), Preparing. */
  ioState: string;
  /** The last error that stopped (or, while it reconnects, holds up) the IO thread: 0 and '' for none. */
  lastIoErrno: number;
  lastIoError: string;
  /** The last error that stopped the SQL thread: 0 and '' for none. */
  lastSqlErrno: number;
  lastSqlError: string;
}

/**
 * The IO thread's error that no reconnection mends (ER_MASTER_FATAL_ERROR_READING_BINLOG): the
 * primary does not have what the replica asks for next, as when the replica received transactions
 * from a former primary that the new one never had (GTID strict mode refuses them).
 */
export const FATAL_BINLOG_ERRNO = 1236;

/**
 * Why a replica does not replicate, in its server's words where a thread gives an error; `fatal`
 * when it stopped for good on that error (its SQL thread on any error, its IO thread on
 * FATAL_BINLOG_ERRNO): only a restart, which checks its history against the primary's, moves it
 * again. A thread stopped on purpose (STOP SLAVE) or reconnecting is not fatal. Undefined while
 * both threads run.
 */
export function replicationErrorOf(
  r: ReplicaStatus | undefined,
): { message: string; fatal: boolean } | undefined {
  if (!r || (r.ioRunning && r.sqlRunning)) return undefined;
  if (!r.sqlRunning && r.lastSqlErrno !== 0)
    return { message: `SQL thread stopped (error ${r.lastSqlErrno}): ${r.lastSqlError}`, fatal: true };
  const io = r.ioState === 'No' || r.ioState === '' ? 'stopped' : r.ioState.toLowerCase();
  if (!r.ioRunning && r.lastIoErrno !== 0)
    return {
      message: `IO thread ${io} (error ${r.lastIoErrno}): ${r.lastIoError}`,
      fatal: r.ioState === 'No' && r.lastIoErrno === FATAL_BINLOG_ERRNO,
    };
  // Stopped without an error: by a statement (STOP SLAVE), not by the server.
  return {
    message: `IO thread ${io}, SQL thread ${r.sqlRunning ? 'running' : 'stopped'}, no error`,
    fatal: false,
  };
}

/** Parses one row of the status statement; undefined when there is none (not a replica). */
export function parseReplicaStatus(
  flavor: Flavor,
  row: Record<string, unknown> | undefined,
): ReplicaStatus | undefined {
  if (!row) return undefined;
  const [source, replica] = flavor === 'mariadb' ? ['Master', 'Slave'] : ['Source', 'Replica'];
  const field = (key: string) => text(row[key]);
  const behind = field(`Seconds_Behind_${source}`);
  const ioState = field(`${replica}_IO_Running`);
  const errno = (key: string) => Number(field(key)) || 0;
  return {
    sourceHost: field(`${source}_Host`),
    ioRunning: ioState === 'Yes',
    sqlRunning: field(`${replica}_SQL_Running`) === 'Yes',
    received: field(flavor === 'mariadb' ? 'Gtid_IO_Pos' : 'Retrieved_Gtid_Set'),
    secondsBehind: behind === '' ? undefined : Number(behind),
    ioState,
    lastIoErrno: errno('Last_IO_Errno'),
    lastIoError: field('Last_IO_Error'),
    lastSqlErrno: errno('Last_SQL_Errno'),
    lastSqlError: field('Last_SQL_Error'),
  };
}

/** One MariaDB GTID, `domain-server-seq`. */
export interface Gtid {
  domain: number;
  server: number;
  seq: bigint;
}

/** A MariaDB GTID position (`0-100-42,1-101-7`): one GTID per domain; malformed parts are left out. */
export function parseGtidPosition(position: string | null | undefined): Gtid[] {
  if (!position) return [];
  return position
    .split(',')
    .map((p) => /^\s*(\d+)-(\d+)-(\d+)\s*$/.exec(p))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ domain: Number(m[1]), server: Number(m[2]), seq: BigInt(m[3]!) }));
}

/** The GTID of `domain` in a position, if it has one. */
export function gtidOf(position: string | null | undefined, domain = 0): Gtid | undefined {
  return parseGtidPosition(position).find((g) => g.domain === domain);
}
