import type { V1Pod } from '@kubernetes/client-node';
import { isNotFound, Kinds } from '@regulon/client';
import type { Context } from '@regulon/runtime';
import { Database, type DatabaseObject } from '../api.ts';
import { topologyConfigMap, topologyOf } from '../children.ts';
import { childNames, ordinalOf, podName, ROLE_LABEL, selector } from '../names.ts';
import { probe, promote, syncSlots, type Endpoint, type Probe } from '../postgres/instance.ts';
import { slotName } from '../postgres/start-script.ts';
import { plan, type Member, type Plan, type Role, type Step, type Topology } from './plan.ts';

/** A user asks for a switchover by naming the instance (Pod) that should become the primary. */
export const SWITCHOVER_ANNOTATION = 'regulon.dev/switchover-to';
const DEFAULT_FAILOVER_DELAY_S = 10;
const DEFAULT_MAX_LAG_BYTES = 16 * 1024 * 1024;

/** What the reconcile saw of the instances, for the status. */
export interface ReplicationView {
  /** More than one instance runs or is wanted: the manager watches them over SQL. */
  replicated: boolean;
  topology: Topology;
  members: Member[];
  probes: Map<string, Probe>;
  plan: Plan;
}

/** When each instance's trouble began, as this manager first saw it (a new leader starts counting afresh: it only waits longer). */
export class TroubleClock {
  readonly #since = new Map<string, number>();
  mark(key: string, now: number): number {
    const t = this.#since.get(key);
    if (t !== undefined) return t;
    this.#since.set(key, now);
    return now;
  }
  clear(key: string): void {
    this.#since.delete(key);
  }
}

/**
 * The recorded topology, read from the API server rather than the cache: a
 * cache a moment behind this manager's own last write would name the former
 * primary again, and the plan would fence the new one. Undefined when none is
 * recorded yet.
 */
export async function recordedTopology(db: DatabaseObject, ctx: Context): Promise<Topology | undefined> {
  const cm = await ctx.client
    .resource(Kinds.ConfigMap)
    .get(childNames(db).topology, { namespace: db.metadata.namespace!, signal: ctx.signal })
    .catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
  return topologyOf(cm);
}

/** The topology a new Database starts with: ordinal 0 initialises. */
export function firstTopology(db: DatabaseObject): Topology {
  return { primary: podName(db, 0), initialized: false, since: undefined };
}

/** How many Pods the StatefulSet runs: spec.replicas, or more while the primary sits on an ordinal being removed. */
export function instanceCount(db: DatabaseObject, t: Topology): number {
  return Math.max(db.spec.replicas, ordinalOf(db, t.primary) + 1);
}

/** `<name>-<ordinal>`: the StatefulSet's Pods, not the backup Jobs' Pods that carry the same labels. */
function isInstancePod(db: DatabaseObject, pod: string | undefined): boolean {
  const prefix = `${db.metadata.name}-`;
  return !!pod?.startsWith(prefix) && /^\d+$/.test(pod.slice(prefix.length));
}

const readyOf = (pod: V1Pod) =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const ms = (t: Date | string | undefined) => (t ? new Date(t).getTime() : undefined);

/**
 * Observes the instances, decides with plan(), and carries out one step:
 * write the topology, fence an instance, or promote one. Then the role labels
 * the Services select on, and the primary's replication slots.
 */
export async function reconcileReplication(
  db: DatabaseObject,
  ctx: Context,
  topology: Topology,
  clock: TroubleClock,
  now = Date.now(),
): Promise<{ view: ReplicationView; requeueAfter: number | undefined }> {
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
  ).items.filter((p) => isInstancePod(db, p.metadata?.name));
  const byName = new Map(pods.map((p) => [p.metadata!.name!, p]));
  const replicated = db.spec.replicas > 1 || pods.length > 1 || topology.primary !== podName(db, 0);

  const probes = new Map<string, Probe>();
  // Read once per reconcile, used for every connection it makes, never kept past it.
  const password =
    replicated && db.spec.engine === 'postgres' ? await replicationPassword(db, ctx) : undefined;
  if (password) {
    await Promise.all(
      pods.map(async (p) => {
        const ip = p.status?.podIP;
        if (!ip) return;
        probes.set(p.metadata!.name!, await probe({ host: ip, password, signal: ctx.signal }));
      }),
    );
  }

  const names = new Set([...Array.from({ length: instances }, (_, i) => podName(db, i)), ...byName.keys()]);
  const members: Member[] = [...names].map((name) => {
    const pod = byName.get(name);
    const p = probes.get(name);
    const ready = pod ? readyOf(pod) : false;
    const server =
      p?.reachable === true
        ? {
            writable: !p.inRecovery,
            systemId: p.systemId,
            timeline: p.timeline,
            lsn: p.lsn,
            replayLsn: p.replayLsn,
            streaming: p.receiver === 'streaming',
          }
        : // One instance is not polled over SQL: its readiness (a query with the credentials) is the evidence.
          !replicated && ready
          ? { writable: true, systemId: '', timeline: 0, lsn: 0n, replayLsn: 0n, streaming: false }
          : undefined;
    const key = `${db.metadata.uid}/${name}`;
    const healthy = ready && server !== undefined;
    let troubleSince: number | undefined;
    if (healthy) clock.clear(key);
    else {
      // The kubelet's word on when it stopped serving: only a Ready=False condition says so (a
      // ready Pod whose server does not answer has been in trouble since this manager saw it).
      const readyCondition = pod?.status?.conditions?.find((c) => c.type === 'Ready');
      const notReadySince =
        pod && !ready
          ? readyCondition?.status === 'False'
            ? ms(readyCondition.lastTransitionTime)
            : ms(pod.metadata?.creationTimestamp)
          : undefined;
      troubleSince = Math.min(clock.mark(key, now), notReadySince ?? now);
    }
    return {
      pod: name,
      ordinal: ordinalOf(db, name),
      uid: pod?.metadata?.uid,
      createdAt: ms(pod?.metadata?.creationTimestamp),
      deleting: !!pod?.metadata?.deletionTimestamp,
      ready,
      troubleSince,
      server,
    };
  });

  const switchoverTo = db.metadata.annotations?.[SWITCHOVER_ANNOTATION];
  const decided = plan({
    replicas: db.spec.replicas,
    members,
    topology,
    systemId: db.status?.systemIdentifier,
    failoverDelayMs: (db.spec.replication?.failoverDelaySeconds ?? DEFAULT_FAILOVER_DELAY_S) * 1000,
    maxLagBytes: BigInt(db.spec.replication?.maxLagBytes ?? DEFAULT_MAX_LAG_BYTES),
    now,
    switchoverTo,
  });
  // A single instance serves reads too: it is the primary, and no read-only Service exists.
  await labelRoles(db, ctx, byName, decided.roles);
  const seen: Seen = { pods: byName, probes, password };
  if (decided.step) await carryOut(db, ctx, decided.step, topology, seen, now);
  else if (decided.currentPrimary && password)
    await keepSlots(ctx, decided.currentPrimary, instances, seen, db);
  if (switchoverTo && (switchoverTo === decided.currentPrimary || decided.step?.kind === 'refuseSwitchover'))
    await clearSwitchover(db, ctx);
  if (decided.waiting) ctx.log.info({ waiting: decided.waiting }, 'replication');

  const view: ReplicationView = { replicated, topology, members, probes, plan: decided };
  if (!replicated) return { view, requeueAfter: decided.step ? 1000 : undefined };
  const requeueAfter = decided.step
    ? 500
    : decided.recheckInMs !== undefined
      ? Math.min(decided.recheckInMs + 100, 5000)
      : decided.waiting
        ? 2000
        : 10_000;
  return { view, requeueAfter };
}

async function replicationPassword(db: DatabaseObject, ctx: Context): Promise<string | undefined> {
  const secret = await ctx.client
    .resource(Kinds.Secret)
    .get(childNames(db).replicationCredentials, { namespace: db.metadata.namespace!, signal: ctx.signal })
    .catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
  const b64 = secret?.data?.['password'];
  return b64 ? Buffer.from(b64, 'base64').toString('utf8') : undefined;
}

/** What this reconcile observed of the instances, and the password it connects with. */
interface Seen {
  pods: Map<string, V1Pod>;
  probes: Map<string, Probe>;
  password: string | undefined;
}

function endpoint(pods: Map<string, V1Pod>, name: string, password: string, ctx: Context): Endpoint {
  const host = pods.get(name)?.status?.podIP;
  if (!host) throw new Error(`instance ${name} has no Pod IP`);
  return { host, password, signal: ctx.signal };
}

async function carryOut(
  db: DatabaseObject,
  ctx: Context,
  step: Step,
  topology: Topology,
  seen: Seen,
  now: number,
): Promise<void> {
  switch (step.kind) {
    case 'topology': {
      const moved = step.topology.primary !== topology.primary;
      await ctx.apply([topologyConfigMap(db, { ...step.topology, since: moved ? now : topology.since })]);
      if (step.reason === 'Failover') ctx.warn('FailoverStarted', step.message);
      else
        ctx.event('Normal', step.reason === 'Switchover' ? 'SwitchoverStarted' : 'Initialized', step.message);
      ctx.log.info({ primary: step.topology.primary, reason: step.reason }, step.message);
      return;
    }
    case 'fence': {
      ctx.warn('Fencing', step.message);
      await ctx.client
        .resource(Kinds.Pod)
        .delete(step.pod, {
          namespace: db.metadata.namespace!,
          preconditions: { uid: step.uid },
          // Unclean: a short grace; the object still goes only once the kubelet has stopped the containers.
          ...(step.graceful ? {} : { gracePeriodSeconds: 1 }),
          signal: ctx.signal,
        })
        .catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
      return;
    }
    case 'promote': {
      if (!seen.password || !seen.probes.get(step.pod)?.reachable) return;
      await promote(endpoint(seen.pods, step.pod, seen.password, ctx));
      ctx.event('Normal', 'Promoted', `${step.pod} is the primary now`);
      ctx.log.info({ primary: step.pod }, 'promoted');
      return;
    }
    case 'refuseSwitchover':
      ctx.warn('SwitchoverRefused', step.message);
      return;
  }
}

/** Sets or removes the role label of each Pod; a Service follows it at once. */
async function labelRoles(
  db: DatabaseObject,
  ctx: Context,
  pods: Map<string, V1Pod>,
  roles: Map<string, Role | undefined>,
): Promise<void> {
  for (const [name, pod] of pods) {
    const want = roles.get(name);
    if (pod.metadata?.labels?.[ROLE_LABEL] === want || pod.metadata?.deletionTimestamp) continue;
    await ctx.client
      .resource(Kinds.Pod)
      .patch(
        name,
        { metadata: { labels: { [ROLE_LABEL]: want ?? null } } },
        { type: 'merge', namespace: db.metadata.namespace!, signal: ctx.signal },
      )
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
  }
}

/** One slot on the primary for each other instance the StatefulSet runs; the rest dropped once unused. */
async function keepSlots(
  ctx: Context,
  primary: string,
  instances: number,
  seen: Seen,
  db: DatabaseObject,
): Promise<void> {
  const password = seen.password;
  if (!password) return;
  const wanted = Array.from({ length: instances }, (_, i) => podName(db, i))
    .filter((p) => p !== primary)
    .map(slotName);
  try {
    const { created, dropped } = await syncSlots(endpoint(seen.pods, primary, password, ctx), wanted);
    if (created.length || dropped.length) ctx.log.info({ created, dropped }, 'replication slots');
  } catch (err) {
    // The primary went away since it was probed: the next observation decides what that means.
    ctx.log.info({ err: (err as Error).message }, 'replication slots not synced');
  }
}

async function clearSwitchover(db: DatabaseObject, ctx: Context): Promise<void> {
  await ctx.client
    .resource(Database)
    .patch(
      db.metadata.name!,
      { metadata: { annotations: { [SWITCHOVER_ANNOTATION]: null } } },
      { type: 'merge', namespace: db.metadata.namespace!, signal: ctx.signal },
    )
    .catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
}
