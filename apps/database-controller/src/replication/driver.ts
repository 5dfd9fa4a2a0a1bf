import type { DatabaseObject } from '../api.ts';
import type { Engine } from '../versions.ts';
import type { Server } from '@regulon/conventions';

/**
 * What the replication reconcile needs from an engine, whatever its protocol:
 * the engine-neutral view of an instance that plan() decides on, a promotion,
 * and the primary's upkeep for its replicas. Each engine's module speaks its
 * own SQL (postgres/instance.ts, mariadb/instance.ts); this is where the
 * reconcile stops knowing which one it talks to.
 */
export interface Endpoint {
  host: string;
  /** The replication account's password: read once per reconcile, never kept past it. */
  password: string;
  signal?: AbortSignal | undefined;
}

/** One instance as its server answered over SQL, or why it did not. */
export type Observation =
  | {
      reachable: true;
      server: Server;
      /** Its position as the engine writes it (an LSN, a GTID), for the status. */
      position: string;
    }
  | { reachable: false; error: string };

export interface InstanceDriver {
  /** What `Server.lsn` counts, so the status names its lag: WAL bytes or transactions. */
  readonly lagUnit: 'bytes' | 'transactions';
  /** The Database's read-only lag bound, in `lagUnit`. */
  maxLag(db: DatabaseObject): bigint;
  observe(e: Endpoint): Promise<Observation>;
  /** Makes a fenced primary's replica writable; a no-op on a writable one. */
  promote(e: Endpoint, db: DatabaseObject): Promise<void>;
  /** Upkeep on the current primary for the other instances (Pod names), with what changed, if anything. */
  tendPrimary(primary: Endpoint, others: string[]): Promise<string | undefined>;
}

const DEFAULT_MAX_LAG_BYTES = 16 * 1024 * 1024;
const DEFAULT_MAX_LAG_TRANSACTIONS = 1000;

/**
 * Each engine's SQL module is loaded on first use, with its client library:
 * a manager whose Databases are all single instances never loads either.
 */
const postgres: InstanceDriver = {
  lagUnit: 'bytes',
  maxLag: (db) => BigInt(db.spec.replication?.maxLag?.bytes ?? DEFAULT_MAX_LAG_BYTES),
  async observe(e) {
    const { probe, formatLsn } = await import('../postgres/instance.ts');
    const p = await probe(e);
    if (!p.reachable) return p;
    return {
      reachable: true,
      server: {
        writable: !p.inRecovery,
        systemId: p.systemId,
        timeline: p.timeline,
        lsn: p.lsn,
        replayLsn: p.replayLsn,
        streaming: p.receiver === 'streaming',
      },
      position: formatLsn(p.lsn),
    };
  },
  async promote(e) {
    const { promote } = await import('../postgres/instance.ts');
    await promote(e);
  },
  async tendPrimary(primary, others) {
    const { syncSlots } = await import('../postgres/instance.ts');
    const { slotName } = await import('../postgres/start-script.ts');
    const { created, dropped } = await syncSlots(primary, others.map(slotName));
    return created.length || dropped.length
      ? `replication slots: created ${created.join(', ') || 'none'}; dropped ${dropped.join(', ') || 'none'}`
      : undefined;
  },
};

const mariadb: InstanceDriver = {
  lagUnit: 'transactions',
  maxLag: (db) => BigInt(db.spec.replication?.maxLag?.transactions ?? DEFAULT_MAX_LAG_TRANSACTIONS),
  async observe(e) {
    const { probe, toServer } = await import('../mariadb/instance.ts');
    const p = await probe(e);
    if (!p.reachable) return p;
    const server = toServer(p);
    // The last applied GTID of domain 0, as MariaDB writes it: domain-server-sequence.
    return { reachable: true, server, position: `0-${server.timeline}-${server.replayLsn}` };
  },
  async promote(e, db) {
    const { promote } = await import('../mariadb/instance.ts');
    await promote(e, undefined, { synchronous: !!db.spec.replication?.synchronous });
  },
  // GTID replication keeps nothing on the primary per replica: its binlogs are kept by age.
  tendPrimary: () => Promise.resolve(undefined),
};

/** The driver of an engine whose instances replicate; undefined for one that runs alone (mysql). */
export function driverFor(engine: Engine): InstanceDriver | undefined {
  return engine === 'postgres' ? postgres : engine === 'mariadb' ? mariadb : undefined;
}
