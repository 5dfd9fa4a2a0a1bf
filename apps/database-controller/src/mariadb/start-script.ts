/**
 * How a MariaDB instance starts, as the script every Pod of a `mariadb`
 * Database runs (from its ConfigMap; the image's own entrypoint, if any, is
 * not used). The rules are the PostgreSQL ones (../postgres/start-script.ts),
 * carried over to GTID replication:
 * - Only the instance the topology ConfigMap names may start writable, and
 *   only when no peer is writable already; every other one starts
 *   `read_only` and replicates from the client Service (which selects the
 *   primary alone), so after a failover it follows the new primary by itself.
 * - A new cluster is made (`mariadb-install-db`) only by the named primary,
 *   only while the topology says the Database was never initialised: an
 *   empty volume later is filled by cloning the primary.
 * - A replica with data, and a former primary, check before they start that
 *   their last transaction is in the primary's history (GTID strict mode would
 *   stop replication at the first one that is not); one that diverged (a
 *   former primary's writes that never reached its replicas) is reported
 *   (how many, which GTIDs), then kept out (spec.replication.divergedData
 *   Keep) or cloned afresh (Discard), the clone recording what went.
 *
 * Cloning. `mariadb-backup` copies the data directory's files, so it runs
 * beside the server it copies: a replica with only network access to the
 * primary cannot use it (mariadb-operator runs it in a Job on the primary's
 * node; MOCO uses MySQL's CLONE plugin, which MariaDB lacks). A new replica
 * here loads a logical dump instead: `mariadb-dump --single-transaction
 * --master-data --gtid` from the primary through the client Service, into a
 * temporary socket-only server on its own empty volume. The dump is one
 * consistent snapshot with the GTID position it ends at, without locking
 * the primary's writes (MariaDB gives a consistent binlog position with
 * `--single-transaction`). Its limits: the data travels as SQL and is
 * re-indexed on load, so it suits small and medium databases (minutes per
 * GiB, not seconds); tables of engines without transactions (MyISAM, Aria)
 * are not consistent in it; users come from `--system=users` (CREATE USER and
 * GRANT statements), not from copying the `mysql` schema's tables.
 */
import { renderRoleDecision } from '@regulon/conventions';
import { renderFetchBackupFunctions } from '../backup/mariabackup.ts';

/** The account the manager connects as, and replicas replicate with: never SUPER or ALL. */
export const REPLICATION_USER = 'regulon_replication';
/** Where the Pods find the topology ConfigMap's keys (`primary`, `initialized`). */
export const TOPOLOGY_MOUNT = '/etc/regulon/topology';
/** The container's configuration directory (the ConfigMap: my.cnf, start.sh). */
export const CONFIG_MOUNT = '/etc/mysql/regulon';
export const DATA_MOUNT = '/var/lib/mysql';
/** The data directory, one level below the volume's root (which holds the script's own files). */
export const DATADIR = `${DATA_MOUNT}/db`;
/** Present while the script prepares the data directory: the liveness probe leaves such a container alone. */
export const STARTING_MARKER = '/tmp/regulon-starting';
/** The schema and table holding the cluster's identity (MariaDB has no system identifier). */
export const CLUSTER_TABLE = 'regulon.cluster';
/**
 * On an instance cloned afresh after it diverged (a former primary with transactions the primary
 * never had): what it discarded, one row, for the manager's probe. Written outside the binlog
 * (sql_log_bin = 0) on that instance alone, and left out of a clone's dump: a clone of it must
 * not claim what it discarded.
 */
export const DISCARDED_TABLE = 'regulon.discarded';
/** `server_id` is this plus the Pod's ordinal: distinct per instance, stable across restarts. */
export const SERVER_ID_BASE = 100;
export const PORT = 3306;

export interface MariadbSettings {
  /** Semi-synchronous replication: a commit waits until a replica has the transaction. */
  synchronous?: boolean;
  /**
   * spec.bootstrap.recovery: the first instance restores a backup from the
   * object store (the recovery Secret) instead of making a new cluster.
   */
  restore?: boolean;
}

/**
 * The operator's settings in my.cnf's `[mysqld]` group. What differs per
 * instance (`server_id`, `report_host`, `read_only`) is given on the server's
 * command line by the start script, which knows the Pod's ordinal and role.
 */
export function mariadbOperatorSettings(opts: MariadbSettings = {}): [string, string][] {
  const settings: [string, string][] = [
    ['port', String(PORT)],
    ['bind_address', '0.0.0.0'],
    ['datadir', DATADIR],
    ['socket', '/run/mysqld/mysqld.sock'],
    // Grants name hosts by pattern ('%'); a DNS lookup per connection only slows logins down.
    ['skip_name_resolve', 'ON'],
    // Fixed file names: the defaults derive from the host name, which a Pod does not keep.
    ['log_bin', 'binlog'],
    ['log_bin_index', 'binlog.index'],
    ['relay_log', 'relay-bin'],
    ['relay_log_index', 'relay-bin.index'],
    ['binlog_format', 'ROW'],
    // A replica writes what it applies to its own binlog, so that it can be promoted and followed.
    ['log_slave_updates', 'ON'],
    ['gtid_strict_mode', 'ON'],
    ['gtid_domain_id', '0'],
    // An acknowledged commit is on disk, in the binlog as in InnoDB: nothing acknowledged is lost in a crash.
    ['sync_binlog', '1'],
    ['innodb_flush_log_at_trx_commit', '1'],
    // The replication position lives in InnoDB (mysql.gtid_slave_pos) and the relay log is
    // fetched again after a crash, so a replica that crashed resumes where it was.
    ['relay_log_recovery', 'ON'],
    ['binlog_expire_logs_seconds', String(7 * 24 * 3600)],
    // A replica notices a lost primary within seconds and reconnects (through the Service, to the new
    // one). 5 s, as postgres's wal_receiver_timeout: the primary sends a heartbeat every half of it,
    // so an idle link is never taken for a lost one. A lost node's primary is replaced only once a
    // majority of replicas says it lost touch (the primary Lease's failsafe), so this is seconds of
    // every such failover: 10 s made MariaDB's 5 s slower than postgres's.
    ['slave_net_timeout', '5'],
    ['character_set_server', 'utf8mb4'],
    ['collation_server', 'utf8mb4_unicode_ci'],
  ];
  if (opts.synchronous)
    settings.push(
      // The primary's side is turned on by the start script (primary only) and by promotion: a
      // replica with it on would wait, for each transaction it applies, for an ACK that no one sends
      // (log_slave_updates puts the transaction in its binlog too), and stop replicating.
      ['rpl_semi_sync_master_enabled', 'OFF'],
      ['rpl_semi_sync_slave_enabled', 'ON'],
      // Waits (almost) for ever rather than falling back to asynchronous commits silently.
      ['rpl_semi_sync_master_timeout', String(24 * 3600 * 1000)],
      // The commit waits for a replica's acknowledgement before the storage engine commits it, so no
      // other session reads a transaction that no replica has (AFTER_COMMIT, the default, lets them:
      // a failover would then take back what clients had already read).
      ['rpl_semi_sync_master_wait_point', 'AFTER_SYNC'],
    );
  return settings;
}

/** my.cnf for the ConfigMap: the operator's settings, then the user's (`spec.parameters`, already validated). */
export function renderMycnf(opts: MariadbSettings = {}, parameters: [string, string][] = []): string {
  const lines = [
    '[mysqld]',
    ...mariadbOperatorSettings(opts).map(([k, v]) => `${k} = ${v}`),
    ...parameters.map(([k, v]) => `${k} = ${v}`),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * The start script. Its environment (from the StatefulSet): POD_NAME,
 * PRIMARY_HOST (the client Service), PEERS_HOST (the headless Service),
 * SUPERUSER and SUPERUSER_PASSWORD (the credentials Secret), DATABASE,
 * REPLICATION_PASSWORD (the replication Secret). Passwords never reach a
 * command line: the clients read them from a 0600 defaults file, and the
 * statements that carry one go to `mariadb` on its standard input.
 */
export function renderStartScript(opts: MariadbSettings = {}): string {
  const semiSync = opts.synchronous ? ' --rpl-semi-sync-master-enabled=ON' : '';
  return `#!/bin/bash
# Rendered by the Database controller (apps/database-controller/src/mariadb/start-script.ts).
set -uo pipefail
touch ${STARTING_MARKER}
umask 0077
# PID 1 ignores signals it has no handler for: a Pod deleted while preparing stops at once.
local_pid=
trap '[ -n "$local_pid" ] && kill $local_pid 2>/dev/null; exit 143' TERM
export DATABASE=\${DATABASE:-app}
data=${DATA_MOUNT}
datadir=${DATADIR}
ordinal=\${POD_NAME##*-}
server_id=$((${SERVER_ID_BASE} + ordinal))
run=/tmp/regulon
mkdir -p "$run"
say() { echo "regulon: $*" >&2; }
# A string as an SQL literal ('...', with \\ and ' escaped), and a name as an identifier (\`...\`).
sql_string() { local s=\${1//\\\\/\\\\\\\\}; s=\${s//\\'/\\\\\\'}; printf "'%s'" "$s"; }
sql_name() { printf '\`%s\`' "\${1//\\\`/\\\`\\\`}"; }
# The replication account's client options: user and password in a file only this uid reads.
printf '[client]\\nuser=%s\\npassword="%s"\\n' '${REPLICATION_USER}' \\
  "$(s=\${REPLICATION_PASSWORD//\\\\/\\\\\\\\}; printf '%s' "\${s//\\"/\\\\\\"}")" > "$run/replication.cnf"
as_replication() { local tool=$1; shift; "$tool" --defaults-extra-file="$run/replication.cnf" "$@"; }
designated() { [ "$(cat ${TOPOLOGY_MOUNT}/primary 2>/dev/null)" = "$POD_NAME" ]; }
initialized() { [ "$(cat ${TOPOLOGY_MOUNT}/initialized 2>/dev/null)" = "true" ]; }
ask() { as_replication mariadb -h "$1" -P ${PORT} --connect-timeout=3 -N -B "\${@:3}" -e "$2" 2>/dev/null; }
# The client Service reaches a writable primary, not merely a server: it may already select a
# replica being promoted, whose history lacks what is not applied yet.
primary_up() { [ "$(ask "$PRIMARY_HOST" 'select @@read_only')" = 0 ]; }
wait_for_primary() {
  say "waiting for the primary at $PRIMARY_HOST"
  until primary_up; do sleep 2; done
}
# Whether another instance of this Database is writable now (its peers by the headless Service).
writable_peer() {
  local ip
  for ip in $(getent ahostsv4 "$PEERS_HOST" | awk '{print $1}' | sort -u); do
    if [ "$(ask "$ip" 'select @@read_only')" = 0 ]; then
      say "a writable instance already runs at $ip"
      return 0
    fi
  done
  return 1
}
# A server on a Unix socket only, no network, no replication: for preparing a data directory.
# A new one also writes no binlog (what is loaded into it is not its own history); one with data
# keeps it, which its crash recovery needs (the binlog decides the fate of prepared transactions).
local_sql() { mariadb --no-defaults --socket="$run/local.sock" -u "$(id -un)" -N -B "$@"; }
start_local() {
  local binlog=
  [ "$2" = new ] && binlog=--skip-log-bin
  mariadbd --defaults-file=${CONFIG_MOUNT}/my.cnf --datadir="$1" --server-id=$server_id \\
    --skip-networking --socket="$run/local.sock" --pid-file="$run/local.pid" \\
    --skip-slave-start $binlog --log-error="$run/local.err" &
  local_pid=$!
  local i
  for i in $(seq 1 120); do
    local_sql -e 'select 1' >/dev/null 2>&1 && return 0
    kill -0 $local_pid 2>/dev/null || break
    sleep 0.5
  done
  say "the temporary server did not start:"; tail -n 20 "$run/local.err" >&2
  exit 1
}
stop_local() {
  kill $local_pid && wait $local_pid || { say "the temporary server did not stop cleanly"; exit 1; }
}
# A new data directory whose only login is this uid's, through the socket. --force: no DNS
# lookup of the host name (the grants name no host but localhost and '%').
install_db() {
  rm -rf "$1"
  mariadb-install-db --no-defaults --datadir="$1" --auth-root-authentication-method=socket \\
    --auth-root-socket-user="$(id -un)" --skip-test-db --skip-name-resolve --force >"$run/install.log" 2>&1 \\
    || { say "mariadb-install-db failed:"; tail -n 20 "$run/install.log" >&2; exit 1; }
}
initialize() {
  say "initialising a new cluster"
  install_db "$datadir.new"
  start_local "$datadir.new" new
  local db app
  db=$(sql_name "$DATABASE")
  app="$(sql_string "$SUPERUSER")@'%'"
  # The replication account: streaming (REPLICATION SLAVE), watching (SLAVE/BINLOG MONITOR),
  # promoting (REPLICATION SLAVE ADMIN: STOP/RESET SLAVE; READ_ONLY ADMIN: SET GLOBAL read_only;
  # REPLICATION MASTER ADMIN: the primary's side of semi-synchronous replication),
  # and reading everything for a new replica's dump (it reads it all through the binlog anyway).
  local_sql <<SQL || { say "creating the accounts failed"; exit 1; }
CREATE USER '${REPLICATION_USER}'@'%' IDENTIFIED BY $(sql_string "$REPLICATION_PASSWORD");
GRANT REPLICATION SLAVE, SLAVE MONITOR, BINLOG MONITOR, REPLICATION SLAVE ADMIN, READ_ONLY ADMIN,
  REPLICATION MASTER ADMIN, SELECT, SHOW VIEW, TRIGGER, EVENT, LOCK TABLES, RELOAD, PROCESS ON *.* TO '${REPLICATION_USER}'@'%';
CREATE USER IF NOT EXISTS $app IDENTIFIED BY $(sql_string "$SUPERUSER_PASSWORD");
GRANT ALL PRIVILEGES ON *.* TO $app WITH GRANT OPTION;
-- Without it read_only binds the application too: a replica refuses its writes.
REVOKE READ_ONLY ADMIN ON *.* FROM $app;
CREATE DATABASE IF NOT EXISTS $db;
CREATE DATABASE regulon;
CREATE TABLE ${CLUSTER_TABLE} (id char(36) NOT NULL PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO ${CLUSTER_TABLE} VALUES (uuid());
SQL
  stop_local
  mv "$datadir.new" "$datadir"
}
${opts.restore ? renderRestore() : ''}
# Points the data directory's replication at the client Service, from where it stands now.
configure_replica() {
  local_sql <<SQL || { say "configuring replication failed"; exit 1; }
STOP SLAVE;
RESET SLAVE ALL;
-- A former primary's position is its binlog's; a replica's, what it applied: gtid_current_pos is the later.
SET GLOBAL gtid_slave_pos = @@gtid_current_pos;
CHANGE MASTER TO MASTER_HOST=$(sql_string "$PRIMARY_HOST"), MASTER_PORT=${PORT},
  MASTER_USER='${REPLICATION_USER}', MASTER_PASSWORD=$(sql_string "$REPLICATION_PASSWORD"),
  MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=2;
SQL
}
clone() {
  wait_for_primary
  say "cloning the primary"
  local list dbs
  # The primary's databases (the application's and regulon), one name a line, unescaped (-r).
  # --insert-ignore: the accounts every new directory has (the socket login loading the dump among
  # them) are kept as they are (CREATE USER IF NOT EXISTS); the others are created. Rows go into empty tables.
  until list=$(ask "$PRIMARY_HOST" "select schema_name from information_schema.schemata where schema_name not in ('mysql','information_schema','performance_schema','sys')" -r) \\
    && mapfile -t dbs <<<"$list" && [ -n "$list" ] \\
    && install_db "$datadir.new" && start_local "$datadir.new" new \\
    && as_replication mariadb-dump -h "$PRIMARY_HOST" -P ${PORT} --single-transaction --master-data=1 --gtid \\
      --system=users --insert-ignore --routines --events --triggers --ignore-table=${DISCARDED_TABLE} \\
      --databases "\${dbs[@]}" 2>"$run/dump.err" \\
      | local_sql --binary-mode; do
    say "clone failed; trying again"; sed 's/^/dump: /' "$run/dump.err" >&2
    [ -n "\${local_pid:-}" ] && kill $local_pid 2>/dev/null && wait $local_pid
    local_pid=
    sleep 2
    wait_for_primary
  done
  local_sql -e 'FLUSH PRIVILEGES'
  # What a former primary discarded to become this clone, for the manager (see DISCARDED_TABLE).
  [ -z "\${discarded:-}" ] || local_sql <<SQL || { say "recording what was discarded failed"; exit 1; }
SET SESSION sql_log_bin = 0;
CREATE TABLE IF NOT EXISTS ${DISCARDED_TABLE} (report text NOT NULL) ENGINE=InnoDB;
DELETE FROM ${DISCARDED_TABLE};
INSERT INTO ${DISCARDED_TABLE} VALUES ($(sql_string "$discarded"));
SQL
  configure_replica
  stop_local
  mv "$datadir.new" "$datadir"
}
# A replica with data (or a former primary) that still shares the primary's history follows it;
# one whose last transaction the primary never had (GTID strict mode would stop it) is cloned afresh.
rejoin() {
  wait_for_primary
  local mine theirs errant
  start_local "$datadir" existing
  mine=$(local_sql -e 'select @@gtid_current_pos')
  # The primary's history: the last GTID of each server in its binlog, and what it applied as a
  # replica (a primary cloned by a dump and promoted before its first write has an empty binlog).
  # Only an answer counts: an unreachable primary is waited for, never taken for an empty one.
  until theirs=$(ask "$PRIMARY_HOST" "select concat_ws(',', nullif(@@gtid_binlog_state, ''), nullif(@@gtid_slave_pos, ''))"); do
    sleep 2
  done
  # The transactions this data holds beyond the primary's history: for each server's last GTID here
  # that the primary's is behind, the ones after it (a server's are numbered in a row in its domain).
  errant=$(awk -v mine="$mine" -v theirs="$theirs" 'BEGIN {
      n = split(theirs, t, ",")
      for (i = 1; i <= n; i++) { split(t[i], g, "-"); k = g[1] "-" g[2]; if (!(k in have) || have[k] + 0 < g[3] + 0) have[k] = g[3] }
      for (k in have) at = at (at ? "," : "") k "-" have[k]
      m = split(mine, a, ",")
      for (i = 1; i <= m; i++) {
        split(a[i], g, "-"); k = g[1] "-" g[2]
        # A server the primary has nothing of: how far back its transactions go is not known here.
        if (!(k in have)) { unknown = 1; ranges = ranges (ranges ? ", " : "") "up to " k "-" g[3]; continue }
        from = have[k] + 1
        if (g[3] + 0 < from) continue
        count += g[3] - from + 1; ranges = ranges (ranges ? ", " : "") k "-" from (g[3] + 0 > from ? " to " k "-" g[3] : "")
      }
      if (count || unknown)
        printf "%s transaction(s) the primary never had (GTID %s; the primary is at %s)", unknown ? (count ? "more than " count : "some") : count, ranges, at
    }')
  if [ -n "$errant" ]; then
    say "diverged from the primary: $errant"
    if [ "$(cat ${TOPOLOGY_MOUNT}/divergedData 2>/dev/null)" = Keep ]; then
      say "error: kept out with its data as it is (spec.replication.divergedData: Keep): $errant. Set divergedData to Discard, or delete its PersistentVolumeClaim, to rejoin it"
      exit 1
    fi
    say "cloning afresh"
    stop_local
    rm -rf "$datadir"
    discarded="$(date -u +%Y-%m-%dT%H:%M:%SZ): $errant, discarded"
    clone
    return
  fi
  configure_replica
  stop_local
}

${renderRoleDecision({ dataDir: '$datadir', hasData: '-d "$datadir/mysql"', follower: 'replica', rejoin: 'rejoin' })}
say "starting as the $role (server_id $server_id)"
rm -f ${STARTING_MARKER}
if [ "$role" = primary ]; then
  # A primary never follows anyone; replication settings left from its time as a replica stay unused.
  exec mariadbd --defaults-file=${CONFIG_MOUNT}/my.cnf --server-id=$server_id \\
    --report-host="$POD_NAME.$PEERS_HOST" --read-only=OFF --skip-slave-start${semiSync}
fi
exec mariadbd --defaults-file=${CONFIG_MOUNT}/my.cnf --server-id=$server_id \\
  --report-host="$POD_NAME.$PEERS_HOST" --read-only=ON
`;
}

/**
 * spec.bootstrap.recovery: `initialize` redefined to restore a backup from
 * the object store (the recovery Secret, see ../backup/mariabackup.ts): the
 * stream fetched and unpacked (`mbstream -x`), `mariabackup --prepare`d,
 * then, on a socket-only server, made this Database's: its binlog starts
 * afresh from the backup's GTID (the history continues from it), the
 * source's replication settings are dropped, the credentials Secret's user
 * and the replication account get this Database's passwords and grants, and
 * the cluster gets an identity of its own. Other accounts keep the passwords
 * they had in the source. A failure ends the container (the kubelet starts
 * it again, with back-off); replicas clone the restored primary as usual.
 */
function renderRestore(): string {
  return `${renderFetchBackupFunctions()}
initialize() {
  say "restoring a backup instead of initialising a new cluster"
  rm -rf "$datadir.new"
  fetch_backup "$datadir.new" >"$run/manifest.json" || { say "fetching the backup failed"; exit 1; }
  mariabackup --prepare --target-dir="$datadir.new" >"$run/prepare.log" 2>&1 \\
    || { say "mariabackup --prepare failed:"; tail -n 20 "$run/prepare.log" >&2; exit 1; }
  local gtid db app
  # The GTID of the backup's last transaction, as mariabackup recorded it: binlog file, position, GTID.
  gtid=$(cat "$datadir.new/mariadb_backup_binlog_info" "$datadir.new/xtrabackup_binlog_info" 2>/dev/null | awk 'NR == 1 {print $3}')
  start_local "$datadir.new" existing
  db=$(sql_name "$DATABASE")
  app="$(sql_string "$SUPERUSER")@'%'"
  local_sql <<SQL || { say "making the restored data this Database's failed"; exit 1; }
-- Replication settings and position of the source are not for this cluster; the binlog starts
-- afresh, its state the last GTID of the backup (gtid_slave_pos must not contradict the binlog: first).
RESET SLAVE ALL;
SET GLOBAL gtid_slave_pos = '';
RESET MASTER;
$([ -n "$gtid" ] && echo "SET GLOBAL gtid_binlog_state = $(sql_string "$gtid");")
CREATE USER IF NOT EXISTS '${REPLICATION_USER}'@'%' IDENTIFIED BY $(sql_string "$REPLICATION_PASSWORD");
ALTER USER '${REPLICATION_USER}'@'%' IDENTIFIED BY $(sql_string "$REPLICATION_PASSWORD");
GRANT REPLICATION SLAVE, SLAVE MONITOR, BINLOG MONITOR, REPLICATION SLAVE ADMIN, READ_ONLY ADMIN,
  REPLICATION MASTER ADMIN, SELECT, SHOW VIEW, TRIGGER, EVENT, LOCK TABLES, RELOAD, PROCESS ON *.* TO '${REPLICATION_USER}'@'%';
CREATE USER IF NOT EXISTS $app IDENTIFIED BY $(sql_string "$SUPERUSER_PASSWORD");
ALTER USER $app IDENTIFIED BY $(sql_string "$SUPERUSER_PASSWORD");
GRANT ALL PRIVILEGES ON *.* TO $app WITH GRANT OPTION;
REVOKE READ_ONLY ADMIN ON *.* FROM $app;
CREATE DATABASE IF NOT EXISTS $db;
CREATE DATABASE IF NOT EXISTS regulon;
CREATE TABLE IF NOT EXISTS ${CLUSTER_TABLE} (id char(36) NOT NULL PRIMARY KEY) ENGINE=InnoDB;
DELETE FROM ${CLUSTER_TABLE};
INSERT INTO ${CLUSTER_TABLE} VALUES (uuid());
-- What the backed-up instance once discarded is not this Database's to report.
DROP TABLE IF EXISTS ${DISCARDED_TABLE};
SQL
  stop_local
  mv "$datadir.new" "$datadir"
  say "restored the backup $(grep -o '"label":"[^"]*"' "$run/manifest.json" | cut -d'"' -f4)\${gtid:+ (GTID $gtid)}"
}`;
}
