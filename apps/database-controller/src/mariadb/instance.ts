import mysql from 'mysql2/promise';
import type { Server } from '@regulon/conventions';
import {
  gtidOf,
  parseReplicaStatus,
  promote as promoteStatements,
  demote as demoteStatements,
  readOnlyQuery,
  replicationErrorOf,
  replicaStatus,
  stopReceiving,
  text,
  waitApplied,
  type ReplicaStatus,
  type Source,
} from './replication-sql.ts';
import { PLAN_TIMEOUT_MS, planStatements, type PlanVerdict } from '../engine.ts';
import { CLUSTER_TABLE, DISCARDED_TABLE, PORT, REPLICATION_USER } from './start-script.ts';

/**
 * What the manager learns from one MariaDB instance over SQL, as the
 * replication account (never the application's or a SUPER account: see
 * start-script.ts for its grants), in the shape the PostgreSQL side gives
 * plan() in @regulon/conventions. The mapping:
 * - writable: `@@read_only = 0` and no replication thread running;
 * - systemId: the id the primary wrote into `regulon.cluster` when it
 *   initialised (MariaDB has no system identifier; the clone copies it);
 * - lsn / replayLsn: GTID sequence numbers of domain 0, which strict mode
 *   keeps increasing across promotions, so instances compare by them: lsn is
 *   the latest received (a replica's IO thread) or written, replayLsn the
 *   latest applied. They count transactions, not bytes;
 * - timeline: the server_id that wrote the latest applied transaction (the
 *   primary of that "term");
 * - streaming: both replication threads run.
 * One connection per probe, as for postgres: instances come and go.
 */
export interface InstanceState {
  reachable: true;
  readOnly: boolean;
  /** A replication thread runs (IO or SQL). */
  replicating: boolean;
  systemId: string;
  timeline: number;
  lsn: bigint;
  replayLsn: bigint;
  /** SHOW SLAVE STATUS, when the instance has a primary configured. */
  replica: ReplicaStatus | undefined;
  /**
   * The replicas that acknowledge its commits (semi-synchronous replication): its connected
   * semi-sync clients while the primary side waits for them, 0 when it does not wait (switched
   * off, or fallen back to asynchronous after rpl_semi_sync_master_timeout).
   */
  confirming: number;
  /** What it discarded when it was cloned afresh after diverging (DISCARDED_TABLE). */
  discarded?: string | undefined;
}

export type Probe = InstanceState | { reachable: false; error: string };

export interface Endpoint {
  host: string;
  password: string;
  port?: number;
  signal?: AbortSignal | undefined;
}

/** The little of a connection this module uses; mysql2 provides it, tests may give another. */
export interface SqlSession {
  query(sql: string, timeoutMs?: number): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}
export type Connect = (e: Endpoint) => Promise<SqlSession>;

/** How long closing a connection waits for the server before the socket is closed regardless. */
const CLOSE_PATIENCE_MS = 1000;

/** A mysql2 connection as the replication account. */
export const connectMysql2: Connect = async (e) => {
  const conn = await mysql.createConnection({
    host: e.host,
    port: e.port ?? PORT,
    user: REPLICATION_USER,
    password: e.password,
    connectTimeout: 2000,
    // Numbers as strings where they could exceed 2^53 (GTID sequence numbers are 64-bit).
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
  // An error on an idle connection (the Pod went away) must not become an uncaught 'error' event.
  conn.on('error', () => {});
  const abort = () => dropConnection(conn);
  e.signal?.addEventListener('abort', abort, { once: true });
  return {
    async query(sql, timeoutMs = 5000) {
      const [rows] = await conn.query({ sql, timeout: timeoutMs });
      // A statement without a result set answers with a ResultSetHeader, not rows.
      return Array.isArray(rows) ? (rows as unknown as Record<string, unknown>[]) : [];
    },
    async close() {
      e.signal?.removeEventListener('abort', abort);
      // end() waits for the server to close the connection after COM_QUIT: one that hangs (SIGSTOP)
      // never does, and a probe that reached it just before it hung held the reconcile, and the
      // failover with it, until its container restarted (the hung-primary scenario on the real
      // node: 117 s). Past a second the socket is closed from this side.
      const ended = await Promise.race([
        conn.end().then(
          () => true,
          () => false,
        ),
        new Promise<false>((resolve) => setTimeout(resolve, CLOSE_PATIENCE_MS, false).unref()),
      ]);
      if (!ended) dropConnection(conn);
    },
  };
};

/**
 * Closes a mysql2 connection's socket at once. mysql2's destroy() only ends the socket
 * gracefully (FIN after what is queued): to a server that is gone (a lost node) the socket then
 * stays open, unacknowledged, for TCP's retransmissions (minutes), holding an fd and keeping the
 * process alive.
 */
export function dropConnection(conn: mysql.Connection): void {
  conn.destroy();
  (conn as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

async function withSession<R>(e: Endpoint, connect: Connect, use: (s: SqlSession) => Promise<R>): Promise<R> {
  const session = await connect(e);
  try {
    return await use(session);
  } finally {
    await session.close();
  }
}

const semiSyncStatus = (name: string) =>
  `(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = '${name}')`;
const STATE_SQL = `SELECT @@global.read_only AS read_only, @@global.gtid_current_pos AS current_pos,
  (SELECT id FROM ${CLUSTER_TABLE} LIMIT 1) AS cluster_id,
  ${semiSyncStatus('RPL_SEMI_SYNC_MASTER_STATUS')} AS semi_sync,
  ${semiSyncStatus('RPL_SEMI_SYNC_MASTER_CLIENTS')} AS semi_sync_clients`;

/** The state from the two answers an instance gives (pure: no server needed to check it). */
export function stateOf(row: Record<string, unknown>, replica: ReplicaStatus | undefined): InstanceState {
  const applied = gtidOf(text(row['current_pos']));
  // Gtid_IO_Pos stays while the IO thread reconnects (a lost primary): what it holds still counts.
  const received = replica ? gtidOf(replica.received) : undefined;
  const replayLsn = applied?.seq ?? 0n;
  const lsn = received && received.seq > replayLsn ? received.seq : replayLsn;
  return {
    reachable: true,
    readOnly: Number(row['read_only']) !== 0,
    replicating: replica !== undefined && (replica.ioRunning || replica.sqlRunning),
    systemId: text(row['cluster_id']),
    timeline: applied?.server ?? 0,
    lsn,
    replayLsn,
    replica,
    confirming: text(row['semi_sync']).toUpperCase() === 'ON' ? Number(row['semi_sync_clients'] ?? 0) : 0,
  };
}

/** The plan's view of a reachable instance. */
export function toServer(s: InstanceState): Server {
  const streaming = s.replica !== undefined && s.replica.ioRunning && s.replica.sqlRunning;
  const replicationError = replicationErrorOf(s.replica);
  return {
    writable: !s.readOnly && !s.replicating,
    systemId: s.systemId,
    timeline: s.timeline,
    lsn: s.lsn,
    replayLsn: s.replayLsn,
    streaming,
    ...(replicationError ? { replicationError } : {}),
  };
}

export async function probe(e: Endpoint, connect: Connect = connectMysql2): Promise<Probe> {
  try {
    return await withSession(e, connect, async (s) => {
      const row = (await s.query(STATE_SQL))[0];
      if (!row) throw new Error('no answer to the state query');
      const state = stateOf(row, parseReplicaStatus('mariadb', (await s.query(replicaStatus('mariadb')))[0]));
      const discarded = await discardedOf(s);
      return discarded ? { ...state, discarded } : state;
    });
  } catch (err) {
    return { reachable: false, error: (err as Error).message };
  }
}

/** DISCARDED_TABLE's report; undefined on the instances that have none (most have no such table). */
async function discardedOf(s: SqlSession): Promise<string | undefined> {
  try {
    return text((await s.query(`SELECT report FROM ${DISCARDED_TABLE} LIMIT 1`))[0]?.['report']) || undefined;
  } catch (err) {
    if ((err as { code?: string }).code === 'ER_NO_SUCH_TABLE') return undefined;
    throw err;
  }
}

/**
 * Promotes a replica whose primary is gone (fenced) and waits until it
 * accepts writes: it stops fetching, applies what it had received (up to
 * `applyTimeoutSeconds`; a replica that cannot catch up is not promoted),
 * forgets its primary, takes the primary's side of semi-synchronous
 * replication when the Database is synchronous, and turns read_only off.
 * Promoting a writable instance is a no-op.
 */
export async function promote(
  e: Endpoint,
  connect: Connect = connectMysql2,
  opts: { applyTimeoutSeconds?: number; synchronous?: boolean } = {},
): Promise<void> {
  const applyTimeoutSeconds = opts.applyTimeoutSeconds ?? 60;
  await withSession(e, connect, async (s) => {
    const state = await s.query(readOnlyQuery('mariadb'));
    const before = parseReplicaStatus('mariadb', (await s.query(replicaStatus('mariadb')))[0]);
    if (Number(state[0]?.['read_only']) === 0 && !before?.ioRunning && !before?.sqlRunning) return;
    if (before) {
      await s.query(stopReceiving('mariadb'));
      // Gtid_IO_Pos once the IO thread stopped: everything this replica will ever have of the old primary.
      const received = parseReplicaStatus('mariadb', (await s.query(replicaStatus('mariadb')))[0])?.received;
      if (received) {
        const timeoutMs = (applyTimeoutSeconds + 5) * 1000;
        const waited = await s.query(waitApplied('mariadb', received, applyTimeoutSeconds), timeoutMs);
        if (Number(waited[0]?.['waited']) !== 0)
          throw new Error(
            `the received transactions (${received}) were not applied within ${applyTimeoutSeconds} s`,
          );
      }
    }
    for (const sql of promoteStatements('mariadb', { synchronous: opts.synchronous ?? false }))
      await s.query(sql);
    const after = await s.query(readOnlyQuery('mariadb'));
    if (Number(after[0]?.['read_only']) !== 0) throw new Error('still read-only after the promotion');
  });
}

/**
 * Makes a writable instance a read-only replica of `source` (a switchover's
 * old primary, when it is not restarted): read_only first, so nothing is
 * written after its position is taken.
 */
export async function demote(
  e: Endpoint,
  source: Omit<Source, 'user'>,
  connect: Connect = connectMysql2,
): Promise<void> {
  await withSession(e, connect, async (s) => {
    for (const sql of demoteStatements('mariadb', { ...source, user: REPLICATION_USER })) await s.query(sql);
  });
}

/**
 * Server errors that say nothing of the statement itself: a privilege the replication account
 * lacks (1044, 1045, 1142, 1143, 1227, 1370), a lock wait or deadlock (1205, 1213), an
 * interruption or max_statement_time (1317, 1969, 3024).
 */
const UNTOLD_ERRNO = new Set([1044, 1045, 1142, 1143, 1227, 1370, 1205, 1213, 1317, 1969, 3024]);

/** What a server error says of a statement asked to plan; undefined for one that is no server's answer. */
export function planVerdictOf(err: unknown): PlanVerdict | undefined {
  const { errno, sqlMessage, fatal } = err as { errno?: unknown; sqlMessage?: unknown; fatal?: unknown };
  // A socket's error has an errno too (negative), but no server message.
  if (typeof errno !== 'number' || typeof sqlMessage !== 'string' || fatal === true) return undefined;
  return { verdict: UNTOLD_ERRNO.has(errno) ? 'unknown' : 'refused', error: sqlMessage };
}

/**
 * Asks the server to plan each statement (InstanceDriver.plan) in a read-only session, each within
 * max_statement_time (PLAN_TIMEOUT_MS; MariaDB may run a one-row derived table to plan the query
 * around it). mysql2 sends one statement per query (no multipleStatements).
 */
export async function planEach(
  e: Endpoint,
  statements: readonly { name: string; sql: string }[],
  deadline: number,
  connect: Connect = connectMysql2,
): Promise<Map<string, PlanVerdict>> {
  return withSession(e, connect, async (s) => {
    await s.query(`SET SESSION max_statement_time = ${PLAN_TIMEOUT_MS / 1000}`);
    await s.query('SET SESSION TRANSACTION READ ONLY');
    return planStatements(statements, deadline, (sql) => s.query(sql, PLAN_TIMEOUT_MS + 1000), planVerdictOf);
  });
}
