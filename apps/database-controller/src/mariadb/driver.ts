import type { InstanceDriver } from '../engine.ts';

const DEFAULT_MAX_LAG_TRANSACTIONS = 1000;

/**
 * mariadb's replication driver: GTID replication mapped onto the neutral
 * view (see instance.ts). The SQL module is loaded on first use, with
 * `mysql2`: a manager whose Databases are all single instances never loads
 * either.
 */
export const mariadbDriver: InstanceDriver = {
  lagUnit: 'transactions',
  maxLag: (db) => BigInt(db.spec.replication?.maxLag?.transactions ?? DEFAULT_MAX_LAG_TRANSACTIONS),
  async observe(e) {
    const { probe, toServer } = await import('./instance.ts');
    const p = await probe(e);
    if (!p.reachable) return p;
    const server = toServer(p);
    // The last applied GTID of domain 0, as MariaDB writes it: domain-server-sequence.
    return {
      reachable: true,
      server,
      position: `0-${server.timeline}-${server.replayLsn}`,
      ...(server.writable ? { confirming: p.confirming } : {}),
      ...(p.discarded ? { discarded: p.discarded } : {}),
    };
  },
  async promote(e, db) {
    const { promote } = await import('./instance.ts');
    await promote(e, undefined, { synchronous: !!db.spec.replication?.synchronous });
  },
  // GTID replication keeps nothing on the primary per replica: its binlogs are kept by age.
  tendPrimary: () => Promise.resolve(undefined),
  async plan(e, statements, deadline) {
    const { planEach } = await import('./instance.ts');
    return planEach(e, statements, deadline);
  },
};
