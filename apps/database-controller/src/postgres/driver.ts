import type { InstanceDriver } from '../engine.ts';

const DEFAULT_MAX_LAG_BYTES = 16 * 1024 * 1024;

/**
 * postgres's replication driver: streaming replication seen through
 * pg_stat_wal_receiver and the control data. The SQL module is loaded on first
 * use, with `pg`: a manager whose Databases are all single instances never
 * loads either.
 */
export const postgresDriver: InstanceDriver = {
  lagUnit: 'bytes',
  maxLag: (db) => BigInt(db.spec.replication?.maxLag?.bytes ?? DEFAULT_MAX_LAG_BYTES),
  async observe(e) {
    const { probe, formatLsn } = await import('./instance.ts');
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
      ...(p.discarded ? { discarded: p.discarded } : {}),
      // The standbys synchronous_standby_names counts for a commit now (sync_state sync or quorum).
      ...(p.inRecovery
        ? {}
        : {
            confirming: [...p.standbys.values()].filter(
              (s) => s.state === 'streaming' && (s.sync === 'sync' || s.sync === 'quorum'),
            ).length,
          }),
    };
  },
  async promote(e) {
    const { promote } = await import('./instance.ts');
    await promote(e);
  },
  async tendPrimary(primary, others) {
    const { syncSlots } = await import('./instance.ts');
    const { slotName } = await import('./start-script.ts');
    const { created, dropped } = await syncSlots(primary, others.map(slotName));
    return created.length || dropped.length
      ? `replication slots: created ${created.join(', ') || 'none'}; dropped ${dropped.join(', ') || 'none'}`
      : undefined;
  },
  async plan(e, statements, deadline) {
    const { planEach } = await import('./instance.ts');
    return planEach(e, statements, deadline);
  },
};
