/**
 * Synchronous replication's failover rule: who may take over from a lost primary so that no
 * acknowledged commit is lost (CloudNativePG calls it the failover quorum, R + W > N).
 *
 * The primary acknowledged each commit once W standbys had it (postgres: `ANY W (…)` in
 * synchronous_standby_names; mariadb: rpl_semi_sync_master_wait_for_slave_count). Any W of the N
 * standbys may have been the ones, and which ones is not recorded anywhere the manager can read.
 * Hearing from R standbys with R + W > N, at least one that answered confirmed each commit, so
 * the most advanced that answered holds every acknowledged commit. Hearing from fewer, the one
 * that holds the last commits may be among the silent ones: nothing is promoted.
 *
 * Memory does not help: the manager's last answer from the primary is older than its last
 * acknowledgements, so the rule is the same for a manager that just started (it asks the
 * instances, never assumes).
 */
import type { Member } from './plan.ts';

export interface QuorumInput {
  /** Every instance but the lost primary: each could have confirmed commits, a missing Pod's volume too. */
  standbys: readonly Member[];
  /** W: how many standbys confirm each commit. */
  confirmations: number;
  /** The cluster's system identifier: an instance of another data set holds none of its commits. */
  systemId: string | undefined;
}

export type QuorumVerdict =
  | { reached: true; answered: Member[]; mostAdvanced: Member }
  | { reached: false; answered: Member[]; silent: string[]; needed: number };

/** A standby's answer counts when it answered as a standby of this data set. */
function answeredAsStandby(m: Member, systemId: string | undefined): boolean {
  return !!m.server && !m.server.writable && (!systemId || m.server.systemId === systemId);
}

/** Whether `a` holds more than `b`: its received position, then what it applied. */
export function moreAdvanced(a: Member, b: Member): boolean {
  const x = a.server!;
  const y = b.server!;
  if (x.lsn !== y.lsn) return x.lsn > y.lsn;
  if (x.replayLsn !== y.replayLsn) return x.replayLsn > y.replayLsn;
  return a.ordinal < b.ordinal;
}

export function failoverQuorum({ standbys, confirmations, systemId }: QuorumInput): QuorumVerdict {
  const answered = standbys.filter((m) => answeredAsStandby(m, systemId));
  const silent = standbys.filter((m) => !answeredAsStandby(m, systemId)).map((m) => m.pod);
  // R + W > N, with W at least 1: with no standby confirming, nothing would ever be acknowledged.
  const needed = Math.max(0, standbys.length - Math.max(1, confirmations) + 1);
  if (answered.length < needed || !answered.length) return { reached: false, answered, silent, needed };
  const mostAdvanced = answered.reduce((best, m) => (moreAdvanced(m, best) ? m : best));
  return { reached: true, answered, mostAdvanced };
}
