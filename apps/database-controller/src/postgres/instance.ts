import type pg from 'pg';
import { PLAN_TIMEOUT_MS, planStatements, type PlanVerdict } from '../engine.ts';
import { DIVERGED_REPORT_FILE, REPLICATION_USER } from './start-script.ts';

/**
 * What the manager learns from one PostgreSQL instance over SQL, as the
 * replication role (never the superuser: see start-script.ts for its grants).
 * One connection per probe: the manager polls a few instances every few
 * seconds, and a pool would hold connections to Pods that come and go.
 */
export interface InstanceState {
  reachable: true;
  inRecovery: boolean;
  systemId: string;
  timeline: number;
  /** The primary's write position; a standby's last received position. */
  lsn: bigint;
  /** A standby's last replayed position (the primary's write position on a primary). */
  replayLsn: bigint;
  /** A standby's WAL receiver state (`streaming` when it follows a primary). */
  receiver: string | undefined;
  /** On a primary: the standbys it streams to, by application_name (the Pod name). */
  standbys: Map<string, { state: string; sync: string; replayLsn: bigint | undefined }>;
  /** What it discarded when it rejoined after diverging (the start script's DIVERGED_REPORT_FILE). */
  discarded: string | undefined;
}

export type Probe = InstanceState | { reachable: false; error: string };

export interface Endpoint {
  host: string;
  password: string;
  port?: number;
  signal?: AbortSignal | undefined;
}

/** "16/B374D848" as a number of bytes (LSNs are 64-bit). */
export function parseLsn(lsn: string | null | undefined): bigint | undefined {
  const m = lsn ? /^([0-9A-F]+)\/([0-9A-F]+)$/i.exec(lsn) : null;
  return m ? (BigInt(`0x${m[1]}`) << 32n) | BigInt(`0x${m[2]}`) : undefined;
}

export function formatLsn(lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;
}

/** node-postgres, loaded on the first probe: a manager whose Databases are all single instances never needs it. */
let driver: Promise<typeof pg> | undefined;
const loadDriver = () => (driver ??= import('pg').then((m) => m.default));

async function withClient<R>(
  e: Endpoint,
  use: (c: pg.Client) => Promise<R>,
  queryTimeoutMs = 5000,
): Promise<R> {
  const { Client } = await loadDriver();
  const client = new Client({
    host: e.host,
    port: e.port ?? 5432,
    user: REPLICATION_USER,
    password: e.password,
    database: 'postgres',
    application_name: 'regulon-manager',
    connectionTimeoutMillis: 2000,
    query_timeout: queryTimeoutMs,
    statement_timeout: queryTimeoutMs - 1000,
  });
  const abort = () => void client.end().catch(() => {});
  e.signal?.addEventListener('abort', abort, { once: true });
  // An error on an idle client (the Pod went away) must not become an uncaught 'error' event.
  client.on('error', () => {});
  try {
    await client.connect();
    return await use(client);
  } finally {
    e.signal?.removeEventListener('abort', abort);
    await closeWithin(client, CLOSE_PATIENCE_MS);
  }
}

/** How long closing a connection waits for the server before the socket is closed regardless. */
const CLOSE_PATIENCE_MS = 1000;

/**
 * client.end() resolves once the server has closed the connection too: one that hangs (SIGSTOP)
 * never does, and a probe that reached it just before it hung would hold the reconcile, and the
 * failover with it (seen with MariaDB's client, which ends the same way). Past `ms` the socket is
 * destroyed from this side: node-postgres has no public call for it, so its stream is reached.
 */
async function closeWithin(client: pg.Client, ms: number): Promise<void> {
  const ended = await Promise.race([
    client.end().then(
      () => true,
      () => false,
    ),
    new Promise<false>((resolve) => setTimeout(resolve, ms, false).unref()),
  ]);
  if (!ended)
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

const STATE_SQL = `
select pg_is_in_recovery() as in_recovery,
  (select system_identifier::text from pg_control_system()) as system_id,
  case when pg_is_in_recovery()
    then coalesce((select received_tli from pg_stat_wal_receiver), (select timeline_id from pg_control_checkpoint()))
    else ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int end as timeline,
  case when pg_is_in_recovery()
    then coalesce(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()) else pg_current_wal_lsn() end::text as lsn,
  case when pg_is_in_recovery() then pg_last_wal_replay_lsn() else pg_current_wal_lsn() end::text as replay_lsn,
  (select status from pg_stat_wal_receiver) as receiver,
  convert_from(pg_read_binary_file('${DIVERGED_REPORT_FILE}', 0, 1024, true), 'UTF8') as discarded`;

interface StateRow {
  in_recovery: boolean;
  system_id: string;
  timeline: number | string;
  lsn: string | null;
  replay_lsn: string | null;
  receiver: string | null;
  discarded: string | null;
}
interface StandbyRow {
  application_name: string;
  state: string;
  sync_state: string;
  replay_lsn: string | null;
}

export async function probe(e: Endpoint): Promise<Probe> {
  try {
    return await withClient(e, async (c) => {
      const row = (await c.query<StateRow>(STATE_SQL)).rows[0];
      if (!row) throw new Error('no answer to the state query');
      const standbys = new Map<string, { state: string; sync: string; replayLsn: bigint | undefined }>();
      if (!row.in_recovery) {
        const r = await c.query<StandbyRow>(
          'select application_name, state, sync_state, replay_lsn::text as replay_lsn from pg_stat_replication',
        );
        for (const s of r.rows)
          standbys.set(s.application_name, {
            state: s.state,
            sync: s.sync_state,
            replayLsn: parseLsn(s.replay_lsn),
          });
      }
      return {
        reachable: true as const,
        inRecovery: row.in_recovery === true,
        systemId: String(row.system_id),
        timeline: Number(row.timeline),
        lsn: parseLsn(row.lsn) ?? 0n,
        replayLsn: parseLsn(row.replay_lsn) ?? 0n,
        receiver: row.receiver ?? undefined,
        standbys,
        discarded: row.discarded?.trim() || undefined,
      };
    });
  } catch (err) {
    return { reachable: false, error: (err as Error).message };
  }
}

/** Promotes a standby and waits (up to 60 s) until it accepts writes. Promoting a primary is a no-op. */
export async function promote(e: Endpoint): Promise<void> {
  await withClient(
    e,
    async (c) => {
      const { rows } = await c.query<{ r: boolean }>('select pg_is_in_recovery() as r');
      if (!rows[0]?.r) return;
      const done = await c.query<{ ok: boolean }>('select pg_promote(true, 60) as ok');
      if (!done.rows[0]?.ok) throw new Error('pg_promote did not finish within 60 s');
    },
    65_000,
  );
}

/**
 * Makes the primary's Regulon replication slots exactly `wanted`: missing
 * ones are created (reserving WAL from now), ones no instance needs any more
 * are dropped, unless a standby still streams from it.
 */
export async function syncSlots(
  e: Endpoint,
  wanted: readonly string[],
): Promise<{ created: string[]; dropped: string[] }> {
  return withClient(e, async (c) => {
    const { rows } = await c.query<{ slot_name: string; active: boolean }>(
      "select slot_name, active from pg_replication_slots where slot_type = 'physical' and slot_name like 'regulon\\_%'",
    );
    const have = new Map<string, boolean>(rows.map((r) => [r.slot_name, r.active]));
    const created: string[] = [];
    const dropped: string[] = [];
    for (const slot of wanted)
      if (!have.has(slot)) {
        await c.query('select pg_create_physical_replication_slot($1, true)', [slot]);
        created.push(slot);
      }
    for (const [slot, active] of have)
      if (!wanted.includes(slot) && !active) {
        await c.query('select pg_drop_replication_slot($1)', [slot]);
        dropped.push(slot);
      }
    return { created, dropped };
  });
}

/**
 * SQLSTATEs where the server's error says nothing of the statement itself: the connection (08), a
 * transaction rolled back (40), resources (53), the object's state (55), a cancellation or the
 * statement timeout (57), the system (58, XX), and a privilege the replication role lacks (42501:
 * postgres checks it after the names and types, so a missing table or column is still refused).
 */
const UNTOLD_SQLSTATE = /^(08|40|53|55|57|58|XX)|^42501$/;

/** What a server error says of a statement asked to plan; undefined for one that is no server's answer. */
export function planVerdictOf(err: unknown): PlanVerdict | undefined {
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  return { verdict: UNTOLD_SQLSTATE.test(code) ? 'unknown' : 'refused', error: String(message) };
}

/**
 * Asks the server to plan each statement (InstanceDriver.plan) in a read-only session, each within
 * statement_timeout (PLAN_TIMEOUT_MS), by the extended protocol, which takes one statement only.
 */
export async function planEach(
  e: Endpoint,
  statements: readonly { name: string; sql: string }[],
  deadline: number,
): Promise<Map<string, PlanVerdict>> {
  return withClient(
    e,
    async (c) => {
      await c.query('set session characteristics as transaction read only');
      return planStatements(
        statements,
        deadline,
        (sql) => c.query({ text: sql, queryMode: 'extended' } as pg.QueryConfig),
        planVerdictOf,
      );
    },
    // withClient's statement_timeout is a second below the query timeout.
    PLAN_TIMEOUT_MS + 1000,
  );
}
