import { realClock, type Clock } from '@regulon/util';
import type { Member, Plan, PrimaryAnswer, Role, Server } from './plan.ts';
import { PrimaryLeaseView } from './primary-lease.ts';

/** The longest gap between two reads of a primary Lease that still counts as watching it (above the 10 s steady requeue). */
export const LEASE_WATCH_GAP_MS = 12_000;

/**
 * How often an owner whose instances hold a primary Lease is reconciled at the least. The manager
 * judges the Lease expired a whole duration after it first saw its last renewal, so a read every
 * 10 s could see that renewal up to 10 s late, and a lost node fail over that much later (29 s of
 * the 30 s goal in CI); read every 5 s, the expiry is seen at most 5 s late.
 */
export const LEASE_READ_INTERVAL_MS = 5_000;

/**
 * What this manager remembers of each replicated owner between reconciles:
 * since when each instance has been in trouble, and what the primary was
 * the last time it answered. Kept in memory only: a new leader starts
 * afresh, so it waits longer, and hands over as a manager without memory does.
 * An owner's entries (a set of Pod names, a number) stay after it is deleted,
 * until the manager restarts: small enough not to need the owner's deletion.
 */
export class ReplicationMemory {
  readonly #troubleSince = new Map<string, number>();
  readonly #lastAnswer = new Map<string, { primary: string; seen: PrimaryAnswer }>();
  readonly #leases = new Map<string, PrimaryLeaseView>();
  readonly #outOfTouchSince = new Map<string, number>();
  readonly #advanced = new Map<string, { lsn: bigint; at: number }>();
  readonly #requests = new Map<string, { request: string; since: number }>();
  readonly #clock: Clock;

  constructor(clock: Clock = realClock) {
    this.#clock = clock;
  }

  /**
   * This manager's view of an owner's primary Lease, fed by each reconcile's
   * read. A replicated owner is reconciled at least every 10 s (requeueAfter),
   * more often while anything is amiss, so a gap above LEASE_WATCH_GAP_MS means
   * this manager was not watching (see PrimaryLeaseView).
   */
  primaryLease(owner: string): PrimaryLeaseView {
    let view = this.#leases.get(owner);
    if (!view) this.#leases.set(owner, (view = new PrimaryLeaseView(this.#clock, LEASE_WATCH_GAP_MS)));
    return view;
  }

  /**
   * Since when this manager has seen `request` (a switchover's target) asked of `owner`: first
   * seen, or `now` for a new one. Undefined `request` (none asked) forgets it. A new manager
   * starts the clock again.
   */
  requestedSince(owner: string, request: string | undefined, now: number): number | undefined {
    if (request === undefined) {
      this.#requests.delete(owner);
      return undefined;
    }
    const seen = this.#requests.get(owner);
    if (seen?.request === request) return seen.since;
    this.#requests.set(owner, { request, since: now });
    return now;
  }

  /** When the trouble of instance `key` began, as first marked (`now` if not yet). */
  markTrouble(key: string, now: number): number {
    const t = this.#troubleSince.get(key);
    if (t !== undefined) return t;
    this.#troubleSince.set(key, now);
    return now;
  }
  clearTrouble(key: string): void {
    this.#troubleSince.delete(key);
  }

  /**
   * When instance `key`'s position (what it received, or wrote) was last seen to move: first seen,
   * or changed since the last answer. Kept while it does not answer; undefined before it ever did.
   */
  positionMovedAt(key: string, server: Server | undefined, now: number): number | undefined {
    const known = this.#advanced.get(key);
    if (!server) return known?.at;
    if (known?.lsn === server.lsn) return known.at;
    this.#advanced.set(key, { lsn: server.lsn, at: now });
    return now;
  }

  /**
   * Since when (first seen) instance `key` has answered as a standby that
   * follows no primary, or undefined when it answers following one, or does
   * not answer: an instance this manager cannot see may still be in touch
   * with the primary.
   */
  outOfTouch(key: string, server: Server | undefined, now: number): number | undefined {
    if (!server || server.writable || server.streaming) {
      this.#outOfTouchSince.delete(key);
      return undefined;
    }
    const t = this.#outOfTouchSince.get(key);
    if (t !== undefined) return t;
    this.#outOfTouchSince.set(key, now);
    return now;
  }

  /**
   * What the named primary said the last time it answered, refreshed from
   * `members` whenever it answers writable now. Undefined while this manager
   * has never seen it answer (a failover then falls back to the most advanced
   * standby).
   */
  lastAnswer(owner: string, primary: string, members: readonly Member[]): PrimaryAnswer | undefined {
    const named = members.find((m) => m.pod === primary);
    if (named?.server?.writable) {
      const followers = new Set(
        members
          .filter((m) => m !== named && m.server && !m.server.writable && m.server.streaming)
          .map((m) => m.pod),
      );
      const seen = { lsn: named.server.lsn, followers };
      this.#lastAnswer.set(owner, { primary, seen });
      return seen;
    }
    const known = this.#lastAnswer.get(owner);
    if (known?.primary === primary) return known.seen;
    // Another instance is named now: what its predecessor said would be stale if the role came back.
    this.#lastAnswer.delete(owner);
    return undefined;
  }
}

/** The parts of a Pod an instance's Member is made from (a V1Pod has them). */
export interface InstancePod {
  metadata?:
    | {
        name?: string | undefined;
        uid?: string | undefined;
        labels?: Record<string, string> | undefined;
        creationTimestamp?: Date | string | undefined;
        deletionTimestamp?: Date | string | undefined;
        deletionGracePeriodSeconds?: number | undefined;
      }
    | undefined;
  status?:
    | {
        conditions?:
          Array<{ type: string; status: string; lastTransitionTime?: Date | string | undefined }> | undefined;
      }
    | undefined;
}

/** The Pod label that carries each instance's role: the client Services select on it. */
export const ROLE_LABEL = 'regulon.dev/role';

/** `<prefix>-<ordinal>`: a StatefulSet's Pod, not another Pod (a backup Job's) that carries the same labels. */
export function isInstancePod(owner: string, pod: string | undefined): boolean {
  const prefix = `${owner}-`;
  return !!pod?.startsWith(prefix) && /^\d+$/.test(pod.slice(prefix.length));
}

export const podReady = (pod: InstancePod): boolean =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const ms = (t: Date | string | undefined) => (t ? new Date(t).getTime() : undefined);

/**
 * One instance as plan() sees it: its Pod (undefined when missing), what its
 * server answered (undefined: unreachable), and since when it has been in
 * trouble, counted by `memory` under `key` (`<owner uid>/<instance>`).
 */
export function memberOf(o: {
  name: string;
  ordinal: number;
  pod: InstancePod | undefined;
  server: Server | undefined;
  memory: ReplicationMemory;
  key: string;
  now: number;
  outdated: boolean;
}): Member {
  const { pod, server, memory, key, now } = o;
  const ready = pod ? podReady(pod) : false;
  let troubleSince: number | undefined;
  // The kubelet, beside the instance, says whether it serves: a Ready Pod whose server does not
  // answer this manager is not in trouble by that alone (the manager may be the one cut off;
  // plan() keeps its role). A hang or a crash fails its readiness probe. A Pod being deleted is
  // going away: its trouble counts from when this manager saw it so.
  const deleting = !!pod?.metadata?.deletionTimestamp;
  if (ready && (!deleting || server !== undefined)) memory.clearTrouble(key);
  else {
    // The kubelet's word on when it stopped serving: only a Ready=False condition says so.
    const readyCondition = pod?.status?.conditions?.find((c) => c.type === 'Ready');
    const notReadySince =
      pod && !ready
        ? readyCondition?.status === 'False'
          ? ms(readyCondition.lastTransitionTime)
          : ms(pod.metadata?.creationTimestamp)
        : undefined;
    troubleSince = Math.min(memory.markTrouble(key, now), notReadySince ?? now);
  }
  const meta = pod?.metadata;
  return {
    pod: o.name,
    ordinal: o.ordinal,
    uid: meta?.uid,
    createdAt: ms(meta?.creationTimestamp),
    deleting,
    deletionGraceSeconds: meta?.deletionGracePeriodSeconds,
    // The API server sets deletionTimestamp to the deletion's time plus its grace.
    deletingSince:
      meta?.deletionTimestamp && meta.deletionGracePeriodSeconds !== undefined
        ? ms(meta.deletionTimestamp)! - meta.deletionGracePeriodSeconds * 1000
        : undefined,
    ready,
    troubleSince,
    label: roleLabel(meta?.labels?.[ROLE_LABEL]),
    server,
    outOfTouchSince: memory.outOfTouch(key, server, now),
    positionMovedAt: memory.positionMovedAt(key, server, now),
    outdated: o.outdated,
  };
}

const roleLabel = (v: string | undefined): Role | undefined =>
  v === 'primary' || v === 'replica' ? v : undefined;

/** The parts of a StatefulSet its rollout revision is read from (a V1StatefulSet has them). */
export interface RollingStatefulSet {
  metadata?: { generation?: number | undefined } | undefined;
  spec?: { updateStrategy?: { type?: string | undefined } | undefined } | undefined;
  status?: { observedGeneration?: number | undefined; updateRevision?: string | undefined } | undefined;
}

/**
 * The template revision the Pods should run, when the manager replaces them
 * itself (OnDelete) and the StatefulSet controller has seen its latest spec.
 * Read it from the API server, not a cache: a revision a moment old would have
 * an up-to-date Pod replaced for nothing.
 */
export function rollingRevision(sts: RollingStatefulSet | undefined): string | undefined {
  if (sts?.spec?.updateStrategy?.type !== 'OnDelete') return undefined;
  if ((sts.status?.observedGeneration ?? 0) < (sts.metadata?.generation ?? 0)) return undefined;
  return sts.status?.updateRevision;
}

/** The label the StatefulSet controller sets on each Pod: the revision of the template it was made from. */
export const REVISION_LABEL = 'controller-revision-hash';

/** Whether a Pod runs an older template than `updateRevision` (undefined: no rolling update is known). */
export function outdated(pod: InstancePod | undefined, updateRevision: string | undefined): boolean {
  return (
    updateRevision !== undefined &&
    pod !== undefined &&
    pod.metadata?.labels?.[REVISION_LABEL] !== updateRevision
  );
}

/** The role label changes the plan asks for: Pods whose label differs (a deleting Pod is left as it is). */
export function roleLabelChanges(
  pods: ReadonlyMap<string, InstancePod>,
  roles: ReadonlyMap<string, Role | undefined>,
  label: string,
): Array<{ pod: string; role: Role | null }> {
  const changes: Array<{ pod: string; role: Role | null }> = [];
  for (const [name, pod] of pods) {
    const want = roles.get(name) ?? null;
    if ((pod.metadata?.labels?.[label] ?? null) === want || pod.metadata?.deletionTimestamp) continue;
    changes.push({ pod: name, role: want });
  }
  return changes;
}

/** When to reconcile again: soon after a step, when a delay runs out, while waiting, else a slow poll. */
export function requeueAfter(p: Plan): number {
  if (p.step) return 500;
  if (p.recheckInMs !== undefined) return Math.min(p.recheckInMs + 100, 5000);
  return p.waiting ? 2000 : 10_000;
}
