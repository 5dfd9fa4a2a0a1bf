// What memcached's `stats` says, as the series memcached_exporter publishes for
// it: its names and labels, so that the dashboards and alert rules users
// already have for memcached work on Regulon's. The subset is what an operator
// of a cache watches: items and bytes against limit_maxbytes, evictions, the
// hit ratio (memcached_commands_total by command and status), connections
// against max_connections. `stats` is answered from counters the server keeps:
// asking it costs the server next to nothing.
//
// memcached has no primary, so its reading has no role.
import { fieldSamples, type EngineReading, type Mapping } from './exposition.ts';

const GAUGES: Readonly<Record<string, Mapping>> = {
  uptime: ['memcached_uptime_seconds', 'Seconds since the server started'],
  curr_connections: ['memcached_current_connections', 'Open connections'],
  max_connections: ['memcached_max_connections', 'The connections the server accepts (-c)'],
  curr_items: ['memcached_current_items', 'Items stored now'],
  bytes: ['memcached_current_bytes', 'Bytes used to store items'],
  limit_maxbytes: ['memcached_limit_bytes', 'The bytes the server may use to store items (-m)'],
  threads: ['memcached_threads', 'Worker threads'],
  accepting_conns: ['memcached_accepting_connections', '1 while the server accepts new connections'],
};

const COUNTERS: Readonly<Record<string, Mapping>> = {
  total_connections: ['memcached_connections_total', 'Connections accepted since the start'],
  rejected_connections: ['memcached_connections_rejected_total', 'Connections refused at max_connections'],
  listen_disabled_num: [
    'memcached_connections_listener_disabled_total',
    'Times the server stopped accepting at max_connections',
  ],
  total_items: ['memcached_items_total', 'Items stored since the start'],
  evictions: ['memcached_items_evicted_total', 'Items removed before they expired, to free memory'],
  reclaimed: ['memcached_items_reclaimed_total', 'Items stored in the memory of an expired one'],
  bytes_read: ['memcached_read_bytes_total', 'Bytes the server read from the network'],
  bytes_written: ['memcached_written_bytes_total', 'Bytes the server sent to the network'],
  rusage_user: ['memcached_process_user_cpu_seconds_total', 'CPU seconds in user mode'],
  rusage_system: ['memcached_process_system_cpu_seconds_total', 'CPU seconds in the kernel'],
  auth_errors: ['memcached_auth_errors_total', 'Logins refused'],
};

/** memcached_exporter's memcached_commands_total: the stats counter behind each command and status. */
const COMMANDS: ReadonlyArray<readonly [stat: string, command: string, status: string]> = [
  ['get_hits', 'get', 'hit'],
  ['get_misses', 'get', 'miss'],
  ['get_expired', 'get', 'expired'],
  ['get_flushed', 'get', 'flushed'],
  ['cmd_set', 'set', 'hit'],
  ['delete_hits', 'delete', 'hit'],
  ['delete_misses', 'delete', 'miss'],
  ['incr_hits', 'incr', 'hit'],
  ['incr_misses', 'incr', 'miss'],
  ['decr_hits', 'decr', 'hit'],
  ['decr_misses', 'decr', 'miss'],
  ['cas_hits', 'cas', 'hit'],
  ['cas_misses', 'cas', 'miss'],
  ['cas_badval', 'cas', 'badval'],
  ['touch_hits', 'touch', 'hit'],
  ['touch_misses', 'touch', 'miss'],
  ['cmd_flush', 'flush', 'hit'],
];

/** The `STAT name value` lines of a stats answer (CRLF or LF; anything else skipped). */
export function parseStats(text: string): Map<string, string> {
  const stats = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const m = /^STAT (\S+) (.*?)\r?$/.exec(raw);
    if (m) stats.set(m[1]!, m[2]!);
  }
  return stats;
}

/**
 * The samples of a stats answer, or undefined when it is not one: no `END` after the STAT lines
 * (a refused login, a closed connection, an answer cut short).
 */
export function memcachedReading(text: string): EngineReading | undefined {
  const stats = parseStats(text);
  if (!stats.has('pid') || !/^END\r?$/m.test(text)) return undefined;
  const { samples, number, add, addFields } = fieldSamples(stats);
  addFields('gauge', GAUGES);
  addFields('counter', COUNTERS);
  for (const [stat, command, status] of COMMANDS) {
    const v = number(stat);
    if (v !== undefined)
      add('counter', ['memcached_commands_total', 'Commands served, by command and status'], v, {
        command,
        status,
      });
  }
  add('gauge', ['memcached_version', 'Always 1; the version label says which'], 1, {
    version: stats.get('version') ?? '',
  });
  return { role: undefined, samples };
}
