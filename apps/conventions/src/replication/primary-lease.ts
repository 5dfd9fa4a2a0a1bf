// The primary Lease from the manager's side (the instance agent holds it; see
// apps/instance-agent). Two rules make a promotion safe while the old
// primary's Pod object, or the old primary itself, may still exist:
//  - The manager judges the Lease expired only after it has itself seen the
//    record stay unchanged for the Lease's duration, without a gap in its
//    view longer than `maxBlindMs`: a manager that could not read the Lease
//    (its API server connection down, the process paused) has not seen it
//    unrenewed, so that time never counts. This is the elector's rule of
//    @regulon/runtime, plus the gap: after an API-server outage, the holder
//    and the manager both reconnect, and the holder's next renewal comes
//    before the manager can have watched a full duration.
//  - The promotion target is written into the Lease before it is promoted,
//    as a compare-and-swap on the resourceVersion the manager judged: if the
//    old holder renewed in between, the write conflicts and nothing is
//    promoted.
import { isAlreadyExists, isConflict, isNotFound, Kinds, retyped, type KubeClient } from '@regulon/client';
import { leaseRecordKey, microTime, type Lease, type LeaseSpec } from '@regulon/runtime';
import type { Clock } from '@regulon/util';

/** The primary Lease is a plain coordination.k8s.io/v1 Lease, as the agent's elector writes it. */
export type PrimaryLease = Lease;

/** The primary Lease's name for a Database or Cache. */
export const primaryLeaseName = (owner: string): string => `${owner}-primary`;

/** The duration written into a primary Lease: the agents' default (15 s, renewed within 10 s). */
export const PRIMARY_LEASE_SECONDS = 15;

/** What the manager may conclude about the Lease now. */
export type LeaseJudgement =
  /** Nobody holds it: never created, or released (holder cleared). */
  | { state: 'free'; resourceVersion: string | undefined }
  /** `holder` holds it, as far as the manager can tell: not seen unrenewed for its whole duration. */
  | { state: 'held'; holder: string; expiresInMs: number; resourceVersion: string }
  /** `holder` has not renewed for its whole duration, watched without a gap: it has fenced itself. */
  | { state: 'expired'; holder: string; resourceVersion: string }
  /** Not read yet, or not read recently enough to judge. */
  | { state: 'unknown' };

/** The record's content (what a renewal changes), or a marker for an absent Lease. */
const recordKey = (lease: PrimaryLease | undefined): string =>
  lease ? leaseRecordKey(lease.spec ?? {}) : '<absent>';

/**
 * One manager's view of one primary Lease, fed by its reads (observe()), on
 * the manager's monotonic clock. Wall-clock times in the record are never
 * compared with the manager's clock.
 */
export class PrimaryLeaseView {
  readonly #clock: Clock;
  readonly #maxBlindMs: number;
  #lease: PrimaryLease | undefined;
  #key: string | undefined;
  /** When (manager's clock) the record was first seen as it is now, or last seen after a gap. */
  #since = 0;
  #lastSeen: number | undefined;

  /** `maxBlindMs`: the longest gap between two reads that still counts as watching. */
  constructor(clock: Clock, maxBlindMs: number) {
    if (!(maxBlindMs > 0)) throw new RangeError('primary lease view: maxBlindMs must be > 0');
    this.#clock = clock;
    this.#maxBlindMs = maxBlindMs;
  }

  /** Records a read: the Lease as the API server returned it, or undefined when it does not exist. */
  observe(lease: PrimaryLease | undefined): void {
    const now = this.#clock.now();
    const key = recordKey(lease);
    const blind = this.#lastSeen === undefined || now - this.#lastSeen > this.#maxBlindMs;
    if (key !== this.#key || blind) this.#since = now;
    this.#key = key;
    this.#lease = lease;
    this.#lastSeen = now;
  }

  judge(): LeaseJudgement {
    const now = this.#clock.now();
    if (this.#lastSeen === undefined || now - this.#lastSeen > this.#maxBlindMs) return { state: 'unknown' };
    const holder = this.#lease?.spec?.holderIdentity ?? '';
    if (!this.#lease || holder === '')
      return { state: 'free', resourceVersion: this.#lease?.metadata?.resourceVersion };
    const durationMs = Math.max(1, this.#lease.spec?.leaseDurationSeconds ?? 0) * 1000;
    const expiresInMs = this.#since + durationMs - now;
    const resourceVersion = this.#lease.metadata?.resourceVersion ?? '';
    if (expiresInMs > 0) return { state: 'held', holder, expiresInMs, resourceVersion };
    return { state: 'expired', holder, resourceVersion };
  }
}

export interface LeaseTransfer {
  namespace: string;
  name: string;
  /** The instance about to be promoted. */
  to: string;
  /**
   * What the manager judged, at this resourceVersion (undefined: absent): a free or expired
   * Lease, or one whose holder's Pod is gone (the kubelet stopped its agent and engine).
   */
  judged: Exclude<LeaseJudgement, { state: 'unknown' }>;
  /** The Lease duration to write when it is created, in seconds. */
  leaseDurationSeconds: number;
  signal?: AbortSignal | undefined;
}

/**
 * Writes `to` as the holder of a Lease the manager judged free or expired (or whose holder is gone),
 * only if it is still the record that was judged. True when written; false
 * when the record changed since (the old holder renewed, or another manager
 * moved first), in which case nothing may be promoted.
 */
export async function transferPrimaryLease(
  client: Pick<KubeClient, 'resource'>,
  t: LeaseTransfer,
  now: () => Date = () => new Date(),
): Promise<boolean> {
  const leases = client.resource(retyped<PrimaryLease>(Kinds.Lease));
  const at = microTime(now());
  const { resourceVersion } = t.judged;
  if (resourceVersion === undefined) {
    try {
      await leases.create(
        {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: t.name, namespace: t.namespace },
          spec: {
            holderIdentity: t.to,
            leaseDurationSeconds: t.leaseDurationSeconds,
            acquireTime: at,
            renewTime: at,
            leaseTransitions: 0,
          },
        },
        { signal: t.signal },
      );
      return true;
    } catch (err) {
      if (isAlreadyExists(err)) return false;
      throw err;
    }
  }
  let current: PrimaryLease;
  try {
    current = await leases.get(t.name, { namespace: t.namespace, signal: t.signal });
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
  if (current.metadata?.resourceVersion !== resourceVersion) return false;
  const spec: LeaseSpec = {
    ...current.spec,
    holderIdentity: t.to,
    leaseDurationSeconds: current.spec?.leaseDurationSeconds ?? t.leaseDurationSeconds,
    acquireTime: at,
    renewTime: at,
    leaseTransitions: (current.spec?.leaseTransitions ?? 0) + 1,
  };
  try {
    // The resourceVersion read above, unchanged since the judgement, makes
    // this a compare-and-swap: a renewal in between makes it conflict.
    await leases.replace({ ...current, spec }, { signal: t.signal });
    return true;
  } catch (err) {
    if (isConflict(err)) return false;
    throw err;
  }
}

/** The Database or replicated Cache a primary Lease belongs to (it is deleted with it). */
export interface LeaseOwner {
  apiVersion: string;
  kind: string;
  metadata: { name?: string | undefined; namespace?: string | undefined; uid?: string | undefined };
}

/**
 * The owner's primary Lease as the API server has it (never a cache, which
 * could lag the agents' renewals), created without a holder when it does not
 * exist: the first primary's agent takes it, and the manager writes each
 * promoted instance into it (claimPrimaryLease). The agents may only read and
 * renew it, so creating it is the manager's.
 */
export async function ensurePrimaryLease(
  client: Pick<KubeClient, 'resource'>,
  owner: LeaseOwner,
  o: { name: string; labels: Record<string, string>; signal?: AbortSignal | undefined },
): Promise<PrimaryLease> {
  const leases = client.resource(retyped<PrimaryLease>(Kinds.Lease));
  const namespace = owner.metadata.namespace!;
  try {
    return await leases.get(o.name, { namespace, signal: o.signal });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  try {
    return await leases.create(
      {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: {
          name: o.name,
          namespace,
          labels: o.labels,
          ownerReferences: [
            {
              apiVersion: owner.apiVersion,
              kind: owner.kind,
              name: owner.metadata.name!,
              uid: owner.metadata.uid!,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: { leaseDurationSeconds: PRIMARY_LEASE_SECONDS },
      },
      { signal: o.signal },
    );
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    return leases.get(o.name, { namespace, signal: o.signal });
  }
}

/**
 * Before `pod` is promoted: writes it into the primary Lease, as a
 * compare-and-swap on the record the plan judged (transferPrimaryLease). True
 * when the promotion may go on: written, or the Lease already names it, or
 * no Lease is in play; false when the record changed since the judgement (an
 * old holder renewed), and then nothing may be promoted this time.
 */
export async function claimPrimaryLease(
  client: Pick<KubeClient, 'resource'>,
  log: { info(obj: object, msg: string): void },
  o: {
    namespace: string;
    name: string;
    pod: string;
    judged: LeaseJudgement | undefined;
    signal?: AbortSignal;
  },
): Promise<boolean> {
  const { judged, pod } = o;
  if (!judged || judged.state === 'unknown' || (judged.state === 'held' && judged.holder === pod))
    return true;
  const written = await transferPrimaryLease(client, {
    namespace: o.namespace,
    name: o.name,
    to: pod,
    judged,
    leaseDurationSeconds: PRIMARY_LEASE_SECONDS,
    signal: o.signal,
  });
  if (!written) {
    log.info({ pod }, 'the primary Lease changed since it was judged: not promoted this time');
    return false;
  }
  log.info({ pod, from: 'holder' in judged ? judged.holder : undefined }, 'primary Lease handed over');
  return true;
}
