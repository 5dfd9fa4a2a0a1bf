/**
 * How a PostgreSQL instance starts, as the script every Pod of a Database
 * runs (from its ConfigMap, so the official images and the Debian-built test
 * images behave the same: neither image's own entrypoint is used).
 *
 * The rules that keep one writable primary (the manager's side is in
 * ../replication.ts):
 * - An instance never makes itself the primary of an existing cluster by
 *   choice. Only the one the topology ConfigMap names may start writable,
 *   and only when no peer is writable already; every other one starts as a
 *   standby of the client Service (which selects the primary alone). Moving
 *   the primary elsewhere is the manager's work: it renames the primary in
 *   the topology, deletes the old primary's Pod, and only then promotes.
 * - A new cluster is made (initdb) only by the named primary, only while the
 *   topology says the Database was never initialised: an empty volume later
 *   (a lost PVC) is filled by cloning the primary, never by a new empty one.
 * - A Database with spec.bootstrap.recovery is made by restoring its source
 *   (pgbackrest restore, then recovery to the target with the source's
 *   archived WAL) in place of initdb, by the same instance at the same moment;
 *   its replicas clone it as usual.
 * - A standby that was a primary once, or fell behind a promotion, is rewound
 *   to the primary's timeline (pg_rewind), or cloned afresh when that fails,
 *   before it starts: a former primary rejoins, it never diverges. What it
 *   held beyond the primary's history is counted first, and kept instead
 *   when spec.replication.divergedData says Keep.
 */
import { renderRoleDecision } from '@regulon/conventions';
import { RECOVERY_MOUNT, REDACT_SED, STANZA } from '../backup/pgbackrest.ts';

/** The role the manager connects as, and replicas stream with: no superuser. */
export const REPLICATION_USER = 'regulon_replication';
/** Where the Pods find the topology ConfigMap's keys (`primary`, `initialized`). */
export const TOPOLOGY_MOUNT = '/etc/regulon/topology';
/** The container's configuration directory (the ConfigMap: postgresql.conf, pg_hba.conf, start.sh). */
export const CONFIG_MOUNT = '/etc/postgresql';
export const DATA_MOUNT = '/var/lib/postgresql/data';
export const PGDATA = `${DATA_MOUNT}/pgdata`;
/** Present while the script prepares the data directory: the liveness probe leaves such a container alone. */
export const STARTING_MARKER = '/tmp/regulon-starting';
/**
 * In the data directory of an instance that rejoined after diverging: what was discarded (see
 * rewind() in the start script), read by the manager's probe. Replaced by the next one; gone
 * when the instance is cloned afresh later. A file named `pgsql_tmp…` below a directory, which
 * pg_basebackup and pg_rewind leave out of what they copy (a restore removes it too): a clone of
 * this instance, or one rewound from it, must not claim what this one discarded.
 */
export const DIVERGED_REPORT_FILE = 'regulon/pgsql_tmp_diverged';

/** Replication slot of the instance in Pod `pod` (slot names allow [a-z0-9_]). */
export function slotName(pod: string): string {
  return `regulon_${pod.replace(/-/g, '_')}`;
}

/**
 * pg_hba.conf: scram everywhere over TCP, the replication role for streaming;
 * trust on the Unix socket, which only the container's own processes reach.
 */
export function renderHba(): string {
  return [
    'local all all trust',
    `host replication ${REPLICATION_USER} all scram-sha-256`,
    'host all all all scram-sha-256',
    '',
  ].join('\n');
}

/** What the replication role may do (it is no superuser): the manager's probes, promotion, pg_rewind's reads. */
const REPLICATION_GRANTS = `GRANT pg_monitor TO ${REPLICATION_USER};
GRANT EXECUTE ON FUNCTION pg_control_system() TO ${REPLICATION_USER};
GRANT EXECUTE ON FUNCTION pg_control_checkpoint() TO ${REPLICATION_USER};
GRANT EXECUTE ON FUNCTION pg_promote(boolean, integer) TO ${REPLICATION_USER};
-- What pg_rewind reads from the source: a former primary rejoins without a superuser.
GRANT EXECUTE ON FUNCTION pg_ls_dir(text, boolean, boolean) TO ${REPLICATION_USER};
GRANT EXECUTE ON FUNCTION pg_stat_file(text, boolean) TO ${REPLICATION_USER};
GRANT EXECUTE ON FUNCTION pg_read_binary_file(text) TO ${REPLICATION_USER};
GRANT EXECUTE ON FUNCTION pg_read_binary_file(text, bigint, bigint, boolean) TO ${REPLICATION_USER};`;

/**
 * The start script. Its environment (from the StatefulSet): POD_NAME,
 * PRIMARY_HOST (the client Service), PEERS_HOST (the headless Service),
 * SUPERUSER and SUPERUSER_PASSWORD (the credentials Secret), DATABASE,
 * REPLICATION_PASSWORD (the replication Secret). Passwords never reach a
 * command line: psql reads them from the environment, libpq from a passfile.
 */
export function renderStartScript(): string {
  return `#!/bin/bash
# Rendered by the Database controller (apps/database-controller/src/postgres/start-script.ts).
set -uo pipefail
touch ${STARTING_MARKER}
umask 0077
trap "exit 143" TERM
export DATABASE=\${DATABASE:-app}
data=${DATA_MOUNT}
PGDATA=${PGDATA}
# The script runs once per container, before this container's server. A container's processes all
# end with it, so a lock file in the data directory is an earlier container's, and the PID it names
# may well be a live process of this one (the agent's own): postgres then refuses to start, pg_rewind's
# crash recovery included ("lock file postmaster.pid already exists", CI saw it).
rm -f "$PGDATA/postmaster.pid"
export PGPASSFILE=$data/.pgpass
printf '*:*:*:%s:%s\\n' '${REPLICATION_USER}' "$REPLICATION_PASSWORD" > "$PGPASSFILE"
as_replication() { env -u PGPASSWORD PGUSER=${REPLICATION_USER} PGCONNECT_TIMEOUT=2 "$@"; }
say() { echo "regulon: $*" >&2; }
designated() { [ "$(cat ${TOPOLOGY_MOUNT}/primary 2>/dev/null)" = "$POD_NAME" ]; }
initialized() { [ "$(cat ${TOPOLOGY_MOUNT}/initialized 2>/dev/null)" = "true" ]; }
# The client Service reaches a primary that serves: writable, its last checkpoint on its current
# timeline. Not merely one that answers: the Service may already select a standby being promoted,
# and a rewind against it (still on the old timeline) finds "no rewind required" for data that went
# past the fork, which then never streams (CI saw it). A freshly promoted one is waited for until
# its checkpoint records the new timeline, which pg_rewind reads from its control file.
primary_up() {
  [ "$(as_replication psql -h "$PRIMARY_HOST" -d postgres -tAX -c "select case when pg_is_in_recovery() then false else (select timeline_id from pg_control_checkpoint()) = ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int end" 2>/dev/null)" = t ]
}
wait_for_primary() {
  say "waiting for the primary at $PRIMARY_HOST"
  until primary_up; do sleep 2; done
}
# Whether another instance of this Database is writable now (its peers by the headless Service).
writable_peer() {
  local ip
  for ip in $(getent ahostsv4 "$PEERS_HOST" | awk '{print $1}' | sort -u); do
    if [ "$(as_replication psql -h "$ip" -d postgres -tAX -c 'select not pg_is_in_recovery()' 2>/dev/null)" = t ]; then
      say "a writable instance already runs at $ip"
      return 0
    fi
  done
  return 1
}
initialize() {
  if [ -e ${RECOVERY_MOUNT}/TYPE ]; then
    restore
    return
  fi
  say "initialising a new cluster"
  rm -rf "$PGDATA.new"
  initdb -D "$PGDATA.new" -U "$SUPERUSER" --pwfile=<(printf '%s' "$SUPERUSER_PASSWORD") \\
    --auth-local=trust --auth-host=scram-sha-256 --data-checksums --encoding=UTF8 >/dev/null || exit 1
  pg_ctl -D "$PGDATA.new" -w -o "-c listen_addresses='' -c unix_socket_directories=/tmp" start >/dev/null || exit 1
  psql -h /tmp -U "$SUPERUSER" -d postgres -v ON_ERROR_STOP=1 -qX <<'SQL' || exit 1
\\getenv replication_password REPLICATION_PASSWORD
\\getenv database DATABASE
CREATE ROLE ${REPLICATION_USER} WITH LOGIN REPLICATION PASSWORD :'replication_password';
${REPLICATION_GRANTS}
SELECT format('CREATE DATABASE %I', :'database') WHERE :'database' <> 'postgres' \\gexec
SQL
  pg_ctl -D "$PGDATA.new" -w -m fast stop >/dev/null || exit 1
  mv "$PGDATA.new" "$PGDATA"
}
# The source repository's settings, from the recovery Secret, in place of the Database's own.
source_repository() {
  local v f
  for v in $(compgen -e | grep '^PGBACKREST_REPO1_'); do unset "$v"; done
  for f in ${RECOVERY_MOUNT}/REPO1_*; do export "PGBACKREST_$(basename "$f")=$(cat "$f")"; done
}
# After a recovery to the end of the archive: whether it ended there, not at a hole. Recovery ends
# quietly at the first segment restore_command cannot find; if the archive holds a later one on this
# timeline or a newer one, that segment is a gap (archiving keeps order: a segment archived since the
# recovery ended is the end moving on only if the missing one came first), and the restore would
# lack every transaction after it.
archive_complete() {
  local history parent lsn size pos perlog needed found listed tries=0
  history=$(ls "$PGDATA.new/pg_wal" | grep -E '^[0-9A-F]{8}[.]history$' | sort | tail -n 1)
  [ -n "$history" ] || return 0
  read -r parent lsn _ < <(grep -vE '^[[:space:]]*(#|$)' "$PGDATA.new/pg_wal/$history" | tail -n 1)
  size=$(pg_controldata "$PGDATA.new" | sed -n 's/^Bytes per WAL segment: *//p')
  pos=$(( (16#\${lsn%/*} << 32) + 16#\${lsn#*/} ))
  perlog=$(( 4294967296 / size ))
  # The segment recovery asked for last: the next one, unless it ended on a segment boundary.
  needed=$(( pos / size ))
  [ $(( pos % size )) = 0 ] || needed=$(( needed + 1 ))
  until listed=$( (source_repository && pgbackrest repo-ls --recurse archive/${STANZA}) 2>&1); do
    tries=$((tries + 1))
    if [ $tries -ge 5 ]; then
      say "error: cannot list the archive to check that the restore reached its end: $(printf '%s' "$listed" | tail -n 1 | sed -e '${REDACT_SED}')"
      return 1
    fi
    sleep 2
  done
  found=$(printf '%s\n' "$listed" | grep -oE '[0-9A-F]{24}-[0-9a-f]{40}' | cut -c1-24 | sort -u | while read -r n; do
    [ $((16#\${n:0:8})) -ge "$parent" ] || continue
    seg=$(( 16#\${n:8:8} * perlog + 16#\${n:16:8} ))
    if [ "$seg" = "$needed" ]; then echo present; elif [ "$seg" -gt "$needed" ]; then echo "$n"; fi
  done)
  grep -qx present <<<"$found" && return 0
  [ -z "$found" ] && return 0
  say "error: the archive has a gap: WAL segment $(printf '%08X%08X%08X' "$parent" $((needed / perlog)) $((needed % perlog))) is missing while later ones are archived (up to $(tail -n 1 <<<"$found")), so recovery stopped at $lsn and the restore would lack every transaction after it: restore with a targetTime before the gap, or from a backup taken after it"
  return 1
}
# spec.bootstrap.recovery: the source's backup restored, and recovered to its target with the source's
# archived WAL, on a server no client reaches; then the operator's roles get this Database's passwords.
restore() {
  local r=${RECOVERY_MOUNT} type args
  type=$(cat $r/TYPE)
  args=(--type="$type")
  [ -s $r/SET ] && args+=(--set="$(cat $r/SET)")
  [ -s $r/TARGET ] && args+=(--target="$(cat $r/TARGET)")
  [ "$type" != default ] && args+=(--target-action=promote)
  say "restoring from the object store (recovery type $type)"
  rm -rf "$PGDATA.new"
  mkdir -m 0700 "$PGDATA.new"
  ( source_repository && pgbackrest restore --pg1-path="$PGDATA.new" "\${args[@]}" ) 2>&1 | grep -v repo1-retention | sed -e '${REDACT_SED}' >&2
  [ "\${PIPESTATUS[0]}" = 0 ] || { say "restore failed"; exit 1; }
  # Nothing of the source's own instance: not its lock, its role, or what it once discarded.
  rm -rf "$PGDATA.new/postmaster.pid" "$PGDATA.new/standby.signal" "$PGDATA.new/$(dirname ${DIVERGED_REPORT_FILE})"
  say "recovering"
  pg_ctl -D "$PGDATA.new" -l "$data/recovery.log" -o "-c config_file=${CONFIG_MOUNT}/postgresql.conf -c data_directory=$PGDATA.new -c listen_addresses='' -c unix_socket_directories=/tmp -c archive_mode=off -c restore_command='bash ${CONFIG_MOUNT}/restore-wal.sh %f %p'" start >/dev/null || exit 1
  local waited=0
  until [ "$(psql -h /tmp -U "$SUPERUSER" -d postgres -tAXc 'select pg_is_in_recovery()' 2>/dev/null)" = f ]; do
    if ! pg_ctl -D "$PGDATA.new" status >/dev/null; then
      say "recovery stopped:"
      tail -n 20 "$data/recovery.log" >&2
      # Said last, so that it is the line the Database's status quotes.
      grep -q 'recovery ended before configured recovery target was reached' "$data/recovery.log" &&
        say "error: the archive ends, or has a gap, before the recovery target $(cat $r/TARGET)$(sed -n 's/.*last completed transaction was at log time \\(.*\\)/ (the last transaction replayed was at \\1)/p' "$data/recovery.log" | tail -n 1): restore to an earlier targetTime"
      exit 1
    fi
    sleep 1
    waited=$((waited + 1))
    # A long replay says where it is; a superuser the restored data lacks says why it never ends.
    [ $((waited % 30)) = 0 ] && say "still recovering after \${waited}s: $(tail -n 1 "$data/recovery.log")"
  done
  if [ "$type" = default ] && ! archive_complete; then
    pg_ctl -D "$PGDATA.new" -w -m fast stop >/dev/null
    exit 1
  fi
  psql -h /tmp -U "$SUPERUSER" -d postgres -v ON_ERROR_STOP=1 -qX <<'SQL' || exit 1
\\getenv superuser SUPERUSER
\\getenv superuser_password SUPERUSER_PASSWORD
\\getenv replication_password REPLICATION_PASSWORD
-- The source's passwords stay with the source: this Database's Secrets open it.
ALTER ROLE :"superuser" WITH PASSWORD :'superuser_password';
-- A source not made by this operator has no replication role yet.
SELECT 'CREATE ROLE ${REPLICATION_USER} WITH LOGIN REPLICATION' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${REPLICATION_USER}') \\gexec
ALTER ROLE ${REPLICATION_USER} WITH LOGIN REPLICATION PASSWORD :'replication_password';
${REPLICATION_GRANTS}
-- pgBackRest wrote the recovery settings (restore_command, the target) to postgresql.auto.conf: a
-- replica cloned from here must never recover to the source's target or fetch the source's WAL.
ALTER SYSTEM RESET ALL;
SQL
  pg_ctl -D "$PGDATA.new" -w -m fast stop >/dev/null || exit 1
  rm -f "$data/recovery.log"
  mv "$PGDATA.new" "$PGDATA"
}
clone() {
  wait_for_primary
  say "cloning the primary"
  rm -rf "$PGDATA.new"
  until as_replication pg_basebackup -h "$PRIMARY_HOST" -D "$PGDATA.new" -X stream --checkpoint=fast; do
    say "clone failed; trying again"
    rm -rf "$PGDATA.new"
    sleep 2
    wait_for_primary
  done
  mv "$PGDATA.new" "$PGDATA"
}
# What this data holds past the point where the primary's history left its timeline, from its own
# WAL (pg_waldump), in one line: how many transactions committed, which positions, the last one when.
diverged_report() {
  local at=$1 tl=$2 dump commits end last
  dump=$(pg_waldump -p "$PGDATA/pg_wal" -t "$tl" -s "$at" 2>/dev/null)
  commits=$(grep -c 'desc: COMMIT' <<<"$dump")
  end=$(tail -n 1 <<<"$dump" | sed -n 's/.*lsn: \\([0-9A-F]*\\/[0-9A-F]*\\).*/\\1/p')
  last=$(grep 'desc: COMMIT' <<<"$dump" | tail -n 1 | sed -n 's/.*desc: COMMIT \\([0-9-]* [0-9:.]* [A-Z]*\\).*/\\1/p')
  echo "$commits transaction(s) committed on timeline $tl after $at, where the primary's history leaves it (WAL to \${end:-$at}\${last:+, the last commit at $last})"
}
# A standby that was a primary once, or fell behind a promotion, onto the primary's timeline. What a
# former primary holds that the primary never had (asynchronous replication's loss) is counted and
# named before anything discards it; spec.replication.divergedData Keep leaves it as it is, out of
# the Database, until a person decides. The count is kept in the data directory, where the manager
# reads it (pg_read_binary_file) for the status and an Event.
rewind() {
  wait_for_primary
  local out at report= keep=
  [ "$(cat ${TOPOLOGY_MOUNT}/divergedData 2>/dev/null)" = Keep ] && keep=1
  # pg_rewind reads a data directory that was shut down cleanly: a crashed one first finishes its
  # recovery in single-user mode, which no client reaches (pg_rewind itself does so, but not always
  # in --dry-run), archiving nothing.
  if ! pg_controldata "$PGDATA" | grep -q '^Database cluster state: *shut down'; then
    postgres --single -F -D "$PGDATA" -c archive_mode=off template1 </dev/null >/dev/null 2>&1 ||
      say "crash recovery before the rewind failed"
  fi
  # "no rewind required" when this data never left the primary's history.
  out=$(as_replication pg_rewind --dry-run -D "$PGDATA" --source-server="host=$PRIMARY_HOST dbname=postgres" 2>&1)
  if ! grep -q 'no rewind required' <<<"$out"; then
    at=$(sed -n 's/.*servers diverged at WAL location \\([0-9A-F]*\\/[0-9A-F]*\\) on timeline \\([0-9]*\\).*/\\1 \\2/p' <<<"$out")
    if [ -n "$at" ]; then
      report=$(diverged_report $at)
      say "diverged from the primary: $report"
      if [ -n "$keep" ]; then
        say "error: kept out with its data as it is (spec.replication.divergedData: Keep): $report. Set divergedData to Discard, or delete its PersistentVolumeClaim, to rejoin it"
        exit 1
      fi
    fi
  fi
  if ! as_replication pg_rewind -D "$PGDATA" --source-server="host=$PRIMARY_HOST dbname=postgres" 2>&1 | sed 's/^/pg_rewind: /' >&2; then
    if [ -n "$keep" ]; then
      say "error: kept out with its data as it is (spec.replication.divergedData: Keep): it cannot be rewound onto the primary's timeline, and a clone would discard it. Set divergedData to Discard, or delete its PersistentVolumeClaim, to rejoin it"
      exit 1
    fi
    say "cannot rewind onto the primary's timeline: cloning afresh"
    rm -rf "$PGDATA"
    clone
  fi
  [ -z "$report" ] || { mkdir -p "$(dirname "$PGDATA/${DIVERGED_REPORT_FILE}")" &&
    printf '%s: %s, discarded\\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$report" >"$PGDATA/${DIVERGED_REPORT_FILE}"; }
}

${renderRoleDecision({ dataDir: '$PGDATA', hasData: '-s "$PGDATA/PG_VERSION"', follower: 'standby', rejoin: 'rewind' })}
if [ "$role" = primary ]; then
  rm -f "$PGDATA/standby.signal"
else
  touch "$PGDATA/standby.signal"
fi
say "starting as the $role"
rm -f ${STARTING_MARKER}
# connect_timeout: a connect to a primary that vanished without a word (a lost node) is given up
# after 5 s, not the kernel's two minutes of SYN retries; the next goes through the client Service,
# which by then selects the new primary.
exec postgres -D "$PGDATA" -c config_file=${CONFIG_MOUNT}/postgresql.conf -c data_directory="$PGDATA" \\
  -c primary_conninfo="host=$PRIMARY_HOST port=5432 user=${REPLICATION_USER} passfile=$PGPASSFILE application_name=$POD_NAME dbname=postgres connect_timeout=5" \\
  -c primary_slot_name="regulon_\${POD_NAME//-/_}"
`;
}

/**
 * restore_command while a restored cluster recovers (see restore() in the
 * start script): archived WAL from the source repository, whose settings are
 * the recovery Secret's, never the Database's own repository.
 */
export function renderRestoreWalScript(): string {
  return `#!/bin/bash
# Rendered by the Database controller (apps/database-controller/src/postgres/start-script.ts).
set -u
for v in $(compgen -e | grep '^PGBACKREST_REPO1_'); do unset "$v"; done
for f in ${RECOVERY_MOUNT}/REPO1_*; do export "PGBACKREST_$(basename "$f")=$(cat "$f")"; done
# postgres runs it in the data directory, which is not yet where PGBACKREST_PG1_PATH says.
exec pgbackrest --stanza=${STANZA} --pg1-path="$PWD" archive-get "$1" "$2"
`;
}
