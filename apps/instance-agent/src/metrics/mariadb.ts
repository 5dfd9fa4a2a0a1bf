// What MariaDB says about itself, as the series mysqld_exporter publishes for
// it (mysql_global_status_*, mysql_global_variables_*, mysql_slave_status_*,
// mysql_binlog_*), so that the dashboards and alert rules users already have
// for MySQL and MariaDB work on Regulon's. What mysqld_exporter has no series
// for (the transactions a replica received and has not applied yet) follows
// its pattern, and the engine README says so.
//
// One client run answers a scrape, in the client's vertical format (-E):
// a JSON document of the status and variables a dashboard needs (built by the
// server, so the agent parses no table layout), then SHOW ALL SLAVES STATUS
// and SHOW BINARY LOGS, which no SELECT can read in MariaDB 10.11. Each is
// answered from what the server keeps in memory; SHOW BINARY LOGS stats the
// binlog files.
import type { EngineReading, Sample } from './exposition.ts';

/** Global status variables published, lower-cased as the JSON document carries them. */
const STATUS_GAUGES: Readonly<Record<string, string>> = {
  threads_connected: 'Open client connections',
  threads_running: 'Connections running a statement now',
  max_used_connections: 'The most connections open at once since the server started',
  slaves_connected: 'Replicas connected to this instance',
  uptime: 'Seconds since the server started',
  open_files: 'Files the server holds open',
};

const STATUS_COUNTERS: Readonly<Record<string, string>> = {
  connections: 'Connection attempts, successful or not',
  aborted_connects: 'Connection attempts that failed (bad password, no privilege, timeouts)',
  aborted_clients: 'Connections closed without a proper quit',
  queries: 'Statements run, inside stored programs too',
  questions: 'Statements sent by clients',
  slow_queries: 'Statements that took longer than long_query_time',
  innodb_buffer_pool_read_requests: 'Logical reads of InnoDB pages',
  innodb_buffer_pool_reads: 'Logical reads InnoDB had to answer from disk (missed the buffer pool)',
  innodb_row_lock_waits: 'Times a row lock had to be waited for',
  innodb_deadlocks: 'Deadlocks InnoDB detected',
  created_tmp_disk_tables: 'Internal temporary tables written to disk',
  rpl_semi_sync_master_yes_tx: 'Commits a replica acknowledged (semi-synchronous)',
  rpl_semi_sync_master_no_tx: 'Commits no replica acknowledged in time (semi-synchronous)',
};

/** Semi-synchronous replication's state, ON or OFF: 1 for ON. */
const STATUS_SWITCHES: Readonly<Record<string, string>> = {
  rpl_semi_sync_master_status: '1 while the primary waits for a replica to acknowledge each commit',
  rpl_semi_sync_slave_status: '1 while this replica acknowledges commits (semi-synchronous)',
};

const STATUS_MORE_GAUGES: Readonly<Record<string, string>> = {
  rpl_semi_sync_master_clients: 'Replicas that acknowledge commits (semi-synchronous)',
  rpl_semi_sync_master_wait_sessions: 'Sessions waiting now for a replica to acknowledge their commit',
  rpl_semi_sync_master_tx_avg_wait_time: 'Microseconds a commit waited for its acknowledgement, on average',
};

const COMMANDS = ['select', 'insert', 'update', 'delete', 'commit', 'rollback'] as const;
const BUFFER_POOL_PAGES = { total: 'total', free: 'free', dirty: 'dirty', data: 'data' } as const;

const STATUS_NAMES = [
  ...Object.keys(STATUS_GAUGES),
  ...Object.keys(STATUS_COUNTERS),
  ...Object.keys(STATUS_SWITCHES),
  ...Object.keys(STATUS_MORE_GAUGES),
  ...COMMANDS.map((c) => `com_${c}`),
  ...Object.keys(BUFFER_POOL_PAGES).map((p) => `innodb_buffer_pool_pages_${p}`),
];

/**
 * What a scrape asks: with the client's vertical output (-E) and --force (a replica's SHOW
 * BINARY LOGS fails when it writes none, and the rest must still answer).
 */
export const MARIADB_METRICS_QUERY = `select json_object(
  'version', @@version,
  'read_only', 0 + @@global.read_only,
  'max_connections', @@global.max_connections,
  'innodb_buffer_pool_size', @@global.innodb_buffer_pool_size,
  'gtid_slave_pos', @@global.gtid_slave_pos,
  'status', (select json_objectagg(lower(variable_name), variable_value)
    from information_schema.global_status
    where lower(variable_name) in (${STATUS_NAMES.map((n) => `'${n}'`).join(', ')}))
) as regulon_metrics;
show all slaves status;
show binary logs`;

interface Document {
  version: string;
  read_only: number;
  max_connections: number;
  innodb_buffer_pool_size: number;
  gtid_slave_pos: string;
  status: Record<string, string> | null;
}

type Row = Map<string, string>;

/** The rows of the client's vertical output: `*** N. row ***` lines between, `Field: value` lines within. */
export function parseVertical(text: string): Row[] {
  const rows: Row[] = [];
  let row: Row | undefined;
  for (const line of text.split('\n')) {
    if (/^\*+ \d+\. row \*+$/.test(line.trim())) {
      row = new Map();
      rows.push(row);
      continue;
    }
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*): ?(.*)$/.exec(line);
    if (row && m) row.set(m[1]!, m[2]!);
  }
  return rows;
}

/** The sequence number of domain 0's GTID in a position like `0-1-42,1-2-7`; undefined without one. */
function sequenceOf(position: string | undefined): number | undefined {
  for (const gtid of (position ?? '').split(',')) {
    const [domain, , seq] = gtid.trim().split('-');
    if (domain === '0' && seq !== undefined) return Number(seq);
  }
  return undefined;
}

/**
 * The samples of what the client printed for MARIADB_METRICS_QUERY, or undefined when it printed
 * no metrics document (a refused login, a server starting up).
 */
export function mariadbReading(output: string): EngineReading | undefined {
  const rows = parseVertical(output);
  let doc: Document | undefined;
  try {
    const json = rows.find((r) => r.has('regulon_metrics'))?.get('regulon_metrics');
    doc = json === undefined ? undefined : (JSON.parse(json) as Document);
  } catch {
    return undefined;
  }
  if (!doc || typeof doc.read_only !== 'number') return undefined;
  const samples: Sample[] = [];
  const add = (
    type: Sample['type'],
    name: string,
    help: string,
    value: number | string | null | undefined,
    labels?: Record<string, string>,
  ) => {
    const n = value === null || value === undefined || value === '' ? NaN : Number(value);
    if (Number.isFinite(n)) samples.push({ name, help, type, value: n, ...(labels ? { labels } : {}) });
  };
  const status = doc.status ?? {};

  add(
    'gauge',
    'mysql_global_variables_max_connections',
    'max_connections: connections the server accepts',
    doc.max_connections,
  );
  add(
    'gauge',
    'mysql_global_variables_innodb_buffer_pool_size',
    "Bytes of InnoDB's buffer pool",
    doc.innodb_buffer_pool_size,
  );
  add(
    'gauge',
    'mysql_global_variables_read_only',
    '1 when the server refuses writes (a replica)',
    doc.read_only,
  );
  for (const [name, help] of Object.entries(STATUS_GAUGES))
    add('gauge', `mysql_global_status_${name}`, help, status[name]);
  for (const [name, help] of Object.entries(STATUS_MORE_GAUGES))
    add('gauge', `mysql_global_status_${name}`, help, status[name]);
  for (const [name, help] of Object.entries(STATUS_COUNTERS))
    add('counter', `mysql_global_status_${name}`, help, status[name]);
  for (const [name, help] of Object.entries(STATUS_SWITCHES))
    if (status[name] !== undefined)
      add('gauge', `mysql_global_status_${name}`, help, status[name] === 'ON' ? 1 : 0);
  for (const command of COMMANDS)
    add(
      'counter',
      'mysql_global_status_commands_total',
      'Statements run, by command',
      status[`com_${command}`],
      {
        command,
      },
    );
  for (const [key, state] of Object.entries(BUFFER_POOL_PAGES))
    add(
      'gauge',
      'mysql_global_status_buffer_pool_pages',
      "Pages of InnoDB's buffer pool, by state",
      status[`innodb_buffer_pool_pages_${key}`],
      { state },
    );

  for (const r of rows.filter((row) => row.has('Slave_IO_Running'))) {
    const labels = {
      connection_name: r.get('Connection_name') ?? '',
      master_host: r.get('Master_Host') ?? '',
    };
    add(
      'gauge',
      'mysql_slave_status_slave_io_running',
      '1 while the IO thread is connected to the primary',
      r.get('Slave_IO_Running') === 'Yes' ? 1 : 0,
      labels,
    );
    add(
      'gauge',
      'mysql_slave_status_slave_sql_running',
      '1 while the SQL thread applies what was received',
      r.get('Slave_SQL_Running') === 'Yes' ? 1 : 0,
      labels,
    );
    // NULL while a thread is stopped: no figure rather than a made-up one.
    add(
      'gauge',
      'mysql_slave_status_seconds_behind_master',
      'Seconds the SQL thread is behind the primary, by the timestamps of the events it applies',
      r.get('Seconds_Behind_Master'),
      labels,
    );
    add(
      'gauge',
      'mysql_slave_status_last_io_errno',
      'The IO thread’s last error number (0: none)',
      r.get('Last_IO_Errno'),
      labels,
    );
    add(
      'gauge',
      'mysql_slave_status_last_sql_errno',
      'The SQL thread’s last error number (0: none)',
      r.get('Last_SQL_Errno'),
      labels,
    );
    const received = sequenceOf(r.get('Gtid_IO_Pos'));
    const applied = sequenceOf(doc.gtid_slave_pos);
    if (received !== undefined && applied !== undefined)
      add(
        'gauge',
        'mysql_slave_status_gtid_lag_transactions',
        'Transactions received from the primary and not applied yet (GTID domain 0)',
        Math.max(0, received - applied),
        labels,
      );
  }
  const binlogs = rows.filter((row) => row.has('Log_name') && row.has('File_size'));
  if (binlogs.length) {
    add('gauge', 'mysql_binlog_files', 'Binary log files on disk', binlogs.length);
    add(
      'gauge',
      'mysql_binlog_size_bytes',
      'Bytes of the binary log files on disk',
      binlogs.reduce((sum, b) => sum + Number(b.get('File_size')), 0),
    );
  }
  add('gauge', 'mysql_version_info', 'Always 1; the label says the server version', 1, {
    version: doc.version,
  });
  return { role: doc.read_only ? 'replica' : 'primary', samples };
}
