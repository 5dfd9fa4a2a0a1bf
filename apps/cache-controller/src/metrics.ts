// Where and how each Cache instance's agent reads its engine's metrics
// (@regulon/instance-agent's metrics engines map the answers to the exporters'
// series). The ports are the exporters' own, so that a scrape configuration
// written for redis_exporter or memcached_exporter finds Regulon's too.
import { RUN_DIR } from './config.ts';
import { REDIS_ASK } from './replication/agent.ts';
import { ENGINE_DEFAULTS } from './versions.ts';

/** redis_exporter's port. */
export const REDIS_METRICS_PORT = 9121;
/** memcached_exporter's port. */
export const MEMCACHED_METRICS_PORT = 9150;

/**
 * memcached's `stats`, as its text protocol answers it. memcached ships no
 * client, and with --auth-file (ASCII protocol) a connection must log in first:
 * `set <any key> 0 0 <length>` with "user password" as its value, which the
 * server answers STORED. The credentials are the auth file's the start script
 * wrote (`user:password`, the first colon the separator); bash's /dev/tcp
 * carries the session (the image is Debian's essential set, bash included), and
 * LC_ALL=C makes ${#t} count bytes, as the protocol does. The agent bounds the
 * whole question (3 s) and kills it past that.
 */
const MEMCACHED_STATS_SCRIPT = [
  'LC_ALL=C',
  `exec 3<>/dev/tcp/127.0.0.1/${ENGINE_DEFAULTS.memcached.port} || exit 1`,
  `if [ -s ${RUN_DIR.memcached}/auth ]; then`,
  `  IFS= read -r a < ${RUN_DIR.memcached}/auth`,
  '  t="${a/:/ }"',
  '  printf "set regulon-metrics 0 0 %d\\r\\n%s\\r\\n" "${#t}" "$t" >&3',
  '  IFS= read -r answer <&3',
  '  [[ "$answer" == STORED* ]] || exit 2',
  'fi',
  'printf "stats\\r\\nquit\\r\\n" >&3',
  'cat <&3',
].join('\n');

/** The agent's metrics flags for each engine's instances. */
export const ENGINE_METRICS = {
  redis: { port: REDIS_METRICS_PORT, engine: 'redis', command: `${REDIS_ASK} info` },
  memcached: {
    port: MEMCACHED_METRICS_PORT,
    engine: 'memcached',
    command: `bash -c '${MEMCACHED_STATS_SCRIPT}'`,
  },
} as const;
