/**
 * pgBackRest as the postgres container runs it: its repository settings as
 * environment variables (the keys by secretKeyRef, never in a ConfigMap),
 * the commands the manager runs in the container, and what it reads back
 * from `pgbackrest info --output=json`. Pure functions: the Kubernetes side
 * is in ../children.ts, ../postgres/pod.ts and controller.ts.
 */
import type { V1EnvVar } from '@kubernetes/client-node';
import type { DatabaseObject } from '../api.ts';
import type { ObjectStoreSpec } from './api.ts';

/** One stanza per repository path: each Database has its own path, so the name can be fixed. */
export const STANZA = 'db';
/** Where the CA bundle of spec.backup.objectStore.caSecret is mounted. */
export const BACKUP_CA_MOUNT = '/etc/regulon/backup-ca';
/** Where the recovery Secret (the source repository's settings and keys, ../backup/recovery.ts) is mounted. */
export const RECOVERY_MOUNT = '/etc/regulon/recovery';
/** The file name the CA bundle is mounted as. */
export const CA_FILE = 'ca.crt';
/**
 * "Keep every full backup": pgBackRest warns on each command without a
 * retention, and a backup expires nothing by itself. spec.backup.retention
 * is the operator's (by count and by age, to the minute, where pgBackRest's
 * time retention counts whole days): it expires chosen backups with
 * `expire --set` (EXPIRE_SCRIPT).
 */
const RETAIN_ALL = '9999999';
/** The annotation pgBackRest keeps with a backup: the DatabaseBackup's uid, unique across re-created names. */
export const UID_ANNOTATION = 'regulon.dev/uid';
export const NAME_ANNOTATION = 'regulon.dev/backup';

/** A repository location as the operator uses it: the store, the path in it, and the names of the Secrets. */
export interface Repository {
  endpoint: string;
  bucket: string;
  path: string;
  region: string;
  credentialsSecret: string;
  accessKeyIdKey: string;
  secretAccessKeyKey: string;
  caSecret?: { name: string; key: string } | undefined;
}

/** The default repository path of a Database: its namespace and name, so two Databases never share one. */
export function defaultPath(db: DatabaseObject): string {
  return `${db.metadata.namespace}/${db.metadata.name}`;
}

export function repositoryOf(store: ObjectStoreSpec, fallbackPath: string): Repository {
  return {
    endpoint: store.endpoint.replace(/\/$/, ''),
    bucket: store.bucket,
    path: store.path ?? fallbackPath,
    region: store.region ?? 'us-east-1',
    credentialsSecret: store.credentials.secretName,
    accessKeyIdKey: store.credentials.accessKeyIdKey ?? 'ACCESS_KEY_ID',
    secretAccessKeyKey: store.credentials.secretAccessKeyKey ?? 'ACCESS_SECRET_KEY',
    ...(store.caSecret
      ? { caSecret: { name: store.caSecret.name, key: store.caSecret.key ?? CA_FILE } }
      : {}),
  };
}

/**
 * The repository spec.backup.objectStore names; undefined when it names none.
 * For an engine's own code, which knows its engine backs up there; code that
 * does not know the engine asks ownRepository (backup/repository.ts).
 */
export function storeRepository(db: DatabaseObject): Repository | undefined {
  const store = db.spec.backup?.objectStore;
  return store ? repositoryOf(store, defaultPath(db)) : undefined;
}

/** Whether two repositories are one: the same bucket at the same endpoint and path. */
export function sameRepository(a: Repository, b: Repository): boolean {
  const norm = (r: Repository) =>
    [r.endpoint.toLowerCase(), r.bucket, r.path.replace(/^\/+|\/+$/g, '')].join('|');
  return norm(a) === norm(b);
}

/** `https://host:port` as pgBackRest takes it: the host (`repo1-s3-endpoint`) and the port (`repo1-storage-port`). */
export function endpointParts(endpoint: string): { host: string; port: string | undefined } {
  const url = new URL(endpoint);
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: url.port || undefined };
}

/**
 * A repository's settings, as pgBackRest's `repo1-*` options named `<prefix>_<OPTION>`:
 * the values that are no secret directly, the keys as references to their Secret.
 * Path-style addressing: it works with every S3-compatible store, where
 * virtual-host style needs a DNS name per bucket.
 */
export function repositorySettings(
  repo: Repository,
  caDir: string,
): Array<[string, string | { secretKey: string }]> {
  const { host, port } = endpointParts(repo.endpoint);
  return [
    ['REPO1_TYPE', 's3'],
    ['REPO1_PATH', `/${repo.path}`],
    ['REPO1_S3_BUCKET', repo.bucket],
    ['REPO1_S3_ENDPOINT', host],
    ...(port ? [['REPO1_STORAGE_PORT', port] as [string, string]] : []),
    ['REPO1_S3_REGION', repo.region],
    ['REPO1_S3_URI_STYLE', 'path'],
    ['REPO1_S3_KEY', { secretKey: repo.accessKeyIdKey }],
    ['REPO1_S3_KEY_SECRET', { secretKey: repo.secretAccessKeyKey }],
    ...(repo.caSecret ? [['REPO1_STORAGE_CA_FILE', `${caDir}/${CA_FILE}`] as [string, string]] : []),
  ];
}

/**
 * The postgres container's pgBackRest environment, for a Database that
 * archives or restores: the stanza and data directory (a restore needs them
 * too), and the Database's own repository when it has one. `pg1-user` is the superuser of the
 * credentials Secret (the environment's $(SUPERUSER), defined before these).
 */
export function pgbackrestEnv(db: DatabaseObject, pgdata: string): V1EnvVar[] {
  const repo = storeRepository(db);
  // Nothing for a Database that neither archives nor restores: its Pods stay exactly as they were.
  if (!repo && !db.spec.bootstrap?.recovery) return [];
  const env: V1EnvVar[] = [
    { name: 'PGBACKREST_STANZA', value: STANZA },
    { name: 'PGBACKREST_PG1_PATH', value: pgdata },
    { name: 'PGBACKREST_PG1_USER', value: '$(SUPERUSER)' },
    // Console output only (the container's log, and the manager's exec): no log files on the image's filesystem.
    { name: 'PGBACKREST_LOG_LEVEL_FILE', value: 'off' },
    // A backup starts with an immediate checkpoint rather than waiting for the next one (up to checkpoint_timeout).
    { name: 'PGBACKREST_START_FAST', value: 'y' },
    // zstd, not pgBackRest's default gzip: a quarter of the CPU for a smaller repository (200 MB of
    // table data: 3.1 s against 11.6 s at level 3 and 6). Each file names its compression, so a
    // repository written with gzip before still restores, and its WAL still replays.
    { name: 'PGBACKREST_COMPRESS_TYPE', value: 'zst' },
    { name: 'PGBACKREST_REPO1_RETENTION_FULL', value: RETAIN_ALL },
  ];
  if (!repo) return env;
  // Only when set: a Database that leaves it out keeps pgBackRest's 60 s and the Pods it had.
  const timeout = db.spec.backup?.storeTimeoutSeconds;
  if (timeout !== undefined) env.push({ name: 'PGBACKREST_IO_TIMEOUT', value: String(timeout) });
  for (const [option, value] of repositorySettings(repo, BACKUP_CA_MOUNT))
    env.push(
      typeof value === 'string'
        ? { name: `PGBACKREST_${option}`, value }
        : {
            name: `PGBACKREST_${option}`,
            valueFrom: { secretKeyRef: { name: repo.credentialsSecret, key: value.secretKey } },
          },
    );
  return env;
}

/**
 * A sed program that blanks what an S3 error body says about the caller's
 * keys (`<AWSAccessKeyId>`, and the signing details some stores add):
 * pgBackRest prints such bodies whole, and its output reaches the container
 * log and the files the manager reads.
 */
export const REDACT_SED =
  's#<\\(AWSAccessKeyId\\|StringToSign\\|StringToSignBytes\\|CanonicalRequest\\|SignatureProvided\\)>[^<]*</#<\\1>(redacted)</#g';

/**
 * Where the archive_command wrapper is (the config ConfigMap, see ../postgres/pod.ts).
 * Its name holds "pgbackrest": pgBackRest's backup checks that archive_command does.
 */
export const ARCHIVE_WAL_SCRIPT = '/etc/postgresql/pgbackrest-archive-push.sh';

/** archive_command: pgbackrest archive-push, its output redacted (REDACT_SED), its exit status kept. */
export function renderArchiveWalScript(): string {
  return `#!/bin/bash
# Rendered by the Database controller (apps/database-controller/src/backup/pgbackrest.ts).
out=$(pgbackrest archive-push "$1" 2>&1)
rc=$?
[ -n "$out" ] && printf '%s\n' "$out" | grep -v repo1-retention | sed -e '${REDACT_SED}' >&2
exit $rc
`;
}

/** postgresql.conf lines for continuous WAL archiving into the Database's own repository. */
export function archiveSettings(db: DatabaseObject): Array<[string, string]> {
  if (!storeRepository(db)) return [];
  return [
    ['archive_mode', 'on'],
    // The stanza and repository come from the environment (PGBACKREST_*), which postgres passes on;
    // the wrapper keeps the store's answers (which name the access key id) out of the server's log.
    ['archive_command', `'bash ${ARCHIVE_WAL_SCRIPT} %p'`],
    // A quiet Database still closes a WAL segment a minute, so the archive (and a point in time) is at most that far behind.
    ['archive_timeout', '60'],
  ];
}

/** How a restore recovers: to the end of one backup (`immediate`), to a time, or to the end of the archive. */
export interface RecoveryTarget {
  type: 'immediate' | 'time' | 'default';
  /** The backup label to restore (`--set`); the latest one when absent. */
  set?: string | undefined;
  /** With `time`: the moment, RFC 3339. */
  target?: string | undefined;
}

/**
 * The recovery Secret's data (mounted at RECOVERY_MOUNT; the start script
 * reads it only to restore, and the restore_command wrapper while the
 * restored cluster recovers): the source repository's settings by their
 * pgBackRest option names, its keys copied from the source's Secret, and the
 * recovery target. Copied rather than referenced, so the new Database's Pods
 * never change once created, even when the DatabaseBackup is deleted later.
 */
export function recoverySecretData(
  repo: Repository,
  keys: { accessKeyId: string; secretAccessKey: string; ca?: string | undefined },
  target: RecoveryTarget,
): Record<string, string> {
  const data: Record<string, string> = {};
  for (const [option, value] of repositorySettings(repo, RECOVERY_MOUNT))
    data[option] =
      typeof value === 'string'
        ? value
        : value.secretKey === repo.accessKeyIdKey
          ? keys.accessKeyId
          : keys.secretAccessKey;
  if (repo.caSecret && keys.ca) data[CA_FILE] = keys.ca;
  else delete data['REPO1_STORAGE_CA_FILE'];
  data['TYPE'] = target.type;
  if (target.set) data['SET'] = target.set;
  if (target.target) data['TARGET'] = pgbackrestTime(target.target);
  return data;
}

/**
 * An RFC 3339 time as pgBackRest's --target takes it: `YYYY-MM-DD HH:MM:SS`,
 * fraction kept, and an offset (`+00` for Z): pgBackRest refuses the `T`
 * form, and without an offset it would read the container's local time.
 */
export function pgbackrestTime(rfc3339: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2}(?:\.\d+)?)([Zz]|[+-]\d{2}:\d{2})$/.exec(rfc3339);
  if (!m) throw new Error(`${rfc3339} is not an RFC 3339 time`);
  return `${m[1]} ${m[2]}${m[3]!.toUpperCase() === 'Z' ? '+00' : m[3]}`;
}

/** Where the manager's backups keep their state in the container: on the data volume, so a restart of the container keeps it. */
export const BACKUP_STATE_DIR = '/var/lib/postgresql/data/regulon-backups';

/**
 * Starts a backup in the background and returns at once (a reconcile never
 * waits for minutes): `$1` is the DatabaseBackup's uid, `$2` its
 * namespace/name. The outcome lands in `<uid>.rc` once pgBackRest exits
 * (the stanza is created first, if need be);
 * starting twice (a retried reconcile) starts one backup. The background
 * shell ends with status 0 whatever pgBackRest returned: it is reparented
 * to the postmaster, which takes an unknown child's non-zero exit for a
 * crashed backend and restarts every session.
 */
export const START_BACKUP_SCRIPT = `set -u
dir=${BACKUP_STATE_DIR}
mkdir -p "$dir"
if [ -e "$dir/$1.started" ]; then echo already-started; exit 0; fi
touch "$dir/$1.started"
(
  # stanza-create first: a no-op once the stanza exists, and the backup never races the manager's own.
  # A checkpoint next: just after a promotion, pg_control still names the old timeline until the
  # first one, and pgBackRest refuses a backup whose WAL timeline differs from pg_control's.
  pgbackrest stanza-create >"$dir/$1.log" 2>&1 &&
    { psql -X -q -d postgres -U "\${PGBACKREST_PG1_USER:-postgres}" -c CHECKPOINT >>"$dir/$1.log" 2>&1 || true; } &&
    pgbackrest backup --type=full --annotation=${UID_ANNOTATION}="$1" --annotation=${NAME_ANNOTATION}="$2" >>"$dir/$1.log" 2>&1
  rc=$?
  sed -i -e '${REDACT_SED}' "$dir/$1.log"
  echo $rc >"$dir/$1.rc"
  exit 0
) </dev/null >/dev/null 2>&1 &
# Which process runs it, by pid and start time (a pid alone is reused once the container restarts).
echo $! >"$dir/$1.pid"
cut -d' ' -f22 "/proc/$!/stat" >"$dir/$1.since" 2>/dev/null
echo started`;

/**
 * What became of a backup started with START_BACKUP_SCRIPT, in one line per
 * fact and then the repository's view: `started: yes|no`, `rc: <code>` once
 * it finished, `gone: yes` when it never will (its process is no longer
 * there: the container restarted, or the Pod was replaced with the same
 * name and volume), then pgBackRest's error lines (when it failed), then
 * `info:` and the JSON of `pgbackrest info` (left out while the backup runs
 * and once it failed: nothing there is read then).
 */
export const CHECK_BACKUP_SCRIPT = `set -u
dir=${BACKUP_STATE_DIR}
ask=yes
if [ -e "$dir/$1.started" ]; then echo "started: yes"; else echo "started: no"; fi
if [ -e "$dir/$1.started" ] && [ ! -e "$dir/$1.rc" ]; then
  pid=$(cat "$dir/$1.pid" 2>/dev/null || true)
  since=$(cat "$dir/$1.since" 2>/dev/null || true)
  if [ -z "$pid" ] || [ "$(cut -d' ' -f22 "/proc/$pid/stat" 2>/dev/null)" != "$since" ]; then
    # Read again: a process that ended in between wrote it first.
    [ -e "$dir/$1.rc" ] || echo "gone: yes"
  else
    ask=no
  fi
fi
if [ -e "$dir/$1.rc" ]; then
  rc=$(cat "$dir/$1.rc")
  echo "rc: $rc"
  grep -E '^(ERROR|WARN: unable)|Error|<Code>|<Message>|HostConnectError|TlsError|HINT' "$dir/$1.log" | grep -v repo1-retention | head -n 40
  [ "$rc" = 0 ] || ask=no
fi
# The repository only when its answer is needed (finished, gone, or never started here), and bounded:
# a store that hangs must not hold the exec past its own timeout.
if [ "$ask" = yes ]; then
  echo "info:"
  timeout 60 pgbackrest info --output=json 2>&1
fi`;

/**
 * Expires the backups labelled `$@` from the repository (retention.ts
 * decides which), oldest first, then the archived WAL older than the oldest
 * backup left, then prints `info:` and the JSON of `pgbackrest info`, which
 * says what is gone. The WAL takes a second expire: with the retention of
 * "keep all" (RETAIN_ALL), pgBackRest keeps every segment unless
 * repo1-retention-archive is at most the number of full backups, so it is
 * set to exactly that number: every segment any remaining backup needs
 * (for consistency and for a point in time after it) stays. pgBackRest's own
 * error lines (redacted) come before `info:`; a failed expire (a backup
 * holding the lock, say) leaves its backup listed.
 */
export const EXPIRE_SCRIPT = `set -u
errors() { grep -v repo1-retention | sed -e '${REDACT_SED}' | grep -E '^(ERROR|WARN)|<Code>|<Message>|HostConnectError|TlsError' | head -n 10; }
for set in "$@"; do
  pgbackrest expire --set="$set" 2>&1 | errors
done
full=$(pgbackrest info --output=json 2>/dev/null | grep -oE '"type": ?"full"' | wc -l)
if [ "$full" -gt 0 ]; then pgbackrest expire --repo1-retention-archive="$full" 2>&1 | errors; fi
echo "info:"
pgbackrest info --output=json 2>&1`;

/** Creates the stanza if it does not exist (idempotent: pgBackRest checks the repository against the cluster). */
export const STANZA_CREATE_SCRIPT = 'pgbackrest stanza-create 2>&1';

/** One backup as `pgbackrest info --output=json` lists it. */
export interface RepositoryBackup {
  label: string;
  type: string;
  error: boolean;
  annotations: Record<string, string>;
  startedAt: Date | undefined;
  stoppedAt: Date | undefined;
  sizeBytes: number | undefined;
  repositorySizeBytes: number | undefined;
  wal: { startSegment?: string; stopSegment?: string; startLsn?: string; stopLsn?: string };
  /** mariadb: the binlog position the backup is consistent at (mariabackup.ts). */
  binlog?: { file?: string; position?: number; gtid?: string };
}

/** What the repository says: its status (0 ok; 2 no backups yet, ...), and its backups. */
export interface RepositoryInfo {
  code: number;
  /** pgBackRest's message for the repository, summarised (no request headers or response bodies). */
  message: string;
  backups: RepositoryBackup[];
  /** The oldest and newest archived WAL segment of the current cluster (absent: nothing archived). */
  archive: { min?: string; max?: string };
}

interface InfoJson {
  name?: string;
  status?: { code?: number; message?: string };
  repo?: Array<{ status?: { code?: number; message?: string } }>;
  archive?: Array<{ id?: string; min?: string | null; max?: string | null }>;
  backup?: Array<{
    label?: string;
    type?: string;
    error?: boolean;
    annotation?: Record<string, string>;
    timestamp?: { start?: number; stop?: number };
    info?: { size?: number; repository?: { size?: number; delta?: number } };
    archive?: { start?: string; stop?: string };
    lsn?: { start?: string; stop?: string };
  }>;
}

const at = (seconds: number | undefined) => (seconds === undefined ? undefined : new Date(seconds * 1000));

/**
 * Parses `pgbackrest info --output=json` for the stanza. Throws when the
 * text is no such JSON (pgBackRest failed before it could answer), with the
 * summarised error as the message.
 */
export function parseInfo(text: string, stanza = STANZA): RepositoryInfo {
  const start = text.indexOf('[');
  let parsed: InfoJson[];
  try {
    // system-id is a 64-bit integer JSON.parse would round: it is never read here.
    parsed = JSON.parse(start >= 0 ? text.slice(start) : text) as InfoJson[];
  } catch {
    throw new Error(summarizeError(text) || 'pgbackrest info gave no answer');
  }
  const s = parsed.find((x) => x.name === stanza) ?? parsed[0];
  if (!s) throw new Error(`pgbackrest info lists no stanza ${stanza}`);
  const repoStatus = s.repo?.[0]?.status ?? s.status ?? {};
  // One entry per cluster the stanza has known (after a stanza-upgrade); the last is the current one.
  const archive = s.archive?.at(-1);
  return {
    archive: {
      ...(archive?.min ? { min: archive.min } : {}),
      ...(archive?.max ? { max: archive.max } : {}),
    },
    code: repoStatus.code ?? s.status?.code ?? 99,
    message: summarizeError(repoStatus.message ?? s.status?.message ?? ''),
    backups: (s.backup ?? []).map((b) => ({
      label: b.label ?? '',
      type: b.type ?? 'full',
      error: b.error === true,
      annotations: b.annotation ?? {},
      startedAt: at(b.timestamp?.start),
      stoppedAt: at(b.timestamp?.stop),
      sizeBytes: b.info?.size,
      repositorySizeBytes: b.info?.repository?.size,
      wal: {
        ...(b.archive?.start ? { startSegment: b.archive.start } : {}),
        ...(b.archive?.stop ? { stopSegment: b.archive.stop } : {}),
        ...(b.lsn?.start ? { startLsn: b.lsn.start } : {}),
        ...(b.lsn?.stop ? { stopLsn: b.lsn.stop } : {}),
      },
    })),
  };
}

/** The backup of the DatabaseBackup with this uid, if the repository lists it. */
export function backupByUid(info: RepositoryInfo, uid: string): RepositoryBackup | undefined {
  return info.backups.find((b) => b.annotations[UID_ANNOTATION] === uid);
}

/** What START/CHECK_BACKUP_SCRIPT printed, split into its parts. */
export interface BackupCheck {
  started: boolean;
  /** Started, unfinished, and its process is no longer there: it never will finish. */
  gone: boolean;
  /** pgBackRest's exit code once it finished; undefined while it runs (or when it never ran). */
  exitCode: number | undefined;
  /** Its error, summarised, when it failed. */
  error: string | undefined;
  /** What follows `info:`. */
  info: string;
}

export function parseCheck(out: string): BackupCheck {
  const [head = '', ...rest] = out.split(/^info:$/m);
  const started = /^started: yes$/m.test(head);
  const gone = /^gone: yes$/m.test(head);
  const rc = /^rc: (\d+)$/m.exec(head);
  const exitCode = rc ? Number(rc[1]) : undefined;
  const errorText = head.replace(/^(started|rc|gone): .*$/gm, '').trim();
  return {
    started,
    gone: gone && exitCode === undefined,
    exitCode,
    error:
      exitCode !== undefined && exitCode !== 0
        ? summarizeError(errorText) || `pgBackRest exited with ${exitCode}`
        : undefined,
    info: rest.join('info:').trim(),
  };
}

/**
 * pgBackRest's error output in a sentence fit for a condition and an Event:
 * its first ERROR line, then the store's answer (HTTP status, S3 code and
 * message) or the connection error. Request and response headers and bodies
 * are dropped: an S3 error body names the access key id
 * (`<AWSAccessKeyId>`), and the status and Events must not.
 */
export function summarizeError(text: string): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const parts: string[] = [];
  const add = (p: string | undefined) => {
    const clean = p?.replace(/\s+/g, ' ').trim();
    if (clean && !parts.includes(clean)) parts.push(clean);
  };
  const error = lines.find((l) => /^ERROR: \[\d+\]:/.test(l));
  add(error?.replace(/^ERROR: \[\d+\]: /, '').replace(/:$/, ''));
  const http = /HTTP request failed with (\d+ \([^)]*\))/.exec(text);
  if (http && !error?.includes('HTTP request failed')) add(`the store answered HTTP ${http[1]}`);
  const code = /<Code>([^<]{1,100})<\/Code>/.exec(text);
  const message = /<Message>([^<]{1,300})<\/Message>/.exec(text);
  if (code) add(`${code[1]}${message ? `: ${message[1]}` : ''}`);
  else if (http) {
    // A HEAD request's refusal has no body to say why: what the status usually means.
    const status = http[1]!.slice(0, 3);
    if (status === '403')
      add('the store refused the access keys (wrong keys, or no permission on the bucket)');
    if (status === '404') add('not found: check that the bucket exists');
  }
  const conn = /(HostConnectError|TlsError|ServiceError|FileMissingError|OptionInvalidValueError)[^\n]*/.exec(
    text,
  );
  if (conn && !http) add(conn[0]);
  if (!parts.length) {
    // Not an error shape we know: its first line that is not a header dump.
    const first = lines.find((l) => !l.startsWith('***') && !/^[a-z0-9-]+: /i.test(l) && !l.startsWith('<'));
    add(first?.replace(/^\[\w+\] /, ''));
  }
  return parts.join('; ').slice(0, 1000);
}
