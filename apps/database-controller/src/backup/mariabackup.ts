/**
 * MariaDB physical backups as the mariadb container runs them:
 * `mariabackup --backup --stream=xbstream` on the primary, compressed by
 * `zstd` and uploaded by `rclone rcat` (Debian's rclone) into the object
 * store of spec.backup.objectStore, then a small manifest beside the stream.
 * rclone is configured from the environment only (`RCLONE_CONFIG_STORE_*`,
 * the keys by secretKeyRef): no key is ever in a file, an argument, a log
 * line or the manager's output. A backup is one directory of the repository
 * path, named by its label (the UTC time it started):
 *
 *   <bucket>/<path>/<label>/backup.xbstream.zst   the stream
 *   <bucket>/<path>/<label>/manifest.json         written last, once the stream is whole
 *
 * The manifest names the DatabaseBackup's uid, the times, sizes and the
 * binlog position (GTID) the backup is consistent at; the controller reads
 * it and the store's listing, never the Pod's say-so, to call a backup
 * Succeeded. Pure functions and scripts: the Kubernetes side is in
 * controller.ts, database.ts and ../mariadb/pod.ts.
 */
import type { V1EnvVar } from '@kubernetes/client-node';
import type { DatabaseObject } from '../api.ts';
import type { DatabaseBackupObject } from './api.ts';
import type { BackupOutcome } from './controller.ts';
import {
  BACKUP_CA_MOUNT,
  CA_FILE,
  storeRepository,
  parseCheck,
  RECOVERY_MOUNT,
  type BackupCheck,
  type Repository,
  type RepositoryBackup,
} from './pgbackrest.ts';

/** The rclone remote of the Database's own repository (its options are `RCLONE_CONFIG_STORE_*`). */
export const STORE_REMOTE = 'store';
/** The rclone remote a restore reads from (`RCLONE_CONFIG_SOURCE_*`, from the recovery Secret). */
export const SOURCE_REMOTE = 'source';
export const STREAM_OBJECT = 'backup.xbstream.zst';
export const MANIFEST_OBJECT = 'manifest.json';
/** A backup's label: the UTC time it started, as the start script's `date -u +%Y%m%dT%H%M%SZ` writes it. */
export const MARIABACKUP_LABEL = /^\d{8}T\d{6}Z$/;
/** Where the manager's backups keep their state in the container: the data volume's root, beside the data directory. */
export const MARIADB_BACKUP_STATE_DIR = '/var/lib/mysql/regulon-backups';
/** The environment variable holding `<bucket>/<path>` of the own repository (no secret). */
export const LOCATION_ENV = 'REGULON_BACKUP_LOCATION';
/** The recovery Secret's key holding `<bucket>/<path>` of the repository to restore from. */
export const RECOVERY_LOCATION_KEY = 'LOCATION';
/** Its key holding the label of the backup to restore; absent: the latest one there. */
export const RECOVERY_LABEL_KEY = 'LABEL';
/** The data directory and the configuration file, as ../mariadb/start-script.ts has them. */
const DATADIR = '/var/lib/mysql/db';
const MYCNF = '/etc/mysql/regulon/my.cnf';
const SOCKET = '/run/mysqld/mysqld.sock';

/**
 * rclone's S3 options for a repository, by their names in `RCLONE_CONFIG_<REMOTE>_<OPTION>`:
 * the values that are no secret directly, the keys as references to their Secret.
 * Path-style addressing, as for pgBackRest; `NO_CHECK_BUCKET`: rclone never
 * creates a bucket (a missing one is an error, NoSuchBucket). Streams of
 * unknown size go up in 16 MiB parts, four at a time: at most 156 GiB per
 * stream (10,000 parts), 64 MiB of memory.
 */
export function rcloneOptions(repo: Repository): Array<[string, string | { secretKey: string }]> {
  return [
    ['TYPE', 's3'],
    ['PROVIDER', 'Other'],
    ['ENDPOINT', repo.endpoint],
    ['REGION', repo.region],
    ['FORCE_PATH_STYLE', 'true'],
    ['NO_CHECK_BUCKET', 'true'],
    ['CHUNK_SIZE', '16M'],
    ['UPLOAD_CONCURRENCY', '4'],
    ['ACCESS_KEY_ID', { secretKey: repo.accessKeyIdKey }],
    ['SECRET_ACCESS_KEY', { secretKey: repo.secretAccessKeyKey }],
  ];
}

/** rclone's global settings for the manager's commands: no config file, few retries, a bounded wait to connect. */
const RCLONE_GLOBALS: Array<[string, string]> = [
  ['RCLONE_CONFIG', '/dev/null'],
  ['RCLONE_LOW_LEVEL_RETRIES', '3'],
  ['RCLONE_CONTIMEOUT', '15s'],
];

/**
 * The mariadb container's rclone environment for a Database with
 * spec.backup.objectStore: the store remote, the repository's location, and
 * the CA (spec.backup.objectStore.caSecret) as rclone's `--ca-cert`. Nothing
 * for a Database without one: its Pods stay exactly as they were.
 */
export function mariabackupEnv(db: DatabaseObject): V1EnvVar[] {
  const repo = storeRepository(db);
  if (!repo) return [];
  const timeout = db.spec.backup?.storeTimeoutSeconds;
  const env: V1EnvVar[] = RCLONE_GLOBALS.map(([name, value]) => ({
    name,
    value: name === 'RCLONE_CONTIMEOUT' && timeout !== undefined ? `${timeout}s` : value,
  }));
  // Only when set: a Database that leaves it out keeps rclone's 5 minutes and the Pods it had.
  if (timeout !== undefined) env.push({ name: 'RCLONE_TIMEOUT', value: `${timeout}s` });
  env.push({ name: LOCATION_ENV, value: `${repo.bucket}/${repo.path}` });
  if (repo.caSecret) env.push({ name: 'RCLONE_CA_CERT', value: `${BACKUP_CA_MOUNT}/${CA_FILE}` });
  for (const [option, value] of rcloneOptions(repo)) {
    const name = `RCLONE_CONFIG_${STORE_REMOTE.toUpperCase()}_${option}`;
    env.push(
      typeof value === 'string'
        ? { name, value }
        : { name, valueFrom: { secretKeyRef: { name: repo.credentialsSecret, key: value.secretKey } } },
    );
  }
  return env;
}

/**
 * The recovery Secret's data for a mariadb restore (mounted at
 * RECOVERY_MOUNT, read by the start script's restore only): the source
 * store's rclone options by name, its keys copied from the source's Secret,
 * the CA, and where the backup is: `<bucket>/<path>` and the label (none:
 * the latest backup there).
 */
export function mariadbRecoverySecretData(
  repo: Repository,
  keys: { accessKeyId: string; secretAccessKey: string; ca?: string | undefined },
  label: string | undefined,
): Record<string, string> {
  const data: Record<string, string> = {};
  for (const [option, value] of rcloneOptions(repo))
    data[option] =
      typeof value === 'string'
        ? value
        : value.secretKey === repo.accessKeyIdKey
          ? keys.accessKeyId
          : keys.secretAccessKey;
  if (repo.caSecret && keys.ca) data[CA_FILE] = keys.ca;
  data[RECOVERY_LOCATION_KEY] = `${repo.bucket}/${repo.path}`;
  if (label) data[RECOVERY_LABEL_KEY] = label;
  return data;
}

/**
 * A shell function `redact` that blanks the store's keys (as this container's
 * environment has them) in what it reads, and S3 error elements that name a
 * key id: rclone's and mariabackup's output reach files the manager reads.
 */
const REDACT_FUNCTION = `redact() {
  local t
  t=$(cat)
  for k in "\${RCLONE_CONFIG_STORE_ACCESS_KEY_ID:-}" "\${RCLONE_CONFIG_STORE_SECRET_ACCESS_KEY:-}"; do
    [ -n "$k" ] && t=\${t//"$k"/(redacted)}
  done
  printf '%s\\n' "$t" | sed -e 's#<\\(AWSAccessKeyId\\|StringToSign\\|CanonicalRequest\\|SignatureProvided\\)>[^<]*</#<\\1>(redacted)</#g'
}`;

/** The store's view of the repository path, as the check and the expiry print it after `info:`. */
const STORE_VIEW = `objects=$(rclone lsjson -R --files-only --include '/*/${STREAM_OBJECT}' --include '/*/${MANIFEST_OBJECT}' "${STORE_REMOTE}:\${${LOCATION_ENV}}" 2>&1)
echo "objects-rc: $?"
printf '%s\\n' "$objects" | redact
manifests=$(rclone cat --include '/*/${MANIFEST_OBJECT}' "${STORE_REMOTE}:\${${LOCATION_ENV}}" 2>&1)
echo "manifests-rc: $?"
printf '%s\\n' "$manifests" | redact`;

/**
 * Starts a backup in the background and returns at once: `$1` is the
 * DatabaseBackup's uid, `$2` its namespace/name. Starting twice (a retried
 * reconcile) starts one backup. First a listing of the repository path, so a
 * store that refuses fails before mariabackup copies anything; then the
 * stream, and the manifest only when every part of the pipeline exited 0 (a
 * stream cut short is deleted again). mariabackup logs in through the
 * server's socket as the container's own user (the unix_socket account every
 * data directory of the operator has), so no password is involved. The
 * outcome lands in `<uid>.rc`, the error lines (keys blanked) in `<uid>.log`.
 */
export const MARIABACKUP_START_SCRIPT = `set -u
dir=${MARIADB_BACKUP_STATE_DIR}
mkdir -p "$dir"
if [ -e "$dir/$1.started" ]; then echo already-started; exit 0; fi
touch "$dir/$1.started"
${REDACT_FUNCTION}
(
  set -o pipefail
  label=$(date -u +%Y%m%dT%H%M%SZ)
  echo "$label" >"$dir/$1.label"
  dest="${STORE_REMOTE}:\${${LOCATION_ENV}}/$label"
  begin=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  # What the backup holds: the data directory without the binlog and relay logs (mariabackup copies neither).
  size=$(du -sb --exclude='binlog.[0-9]*' --exclude='relay-bin.[0-9]*' ${DATADIR} | cut -f1)
  rm -rf "$dir/$1.tmp" && mkdir -p "$dir/$1.tmp"
  : >"$dir/$1.out"
  rc=0
  rclone lsf --max-depth 1 "${STORE_REMOTE}:\${${LOCATION_ENV}}" >/dev/null 2>>"$dir/$1.out" || rc=$?
  if [ $rc = 0 ]; then
    mariabackup --defaults-file=${MYCNF} --backup --stream=xbstream --user="$(id -un)" --socket=${SOCKET} \\
      --target-dir="$dir/$1.tmp" 2>"$dir/$1.mariabackup" |
      zstd -q -1 -T2 |
      rclone rcat "$dest/${STREAM_OBJECT}" 2>>"$dir/$1.out"
    codes=("\${PIPESTATUS[@]}")
    # rclone failing first (the store refused) ends mariabackup with SIGPIPE: the upload is the cause then.
    if [ "\${codes[2]}" != 0 ]; then
      rc=\${codes[2]}
    elif [ "\${codes[0]}" != 0 ]; then
      rc=\${codes[0]}
      echo "mariabackup exited with \${codes[0]}" >>"$dir/$1.out"
      tail -n 8 "$dir/$1.mariabackup" | sed 's/^/mariabackup: /' >>"$dir/$1.out"
    elif [ "\${codes[1]}" != 0 ]; then
      rc=\${codes[1]}
      echo "zstd exited with \${codes[1]}" >>"$dir/$1.out"
    fi
  fi
  if [ $rc = 0 ]; then
    stream=$(rclone lsjson "$dest/${STREAM_OBJECT}" 2>>"$dir/$1.out" | grep -o '"Size":[0-9]*' | head -n 1 | cut -d: -f2)
    info=$(sed -n "s/.*MySQL binlog position: filename '\\([^']*\\)', position '\\([0-9]*\\)', GTID of the last change '\\([^']*\\)'.*/\\1 \\2 \\3/p" "$dir/$1.mariabackup" | tail -n 1)
    read -r binlog_file binlog_pos gtid <<<"$info"
    end=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    if [ -z "$stream" ]; then
      rc=1; echo "the store does not list the uploaded stream" >>"$dir/$1.out"
    else
      printf '{"uid":"%s","backup":"%s","label":"%s","tool":"mariabackup","format":"xbstream+zstd","startedAt":"%s","stoppedAt":"%s","sizeBytes":%s,"streamBytes":%s,"binlogFile":"%s","binlogPosition":%s,"gtid":"%s","instance":"%s"}\\n' \\
        "$1" "$2" "$label" "$begin" "$end" "\${size:-0}" "$stream" "\${binlog_file:-}" "\${binlog_pos:-0}" "\${gtid:-}" "\${POD_NAME:-}" |
        rclone rcat "$dest/${MANIFEST_OBJECT}" 2>>"$dir/$1.out" || rc=$?
    fi
  fi
  # A stream without its manifest is no backup: it is not left to take room.
  [ $rc = 0 ] || rclone deletefile "$dest/${STREAM_OBJECT}" >/dev/null 2>&1
  redact <"$dir/$1.out" >"$dir/$1.log"
  rm -rf "$dir/$1.tmp" "$dir/$1.out"
  echo $rc >"$dir/$1.rc"
  exit 0
) </dev/null >/dev/null 2>&1 &
# Which process runs it, by pid and start time (a pid alone is reused once the container restarts).
echo $! >"$dir/$1.pid"
cut -d' ' -f22 "/proc/$!/stat" >"$dir/$1.since" 2>/dev/null
echo started`;

/**
 * What became of a backup started with MARIABACKUP_START_SCRIPT: `started:
 * yes|no`, `rc: <code>` once it finished and its error lines, `gone: yes`
 * when it never will (its process is no longer there), then `info:`
 * and the store's view of the repository path: `objects-rc:` and the
 * listing (rclone lsjson), `manifests-rc:` and every backup's manifest, one
 * a line. Keys blanked.
 */
export const MARIABACKUP_CHECK_SCRIPT = `set -u
dir=${MARIADB_BACKUP_STATE_DIR}
${REDACT_FUNCTION}
if [ -e "$dir/$1.started" ]; then echo "started: yes"; else echo "started: no"; fi
if [ -e "$dir/$1.started" ] && [ ! -e "$dir/$1.rc" ]; then
  pid=$(cat "$dir/$1.pid" 2>/dev/null || true)
  since=$(cat "$dir/$1.since" 2>/dev/null || true)
  # Read again after the check for rc: a process that ended in between wrote it first.
  if [ -z "$pid" ] || [ "$(cut -d' ' -f22 "/proc/$pid/stat" 2>/dev/null)" != "$since" ]; then
    [ -e "$dir/$1.rc" ] || echo "gone: yes"
  fi
fi
if [ -e "$dir/$1.rc" ]; then
  echo "rc: $(cat "$dir/$1.rc")"
  head -n 40 "$dir/$1.log"
fi
echo "info:"
${STORE_VIEW}`;

/**
 * Deletes the backups whose labels are the arguments (retention): each
 * one's manifest first (without it, it is no backup any more, even if the
 * rest fails half-way), then its directory. Then `info:` and the store's
 * view, from which the controller reads what is really gone. Prints rclone's
 * errors, keys blanked. Labels that are not the shape the start script
 * makes are refused: nothing outside a backup's own directory is touched.
 */
export const MARIABACKUP_EXPIRE_SCRIPT = `set -u
${REDACT_FUNCTION}
for label in "$@"; do
  case "$label" in
    [0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z) ;;
    *) echo "ERROR : refusing to expire $label: not a backup label"; continue ;;
  esac
  { rclone deletefile "${STORE_REMOTE}:\${${LOCATION_ENV}}/$label/${MANIFEST_OBJECT}" &&
    rclone purge "${STORE_REMOTE}:\${${LOCATION_ENV}}/$label"; } 2>&1 | redact
done
echo "info:"
${STORE_VIEW}`;

/** The labels of the backups the store lists (with a manifest), from the view after `info:`; throws when it is unreadable. */
export function listedLabels(info: string): Set<string> {
  const view = parseStoreView(info);
  if (view.error) throw new Error(view.error);
  return new Set(view.manifests.map((m) => m.label));
}

/** What a backup's manifest says (written by MARIABACKUP_START_SCRIPT). */
export interface Manifest {
  uid: string;
  backup?: string;
  label: string;
  startedAt?: string;
  stoppedAt?: string;
  sizeBytes?: number;
  streamBytes?: number;
  binlogFile?: string;
  binlogPosition?: number;
  gtid?: string;
  instance?: string;
}

/** The store's view of a repository path: its backups' manifests and the sizes of their streams. */
export interface StoreView {
  /** Why the store could not be read (summarised); undefined when it could. */
  error: string | undefined;
  manifests: Manifest[];
  /** Stream size by label. */
  streams: Map<string, number>;
}

/** What MARIABACKUP_CHECK_SCRIPT printed: the same parts as pgBackRest's check (parseCheck). */
export function parseMariabackupCheck(out: string): BackupCheck {
  const check = parseCheck(out);
  return {
    ...check,
    error:
      check.exitCode !== undefined && check.exitCode !== 0
        ? summarizeRcloneError(out.split(/^info:$/m)[0]!.replace(/^(started|rc|gone): .*$/gm, '')) ||
          `the backup exited with ${check.exitCode}`
        : undefined,
  };
}

/** Parses the part of MARIABACKUP_CHECK_SCRIPT's output after `info:`. */
export function parseStoreView(info: string): StoreView {
  const objectsRc = /^objects-rc: (\d+)$/m.exec(info);
  const manifestsRc = /^manifests-rc: (\d+)$/m.exec(info);
  if (!objectsRc || !manifestsRc)
    return { error: 'no answer from the store', manifests: [], streams: new Map() };
  const objectsText = info.slice(objectsRc.index + objectsRc[0].length, manifestsRc.index).trim();
  const manifestsText = info.slice(manifestsRc.index + manifestsRc[0].length).trim();
  if (objectsRc[1] !== '0')
    return {
      error: summarizeRcloneError(objectsText) || 'the store could not be listed',
      manifests: [],
      streams: new Map(),
    };
  const streams = new Map<string, number>();
  try {
    const start = objectsText.indexOf('[');
    const listed = JSON.parse(start >= 0 ? objectsText.slice(start) : objectsText) as Array<{
      Path?: string;
      Size?: number;
    }>;
    for (const o of listed) {
      const m = new RegExp(`^([^/]+)/${STREAM_OBJECT.replace(/\./g, '\\.')}$`).exec(o.Path ?? '');
      if (m && typeof o.Size === 'number') streams.set(m[1]!, o.Size);
    }
  } catch {
    return {
      error: summarizeRcloneError(objectsText) || 'the store listing is unreadable',
      manifests: [],
      streams,
    };
  }
  const manifests: Manifest[] = [];
  // A path without any manifest yet answers with no lines; a failed read says why.
  if (manifestsRc[1] !== '0' && !/directory not found/.test(manifestsText))
    return {
      error: summarizeRcloneError(manifestsText) || 'the manifests could not be read',
      manifests,
      streams,
    };
  for (const line of manifestsText.split('\n')) {
    const t = line.trim();
    if (!t.startsWith('{')) continue;
    try {
      const m = JSON.parse(t) as Manifest;
      if (typeof m.uid === 'string' && typeof m.label === 'string') manifests.push(m);
    } catch {
      // A manifest cut short is no manifest.
    }
  }
  return { error: undefined, manifests, streams };
}

/** A backup as the store lists it, in the shape the controller's status takes. */
export function storeBackupByUid(view: StoreView, uid: string): RepositoryBackup | 'incomplete' | undefined {
  const m = view.manifests.find((x) => x.uid === uid);
  if (!m) return undefined;
  const stream = view.streams.get(m.label);
  // The manifest is written after the stream: a stream missing, or of another size, is a damaged backup.
  if (stream === undefined || (m.streamBytes !== undefined && stream !== m.streamBytes)) return 'incomplete';
  const at = (s: string | undefined) => (s && !Number.isNaN(Date.parse(s)) ? new Date(s) : undefined);
  return {
    label: m.label,
    type: 'full',
    error: false,
    annotations: { uid: m.uid, ...(m.backup ? { backup: m.backup } : {}) },
    startedAt: at(m.startedAt),
    stoppedAt: at(m.stoppedAt),
    sizeBytes: m.sizeBytes,
    repositorySizeBytes: stream,
    wal: {},
    binlog: {
      ...(m.binlogFile ? { file: m.binlogFile } : {}),
      ...(m.binlogPosition ? { position: m.binlogPosition } : {}),
      ...(m.gtid ? { gtid: m.gtid } : {}),
    },
  };
}

/** What the store says about this backup, after the script finished with success. */
export function fromStore(b: DatabaseBackupObject, info: string): BackupOutcome {
  const view = parseStoreView(info);
  if (view.error) return { state: 'Failed', reason: 'RepositoryUnreadable', message: view.error };
  const found = storeBackupByUid(view, b.metadata.uid!);
  if (found && found !== 'incomplete') return { state: 'Succeeded', backup: found };
  return {
    state: 'Failed',
    reason: 'NotInRepository',
    message:
      found === 'incomplete'
        ? 'The backup finished, but its stream in the store is missing or not the size its manifest says'
        : 'The backup finished, but the store lists no manifest of it',
  };
}

/**
 * rclone's (and mariabackup's) error output in a sentence fit for a
 * condition and an Event: the error lines without their time stamps, the
 * store's code and HTTP status, request ids dropped. What it says about a
 * missing directory on a listing means a missing bucket (an existing one
 * lists an empty path without complaint).
 */
export function summarizeRcloneError(text: string): string {
  const parts: string[] = [];
  const add = (p: string | undefined) => {
    const clean = p
      ?.replace(/,? ?request id: [^,)\n]*(, host id: [^)\s]*)?/g, '')
      .replace(/\s+/g, ' ')
      .trim();
    if (clean && !parts.some((x) => x.includes(clean) || clean.includes(x))) parts.push(clean);
  };
  const lines = text
    .split('\n')
    .map((l) => l.trim().replace(/^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2} /, ''))
    .filter(Boolean);
  const detail = (i: number) => {
    const next = lines[i + 1];
    return next && /^(status code|caused by)/.test(next) ? ` (${next})` : '';
  };
  // rclone ends with one "Failed to <command>: <last error>" line: the cause, once.
  lines.forEach((line, i) => {
    const m = /^Failed to [a-z]+(?: with \d+ errors: last error was:)?:? ?(?:error in \w+: )?(.*)$/.exec(
      line,
    );
    if (m) add(`${m[1]}${detail(i)}`);
  });
  if (!parts.length)
    lines.forEach((line, i) => {
      if (/^(ERROR|CRITICAL) : /.test(line))
        add(`${line.replace(/^(ERROR|CRITICAL) : [^:]*: /, '')}${detail(i)}`);
    });
  for (const line of lines) {
    if (
      /exited with|does not list|could not|\[ERROR\]|mariabackup: .*(Error|error|failed)/.test(line) &&
      parts.length < 4
    )
      add(line);
  }
  // rclone lists a missing prefix of an existing bucket as empty: "directory not found" is the bucket.
  const summary = parts
    .join('; ')
    .replace(/^directory not found$/, 'the bucket does not exist (directory not found)');
  return summary.slice(0, 1000);
}

/**
 * Shell functions for the start script's restore: `fetch_backup DIR` fills
 * DIR with the backup the recovery Secret names (its location's label, or
 * the latest backup with a manifest under the path) and prints its manifest
 * on stdout. The source store's options are exported in a subshell only, so
 * its keys never reach the server's environment; rclone's errors go to the
 * container's log with the keys blanked.
 */
export function renderFetchBackupFunctions(): string {
  return `source_rclone() {
  (
    local f n
    for f in ${RECOVERY_MOUNT}/*; do
      n=$(basename "$f")
      case "$n" in ${RECOVERY_LOCATION_KEY} | ${RECOVERY_LABEL_KEY} | ${CA_FILE}) ;; *) export "RCLONE_CONFIG_${SOURCE_REMOTE.toUpperCase()}_$n=$(cat "$f")" ;; esac
    done
    unset RCLONE_CA_CERT
    [ -f ${RECOVERY_MOUNT}/${CA_FILE} ] && export RCLONE_CA_CERT=${RECOVERY_MOUNT}/${CA_FILE}
    export ${RCLONE_GLOBALS.map(([k, v]) => `${k}=${v}`).join(' ')}
    exec rclone "$@"
  )
}
source_redact() {
  local t k
  t=$(cat)
  for k in "$(cat ${RECOVERY_MOUNT}/ACCESS_KEY_ID 2>/dev/null)" "$(cat ${RECOVERY_MOUNT}/SECRET_ACCESS_KEY 2>/dev/null)"; do
    [ -n "$k" ] && t=\${t//"$k"/(redacted)}
  done
  [ -n "$t" ] && printf '%s\\n' "$t" >&2
  return 0
}
fetch_backup() {
  local dir=$1 location label manifest
  location=$(cat ${RECOVERY_MOUNT}/${RECOVERY_LOCATION_KEY})
  label=$(cat ${RECOVERY_MOUNT}/${RECOVERY_LABEL_KEY} 2>/dev/null)
  if [ -z "$label" ]; then
    # The latest backup of the path: labels are UTC times, so the last in order among those with a manifest.
    label=$(source_rclone lsf -R --include '/*/${MANIFEST_OBJECT}' "${SOURCE_REMOTE}:$location" 2> >(source_redact) | sort | tail -n 1)
    label=\${label%/${MANIFEST_OBJECT}}
    [ -n "$label" ] || { say "no backup with a manifest under $location"; return 1; }
  fi
  location="$location/$label"
  say "fetching the backup $location"
  manifest=$(source_rclone cat "${SOURCE_REMOTE}:$location/${MANIFEST_OBJECT}" 2> >(source_redact)) || return 1
  mkdir -p "$dir" || return 1
  source_rclone cat "${SOURCE_REMOTE}:$location/${STREAM_OBJECT}" 2> >(source_redact) | zstd -d -q | mbstream -x -C "$dir" || return 1
  printf '%s\\n' "$manifest"
}`;
}
