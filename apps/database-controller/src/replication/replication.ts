import type { V1Pod } from '@kubernetes/client-node';
import { ignoreNotFound, Kinds } from '@regulon/client';
import type { Context } from '@regulon/runtime';
import { Database, type DatabaseObject } from '../api.ts';
import { topologyConfigMap, topologyOf } from '../children.ts';
import { childNames, ordinalOf, podName, ROLE_LABEL, selector, SYNCHRONOUS_CONFIRMATIONS } from '../names.ts';
import type { Endpoint, InstanceDriver, Observation } from '../engine.ts';
import {
  FENCED_CONDITION,
  FENCED_INSTANCES_ANNOTATION,
  fencingOf,
  INVALID_FENCING,
  troubleAfterFence,
  markFencedPods,
  type Fencing,
} from '../fencing.ts';
import {
  carryOutStep,
  isInstancePod,
  memberOf,
  outdated,
  plan,
  podReady,
  requeueAfter as nextReconcile,
  LEASE_READ_INTERVAL_MS,
  applyRoleLabels,
  deleteObservedPod,
  rollingRevision as revisionOf,
  type Member,
  type Plan,
  type Step,
  type Topology,
  ReplicationMemory,
  podTrouble,
  claimPrimaryLease,
  type LeaseJudgement,
  type PodTrouble,
  type PrimaryLease,
} from '@regulon/conventions';

export { ReplicationMemory };

/** A user asks for a switchover by naming the instance (Pod) that should become the primary. */
export const SWITCHOVER_ANNOTATION = 'regulon.dev/switchover-to';
/**
 * A person's order to promote the named instance when no standby provably holds every
 * acknowledged write (PlanInput.forcePromote): the ForcedFailover Event says what is lost. It stands
 * until a primary serves, the one it named or one that returned first.
 */
export const FORCE_PROMOTE_ANNOTATION = 'regulon.dev/force-promote';
const DEFAULT_FAILOVER_DELAY_S = 10;
/** spec.replication.switchoverCatchUpSeconds' default (the CRD's): kept here for objects stored before it. */
const DEFAULT_SWITCHOVER_CATCH_UP_S = 60;

/** What the reconcile saw of the instances, for the status. */
export interface ReplicationView {
  /** More than one instance runs or is wanted: the manager watches them over SQL. */
  replicated: boolean;
  topology: Topology;
  members: Member[];
  /** What each instance's server answered (replicated Databases only). */
  observations: Map<string, Observation>;
  /** What the status calls the lag (`Server.lsn` units). */
  lagUnit: InstanceDriver['lagUnit'];
  plan: Plan;
  /** Instances whose Pod keeps failing or cannot start, and why (see podTrouble). */
  troubles: PodTrouble[];
  /** Each instance's Pod IP, where it has one: where the manager reaches its server. */
  hosts: Map<string, string>;
  /** The instances fenced on a person's order (FENCED_INSTANCES_ANNOTATION). */
  fencing?: Fencing | undefined;
}

/**
 * The recorded topology, and the data of the ConfigMap that holds it (divergedData and the
 * instance count beside it), read from the API server rather than the cache: a cache a moment
 * behind this manager's own last write would name the former primary again, and the plan would
 * fence the new one. Each is undefined when none is recorded yet.
 */
export async function recordedTopology(
  db: DatabaseObject,
  ctx: Context,
): Promise<{ topology: Topology | undefined; data: Record<string, string> | undefined }> {
  const cm = await ignoreNotFound(
    ctx.client
      .resource(Kinds.ConfigMap)
      .get(childNames(db).topology, { namespace: db.metadata.namespace!, signal: ctx.signal }),
  );
  return { topology: topologyOf(cm), data: cm?.data };
}

/** The topology a new Database starts with: ordinal 0 initialises. */
export function firstTopology(db: DatabaseObject): Topology {
  return { primary: podName(db, 0), initialized: false, since: undefined };
}

/** How many Pods the StatefulSet runs: spec.replicas, or more while the primary sits on an ordinal being removed. */
export function instanceCount(db: DatabaseObject, t: Topology): number {
  return Math.max(db.spec.replicas, ordinalOf(db, t.primary) + 1);
}

/**
 * Observes the instances, decides with plan(), and carries out one step:
 * write the topology, fence an instance, or promote one. Then the role labels
 * the Services select on, and the primary's replication slots. `driver` is
 * the engine's (its EngineBehaviour's), given by the caller so this folder
 * never knows which engine it drives; undefined for an engine that does not
 * replicate, whose single instance is judged by its kubelet alone.
 */
export async function reconcileReplication(
  db: DatabaseObject,
  ctx: Context,
  topology: Topology,
  memory: ReplicationMemory,
  driver: InstanceDriver | undefined,
  now = Date.now(),
  lease?: { read: PrimaryLease; failsafe: boolean },
): Promise<{ view: ReplicationView; requeueAfter: number | undefined }> {
  // The Lease as read, stamped now, before the probes: a probe of an instance that does not answer
  // takes seconds, and stamped after it the read would look that much later than it was.
  const leaseView = lease ? memory.primaryLease(db.metadata.uid!) : undefined;
  leaseView?.observe(lease!.read);
  const ns = db.metadata.namespace!;
  const instances = instanceCount(db, topology);
  const pods = (
    await ctx.client.resource(Kinds.Pod).list({
      namespace: ns,
      labelSelector: Object.entries(selector(db))
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
      signal: ctx.signal,
    })
  ).items.filter((p) => isInstancePod(db.metadata.name!, p.metadata?.name));
  const byName = new Map(pods.map((p) => [p.metadata!.name!, p]));
  // A Database scaled down to one instance is still observed over SQL while its instance is one
  // that started before the primary role moved to it (it started as a standby): only the plan
  // promotes it, and the other Pods may be gone before it did; its replication slots for the
  // removed instances are dropped by the upkeep only a replicated Database gets.
  const first = byName.get(podName(db, 0))?.metadata?.creationTimestamp;
  const startedAsStandby =
    topology.since !== undefined &&
    first !== undefined &&
    new Date(first).getTime() < Math.floor(topology.since / 1000) * 1000;
  const replicated =
    db.spec.replicas > 1 || pods.length > 1 || topology.primary !== podName(db, 0) || startedAsStandby;

  const observations = new Map<string, Observation>();
  // Read once per reconcile, used for every connection it makes, never kept past it.
  const password = replicated && driver ? await replicationPassword(db, ctx) : undefined;
  if (password && driver) {
    await Promise.all(
      pods.map(async (p) => {
        const ip = p.status?.podIP;
        if (!ip) return;
        observations.set(p.metadata!.name!, await driver.observe({ host: ip, password, signal: ctx.signal }));
      }),
    );
  }

  const updateRevision = replicated ? await rollingRevision(db, ctx) : undefined;
  const names = new Set([...Array.from({ length: instances }, (_, i) => podName(db, i)), ...byName.keys()]);
  const fencing = fencingOf(db.metadata.annotations?.[FENCED_INSTANCES_ANNOTATION], [...names], byName);
  const unfenced: Member[] = [...names].map((name) => {
    const pod = byName.get(name);
    const o = observations.get(name);
    const server =
      o?.reachable === true
        ? o.server
        : // One instance is not polled over SQL: its readiness (a query with the credentials) is the evidence.
          !replicated && pod && podReady(pod)
          ? { writable: true, systemId: '', timeline: 0, lsn: 0n, replayLsn: 0n, streaming: false }
          : undefined;
    return memberOf({
      name,
      ordinal: ordinalOf(db, name),
      pod,
      server,
      memory,
      key: `${db.metadata.uid}/${name}`,
      now,
      outdated: outdated(pod, updateRevision),
    });
  });
  // An instance unfenced a moment ago is still starting: its failover delay runs from then.
  const members = troubleAfterFence(db.metadata.uid!, unfenced, fencing.fenced, now);

  // Where the agents hold the primary Lease: this manager's judgement of it, from its reads.
  const primaryLease: LeaseJudgement | undefined = leaseView?.judge();
  const switchoverTo = db.metadata.annotations?.[SWITCHOVER_ANNOTATION];
  const forcePromote = db.metadata.annotations?.[FORCE_PROMOTE_ANNOTATION];
  const decided = plan({
    replicas: db.spec.replicas,
    members,
    topology,
    systemId: db.status?.systemIdentifier,
    failoverDelayMs: (db.spec.replication?.failoverDelaySeconds ?? DEFAULT_FAILOVER_DELAY_S) * 1000,
    maxLag: driver?.maxLag(db) ?? 0n,
    now,
    switchoverTo,
    switchoverRequestedAt: memory.requestedSince(db.metadata.uid!, switchoverTo, now),
    switchoverCatchUpMs:
      (db.spec.replication?.switchoverCatchUpSeconds ?? DEFAULT_SWITCHOVER_CATCH_UP_S) * 1000,
    lastAnswer: memory.lastAnswer(db.metadata.uid!, topology.primary, members),
    primaryLease,
    primaryFailsafe: lease?.failsafe,
    synchronous: db.spec.replication?.synchronous ? { confirmations: SYNCHRONOUS_CONFIRMATIONS } : undefined,
    forcePromote,
    fenced: fencing.fenced,
  });
  // A single instance serves reads too: it is the primary, and no read-only Service exists.
  await applyRoleLabels(ctx, db.metadata.namespace!, byName, decided.roles, ROLE_LABEL);
  // Out of the Services first (no role label), then the mark that has the instance's agent stop it.
  await markFencedPods(ctx, ns, byName, fencing.fenced);
  const said = db.status?.conditions?.find((c) => c.type === FENCED_CONDITION);
  if (fencing.invalid && (said?.reason !== INVALID_FENCING || !said.message.startsWith(fencing.invalid)))
    ctx.warn(INVALID_FENCING, fencing.invalid);
  const seen: Seen = { pods: byName, observations, password, driver };
  if (decided.step) await carryOut(db, ctx, decided.step, topology, seen);
  else if (decided.currentPrimary) await tendPrimary(ctx, decided.currentPrimary, instances, seen, db);
  if (decided.switchover?.state === 'Waiting' && db.status?.switchover?.state !== 'Waiting')
    ctx.event('Normal', 'SwitchoverWaiting', decided.switchover.message);
  if (switchoverTo && (switchoverTo === decided.currentPrimary || decided.step?.kind === 'refuseSwitchover'))
    await clearAnnotation(db, ctx, SWITCHOVER_ANNOTATION);
  // An order that was carried out, or that no longer has anything to force: a primary serves. Until
  // then it stands: the promotion it named may first stop an old primary (see plan's forcedFence).
  if (forcePromote && decided.currentPrimary) await clearAnnotation(db, ctx, FORCE_PROMOTE_ANNOTATION);
  if (decided.waiting) ctx.log.info({ waiting: decided.waiting }, 'replication');

  const view: ReplicationView = {
    replicated,
    topology,
    members,
    observations,
    lagUnit: driver?.lagUnit ?? 'bytes',
    plan: decided,
    troubles: pods.flatMap((p) => podTrouble(p) ?? []),
    hosts: new Map(pods.flatMap((p) => (p.status?.podIP ? [[p.metadata!.name!, p.status.podIP]] : []))),
    fencing,
  };
  if (!replicated) return { view, requeueAfter: decided.step ? 1000 : undefined };
  const requeueAfter = nextReconcile(decided);
  // Where the agents hold the primary Lease, it is read often enough that an unrenewed one is seen
  // expired soon after it did (see LEASE_READ_INTERVAL_MS).
  return { view, requeueAfter: lease ? Math.min(requeueAfter, LEASE_READ_INTERVAL_MS) : requeueAfter };
}

/**
 * The template revision the Pods should run, when the manager replaces them
 * (OnDelete): read from the API server, not the cache (see revisionOf).
 */
async function rollingRevision(db: DatabaseObject, ctx: Context): Promise<string | undefined> {
  return revisionOf(
    await ignoreNotFound(
      ctx.client
        .resource(Kinds.StatefulSet)
        .get(childNames(db).statefulSet, { namespace: db.metadata.namespace!, signal: ctx.signal }),
    ),
  );
}

/** The replication account's password, read from the API server (never cached); undefined while its Secret is missing. */
export async function replicationPassword(db: DatabaseObject, ctx: Context): Promise<string | undefined> {
  const secret = await ignoreNotFound(
    ctx.client
      .resource(Kinds.Secret)
      .get(childNames(db).replicationCredentials, { namespace: db.metadata.namespace!, signal: ctx.signal }),
  );
  const b64 = secret?.data?.['password'];
  return b64 ? Buffer.from(b64, 'base64').toString('utf8') : undefined;
}

/** What this reconcile observed of the instances, the password it connects with, and the engine's driver. */
interface Seen {
  pods: Map<string, V1Pod>;
  observations: Map<string, Observation>;
  password: string | undefined;
  driver: InstanceDriver | undefined;
}

function endpoint(pods: Map<string, V1Pod>, name: string, password: string, ctx: Context): Endpoint {
  const host = pods.get(name)?.status?.podIP;
  if (!host) throw new Error(`instance ${name} has no Pod IP`);
  return { host, password, signal: ctx.signal };
}

function carryOut(
  db: DatabaseObject,
  ctx: Context,
  step: Step,
  topology: Topology,
  seen: Seen,
): Promise<void> {
  return carryOutStep(ctx, step, topology, {
    recordTopology: async (t) => void (await ctx.apply([topologyConfigMap(db, t)])),
    deletePod: (pod, uid, grace) => deleteObservedPod(ctx, db.metadata.namespace!, pod, uid, grace),
    promote: async (pod) => {
      if (!seen.password || !seen.driver || !seen.observations.get(pod)?.reachable) return false;
      // The instance is written into the primary Lease first, as a compare-and-swap on the
      // record judged: an old holder that renewed since makes it conflict, and nothing is promoted.
      const claimed = await claimPrimaryLease(ctx.client, ctx.log, {
        namespace: db.metadata.namespace!,
        name: childNames(db).primaryLease,
        pod,
        judged: step.kind === 'promote' ? step.lease : undefined,
        signal: ctx.signal,
      });
      if (!claimed) return false;
      await seen.driver.promote(endpoint(seen.pods, pod, seen.password, ctx), db);
      return true;
    },
  });
}

/** The engine's upkeep on the primary for each other instance the StatefulSet runs (postgres: its slot). */
async function tendPrimary(
  ctx: Context,
  primary: string,
  instances: number,
  seen: Seen,
  db: DatabaseObject,
): Promise<void> {
  const { password, driver } = seen;
  if (!password || !driver) return;
  const others = Array.from({ length: instances }, (_, i) => podName(db, i)).filter((p) => p !== primary);
  try {
    const changed = await driver.tendPrimary(endpoint(seen.pods, primary, password, ctx), others);
    if (changed) ctx.log.info({ primary }, changed);
  } catch (err) {
    // The primary went away since it was observed: the next observation decides what that means.
    ctx.log.info({ err: (err as Error).message }, 'primary upkeep not done');
  }
}

async function clearAnnotation(db: DatabaseObject, ctx: Context, annotation: string): Promise<void> {
  await ignoreNotFound(
    ctx.client
      .resource(Database)
      .patch(
        db.metadata.name!,
        { metadata: { annotations: { [annotation]: null } } },
        { type: 'merge', namespace: db.metadata.namespace!, signal: ctx.signal },
      ),
  );
}
