import { ignoreNotFound, Kinds } from '@regulon/client';
import {
  carryOutStep,
  isInstancePod,
  LEASE_READ_INTERVAL_MS,
  memberOf,
  outdated,
  plan,
  requeueAfter,
  applyRoleLabels,
  deleteObservedPod,
  rollingRevision,
  topologyFromData,
  type Plan,
  type Member,
  type Step,
  type Topology,
  type ReplicationMemory,
  podTrouble,
  claimPrimaryLease,
  type LeaseJudgement,
  type PodTrouble,
  type PrimaryLease,
} from '@regulon/conventions';
import type { Context } from '@regulon/runtime';
import type { CacheObject } from '../api.ts';
import { desiredTopology, primaryHost } from '../children.ts';
import {
  authSecretName,
  childNames,
  DEFAULT_FAILOVER_DELAY_S,
  ordinalOf,
  podName,
  ROLE_LABEL,
  selector,
} from '../names.ts';
import { ENGINE_DEFAULTS } from '../versions.ts';
import type { Endpoint, Observation } from './redis.ts';

export const DEFAULT_MAX_LAG_BYTES = 1024 ** 2;

/** What the reconcile saw of a replicated redis's instances, for the status. */
export interface ReplicationView {
  topology: Topology;
  members: Member[];
  observations: Map<string, Observation>;
  plan: Plan;
  /** Instances whose Pod keeps failing or cannot start, and why (see podTrouble). */
  troubles: PodTrouble[];
}

/**
 * The recorded topology, read from the API server rather than the cache: a
 * cache a moment behind this manager's own last write would name the former
 * primary again, and the plan would fence the new one.
 */
export async function recordedTopology(
  cache: CacheObject,
  ctx: Context,
): Promise<{ topology: Topology; data: Record<string, string> } | undefined> {
  const cm = await ignoreNotFound(
    ctx.client
      .resource(Kinds.ConfigMap)
      .get(childNames(cache).topology, { namespace: cache.metadata.namespace!, signal: ctx.signal }),
  );
  const topology = topologyFromData(cm?.data);
  return topology && { topology, data: cm!.data! };
}

/** A new replicated Cache starts with ordinal 0 named: it comes up writable, the others follow it. */
export function firstTopology(cache: CacheObject): Topology {
  return { primary: podName(cache, 0), initialized: false, since: undefined };
}

/** How many Pods the StatefulSet runs: spec.replicas, or more while the primary sits on an ordinal being removed. */
export function instanceCount(cache: CacheObject, t: Topology): number {
  return Math.max(cache.spec.replicas, ordinalOf(cache, t.primary) + 1);
}

const port = ENGINE_DEFAULTS.redis.port;

/**
 * Observes every instance (INFO replication), decides with the replication
 * plan Databases use too, and carries out at most one step: record the
 * topology, fence an instance, promote one, or replace one (rolling update).
 * Then the role labels the client and `-ro` Services select on, and replicas
 * that follow anything but the primary are pointed at it.
 */
export async function reconcileReplication(
  cache: CacheObject,
  ctx: Context,
  topology: Topology,
  memory: ReplicationMemory,
  lease?: PrimaryLease,
  now = Date.now(),
): Promise<{ view: ReplicationView; requeueAfter: number }> {
  // The Lease as read, stamped now, before the probes: a probe of an instance that does not answer
  // takes seconds, and stamped after it the read would look that much later than it was.
  const leaseView = lease ? memory.primaryLease(cache.metadata.uid!) : undefined;
  leaseView?.observe(lease);
  const ns = cache.metadata.namespace!;
  const pods = (
    await ctx.client.resource(Kinds.Pod).list({
      namespace: ns,
      labelSelector: Object.entries(selector(cache))
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
      signal: ctx.signal,
    })
  ).items.filter((p) => isInstancePod(cache.metadata.name!, p.metadata?.name));
  const byName = new Map(pods.map((p) => [p.metadata!.name!, p]));

  const { observe } = await import('./redis.ts');
  // Read once per reconcile, used for every connection it makes, never kept past it.
  const password = await redisPassword(cache, ctx);
  const observations = new Map<string, Observation>();
  await Promise.all(
    pods.map(async (p) => {
      const host = p.status?.podIP;
      if (host) observations.set(p.metadata!.name!, await observe({ host, port, password }));
    }),
  );

  const updateRevision = rollingRevision(await liveStatefulSet(cache, ctx));
  const instances = instanceCount(cache, topology);
  const names = new Set([
    ...Array.from({ length: instances }, (_, i) => podName(cache, i)),
    ...byName.keys(),
  ]);
  const members = [...names].map((name) => {
    const pod = byName.get(name);
    const o = observations.get(name);
    return memberOf({
      name,
      ordinal: ordinalOf(cache, name),
      pod,
      server: o?.reachable ? o.server : undefined,
      memory,
      key: `${cache.metadata.uid}/${name}`,
      now,
      outdated: outdated(pod, updateRevision),
    });
  });

  // Under the instance agent: this manager's judgement of the primary Lease, from its reads. The
  // agents keep a primary serving through an API-server outage while a majority is in touch with
  // it (failsafe: REDIS_QUORUM_COMMAND), which the plan waits out before any promotion.
  const primaryLease: LeaseJudgement | undefined = leaseView?.judge();
  const decided = plan({
    replicas: cache.spec.replicas,
    members,
    topology,
    systemId: undefined,
    failoverDelayMs: (cache.spec.replication?.failoverDelaySeconds ?? DEFAULT_FAILOVER_DELAY_S) * 1000,
    maxLag: BigInt(cache.spec.replication?.maxLagBytes ?? DEFAULT_MAX_LAG_BYTES),
    now,
    switchoverTo: undefined,
    lastAnswer: memory.lastAnswer(cache.metadata.uid!, topology.primary, members),
    primaryLease,
    primaryFailsafe: lease ? true : undefined,
  });
  await applyRoleLabels(ctx, cache.metadata.namespace!, byName, decided.roles, ROLE_LABEL);
  const endpointOf = (pod: string): Endpoint => {
    const host = byName.get(pod)?.status?.podIP;
    if (!host) throw new Error(`instance ${pod} has no Pod IP`);
    return { host, port, password };
  };
  if (decided.step) await carryOut(cache, ctx, decided.step, topology, endpointOf, observations);
  else if (decided.currentPrimary) await pointReplicas(cache, ctx, decided, observations, endpointOf);
  if (decided.waiting) ctx.log.info({ waiting: decided.waiting }, 'replication');

  const troubles = pods.flatMap((p) => podTrouble(p) ?? []);
  return {
    view: { topology, members, observations, plan: decided, troubles },
    // Under the agent, read often enough that an unrenewed Lease is seen expired soon after it did
    // (see LEASE_READ_INTERVAL_MS). Without it, a Cache read it every 10 s: a lost node's failover
    // came up to 10 s late, and once 11 s (CI: +30.1 s, the Lease's expiry seen at +25.9 s).
    requeueAfter: lease ? Math.min(requeueAfter(decided), LEASE_READ_INTERVAL_MS) : requeueAfter(decided),
  };
}

/** The password the instances require (auth on): the generated or referenced Secret's `password`. */
async function redisPassword(cache: CacheObject, ctx: Context): Promise<string | undefined> {
  const name = authSecretName(cache);
  if (!name) return undefined;
  const secret = await ignoreNotFound(
    ctx.client.resource(Kinds.Secret).get(name, { namespace: cache.metadata.namespace!, signal: ctx.signal }),
  );
  const b64 = secret?.data?.['password'];
  return b64 ? Buffer.from(b64, 'base64').toString('utf8') : undefined;
}

/** The StatefulSet from the API server: its update revision decides which Pods the plan replaces. */
function liveStatefulSet(cache: CacheObject, ctx: Context) {
  return ignoreNotFound(
    ctx.client
      .resource(Kinds.StatefulSet)
      .get(childNames(cache).workload, { namespace: cache.metadata.namespace!, signal: ctx.signal }),
  );
}

function carryOut(
  cache: CacheObject,
  ctx: Context,
  step: Step,
  topology: Topology,
  endpointOf: (pod: string) => Endpoint,
  observations: Map<string, Observation>,
): Promise<void> {
  return carryOutStep(ctx, step, topology, {
    recordTopology: async (t) => void (await ctx.apply([desiredTopology(cache, t)])),
    deletePod: (pod, uid, grace) => deleteObservedPod(ctx, cache.metadata.namespace!, pod, uid, grace),
    promote: async (pod) => {
      if (!observations.get(pod)?.reachable) return false;
      // The instance is written into the primary Lease first, as a compare-and-swap on the
      // record judged: an old holder that renewed since makes it conflict, and nothing is promoted.
      const claimed = await claimPrimaryLease(ctx.client, ctx.log, {
        namespace: cache.metadata.namespace!,
        name: childNames(cache).primaryLease,
        pod,
        judged: step.kind === 'promote' ? step.lease : undefined,
        signal: ctx.signal,
      });
      if (!claimed) return false;
      const { promote } = await import('./redis.ts');
      await promote(endpointOf(pod));
      return true;
    },
  });
}

/**
 * Replicas follow the client Service (their start script says so), which the
 * role label points at the primary wherever it moves. One that follows
 * anything else (an address, after someone's REPLICAOF) is pointed back.
 */
async function pointReplicas(
  cache: CacheObject,
  ctx: Context,
  decided: Plan,
  observations: Map<string, Observation>,
  endpointOf: (pod: string) => Endpoint,
): Promise<void> {
  const target = primaryHost(cache);
  for (const [pod, o] of observations) {
    if (
      pod === decided.currentPrimary ||
      !o.reachable ||
      o.info.role !== 'slave' ||
      o.info.masterHost === target
    )
      continue;
    const { follow } = await import('./redis.ts');
    try {
      await follow(endpointOf(pod), target, port);
      ctx.log.info({ pod, was: o.info.masterHost }, 'replica pointed at the primary');
    } catch (err) {
      // It went away since it was observed: the next observation decides what that means.
      ctx.log.info({ pod, err: (err as Error).message }, 'replica not repointed');
    }
  }
}
