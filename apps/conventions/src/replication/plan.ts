/**
 * Who is the primary, and what to do about it: the manager's half of the
 * replication protocol of every engine Regulon replicates (the instances'
 * half is each engine's start script, which ends with start-decision.ts).
 * Engine-neutral: postgres and mariadb (the Database) and redis (the Cache)
 * each map what their server says onto `Server`.
 * A pure function of what was observed, so every path is unit-tested; the
 * reconciler carries the steps out, one kind of step per reconcile, and
 * observes again.
 *
 * The topology ConfigMap is the record: `primary` names the instance that
 * may be writable. It changes before anything else does, so a manager that
 * stops half-way (or loses its Lease) leaves a state the next one finishes
 * without choosing again: it promotes the named instance, after fencing any
 * other writable one, and never promotes a second.
 *
 * Where the instances run the instance agent, the primary Lease it holds is
 * the second witness (PlanInput.primaryLease): a primary whose Lease expired
 * has stopped acknowledging writes (its agent fences it before the Lease can
 * expire), so it is lost whatever its Pod object says, and a promotion no
 * longer waits for a Pod object only the kubelet can remove (a lost node).
 */
import type { LeaseJudgement } from './primary-lease.ts';
import { failoverQuorum, moreAdvanced } from './quorum.ts';

export interface Topology {
  primary: string;
  initialized: boolean;
  /** When `primary` last changed (ms): Pods created after it read the new name when they started. */
  since: number | undefined;
}

/** The grace period (seconds) of an unclean stop: the Pod of a server that may still write and does not answer. */
export const FENCE_GRACE_SECONDS = 1;

/**
 * How long a former primary's clean shutdown may go on, with the instance taking over receiving
 * nothing from it, before its grace period is cut short.
 */
export const SHUTDOWN_PATIENCE_MS = 10_000;

/** What one instance's Pod and server say. */
export interface Member {
  pod: string;
  ordinal: number;
  /** The Pod object exists (its uid, when it does). */
  uid: string | undefined;
  /** The Pod's creationTimestamp (ms, whole seconds). */
  createdAt: number | undefined;
  deleting: boolean;
  /** While deleting: the grace period its deletion gives the containers (seconds). */
  deletionGraceSeconds?: number | undefined;
  /** While deleting: since when (ms). */
  deletingSince?: number | undefined;
  /** The kubelet's readiness. */
  ready: boolean;
  /**
   * Since when (ms) the Pod has been missing or not ready; undefined while the kubelet says it
   * serves. A server that only this manager cannot reach is not in trouble by that alone.
   */
  troubleSince: number | undefined;
  /** The role label its Pod carries now: what the Services select, kept while the server is unobserved. */
  label?: Role | undefined;
  /**
   * Since when (ms) its server has answered as a standby following no primary (see
   * ReplicationMemory.outOfTouch); undefined while it follows one, or does not answer.
   */
  outOfTouchSince?: number | undefined;
  /** When its position (`server.lsn`) was last seen to move (ms; see ReplicationMemory.positionMovedAt). */
  positionMovedAt?: number | undefined;
  /** Its Pod runs an older template than the StatefulSet's, and waits for the manager to replace it (OnDelete). */
  outdated?: boolean;
  server: Server | undefined;
}

/** The server's own answer over its protocol (undefined: unreachable). */
export interface Server {
  writable: boolean;
  /** Which data set it holds ('' where the engine has no such identity). */
  systemId: string;
  timeline: number;
  /** Its write (or received) position: WAL bytes, GTID sequence, replication offset. */
  lsn: bigint;
  /** What it has applied, in the same units. */
  replayLsn: bigint;
  /** It follows a primary and its link is up. */
  streaming: boolean;
  /**
   * Why it does not stream, in its server's words, where the engine says (mariadb: a replication
   * thread's last error); `fatal` when replication stopped for good on it and only a restart, which
   * checks its history against the primary's, moves it again.
   */
  replicationError?: { message: string; fatal: boolean } | undefined;
}

export interface PlanInput {
  replicas: number;
  members: Member[];
  topology: Topology;
  /** The cluster's system identifier once known: instances of another cluster are never promoted. */
  systemId: string | undefined;
  failoverDelayMs: number;
  /** How far (in `lsn` units: WAL bytes, or transactions for mariadb) a replica may trail and still serve reads. */
  maxLag: bigint;
  now: number;
  /** A requested switchover target (Pod name). */
  switchoverTo: string | undefined;
  /**
   * When this manager first saw the current switchover request, and how long a target that
   * streams beyond the lag bound may take to come within it. Meanwhile the primary keeps serving
   * and the plan waits; past it, the request is refused. Without them it is refused at once.
   */
  switchoverRequestedAt?: number | undefined;
  switchoverCatchUpMs?: number | undefined;
  /** What the named primary said the last time it answered (undefined: never seen answering; see ReplicationMemory). */
  lastAnswer?: PrimaryAnswer | undefined;
  /**
   * The primary Lease as this manager judges it (PrimaryLeaseView), where the instances run the
   * agent that holds it; undefined where they do not, and only the kubelet ends a primary's role.
   */
  primaryLease?: LeaseJudgement | undefined;
  /**
   * The agents keep a primary serving without its Lease while a majority of the instances, itself
   * included, is in touch with it (an API-server outage must not stop a healthy primary). Then a
   * Lease that expired is not enough: a standby is promoted only once the old primary cannot
   * have a majority (see failsafeBlocks).
   */
  primaryFailsafe?: boolean | undefined;
  /**
   * Synchronous replication: each commit was acknowledged once `confirmations` standbys had it. A
   * lost primary is then replaced only under the quorum rule (see quorum.ts), never on memory.
   */
  synchronous?: { confirmations: number } | undefined;
  /**
   * A person's order to promote this instance although no standby provably holds every commit
   * (no quorum answers, or none holds the lost primary's last writes): what may be lost is said
   * in the step's message.
   */
  forcePromote?: string | undefined;
  /**
   * Instances a person fenced (the Database's fenced-instances annotation): their engine is
   * stopped on purpose, they carry no role label (no Service sends them clients), and they are
   * never chosen to take over. A fenced primary is not failed over: no instance accepts writes
   * until it is unfenced.
   */
  fenced?: ReadonlySet<string> | undefined;
}

/**
 * How long a standby must have been seen following no primary before it counts as out of touch
 * with the old one. The old primary counts a standby in touch while its replication connection
 * lives: that ends within the engine's sender timeout of the standby's last reply (postgres:
 * wal_sender_timeout, 5 s). Its agent serves on for at most 8 s after the last question that
 * counted the standby (the instance agent's QUORUM_EVIDENCE_MS). So 14 s after a standby was
 * first seen out, with a second to spare, the old primary has seen the same and fenced, if it had to.
 */
export const OUT_OF_TOUCH_MARGIN_MS = 14_000;

/**
 * How long a replica whose replication stopped for good on an error (Server.replicationError
 * fatal) is left before it is restarted: long enough for a person who stopped it on purpose, or
 * the failover that caused it, to settle; short beside the minutes a replica left stuck costs
 * (the reads it does not serve, a synchronous standby missing).
 */
export const STOPPED_REPLICA_RESTART_MS = 30_000;

/** The named primary's last answer, as the manager remembers it. */
export interface PrimaryAnswer {
  /** Its write position then. */
  lsn: bigint;
  /** The standbys that streamed from it then: a clean shutdown sends them its last writes. */
  followers: ReadonlySet<string>;
}

export type Step =
  | {
      kind: 'topology';
      topology: Topology;
      /** ForcedFailover: a person's forcePromote, taking what the message says may be lost. */
      reason: 'Initialized' | 'Failover' | 'ForcedFailover' | 'Switchover';
      message: string;
    }
  | { kind: 'fence'; pod: string; uid: string; graceful: boolean; message: string }
  /**
   * `lease`: the primary Lease as judged, where the instances run the agent; the promotion first
   * writes the instance into it (transferPrimaryLease), unless it already holds it.
   */
  | { kind: 'promote'; pod: string; lease?: LeaseJudgement | undefined }
  /**
   * The Pod is deleted gracefully, and the StatefulSet makes it again: a rolling update (from the
   * new template), or a restart of a replica whose replication stopped for good (its start checks
   * its history against the primary's: it rejoins, or is cloned afresh as divergedData allows).
   */
  | {
      kind: 'replace';
      pod: string;
      uid: string;
      message: string;
      reason: 'RollingUpdate' | 'ReplicationStopped';
    }
  | { kind: 'refuseSwitchover'; message: string };

export type Role = 'primary' | 'replica';

export interface Plan {
  step: Step | undefined;
  /** Role labels: the client Service selects `primary`, the read-only one `replica`; others carry none. */
  roles: Map<string, Role | undefined>;
  /** The writable instance that is also the named one, as its server answered this manager. */
  currentPrimary: string | undefined;
  /**
   * The instance that holds the primary role: currentPrimary, or the named one that this manager
   * cannot reach while the kubelet reports its Pod Ready and it carries the primary label.
   */
  servingPrimary: string | undefined;
  /**
   * Instances whose Pod the kubelet reports Ready but whose server did not answer this manager.
   * Their role labels are kept and nothing fails over on this manager's word alone: a manager cut
   * off from the Pods must not take a serving database down.
   */
  unobserved: string[];
  /** Why nothing moves yet, when something should (for status and the requeue). */
  waiting: string | undefined;
  /** Milliseconds until the plan may change without any event (a failover delay running out). */
  recheckInMs: number | undefined;
  /**
   * Synchronous mode, a failover due: too few standbys answer for one of them to provably hold
   * every acknowledged commit, so nothing is promoted. `silent` are those it waits for.
   */
  quorum?: { silent: string[]; answered: string[]; needed: number } | undefined;
  /** A requested switchover: what became of it in this plan (for status and Events). */
  switchover?: { target: string; state: 'Waiting' | 'Refused' | 'Started'; message: string } | undefined;
}

/** The most advanced standby of this cluster that may take over, among the Pods that stay (and pass `eligible`). */
function bestStandby(
  input: PlanInput,
  except: string,
  eligible: (m: Member) => boolean = () => true,
): Member | undefined {
  let best: Member | undefined;
  for (const m of input.members) {
    const s = m.server;
    if (m.pod === except || !s || s.writable || m.ordinal >= input.replicas || m.deleting) continue;
    if (input.fenced?.has(m.pod)) continue;
    if (input.systemId && s.systemId !== input.systemId) continue;
    if (!eligible(m)) continue;
    if (!best || moreAdvanced(m, best)) best = m;
  }
  return best;
}

/** Who takes over, or why nobody does. */
interface Successor {
  member?: Member | undefined;
  /** Why nobody takes over (with `member` undefined). */
  why?: string;
  quorum?: Plan['quorum'];
  /** The member is a person's forced choice: what that may lose. */
  forced?: string;
}

/**
 * Who may take over from a primary that stops. A planned stop (its Pod deleted) hands over only
 * to a standby that streamed from it: its clean shutdown sends those every write, and a Ready
 * standby that is still catching up would lack them. A lost primary in synchronous mode is
 * replaced only under the quorum rule (quorum.ts); otherwise by a standby that streamed from it
 * or holds everything it had written when last seen (Patroni's maximum lag on failover, at
 * zero). With no memory of the primary (a new leader), asynchronous mode takes any standby.
 */
function successor(input: PlanInput, planned: boolean): Successor {
  const primary = input.topology.primary;
  if (input.synchronous && !planned) {
    const q = failoverQuorum({
      standbys: input.members.filter((m) => m.pod !== primary),
      confirmations: input.synchronous.confirmations,
      systemId: input.systemId,
    });
    if (!q.reached) {
      const why = `synchronous: a failover needs ${q.needed} standby(s) to answer so that one of them provably holds every acknowledged commit; ${q.answered.length} answer, waiting for ${q.silent.join(', ')}`;
      const quorum = { silent: q.silent, answered: q.answered.map((m) => m.pod), needed: q.needed };
      return (
        forced(input, `${q.silent.join(', ')} did not answer and may hold acknowledged commits it lacks`) ?? {
          why,
          quorum,
        }
      );
    }
    const top = q.mostAdvanced.server!;
    const member = bestStandby(input, primary, (m) => m.server!.lsn >= top.lsn);
    if (member) return { member };
    const why = `synchronous: ${q.mostAdvanced.pod} holds the most recent commits but cannot take over (it is being removed); waiting for it`;
    return forced(input, `${q.mostAdvanced.pod} holds commits it lacks`) ?? { why };
  }
  const seen = input.lastAnswer;
  const member = bestStandby(
    input,
    primary,
    (m) => !seen || seen.followers.has(m.pod) || (!planned && m.server!.lsn >= seen.lsn),
  );
  if (member || planned) return { member };
  if (!seen || !bestStandby(input, primary))
    return { why: `primary ${primary} is not serving, and no standby can take over` };
  const why = `primary ${primary} is not serving, and no standby streamed from it or holds its last writes: waiting for it to return`;
  return forced(input, `writes the lost primary made after position ${seen.lsn} may be missing`) ?? { why };
}

/** The standby a person forces to take over, when it can (an answering standby that stays). */
function forced(input: PlanInput, risk: string): Successor | undefined {
  const pod = input.forcePromote;
  const member = pod ? bestStandby(input, input.topology.primary, (m) => m.pod === pod) : undefined;
  if (!member) return undefined;
  return {
    member,
    forced: `${member.pod} takes over by a person's order, at position ${member.server!.lsn}, without proof that it holds every acknowledged write: ${risk}; any such write is lost`,
  };
}

export function plan(input: PlanInput): Plan {
  const { topology } = input;
  const named = input.members.find((m) => m.pod === topology.primary);
  const writable = input.members.filter((m) => m.server?.writable);
  const result: Plan = {
    step: undefined,
    roles: new Map(),
    currentPrimary: undefined,
    servingPrimary: undefined,
    unobserved: input.members.filter(unobserved).map((m) => m.pod),
    waiting: undefined,
    recheckInMs: undefined,
  };
  const primaryServer = named?.server?.writable ? named : undefined;
  // The named primary, unobserved, keeps serving by the kubelet's word while it carries the label.
  const keptPrimary =
    !primaryServer && named && unobserved(named) && named.label === 'primary' ? named : undefined;
  for (const m of input.members) result.roles.set(m.pod, roleOf(m, primaryServer ?? keptPrimary, input));
  result.servingPrimary = primaryServer?.pod ?? keptPrimary?.pod;

  // Another writable instance than the named one is fenced first, whatever else is going on:
  // a former primary (after a switchover or failover), or one that started writable by mistake.
  const stray = writable.find((m) => m.pod !== topology.primary);
  if (stray) {
    result.roles.set(stray.pod, undefined);
    if (stray.uid && !stray.deleting)
      result.step = {
        kind: 'fence',
        pod: stray.pod,
        uid: stray.uid,
        // A planned move lets the old primary shut down cleanly: fast shutdown sends its last WAL.
        graceful: stray.ready,
        message: `${stray.pod} is writable but ${topology.primary} is the primary: stopping it so it rejoins as a standby`,
      };
    else result.waiting = `waiting for ${stray.pod} to stop before ${topology.primary} is promoted`;
    if (primaryServer) result.currentPrimary = primaryServer.pod;
    return result;
  }

  // The primary's Pod is being deleted (by a person, a drain, a rollout): it hands over now, not
  // after the failover delay, so that the Pod the StatefulSet makes next reads the new name and
  // starts as a standby. The old one keeps writing until it stops; the stray rule above waits for that.
  if (named?.deleting && topology.initialized) {
    const best = successor(input, true).member;
    if (!best && bestStandby(input, topology.primary))
      result.waiting = `primary ${topology.primary} is being deleted, and no standby streamed from it: it is not handed over`;
    if (best) {
      result.currentPrimary = primaryServer?.pod;
      result.step = {
        kind: 'topology',
        topology: { ...topology, primary: best.pod },
        reason: 'Failover',
        message: `primary ${topology.primary} is being deleted: ${best.pod}, the most advanced standby, takes over`,
      };
      return result;
    }
  }

  if (primaryServer) {
    result.currentPrimary = primaryServer.pod;
    if (!topology.initialized) {
      result.step = {
        kind: 'topology',
        topology: { ...topology, initialized: true },
        reason: 'Initialized',
        message: `${primaryServer.pod} initialised the data set and is the primary`,
      };
      return result;
    }
    const target = switchoverTarget(input, primaryServer);
    const requested = input.switchoverTo;
    if (target && 'refuse' in target) {
      result.step = { kind: 'refuseSwitchover', message: target.refuse };
      result.switchover = { target: requested!, state: 'Refused', message: target.refuse };
    } else if (target && 'wait' in target) {
      // A handover pending: nothing else moves the primary meanwhile (a rolling update included).
      result.waiting = target.wait;
      result.recheckInMs = target.inMs;
      if (requested) result.switchover = { target: requested, state: 'Waiting', message: target.wait };
    } else if (target) {
      result.step = {
        kind: 'topology',
        topology: { ...topology, primary: target.member.pod },
        reason: 'Switchover',
        message: target.why,
      };
      if (requested === target.member.pod)
        result.switchover = { target: requested, state: 'Started', message: target.why };
    } else if (!restartStoppedReplica(input, primaryServer, result))
      rollingUpdate(input, primaryServer, result);
    return result;
  }

  // No writable primary. While the cluster was never initialised there is nothing to take over.
  if (!topology.initialized) {
    result.waiting = `waiting for ${topology.primary} to initialise the data set`;
    return result;
  }
  // A primary fenced on purpose stopped on a person's order: nothing takes over, and no instance
  // accepts writes until it is unfenced (then it starts again as the primary).
  if (input.fenced?.has(topology.primary) && !named?.deleting) {
    result.waiting = `primary ${topology.primary} is fenced: no instance accepts writes until it is unfenced`;
    return result;
  }
  // The named one runs as a standby (just named, or restarted): promote it once no other can write.
  if (named?.server && !named.deleting) {
    if (input.systemId && named.server.systemId !== input.systemId) {
      result.waiting = `${named.pod} holds another data set (system ${named.server.systemId}); not promoted`;
      return result;
    }
    // Every other Pod started before the name changed, and not confirmed a standby, could still
    // write (a former primary that does not answer): it is stopped, and its Pod gone, first. A Pod
    // is deleted gracefully, so its object goes only once the kubelet has stopped its containers.
    const blocked = leaseBlocks(input, named.pod) ?? failsafeBlocks(input, named.pod);
    // A person ordered this promotion: the old primary that may still serve in failsafe is
    // stopped, not waited for. Its Pod goes once the kubelet has killed its containers (a hung
    // server too); its successor reads the new name, and then nothing can serve with it.
    const order =
      blocked?.old && input.forcePromote === named.pod
        ? forcedFence(input, blocked.old, named.pod)
        : undefined;
    if (order && 'fence' in order) {
      result.step = order.fence;
      return result;
    }
    if (blocked) {
      result.waiting = order?.wait ?? blocked.why;
      result.recheckInMs = order ? undefined : blocked.inMs;
      return result;
    }
    // With the agents' Lease clear, whoever could still write has fenced itself: a Pod being
    // deleted is not waited for (on a lost node the kubelet never confirms). Any other is still
    // stopped first, as without the Lease.
    const leased = input.primaryLease !== undefined;
    const unsafe = input.members.find(
      (m) =>
        m.pod !== named.pod &&
        m.uid &&
        !(m.server && !m.server.writable) &&
        startedBefore(m, topology) &&
        !(leased && m.deleting),
    );
    // A clean shutdown first sends its standbys every write: while the one taking over still
    // receives (a target that was behind, catching up), the shutdown is doing its work, and cutting
    // it short would lose what is not sent yet. Patience counts from when it last received.
    const quietSince = Math.max(unsafe?.deletingSince ?? input.now, named.positionMovedAt ?? 0);
    const stoppingFor = unsafe?.deletingSince !== undefined ? input.now - quietSince : 0;
    if (
      unsafe?.deleting &&
      (unsafe.deletionGraceSeconds ?? 0) > FENCE_GRACE_SECONDS &&
      stoppingFor >= SHUTDOWN_PATIENCE_MS
    ) {
      // A deletion with the Pod's whole grace (a user's delete, a drain, a switchover's fence)
      // runs its preStop shutdown. A clean one ends in seconds, having sent the replicas every
      // write; one that outlasts that hangs (a server restarting in place, in recovery), and the
      // promotion, and every client's writes, would wait out the whole grace. Deleting again
      // shortens it.
      result.step = {
        kind: 'fence',
        pod: unsafe.pod,
        uid: unsafe.uid!,
        graceful: false,
        message: `${unsafe.pod} does not answer and is still stopping ${Math.round((input.now - unsafe.deletingSince!) / 1000)} s into its ${unsafe.deletionGraceSeconds} s grace period, ${named.pod} having received nothing from it for ${Math.round(stoppingFor / 1000)} s: shortening it to ${FENCE_GRACE_SECONDS} s before ${named.pod} is promoted`,
      };
      return result;
    }
    if (unsafe?.deleting && (unsafe.deletionGraceSeconds ?? 0) > FENCE_GRACE_SECONDS) {
      result.waiting = `waiting for ${unsafe.pod} to stop before ${named.pod} is promoted`;
      result.recheckInMs = SHUTDOWN_PATIENCE_MS - stoppingFor;
      return result;
    }
    if (unsafe?.deleting) {
      result.waiting = `waiting for ${unsafe.pod} to stop before ${named.pod} is promoted`;
      return result;
    }
    if (unsafe) {
      result.step = {
        kind: 'fence',
        pod: unsafe.pod,
        uid: unsafe.uid!,
        graceful: false,
        message: `${unsafe.pod} does not answer and started before ${named.pod} became the primary: stopping it before the promotion`,
      };
      return result;
    }
    result.step = {
      kind: 'promote',
      pod: named.pod,
      ...(input.primaryLease ? { lease: input.primaryLease } : {}),
    };
    return result;
  }
  // The named one's Lease expired, watched by this manager without a gap: its agent stopped it
  // acknowledging writes before that, or the agent itself is gone (a lost node, a hung container).
  // The Lease's duration was the wait, so the failover delay does not run again.
  const leaseLost = leaseLostBy(input, topology.primary);
  // The named one's Pod is Ready, but its server did not answer this manager: the manager may be
  // the one cut off. The kubelet, beside the instance, is the better witness; a failover now could
  // leave two primaries, or take a serving one down. A hang or a crash makes the Pod not ready.
  if (named && unobserved(named) && !leaseLost) {
    result.waiting = `the manager cannot reach ${named.pod}, whose Pod is Ready: nothing fails over on this manager's word alone`;
    return result;
  }
  // The named one is gone or not ready: fail over once it has been so for the delay,
  // if a standby can take over at all (one instance waits for its Pod to come back).
  const chosen = successor(input, false);
  const since = named?.troubleSince ?? input.now;
  const left = since + input.failoverDelayMs - input.now;
  const delayRuns = left > 0 && !leaseLost;
  const best = chosen.member;
  if (!best) {
    result.waiting = chosen.why;
    if (delayRuns) result.recheckInMs = left;
    // Reported (condition, Event, metric) once the failover is due, not while the delay runs.
    else result.quorum = chosen.quorum;
    return result;
  }
  if (delayRuns) {
    // A message that stays the same while the delay runs: the status is not rewritten each poll.
    result.waiting = `primary ${topology.primary} lost; ${best.pod} takes over at ${new Date(since + input.failoverDelayMs).toISOString()} unless it returns`;
    result.recheckInMs = left;
    return result;
  }
  result.step = {
    kind: 'topology',
    topology: { ...topology, primary: best.pod },
    reason: chosen.forced ? 'ForcedFailover' : 'Failover',
    message:
      chosen.forced ??
      (leaseLost
        ? `primary ${topology.primary} lost: its primary Lease expired unrenewed; ${best.pod}, the most advanced standby, takes over`
        : `primary ${topology.primary} lost for ${Math.round((input.now - since) / 1000)} s: ${best.pod}, the most advanced standby, takes over`),
  };
  return result;
}

/** Whether the primary Lease, held by `pod`, expired unrenewed by this manager's own watch. */
function leaseLostBy(input: PlanInput, pod: string): boolean {
  const lease = input.primaryLease;
  return lease?.state === 'expired' && lease.holder === pod;
}

/** Why a standby is not promoted yet; `old`: the old primary that may still serve in failsafe. */
interface Blocked {
  why: string;
  inMs?: number;
  old?: string;
}

/**
 * Why the Lease keeps `pod` from being promoted now, or undefined when it does not: nobody holds
 * it, its holder let it expire or already is `pod`, or its holder's Pod object is gone (the kubelet
 * stopped its containers). A Lease this manager could not read keeps everything still.
 */
function leaseBlocks(input: PlanInput, pod: string): Blocked | undefined {
  const lease = input.primaryLease;
  if (!lease) return undefined;
  switch (lease.state) {
    case 'free':
    case 'expired':
      return undefined;
    case 'unknown':
      return { why: `the primary Lease could not be read: ${pod} is not promoted until it is` };
    case 'held': {
      if (lease.holder === pod) return undefined;
      const holder = input.members.find((m) => m.pod === lease.holder);
      if (holder && !holder.uid) return undefined;
      return {
        why: `${lease.holder} holds the primary Lease: ${pod} is promoted once it is released or expires (in ${Math.ceil(lease.expiresInMs / 1000)} s unless renewed)`,
        inMs: lease.expiresInMs,
      };
    }
  }
}

/**
 * Why an old primary in failsafe may still serve, keeping `pod` from being promoted: its Lease
 * expired, but its agent keeps it up while a majority of the instances (itself included) is in
 * touch with it. It cannot have one once so many of the others have been out of touch with it for
 * OUT_OF_TOUCH_MARGIN_MS that at most half the instances remain: itself and the rest, which this
 * manager either cannot see or sees following it. Two majorities always share an instance, so the
 * old primary and the promoted one never both serve.
 */
function failsafeBlocks(input: PlanInput, pod: string): Blocked | undefined {
  const lease = input.primaryLease;
  if (!input.primaryFailsafe || lease?.state !== 'expired' || lease.holder === pod) return undefined;
  const old = lease.holder;
  // The Pod that held the Lease is gone, or replaced by one that read the new primary's name.
  const holder = input.members.find((m) => m.pod === old);
  if (holder && (!holder.uid || !startedBefore(holder, input.topology))) return undefined;
  const others = input.members.filter((m) => m.pod !== old && m.ordinal < input.replicas);
  // A Pod that no longer exists runs no engine (its containers stopped before its object went).
  const out = (m: Member) =>
    !m.uid || (m.outOfTouchSince !== undefined && input.now - m.outOfTouchSince >= OUT_OF_TOUCH_MARGIN_MS);
  const maybeInTouch = others.filter((m) => !out(m));
  if (1 + maybeInTouch.length <= input.replicas / 2) return undefined;
  const soonest = Math.min(
    ...maybeInTouch
      .filter((m) => m.outOfTouchSince !== undefined)
      .map((m) => m.outOfTouchSince! + OUT_OF_TOUCH_MARGIN_MS - input.now),
  );
  return {
    why: `${old}'s primary Lease expired, but ${maybeInTouch.map((m) => m.pod).join(', ')} may still be in touch with it, which keeps it serving with a majority: ${pod} is promoted once ${old} cannot have one`,
    ...(Number.isFinite(soonest) ? { inMs: Math.max(1, soonest) } : {}),
    old,
  };
}

/**
 * What a person's order to promote `pod` does about `old`, which may still serve in failsafe:
 * stops it, or, while its Pod is being deleted, waits for the kubelet to confirm. On a lost node
 * that never comes; only a person who knows the node is down can end it (a forced Pod delete).
 */
function forcedFence(
  input: PlanInput,
  old: string,
  pod: string,
): { fence: Step } | { wait: string } | undefined {
  const holder = input.members.find((m) => m.pod === old);
  if (!holder?.uid) return undefined;
  if (holder.deleting)
    return {
      wait: `by a person's order ${pod} is promoted once ${old}, which may still serve without its Lease, has stopped; should its node be lost, only deleting its Pod with --force, once the node is known to be down, ends the wait`,
    };
  return {
    fence: {
      kind: 'fence',
      pod: old,
      uid: holder.uid,
      graceful: false,
      message: `by a person's order to promote ${pod}: stopping ${old}, whose expired Lease may still let it serve with instances this manager cannot see, before the promotion`,
    },
  };
}

/**
 * A replica whose replication stopped for good on an error (a transaction from a former primary
 * that the new one never had; a statement its data refused) stays stopped: the server retries
 * nothing, and every minute it falls further behind. Once it has followed no primary for
 * STOPPED_REPLICA_RESTART_MS it is restarted, one at a time: its start checks its history
 * against the primary's, and it rejoins, or is cloned afresh or kept out as
 * spec.replication.divergedData says. The error goes into the message, and so into the Event.
 */
function restartStoppedReplica(input: PlanInput, primary: Member, result: Plan): boolean {
  const stopped = input.members.find(
    (m) =>
      m !== primary &&
      m.uid &&
      !m.deleting &&
      m.server?.replicationError?.fatal &&
      m.outOfTouchSince !== undefined &&
      input.now - m.outOfTouchSince >= STOPPED_REPLICA_RESTART_MS,
  );
  if (!stopped) return false;
  result.step = {
    kind: 'replace',
    pod: stopped.pod,
    uid: stopped.uid!,
    reason: 'ReplicationStopped',
    message: `${stopped.pod} stopped replicating from ${primary.pod} ${Math.round((input.now - stopped.outOfTouchSince!) / 1000)} s ago (${stopped.server!.replicationError!.message}): restarting it, so that it rejoins, or is cloned afresh as spec.replication.divergedData allows`,
  };
  return true;
}

/**
 * A new template reaches the replicas first, one at a time, each once every
 * instance serves again (the previous one streams within the lag bound); then
 * the primary hands over once, to the most advanced updated replica, and its
 * Pod, fenced by the switchover, comes back from the new template as a replica.
 */
function rollingUpdate(input: PlanInput, primary: Member, result: Plan): void {
  const staying = input.members.filter((m) => m.ordinal < input.replicas);
  const outdated = staying.filter((m) => m.outdated);
  if (!outdated.length) return;
  const unsettled = staying.find((m) => !m.uid || m.deleting || !result.roles.get(m.pod));
  if (unsettled) {
    result.waiting = `rolling update: waiting for ${unsettled.pod} to serve before the next instance is replaced`;
    return;
  }
  const replica = outdated.filter((m) => m !== primary).sort((a, b) => b.ordinal - a.ordinal)[0];
  if (replica) {
    result.step = {
      kind: 'replace',
      pod: replica.pod,
      uid: replica.uid!,
      message: `rolling update: replacing replica ${replica.pod} (${outdated.length} of ${staying.length} instances to go, the primary last)`,
      reason: 'RollingUpdate',
    };
    return;
  }
  let best: Member | undefined;
  for (const m of staying)
    if (m !== primary && !m.outdated && m.server?.streaming && (!best || moreAdvanced(m, best))) best = m;
  if (!best) return;
  result.step = {
    kind: 'topology',
    topology: { ...input.topology, primary: best.pod },
    reason: 'Switchover',
    message: `rolling update: every replica runs the new template; ${primary.pod} hands the primary role to ${best.pod}, then is replaced`,
  };
}

/**
 * Whether the Pod may have started before the topology last changed, reading the previous
 * primary's name: unless it was created a whole second after the change was written (creation
 * times are whole seconds, rounded down), well past the kubelet's watch of the ConfigMap.
 */
function startedBefore(m: Member, t: Topology): boolean {
  if (t.since === undefined || m.createdAt === undefined) return true;
  return m.createdAt < t.since + 1000;
}

/** A Pod the kubelet reports Ready, not being deleted, whose server did not answer this manager. */
const unobserved = (m: Member): boolean => m.ready && !m.deleting && !!m.uid && !m.server;

/**
 * The role label an instance should carry. What its server answered decides; an unobserved one
 * (see Plan.unobserved) keeps the label it has, a replica's only while no answer contradicts it,
 * and never gains one: no instance is put behind a Service on this manager's guess.
 */
function roleOf(m: Member, primary: Member | undefined, input: PlanInput): Role | undefined {
  if (input.fenced?.has(m.pod)) return undefined;
  if (m.ordinal >= input.replicas && m !== primary) return undefined;
  if (unobserved(m)) {
    if (m === primary) return 'primary';
    return m.label === 'replica' && m.pod !== input.topology.primary ? 'replica' : undefined;
  }
  if (!m.ready || m.deleting || !m.server) return undefined;
  if (m === primary) return 'primary';
  const s = m.server;
  if (s.writable || !s.streaming || !primary) return undefined;
  if (input.systemId && s.systemId !== input.systemId) return undefined;
  // A streaming replica of a primary this manager cannot reach: its lag can't be measured, so it
  // keeps the label it has, and gains none.
  if (!primary.server) return m.label === 'replica' ? 'replica' : undefined;
  // Within the lag bound of the primary's write position, or it serves stale reads.
  return primary.server.lsn - s.replayLsn <= input.maxLag ? 'replica' : undefined;
}

/** Where a running primary should move: a requested switchover, or off an ordinal being scaled away. */
function switchoverTarget(
  input: PlanInput,
  primary: Member,
): { member: Member; why: string } | { refuse: string } | { wait: string; inMs: number } | undefined {
  const requested = input.switchoverTo;
  if (requested && requested !== primary.pod) {
    const m = input.members.find((x) => x.pod === requested);
    if (!m || m.ordinal >= input.replicas)
      return { refuse: `switchover to ${requested}: no such instance among the ${input.replicas} replicas` };
    if (input.fenced?.has(requested)) return { refuse: `switchover to ${requested}: it is fenced` };
    // The old primary's clean shutdown sends the target what it lacks; one far behind would keep
    // the primary role unserved that long. The primary keeps serving instead, while the target is
    // given switchoverCatchUpMs to stream within the lag bound (a standby that reconnects, as one
    // does after a pause, counts as catching up).
    const catchUpMs = input.switchoverCatchUpMs ?? 0;
    const waited = input.now - (input.switchoverRequestedAt ?? input.now);
    const streaming = m.server?.streaming === true && m.ready;
    const behind = m.server ? primary.server!.lsn - m.server.lsn : undefined;
    if (streaming && behind! <= input.maxLag)
      return { member: m, why: `switchover requested: ${primary.pod} hands the primary role to ${m.pod}` };
    const lacking = streaming
      ? `${behind} behind the primary, beyond the lag bound (${input.maxLag})`
      : 'not a ready, streaming standby';
    if (waited < catchUpMs)
      return {
        wait: `switchover to ${requested} waits for it to catch up: ${lacking}; ${primary.pod} keeps serving, for up to ${Math.ceil((catchUpMs - waited) / 1000)} s more`,
        // Looked at again soon: the target's position moves without any event.
        inMs: Math.min(catchUpMs - waited, 2000),
      };
    return {
      refuse: `switchover to ${requested}: it is ${lacking}${catchUpMs ? `, after ${Math.round(waited / 1000)} s to catch up` : ''}; the primary keeps serving: request it again once it has caught up`,
    };
  }
  if (primary.ordinal >= input.replicas) {
    const best = bestStandby(input, primary.pod);
    const streaming = best?.server?.streaming === true && best.ready;
    const behind = best?.server ? primary.server!.lsn - best.server.lsn : undefined;
    if (best && streaming && behind! <= input.maxLag)
      return {
        member: best,
        why: `scaling to ${input.replicas}: the primary moves off ${primary.pod}, which is removed, to ${best.pod}`,
      };
    // No deadline: the primary keeps serving, and its Pod stays, until a standby can take over
    // without losing a write. Status says which and why.
    const lacking = !best
      ? 'no standby among them'
      : streaming
        ? `${best.pod}, the most advanced standby, is ${behind} behind the primary, beyond the lag bound (${input.maxLag})`
        : `${best.pod}, the most advanced standby, is not a ready, streaming standby`;
    return {
      wait: `scaling to ${input.replicas}: ${primary.pod}, the primary, is removed once a standby that stays can take over without losing a write, and ${lacking}; ${primary.pod} keeps serving`,
      // Looked at again soon: a standby's position moves without any event.
      inMs: 2000,
    };
  }
  return undefined;
}

/** The instances, other than the primary, among the first `replicas`, that do not serve as replicas now. */
export function notReplicating(
  members: readonly Member[],
  roles: ReadonlyMap<string, Role | undefined>,
  primary: string,
  replicas: number,
): string[] {
  return members
    .filter((m) => m.pod !== primary && m.ordinal < replicas && roles.get(m.pod) !== 'replica')
    .map((m) => m.pod);
}
