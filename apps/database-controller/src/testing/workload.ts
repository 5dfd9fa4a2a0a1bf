// The workload the real-node replication tests run against a Database, for
// the engines that run for real (postgres, mariadb):
//
// - a writer Pod that inserts ids 1, 2, 3, ... through the client Service,
//   each in a session of its own (writer.py), and logs `ack <id> <epoch-ms>`
//   only for an insert whose commit returned — the acknowledged writes;
// - a role sampler in the test process that asks every instance Pod, every
//   200 ms, whether it is writable — to prove there were never two;
// - row counts read from any instance, so a test computes the acknowledged
//   writes lost as `acked − present`.
//
// Credentials come from the Database's credentials Secret through the API and
// are never printed: the writer Pod takes them from the Secret itself.
import { readFileSync } from 'node:fs';
import type { V1EnvVar, V1Pod, V1Secret } from '@kubernetes/client-node';
import { Kinds, isNotFound, type KubeClient } from '@regulon/client';
import {
  eventually,
  instancePodsOf,
  startRoleSampler,
  type OpenSession,
  type RoleSampler,
  type SampledPod,
} from '@regulon/testenv';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { dropConnection } from '../mariadb/instance.ts';

/** The table the writer fills; one row per acknowledged id. */
export const LOAD_TABLE = 'regulon_load';
export const CLIENT_IMAGE = 'regulon.local/client:12';

/** The engines this workload drives; every option's default is postgres's. */
export type WorkloadEngine = 'postgres' | 'mariadb';
/** The port an instance Pod serves its engine on. */
export const ENGINE_PORT: Record<WorkloadEngine, number> = { postgres: 5432, mariadb: 3306 };

// ---------------------------------------------------------------------------
// Credentials

export interface DatabaseCredentials {
  username: string;
  password: string;
  /** The application database (the URI's path), where the writer's table lives. */
  database: string;
  host: string;
  port: number;
}

/** Reads `<db>-credentials` (or `secretName`) through the API. */
export async function readCredentials(
  client: KubeClient,
  namespace: string,
  db: string,
  secretName = `${db}-credentials`,
): Promise<DatabaseCredentials> {
  const secret = await client.resource<V1Secret>(Kinds.Secret).get(secretName, { namespace });
  const field = (key: string): string => {
    const value = secret.data?.[key];
    // The key's name only: the value is a secret.
    if (value === undefined) throw new Error(`Secret ${namespace}/${secretName} has no key ${key}`);
    return Buffer.from(value, 'base64').toString('utf8');
  };
  return {
    username: field('username'),
    password: field('password'),
    database: field('database'),
    host: field('host'),
    port: Number(field('port')),
  };
}

// ---------------------------------------------------------------------------
// Instance Pods

/** The Database's instance Pods, `<db>-<ordinal>`, by the instance label. */
export async function listInstancePods(
  client: KubeClient,
  namespace: string,
  db: string,
  signal?: AbortSignal,
): Promise<SampledPod[]> {
  const list = await client.resource<V1Pod>(Kinds.Pod).list({
    namespace,
    labelSelector: `app.kubernetes.io/instance=${db}`,
    ...(signal ? { signal } : {}),
  });
  return instancePodsOf(list.items, db);
}

// ---------------------------------------------------------------------------
// The writer

export interface WriterOptions {
  client: KubeClient;
  namespace: string;
  /** The Database's name: the Secret is `<db>-credentials` unless `secretName` says otherwise. */
  db: string;
  /** The writer Pod's name; default `<db>-load-writer`. */
  name?: string;
  secretName?: string;
  /** Default postgres. */
  engine?: WorkloadEngine;
  /**
   * postgres: the Secret key holding `postgresql://user:pw@<db>.<ns>.svc:5432/app`; default `uri`.
   * (The mariadb client takes no URI: it reads the keys host, port, username, password, database.)
   */
  uriKey?: string;
  image?: string;
  /** At most this many inserts a second; default: as fast as the client goes. */
  maxPerSecond?: number;
  /** Gives up on an insert that hangs (a dead primary's session) after this long; default STATEMENT_TIMEOUT_SECONDS. */
  statementTimeoutSeconds?: number;
  /** How long to wait for the Pod to run; default 120 s. */
  startTimeoutMs?: number;
}

/** The writer's default statement timeout: an insert that hangs this long is given up (exit 124). */
export const STATEMENT_TIMEOUT_SECONDS = 5;

export interface Ack {
  id: number;
  /** Epoch ms (the node's clock is this machine's: comparable with Date.now()). */
  atMs: number;
}

export interface WriteFailure {
  /** The id being retried (0: creating the table). */
  id: number;
  atMs: number;
  /** The client's exit status; 124 when the statement timeout killed it. */
  exitCode: number;
  /** The client's first error line, printed when it differs from the previous failure's. */
  message?: string;
}

export interface WriterLog {
  startedAtMs: number;
  /** When `create table if not exists` first succeeded. */
  tableReadyAtMs: number | undefined;
  /** In id order, which is also time order: ids are contiguous from 1. */
  acks: Ack[];
  failures: WriteFailure[];
}

/** A stretch with no acknowledged write: between the ack at `fromMs` and the next at `toMs`. */
export interface Outage {
  fromMs: number;
  toMs: number;
  durationMs: number;
  /** The last id acknowledged before the gap. */
  afterId: number;
}

export interface Writer {
  readonly pod: string;
  /** Everything the writer logged so far, parsed. */
  log(): Promise<WriterLog>;
  /**
   * Acknowledged ids so far. Read this BEFORE counting rows: every id in it
   * was committed before the read, so it must be present in any later count.
   */
  acked(): Promise<number[]>;
  /** Waits until at least `n` writes were acknowledged in total; returns the log then. */
  waitForAcks(n: number, timeoutMs: number): Promise<WriterLog>;
  /** Waits for the first ack stamped after `sinceMs` (writes resumed); returns it. */
  waitForAckAfter(sinceMs: number, timeoutMs: number): Promise<Ack>;
  /** Gaps between consecutive acks longer than `minMs` (default 500), in time order. */
  outages(minMs?: number): Promise<Outage[]>;
  /** The longest gap between consecutive acks (0 with fewer than two acks). */
  longestOutage(): Promise<Outage | undefined>;
  /** Deletes the Pod and waits until it is gone. */
  stop(): Promise<void>;
  /** `stop()`, for `await using writer = await startWriter(...)`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * The two statements of each engine. Both inserts make a retry of an insert
 * that committed anyway succeed without a second row; `{id}` is the id.
 */
const WRITER_SQL: Record<WorkloadEngine, { create(table: string): string; insert(table: string): string }> = {
  postgres: {
    create: (table) =>
      `create table if not exists ${table} (id bigint primary key, at timestamptz default now())`,
    insert: (table) => `insert into ${table} (id) values ({id}) on conflict do nothing`,
  },
  mariadb: {
    create: (table) =>
      `create table if not exists ${table} (id bigint primary key, at timestamp(3) not null default current_timestamp(3)) engine=InnoDB`,
    insert: (table) => `insert into ${table} (id) values ({id}) on duplicate key update id = id`,
  },
};

/**
 * The writer's loop (writer.py, run by the client image's python3): one insert
 * at a time, each in a session of its own, `ack` printed only once its commit
 * returned; a failed insert is retried with the same id. What it prints is
 * described at its top, and parsed by parseWriterLog.
 */
export const WRITER_SOURCE = readFileSync(new URL('./writer.py', import.meta.url), 'utf8');

/** The loop's settings, as the environment writer.py reads. */
export function writerSettings(
  opts: {
    engine?: WorkloadEngine;
    table?: string;
    pauseSeconds?: number;
    statementTimeoutSeconds?: number;
  } = {},
): V1EnvVar[] {
  const engine = opts.engine ?? 'postgres';
  const table = opts.table ?? LOAD_TABLE;
  return [
    { name: 'WRITER_ENGINE', value: engine },
    { name: 'WRITER_CREATE', value: WRITER_SQL[engine].create(table) },
    { name: 'WRITER_INSERT', value: WRITER_SQL[engine].insert(table) },
    {
      name: 'WRITER_STATEMENT_TIMEOUT',
      value: String(opts.statementTimeoutSeconds ?? STATEMENT_TIMEOUT_SECONDS),
    },
    { name: 'WRITER_PAUSE', value: opts.pauseSeconds ? opts.pauseSeconds.toFixed(3) : '0' },
  ];
}

/** Parses the writer's log; throws when its beginning is missing (a rotated log would hide acks). */
export function parseWriterLog(text: string): WriterLog {
  let startedAtMs: number | undefined;
  let tableReadyAtMs: number | undefined;
  const acks: Ack[] = [];
  const failures: WriteFailure[] = [];
  for (const line of text.split('\n')) {
    const [word, a, b, c] = line.split(' ', 4);
    if (word === 'start') startedAtMs = Number(a);
    else if (word === 'table') tableReadyAtMs = Number(a);
    else if (word === 'ack') {
      const ack = { id: Number(a), atMs: Number(b) };
      const expected = (acks.at(-1)?.id ?? 0) + 1;
      if (ack.id !== expected) throw new Error(`writer log: ack ${ack.id} follows ack ${expected - 1}`);
      acks.push(ack);
    } else if (word === 'fail') {
      const message = line.split(' ').slice(4).join(' ');
      failures.push({ id: Number(a), atMs: Number(b), exitCode: Number(c), ...(message ? { message } : {}) });
    }
  }
  if (startedAtMs === undefined) throw new Error('writer log has no start line (not started, or rotated)');
  return { startedAtMs, tableReadyAtMs, acks, failures };
}

/** Gaps between consecutive acks longer than `minMs`. */
export function outagesOf(acks: readonly Ack[], minMs = 500): Outage[] {
  const gaps: Outage[] = [];
  for (let i = 1; i < acks.length; i++) {
    const from = acks[i - 1]!;
    const to = acks[i]!;
    const durationMs = to.atMs - from.atMs;
    if (durationMs > minMs) gaps.push({ fromMs: from.atMs, toMs: to.atMs, durationMs, afterId: from.id });
  }
  return gaps;
}

/** The writer's environment: the connection, each value straight from the credentials Secret. */
function writerEnv(opts: Omit<WriterOptions, 'client'>): V1EnvVar[] {
  const secret = opts.secretName ?? `${opts.db}-credentials`;
  const fromSecret = (name: string, key: string): V1EnvVar => ({
    name,
    valueFrom: { secretKeyRef: { name: secret, key } },
  });
  if (opts.engine === 'mariadb')
    return [
      fromSecret('DB_HOST', 'host'),
      fromSecret('DB_PORT', 'port'),
      fromSecret('DB_USER', 'username'),
      fromSecret('DB_NAME', 'database'),
      // The password in the environment, never on a command line.
      fromSecret('MYSQL_PWD', 'password'),
    ];
  return [
    fromSecret('DATABASE_URI', opts.uriKey ?? 'uri'),
    { name: 'PGAPPNAME', value: 'regulon-load-writer' },
  ];
}

/** The writer Pod: restricted Pod Security, the credentials straight from the Secret. */
export function writerPod(opts: Omit<WriterOptions, 'client'>): V1Pod {
  const name = opts.name ?? `${opts.db}-load-writer`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: opts.namespace,
      // Not the Database's instance label: the sampler and the Services must not pick it up.
      labels: { 'app.kubernetes.io/name': 'regulon-load-writer', 'app.kubernetes.io/part-of': opts.db },
    },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      automountServiceAccountToken: false,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 65534,
        runAsGroup: 65534,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: 'writer',
          image: opts.image ?? CLIENT_IMAGE,
          command: ['python3', '-c', WRITER_SOURCE],
          env: [
            ...writerEnv(opts),
            ...writerSettings({
              ...(opts.engine ? { engine: opts.engine } : {}),
              ...(opts.maxPerSecond ? { pauseSeconds: 1 / opts.maxPerSecond } : {}),
              ...(opts.statementTimeoutSeconds
                ? { statementTimeoutSeconds: opts.statementTimeoutSeconds }
                : {}),
            }),
          ],
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
            runAsNonRoot: true,
            seccompProfile: { type: 'RuntimeDefault' },
          },
        },
      ],
    },
  };
}

/** Starts the writer Pod and waits until its loop runs; see `Writer`. */
export async function startWriter(opts: WriterOptions): Promise<Writer> {
  const { client, namespace } = opts;
  const pods = client.resource<V1Pod>(Kinds.Pod);
  const pod = writerPod(opts);
  const name = pod.metadata!.name!;
  await pods.create(pod);

  const readLog = async (): Promise<WriterLog> => {
    const text = await client.request<string>({
      method: 'GET',
      path: `/api/v1/namespaces/${namespace}/pods/${name}/log`,
      query: { container: 'writer' },
      // The log endpoint refuses an Accept of text/plain; it answers JSON's with text.
    });
    return parseWriterLog(typeof text === 'string' ? text : '');
  };

  // `eventually` retries what throws, so a Pod that will never run is returned, not thrown.
  const started = await eventually(
    `writer Pod ${namespace}/${name} running its loop`,
    async (): Promise<WriterLog | { broken: string } | false> => {
      const p = await pods.get(name, { namespace });
      const waiting = p.status?.containerStatuses?.[0]?.state?.waiting;
      if (
        p.status?.phase === 'Failed' ||
        p.status?.phase === 'Succeeded' ||
        /^Err|BackOff$/.test(waiting?.reason ?? '')
      ) {
        return { broken: `${p.status?.phase} ${waiting?.reason ?? ''} ${waiting?.message ?? ''}`.trim() };
      }
      return p.status?.phase === 'Running' && (await readLog());
    },
    opts.startTimeoutMs ?? 120_000,
    200,
  );
  if ('broken' in started) throw new Error(`writer Pod ${namespace}/${name} cannot run: ${started.broken}`);

  const writer: Writer = {
    pod: name,
    log: readLog,
    acked: async () => (await readLog()).acks.map((a) => a.id),
    waitForAcks: (n, timeoutMs) =>
      eventually(
        `${n} acknowledged writes`,
        async () => {
          const log = await readLog();
          return log.acks.length >= n && log;
        },
        timeoutMs,
        250,
      ),
    waitForAckAfter: (sinceMs, timeoutMs) =>
      eventually(
        `a write acknowledged after ${new Date(sinceMs).toISOString()}`,
        async () => (await readLog()).acks.find((a) => a.atMs > sinceMs),
        timeoutMs,
        250,
      ),
    outages: async (minMs) => outagesOf((await readLog()).acks, minMs),
    longestOutage: async () =>
      outagesOf((await readLog()).acks, 0).reduce<Outage | undefined>(
        (longest, o) => (longest && longest.durationMs >= o.durationMs ? longest : o),
        undefined,
      ),
    stop: async () => {
      try {
        await pods.delete(name, { namespace, gracePeriodSeconds: 0 });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      await eventually(
        `writer Pod ${name} gone`,
        async () => {
          try {
            await pods.get(name, { namespace });
            return false;
          } catch (err) {
            if (isNotFound(err)) return true;
            throw err;
          }
        },
        60_000,
        200,
      );
    },
    [Symbol.asyncDispose]: () => writer.stop(),
  };
  return writer;
}

// ---------------------------------------------------------------------------
// The role sampler (testenv's, with each engine's question)

export interface DatabaseSamplerOptions {
  client: KubeClient;
  namespace: string;
  db: string;
  secretName?: string;
  /** Default 200 ms. */
  intervalMs?: number;
  /** Default 500 ms; a connect still under way spans rounds (those rounds say `unreachable`). */
  connectTimeoutMs?: number;
  /** Default postgres. */
  engine?: WorkloadEngine;
  /** Default the engine's: 5432, 3306. */
  port?: number;
  /** See testenv's RoleSamplerOptions.hostSubnets. */
  hostSubnets?: readonly string[];
}

const POSTGRES_WRITABLE_SQL =
  "select not pg_is_in_recovery() and current_setting('transaction_read_only') = 'off' as writable";

const postgresSessions =
  (config: pg.ClientConfig): OpenSession =>
  // postgres names no instance it could be asked for: the session is the address's.
  async (ip, _name, broken) => {
    const client = new pg.Client({ ...config, host: ip });
    // An idle connection the server drops emits 'error': unhandled, it would kill the test process.
    client.on('error', broken);
    try {
      await client.connect();
    } catch (err) {
      destroy(client);
      throw err;
    }
    return {
      ask: async () => {
        const res = await client.query<{ writable: boolean }>(POSTGRES_WRITABLE_SQL);
        return { role: res.rows[0]?.writable ? 'writable' : 'read-only' };
      },
      destroy: () => destroy(client),
    };
  };

/**
 * MariaDB: writable is `@@read_only` off, whatever else holds, because that
 * is what the application's account (which lacks READ_ONLY ADMIN) can write
 * to. The controller (../mariadb/instance.ts) counts an instance writable
 * only when, besides, no replication thread runs; the two agree as long as no
 * instance turns read_only off while it still replicates (promotion stops
 * replication first, a replica starts read-only). The sampler asks SHOW SLAVE
 * STATUS too and says so when they disagree, rather than hiding an instance
 * the application could write to.
 */
const mariadbSessions =
  (config: mysql.ConnectionOptions): OpenSession =>
  async (ip, name, broken) => {
    const conn = await mysql.createConnection({ ...config, host: ip });
    conn.on('error', broken);
    return {
      ask: async () => {
        const [state] = await conn.query<mysql.RowDataPacket[]>(
          'SELECT @@global.read_only AS read_only, @@hostname AS host',
        );
        // A Pod's address outlives it in the sampler's list for a moment, and may be another
        // Pod's by then (a StatefulSet Pod's host name is its name): not this instance's answer.
        const host = String(state[0]?.['host'] ?? '');
        if (host !== name) return { role: 'unreachable', reason: `${ip} answered as ${host}, not ${name}` };
        const [status] = await conn.query<mysql.RowDataPacket[]>('SHOW SLAVE STATUS');
        const writable = Number(state[0]?.['read_only']) === 0;
        const threads = replicationThreads(status[0]);
        if (!writable) return { role: 'read-only' };
        return threads
          ? { role: 'writable', reason: `read_only off while replicating (${threads})` }
          : { role: 'writable' };
      },
      destroy: () => dropConnection(conn),
    };
  };

/** The replication threads a SHOW SLAVE STATUS row says run (IO connecting counts), or '' for none. */
export function replicationThreads(row: Record<string, unknown> | undefined): string {
  if (!row) return '';
  const field = (key: string) => (typeof row[key] === 'string' ? row[key] : 'No');
  const io = field('Slave_IO_Running');
  const sql = field('Slave_SQL_Running');
  return [io !== 'No' ? `IO ${io}` : '', sql !== 'No' ? `SQL ${sql}` : ''].filter(Boolean).join(', ');
}

/** Drops a connection at once: end() waits for the server, which may be gone. */
function destroy(client: pg.Client): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  client.end().catch(() => {});
}

/** An answer that shows an address is not this Database's instance: wrong credentials, or no server. */
const NOT_THIS_DATABASE =
  /password authentication failed|no pg_hba\.conf entry|does not exist|Access denied|ECONNREFUSED|EHOSTUNREACH/i;

/**
 * Samples every instance's role every `intervalMs` (testenv's startRoleSampler),
 * as the credentials Secret's user (postgres: database `postgres`).
 */
export async function startDatabaseSampler(opts: DatabaseSamplerOptions): Promise<RoleSampler> {
  const { client, namespace, db } = opts;
  const engine = opts.engine ?? 'postgres';
  const creds = await readCredentials(client, namespace, db, opts.secretName);
  const port = opts.port ?? ENGINE_PORT[engine];
  const connectTimeoutMs = opts.connectTimeoutMs ?? 500;
  const open =
    engine === 'mariadb'
      ? mariadbSessions({
          user: creds.username,
          password: creds.password,
          port,
          connectTimeout: connectTimeoutMs,
          enableKeepAlive: true,
        })
      : postgresSessions({
          user: creds.username,
          password: creds.password,
          database: 'postgres',
          port,
          connectionTimeoutMillis: connectTimeoutMs,
          keepAlive: true,
          application_name: 'regulon-role-sampler',
        });
  return startRoleSampler({
    listInstances: (signal) => listInstancePods(client, namespace, db, signal),
    open,
    notThisSet: NOT_THIS_DATABASE,
    ...(opts.intervalMs !== undefined ? { intervalMs: opts.intervalMs } : {}),
    ...(opts.hostSubnets !== undefined ? { hostSubnets: opts.hostSubnets } : {}),
  });
}

// ---------------------------------------------------------------------------
// Row counts

/** Math.max without spreading (a large set exceeds the argument limit); 0 when empty. */
function largest(values: Iterable<number>): number {
  let max = 0;
  for (const v of values) if (v > max) max = v;
  return max;
}

export interface CountRowsOptions {
  client: KubeClient;
  namespace: string;
  db: string;
  /** A Pod IP, or any address the test process reaches; default the Secret's host. */
  host?: string;
  /** Default postgres. */
  engine?: WorkloadEngine;
  /** Default the Secret's. */
  port?: number;
  secretName?: string;
  table?: string;
  /** Default 5 s. */
  timeoutMs?: number;
}

/** The ids present in the load table on `host` (a replica's answer is fine: read-only). */
export async function countRows(opts: CountRowsOptions): Promise<Set<number>> {
  const creds = await readCredentials(opts.client, opts.namespace, opts.db, opts.secretName);
  return idsAt(
    opts.engine ?? 'postgres',
    creds,
    opts.host ?? creds.host,
    opts.port ?? creds.port,
    opts.table ?? LOAD_TABLE,
    opts.timeoutMs ?? 5_000,
  );
}

async function idsAt(
  engine: WorkloadEngine,
  creds: DatabaseCredentials,
  host: string,
  port: number,
  table: string,
  timeoutMs: number,
): Promise<Set<number>> {
  if (engine === 'mariadb') return mariadbIdsAt(creds, host, port, table, timeoutMs);
  const conn = new pg.Client({
    host,
    port,
    user: creds.username,
    password: creds.password,
    database: creds.database,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    application_name: 'regulon-row-count',
  });
  conn.on('error', () => {});
  try {
    await conn.connect();
    // bigint comes back as a string; the ids are far below 2^53.
    const res = await conn.query<{ id: string }>(`select id from ${table}`);
    return new Set(res.rows.map((r) => Number(r.id)));
  } finally {
    destroy(conn);
  }
}

async function mariadbIdsAt(
  creds: DatabaseCredentials,
  host: string,
  port: number,
  table: string,
  timeoutMs: number,
): Promise<Set<number>> {
  // bigint comes back as a number (mysql2's default); the ids are far below 2^53.
  const rows = await mariadbQuery(creds, host, port, `select id from ${table}`, timeoutMs);
  return new Set(rows.map((r) => Number(r['id'])));
}

/** Runs one statement on a MariaDB instance at its Pod IP, as the application's user (it holds REPLICATION SLAVE ADMIN). */
export async function mariadbStatement(
  creds: DatabaseCredentials,
  host: string,
  sql: string,
  timeoutMs = 10_000,
): Promise<void> {
  await mariadbQuery(creds, host, ENGINE_PORT.mariadb, sql, timeoutMs);
}

/** One statement on its own connection, in the application's database; its rows. */
async function mariadbQuery(
  creds: DatabaseCredentials,
  host: string,
  port: number,
  sql: string,
  timeoutMs: number,
): Promise<mysql.RowDataPacket[]> {
  const conn = await mysql.createConnection({
    host,
    port,
    user: creds.username,
    password: creds.password,
    database: creds.database,
    connectTimeout: timeoutMs,
  });
  conn.on('error', () => {});
  try {
    const [rows] = await conn.query<mysql.RowDataPacket[]>({ sql, timeout: timeoutMs });
    return Array.isArray(rows) ? rows : [];
  } finally {
    dropConnection(conn);
  }
}

export interface InstanceRows {
  pod: string;
  ip: string | undefined;
  /** Absent when the instance could not be read (see `error`). */
  ids?: Set<number>;
  count?: number;
  maxId?: number;
  error?: string;
}

/** Every instance Pod's copy of the load table, read directly at its Pod IP. */
export async function readReplicaRows(opts: Omit<CountRowsOptions, 'host'>): Promise<InstanceRows[]> {
  const creds = await readCredentials(opts.client, opts.namespace, opts.db, opts.secretName);
  const pods = await listInstancePods(opts.client, opts.namespace, opts.db);
  return Promise.all(
    pods.map(async (pod): Promise<InstanceRows> => {
      if (!pod.ip) return { pod: pod.name, ip: undefined, error: 'no Pod IP' };
      try {
        const ids = await idsAt(
          opts.engine ?? 'postgres',
          creds,
          pod.ip,
          opts.port ?? creds.port,
          opts.table ?? LOAD_TABLE,
          opts.timeoutMs ?? 5_000,
        );
        return { pod: pod.name, ip: pod.ip, ids, count: ids.size, maxId: largest(ids) };
      } catch (err) {
        return { pod: pod.name, ip: pod.ip, error: (err as Error).message };
      }
    }),
  );
}

/** Acknowledged ids missing from `present`: the acknowledged writes lost. */
export function lostWrites(acked: Iterable<number>, present: ReadonlySet<number>): number[] {
  return [...acked].filter((id) => !present.has(id));
}
