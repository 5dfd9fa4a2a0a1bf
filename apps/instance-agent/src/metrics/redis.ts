// What redis's INFO says, as the series redis_exporter publishes for it: its
// metric names and labels, so that the dashboards and alert rules users
// already have for redis work on Regulon's. The subset is what an operator of
// a replicated cache watches: memory against maxmemory, evictions, hits and
// misses, clients, replication (each replica's offset and lag, the link),
// persistence, keys. INFO is one command, answered from counters the server
// keeps: asking it costs the server next to nothing.
import { fieldSamples, type EngineReading, type Mapping } from './exposition.ts';

/** INFO fields published as they are. */
const GAUGES: Readonly<Record<string, Mapping>> = {
  uptime_in_seconds: ['redis_uptime_in_seconds', 'Seconds since the server started'],
  connected_clients: ['redis_connected_clients', 'Client connections, replicas not included'],
  blocked_clients: ['redis_blocked_clients', 'Clients waiting in a blocking command'],
  maxclients: ['redis_config_maxclients', 'maxclients: the connections the server accepts'],
  used_memory: ['redis_memory_used_bytes', 'Bytes the allocator holds for the data set and the server'],
  used_memory_rss: ['redis_memory_used_rss_bytes', 'Resident bytes of the server process'],
  used_memory_peak: ['redis_memory_used_peak_bytes', 'The most bytes used_memory ever reached'],
  maxmemory: ['redis_memory_max_bytes', 'maxmemory: past it the eviction policy acts (0: no limit)'],
  mem_fragmentation_ratio: ['redis_mem_fragmentation_ratio', 'Resident bytes over used bytes'],
  loading: ['redis_loading_dump_file', '1 while the server loads its data set from disk'],
  rdb_changes_since_last_save: ['redis_rdb_changes_since_last_save', 'Writes since the last snapshot'],
  rdb_bgsave_in_progress: ['redis_rdb_bgsave_in_progress', '1 while a snapshot is being written'],
  rdb_last_save_time: [
    'redis_rdb_last_save_timestamp_seconds',
    'When the last snapshot succeeded (Unix time)',
  ],
  aof_enabled: ['redis_aof_enabled', '1 when the append-only file is on'],
  aof_rewrite_in_progress: ['redis_aof_rewrite_in_progress', '1 while the append-only file is rewritten'],
  connected_slaves: ['redis_connected_slaves', 'Replicas connected to this instance'],
  master_repl_offset: ['redis_master_repl_offset', 'Replication offset: the bytes of its stream so far'],
  repl_backlog_size: [
    'redis_replication_backlog_bytes',
    'Size of the backlog a replica resyncs from in part',
  ],
  sync_full: ['redis_replica_resyncs_full', 'Full resyncs this instance served to replicas'],
  sync_partial_ok: ['redis_replica_partial_resync_accepted', 'Partial resyncs served'],
  sync_partial_err: ['redis_replica_partial_resync_denied', 'Partial resyncs refused (a full one followed)'],
};

/** INFO fields that only grow while the server runs. */
const COUNTERS: Readonly<Record<string, Mapping>> = {
  total_connections_received: ['redis_connections_received_total', 'Connections accepted'],
  total_commands_processed: ['redis_commands_processed_total', 'Commands processed'],
  rejected_connections: ['redis_rejected_connections_total', 'Connections refused at maxclients'],
  expired_keys: ['redis_expired_keys_total', 'Keys removed as they expired'],
  evicted_keys: ['redis_evicted_keys_total', 'Keys evicted at maxmemory'],
  keyspace_hits: ['redis_keyspace_hits_total', 'Reads that found their key'],
  keyspace_misses: ['redis_keyspace_misses_total', 'Reads that did not'],
};

/** INFO fields that say ok or something else: 1 for ok. */
const STATUSES: Readonly<Record<string, Mapping>> = {
  rdb_last_bgsave_status: ['redis_rdb_last_bgsave_status', '1 when the last snapshot succeeded'],
  aof_last_bgrewrite_status: [
    'redis_aof_last_bgrewrite_status',
    '1 when the last append-only rewrite succeeded',
  ],
  aof_last_write_status: ['redis_aof_last_write_status', '1 when the last append-only write succeeded'],
};

/** `ip=10.0.0.1,port=6379,state=online` as its pairs. */
const pairs = (value: string) =>
  Object.fromEntries(
    value.split(',').flatMap((p) => {
      const at = p.indexOf('=');
      return at > 0 ? [[p.slice(0, at), p.slice(at + 1)] as const] : [];
    }),
  );

/** The fields of an INFO answer (`key:value` lines; sections and blanks skipped). */
export function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (!line || line.startsWith('#')) continue;
    const at = line.indexOf(':');
    if (at > 0) fields.set(line.slice(0, at), line.slice(at + 1));
  }
  return fields;
}

/**
 * The samples of an INFO answer, or undefined when it is not one (no role:
 * a refused login, an error, a server still starting).
 */
export function redisReading(info: string): EngineReading | undefined {
  const f = parseInfo(info);
  const own = f.get('role');
  if (own !== 'master' && own !== 'slave') return undefined;
  const role = own === 'master' ? 'primary' : 'replica';
  const { samples, number, add, addFields } = fieldSamples(f);
  addFields('gauge', GAUGES);
  addFields('counter', COUNTERS);
  for (const [key, mapping] of Object.entries(STATUSES)) {
    const v = f.get(key);
    if (v !== undefined) add('gauge', mapping, v === 'ok' ? 1 : 0);
  }
  add(
    'gauge',
    [
      'redis_instance_info',
      'Always 1; the labels say what the instance is (role: Regulon’s primary or replica)',
    ],
    1,
    {
      redis_version: f.get('redis_version') ?? '',
      redis_mode: f.get('redis_mode') ?? '',
      maxmemory_policy: f.get('maxmemory_policy') ?? '',
    },
  );
  // slave0:ip=…,port=…,state=online,offset=…,lag=… (on a primary)
  for (const [key, value] of f) {
    if (!/^slave\d+$/.test(key)) continue;
    const p = pairs(value);
    const labels = { slave_ip: p['ip'] ?? '', slave_port: p['port'] ?? '', slave_state: p['state'] ?? '' };
    if (p['offset'] !== undefined)
      add(
        'gauge',
        ['redis_connected_slave_offset_bytes', 'Offset a replica acknowledged'],
        Number(p['offset']),
        labels,
      );
    if (p['lag'] !== undefined)
      add(
        'gauge',
        ['redis_connected_slave_lag_seconds', 'Seconds since a replica last acknowledged'],
        Number(p['lag']),
        labels,
      );
  }
  // On a replica: its link to its primary.
  const masterHost = f.get('master_host');
  if (masterHost !== undefined) {
    const labels = { master_host: masterHost, master_port: f.get('master_port') ?? '' };
    add(
      'gauge',
      ['redis_master_link_up', '1 while the link to the primary is up'],
      f.get('master_link_status') === 'up' ? 1 : 0,
      labels,
    );
    const io = number('master_last_io_seconds_ago');
    if (io !== undefined)
      add(
        'gauge',
        ['redis_master_last_io_seconds_ago', 'Seconds since the primary last sent anything (-1: no link)'],
        io,
        labels,
      );
    const syncing = number('master_sync_in_progress');
    if (syncing !== undefined)
      add(
        'gauge',
        ['redis_master_sync_in_progress', '1 while a full sync from the primary runs'],
        syncing,
        labels,
      );
  }
  // db0:keys=…,expires=…,avg_ttl=… (milliseconds)
  for (const [key, value] of f) {
    if (!/^db\d+$/.test(key)) continue;
    const p = pairs(value);
    const labels = { db: key };
    add('gauge', ['redis_db_keys', 'Keys in the database'], Number(p['keys'] ?? NaN), labels);
    add('gauge', ['redis_db_keys_expiring', 'Keys with an expiry'], Number(p['expires'] ?? NaN), labels);
    add(
      'gauge',
      ['redis_db_avg_ttl_seconds', 'Average time to live of the keys with one'],
      Number(p['avg_ttl'] ?? NaN) / 1000,
      labels,
    );
  }
  return { role, samples };
}
