// What `status` shows, as one plain document built from the objects the API
// server returned: the text screen (render.ts) and `-o json|yaml` print the
// same content. Pure: the reads happen in status.ts.
import type { CacheObject } from '@regulon/cache-controller';
import type { DatabaseBackupObject, DatabaseObject } from '@regulon/database-controller';
import type { MyAppObject } from '@regulon/myapp-controller';
import type { AnyObject, KindName } from './kinds.ts';

/** At most this many Events, the newest: one screen, as kubectl describe keeps its Events short. */
export const MAX_EVENTS = 10;

export interface InstanceReport {
  name: string;
  role: string;
  state: string;
  lagBytes?: number | undefined;
  lagTransactions?: number | undefined;
  /** postgres: the timeline; mariadb: the server_id of the last applied transaction. */
  timeline?: number | undefined;
  /** postgres: the LSN; mariadb: the last applied GTID; redis: the replication offset. */
  position?: string | undefined;
  replicationError?: string | undefined;
}

export interface ConditionReport {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime?: string | undefined;
}

export interface EventReport {
  /** When it last happened (its series' last occurrence, else its eventTime). */
  time?: string | undefined;
  type: string;
  reason: string;
  note: string;
  count: number;
}

export interface BackupReport {
  /** Where backups go: an object store, else none (scheduled dumps to a scratch volume, or off). */
  destination: string;
  lastBackup?: string | undefined;
  /** The newest DatabaseBackup of the Database, whatever its phase. */
  latest?: { name: string; phase: string; startedAt?: string | undefined; stoppedAt?: string | undefined };
  /** WAL archiving: what BackupSucceeded says of it (ArchivingFailed), or that there is none. */
  archive: { state: 'ok' | 'failing' | 'none'; message?: string | undefined };
}

export interface StatusReport {
  kind: KindName;
  name: string;
  namespace: string;
  spec: { engine?: string; version?: string; replicas?: number; image?: string; mode?: string };
  phase?: string | undefined;
  replicas?: number | undefined;
  readyReplicas?: number | undefined;
  currentVersion?: string | undefined;
  currentPrimary?: string | undefined;
  endpoint?: string | undefined;
  switchover?: { target: string; state: string; message: string; since: string } | undefined;
  instances: InstanceReport[];
  backup?: BackupReport | undefined;
  components?: { kind: string; name: string; ready: boolean; reason: string; message: string }[] | undefined;
  conditions: ConditionReport[];
  events: EventReport[];
}

/** The fields of an events.k8s.io/v1 Event read here, as the JSON the API server sends. */
export interface EventObject {
  type?: string | undefined;
  reason?: string | undefined;
  note?: string | undefined;
  eventTime?: unknown;
  deprecatedLastTimestamp?: unknown;
  series?: { count?: number; lastObservedTime?: unknown } | undefined;
  metadata?: { creationTimestamp?: unknown } | undefined;
}

export interface ReportInput {
  kind: KindName;
  object: AnyObject;
  events: EventObject[];
  /** The Database's DatabaseBackups (any order); undefined when their CRD is not installed. */
  backups?: DatabaseBackupObject[] | undefined;
}

export function statusReport({ kind, object, events, backups }: ReportInput): StatusReport {
  const common = {
    kind,
    name: object.metadata.name!,
    namespace: object.metadata.namespace!,
    phase: object.status?.phase,
    conditions: (object.status?.conditions ?? []).map(conditionReport),
    events: eventReports(events),
  };
  if (kind === 'Database') return { ...common, ...databaseReport(object as DatabaseObject, backups) };
  if (kind === 'Cache') return { ...common, ...cacheReport(object as CacheObject) };
  return { ...common, ...myAppReport(object as MyAppObject) };
}

type KindPart = Omit<StatusReport, 'kind' | 'name' | 'namespace' | 'phase' | 'conditions' | 'events'>;

function databaseReport(db: DatabaseObject, backups: DatabaseBackupObject[] | undefined): KindPart {
  const s = db.status;
  return {
    spec: { engine: db.spec.engine, version: db.spec.version, replicas: db.spec.replicas },
    replicas: s?.replicas,
    readyReplicas: s?.readyReplicas,
    currentVersion: s?.currentVersion,
    currentPrimary: s?.currentPrimary,
    endpoint: s?.endpoint,
    switchover: s?.switchover,
    instances: (s?.instances ?? []).map((i) => ({
      name: i.name,
      role: i.role,
      state: i.state,
      lagBytes: i.lagBytes,
      lagTransactions: i.lagTransactions,
      timeline: i.timeline,
      position: i.lsn,
      replicationError: i.replicationError,
    })),
    backup: backupReport(db, backups),
  };
}

function backupReport(db: DatabaseObject, backups: DatabaseBackupObject[] | undefined): BackupReport {
  const store = db.spec.backup?.objectStore;
  const condition = db.status?.conditions?.find((c) => c.type === 'BackupSucceeded');
  const latest = (backups ?? [])
    .filter((b) => b.spec.database === db.metadata.name)
    .sort((a, b) => time(b.metadata.creationTimestamp) - time(a.metadata.creationTimestamp))[0];
  // Only postgres archives WAL (pgBackRest's archive-push); mariadb's backups carry no binlog stream.
  const archives = store !== undefined && db.spec.engine === 'postgres';
  return {
    destination: store
      ? // The CRD's default path is <namespace>/<name>; its endpoint rule allows no user:password@.
        `${store.endpoint.replace(/\/$/, '')}/${store.bucket}/${store.path ?? `${db.metadata.namespace}/${db.metadata.name}`}`
      : db.spec.backup?.enabled === false || !db.spec.backup
        ? 'none (backups off)'
        : 'none (no objectStore: dumps reach a scratch volume only)',
    lastBackup: db.status?.lastBackup,
    ...(latest
      ? {
          latest: {
            name: latest.metadata.name!,
            phase: latest.status?.phase ?? 'Pending',
            startedAt: latest.status?.startedAt,
            stoppedAt: latest.status?.stoppedAt,
          },
        }
      : {}),
    archive: !archives
      ? { state: 'none' }
      : condition?.reason === 'ArchivingFailed'
        ? { state: 'failing', message: condition.message }
        : { state: 'ok' },
  };
}

function cacheReport(cache: CacheObject): KindPart {
  const s = cache.status;
  return {
    spec: {
      engine: cache.spec.engine,
      version: cache.spec.version,
      replicas: cache.spec.replicas,
      mode: cache.spec.mode,
    },
    replicas: s?.replicas,
    readyReplicas: s?.readyReplicas,
    currentVersion: s?.currentVersion,
    currentPrimary: s?.currentPrimary,
    endpoint: s?.endpoint,
    instances: (s?.instances ?? []).map((i) => ({
      name: i.name,
      role: i.role,
      state: i.state,
      lagBytes: i.lagBytes,
      position: i.offset === undefined ? undefined : String(i.offset),
    })),
  };
}

function myAppReport(app: MyAppObject): KindPart {
  return {
    spec: { image: app.spec.image, replicas: app.spec.replicas },
    endpoint: app.status?.url,
    instances: [],
    components: app.status?.components,
  };
}

function conditionReport(c: {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime?: string;
}): ConditionReport {
  return {
    type: c.type,
    status: c.status,
    reason: c.reason,
    message: c.message,
    lastTransitionTime: c.lastTransitionTime,
  };
}

/** The newest MAX_EVENTS, oldest first (newest last, as kubectl describe lists them). */
export function eventReports(events: EventObject[]): EventReport[] {
  return events
    .map((e) => ({
      time: stamp(
        e.series?.lastObservedTime ??
          e.eventTime ??
          e.deprecatedLastTimestamp ??
          e.metadata?.creationTimestamp,
      ),
      type: e.type ?? '',
      reason: e.reason ?? '',
      note: e.note ?? '',
      count: e.series?.count ?? 1,
    }))
    .sort((a, b) => time(a.time) - time(b.time))
    .slice(-MAX_EVENTS);
}

/** A timestamp as the API sends it (a string), or as a client-node type declares it (a Date). */
function stamp(v: unknown): string | undefined {
  if (v instanceof Date) return v.toISOString();
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** Milliseconds since the epoch, 0 when unknown (so it sorts first). */
export function time(v: unknown): number {
  const s = stamp(v);
  const ms = s === undefined ? NaN : Date.parse(s);
  return Number.isNaN(ms) ? 0 : ms;
}
