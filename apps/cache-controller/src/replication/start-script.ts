import { renderRoleDecision } from '@regulon/conventions';

/** Where the topology ConfigMap (the name of the instance that may be writable) is mounted. */
export const TOPOLOGY_MOUNT = '/etc/redis-topology';
/** The replicated redis keeps its files here (a subdirectory: the role decision may empty it, not the mount). */
export const REPLICATED_DATA_DIR = '/data/redis';

/**
 * The start script of a replicated redis instance: the role decision every
 * replicating engine shares (start-decision.ts in @regulon/conventions), with
 * redis's answers. It writes `role.conf`, which redis.conf includes: empty for
 * the primary, `replicaof <client Service>` for a replica. Only the named
 * instance of a never-initialised Cache, or the named one holding data while no
 * peer is writable, comes up writable; every other start follows the primary,
 * so a returning old primary rejoins as a replica. Without persistence an
 * instance never "holds data" at start (redis kept it in memory): a named
 * primary that restarted empty waits for the manager to fail over, rather than
 * come back empty and have its replicas copy the empty data set. With
 * persistence the same holds while a replica runs: the append-only file may
 * lack the last second the replicas have.
 *
 * The password comes from REDISCLI_AUTH (a secretKeyRef env var) and goes to a
 * file on a memory-backed emptyDir, as `requirepass` and `masterauth`; the
 * checks of peers use it through redis-cli's env, never a command line.
 */
export function replicatedRedisScript(o: {
  conf: string;
  runDir: string;
  port: number;
  persistent: boolean;
  auth: boolean;
}): string {
  // A persistent instance holds data unless it is a named primary that restarts while a replica of
  // it runs (see replica_up): then it is treated as one that lost its data.
  const hasData = o.persistent ? `\\( -d "${REPLICATED_DATA_DIR}/appendonlydir" -a -z "$stale" \\)` : '-n ""';
  return `set -e
umask 077
say() { echo "start: $*" >&2; }
${
  o.auth
    ? `escaped=$(printf '%s' "$REDISCLI_AUTH" | sed 's/[\\\\"]/\\\\&/g')
printf 'requirepass "%s"\\nmasterauth "%s"\\n' "$escaped" "$escaped" > ${o.runDir}/auth.conf
unset escaped`
    : ':'
}
ask() { timeout 2 redis-cli --no-auth-warning -h "$1" -p ${o.port} "$2" 2>/dev/null; }
designated() { [ "$(cat ${TOPOLOGY_MOUNT}/primary 2>/dev/null)" = "$POD_NAME" ]; }
initialized() { [ "$(cat ${TOPOLOGY_MOUNT}/initialized 2>/dev/null)" = true ]; }
primary_up() { [ "$(ask "$PRIMARY_HOST" ROLE | head -n1)" = master ]; }
# Whether another instance of this Cache is writable now (its peers by the headless Service).
writable_peer() {
  local ip
  for ip in $(getent ahostsv4 "$PEERS_HOST" | awk '{print $1}' | sort -u); do
    if [ "$(ask "$ip" ROLE | head -n1)" = master ]; then
      say "a writable instance already runs at $ip"
      return 0
    fi
  done
  return 1
}
# Whether a replica runs among the peers (a Pod answering ROLE with "slave").
replica_up() {
  local ip
  for ip in $(getent ahostsv4 "$PEERS_HOST" | awk '{print $1}' | sort -u); do
    [ "$(ask "$ip" ROLE | head -n1)" = slave ] && return 0
  done
  return 1
}
# Nothing to prepare: a replica copies the primary's data set when it connects.
initialize() { :; }
clone() { :; }
${
  o.persistent
    ? `# A named primary that restarts in place while a replica of it runs: the replica holds all it was
# sent, the append-only file (fsynced every second) may hold less, and coming up writable would have
# every replica resync to that older data set. It waits instead, as one that lost its data does,
# for the manager to promote a replica, and then follows it.
stale=
if designated && initialized && replica_up; then
  say "a replica runs: it may hold writes this append-only file lacks, so a replica takes over"
  stale=1
fi
`
    : `# Not persistent: whatever a full sync left on disk is stale.\nrm -rf "${REPLICATED_DATA_DIR}"\n`
}${renderRoleDecision({ dataDir: REPLICATED_DATA_DIR, hasData, follower: 'replica', rejoin: ':' })}
mkdir -p "${REPLICATED_DATA_DIR}"
if [ "$role" = primary ]; then
  say "starting as the primary"
  : > ${o.runDir}/role.conf
else
  say "starting as a replica of $PRIMARY_HOST"
  printf 'replicaof %s ${o.port}\\n' "$PRIMARY_HOST" > ${o.runDir}/role.conf
fi
unset REDISCLI_AUTH
exec redis-server ${o.conf}`;
}
