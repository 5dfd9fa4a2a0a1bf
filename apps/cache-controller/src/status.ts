import type { V1Deployment, V1StatefulSet } from '@kubernetes/client-node';
import { Kinds } from '@regulon/client';
import {
  isControlledBy,
  setCondition,
  setProblemConditions,
  type Condition,
  type Context,
  type Owner,
  type Problem,
} from '@regulon/runtime';
import {
  derivePhase,
  notReplicating,
  reachabilityCondition,
  replicationUnsettled,
  REACHABLE_CONDITION,
  rolledOut,
} from '@regulon/conventions';
import type { ImageCatalog } from '@regulon/image-catalog';
import type { CacheObject } from './api.ts';
import { desiredWorkload, image } from './children.ts';
import { minReplicasToWrite, replicaMaxLagSeconds } from './config.ts';
import { bindingSecretName, childNames, replicated, selector, stateful } from './names.ts';
import type { ReplicationView } from './replication/replication.ts';
import { ENGINE_DEFAULTS } from './versions.ts';

export type CacheStatus = NonNullable<CacheObject['status']>;

export type Workload = V1Deployment | V1StatefulSet;

export interface Observed {
  /** The Deployment or StatefulSet this Cache controls, as the cache last saw it. */
  workload: Workload | undefined;
  /** The workload this Cache wants now; undefined when the image catalog has no image for spec.version. */
  desired: Workload | undefined;
  /** mode: replicated: what this reconcile saw of the instances; undefined when it stopped before looking. */
  replication?: ReplicationView | undefined;
}

/** The Cache's workload as the cache holds it, whoever controls it. */
export function liveWorkload(cache: CacheObject, ctx: Pick<Context, 'get'>): Workload | undefined {
  const name = childNames(cache).workload;
  return stateful(cache) ? ctx.get(Kinds.StatefulSet, name) : ctx.get(Kinds.Deployment, name);
}

/** The Cache's workload, if the Cache controls it: a same-named object someone else created says nothing about it. */
export function controlledWorkload(
  cache: CacheObject & Owner,
  ctx: Pick<Context, 'get'>,
): Workload | undefined {
  const live = liveWorkload(cache, ctx);
  return live && isControlledBy(live, cache) ? live : undefined;
}

/**
 * What the status is computed from: the controlled workload, and the one `catalog` says it should
 * be (under the instance agent when the manager runs it, `agentImage`, as the reconcile applies it).
 */
export function observedFrom(
  cache: CacheObject & Owner,
  ctx: Pick<Context, 'get'>,
  catalog: ImageCatalog,
  agentImage?: string,
): Observed {
  const imageRef = image(cache, catalog);
  return {
    workload: controlledWorkload(cache, ctx),
    desired: imageRef ? desiredWorkload(cache, imageRef, undefined, agentImage) : undefined,
  };
}

/** Everything the status says, computed from what was observed; written only when it changed. */
export function computeStatus(
  cache: CacheObject,
  o: Observed,
  problem: Problem | undefined,
  now: Date = new Date(),
): CacheStatus {
  const gen = cache.metadata.generation ?? 0;
  const prev = cache.status ?? {};
  const w = o.workload;
  const kind = stateful(cache) ? 'StatefulSet' : 'Deployment';
  const want = cache.spec.replicas;
  const ready = w?.status?.readyReplicas ?? 0;
  // The live template is compared with the desired one (image, config hash), not only the workload's
  // own status: right after an apply the cache may still hold the previous object, rolled out and "done".
  const done = o.desired !== undefined && rolledOut(w, o.desired);
  // currentVersion moves only once every Pod runs the new version.
  const currentVersion = done ? cache.spec.version : prev.currentVersion;
  let c: Condition[] = prev.conditions ?? [];
  const set = (type: string, status: 'True' | 'False' | 'Unknown', reason: string, message: string) => {
    c = setCondition(c, { type, status, reason, message, observedGeneration: gen }, now);
  };

  // Degraded and Stalled; a problem is also what Ready names (`kubectl wait` and kstatus read Ready).
  c = setProblemConditions(c, problem, { observedGeneration: gen, now });
  const r = o.replication;
  // The primary by its server's answer or, while the manager cannot reach it, by the kubelet's.
  const primary = replicated(cache) ? (r ? r.plan.servingPrimary : prev.currentPrimary) : undefined;
  // An instance whose Pod is being deleted (fenced, replaced) does not serve, whatever its label
  // says: on a lost node its Pod object stays, Ready by the kubelet's last word, for good.
  const leaving = new Set(
    replicated(cache) && r ? r.members.filter((m) => m.deleting && m.pod !== primary).map((m) => m.pod) : [],
  );
  // Instances that serve their role; one that does not replicate is not counted as ready.
  const serving =
    replicated(cache) && r
      ? [...r.plan.roles].filter(([pod, role]) => role && !leaving.has(pod)).length
      : ready;
  const notLinked =
    replicated(cache) && r && primary
      ? [
          ...new Set([
            ...notReplicating(r.members, r.plan.roles, primary, cache.spec.replicas),
            ...[...leaving].filter((pod) =>
              r.members.some((m) => m.pod === pod && m.ordinal < cache.spec.replicas),
            ),
          ]),
        ]
      : [];
  if (!problem) {
    if (!w) set('Ready', 'Unknown', 'WorkloadMissing', `The ${kind} does not exist yet`);
    else if (done && replicated(cache) && !primary)
      set('Ready', 'False', 'NoPrimary', r?.plan.waiting ?? 'No instance accepts writes');
    else if (done && primary && r && refusesWrites(r, primary, minReplicasToWrite(cache)))
      // redis refuses writes then (NOREPLICAS): serving reads is not serving.
      set(
        'Ready',
        'False',
        'WritesRefused',
        `The primary ${primary} refuses writes until ${minReplicasToWrite(cache)} replica(s) acknowledge it within ${replicaMaxLagSeconds(cache)} s (spec.replication.minReplicasToWrite)${notLinked.length ? `: ${notLinked.join(', ')} not replicating from it` : ''}`,
      );
    else if (done && notLinked.length)
      // It serves, and says what it lacks: never "all ready" while an instance does not replicate.
      set(
        'Ready',
        'True',
        'ReplicasNotLinked',
        `${serving}/${want} replicas ready, running ${cache.spec.version}: ${notLinked.join(', ')} not replicating from ${primary}`,
      );
    else if (done)
      set(
        'Ready',
        'True',
        'AllReplicasReady',
        `${serving}/${want} replicas ready, running ${cache.spec.version}${r?.plan.unobserved.length ? " (the kubelet's word: the manager cannot reach them)" : ''}`,
      );
    else
      set(
        'Ready',
        'False',
        'ReplicasNotReady',
        // The workload counts a Pod on a lost node ready by its kubelet's last word; the plan does not.
        replicated(cache) && r
          ? `${serving}/${want} replicas ready${notLinked.length && primary ? `: ${notLinked.join(', ')} not replicating from ${primary}` : ''}`
          : `${ready}/${want} replicas ready`,
      );
  }

  const running = w?.status?.replicas ?? 0;
  // Nothing rolls out while a problem blocks the reconcile: saying "Creating" would claim what isn't happening.
  if (problem && problem.stalled !== false)
    set('Progressing', 'False', problem.reason, `Blocked: ${problem.message}`);
  else if (!w) set('Progressing', 'Unknown', 'Creating', `Creating the ${kind}`);
  else if (done) set('Progressing', 'False', 'Stable', 'Nothing to roll out');
  else if (currentVersion && currentVersion !== cache.spec.version)
    set('Progressing', 'True', 'Upgrading', `Rolling ${currentVersion} to ${cache.spec.version}`);
  else if (running !== want || w.spec?.replicas !== want)
    set('Progressing', 'True', 'Scaling', `Scaling from ${running} to ${want} replicas`);
  else set('Progressing', 'True', 'RollingOut', `${w.status?.updatedReplicas ?? 0}/${want} replicas updated`);

  if (replicated(cache)) {
    if (r) {
      const h = replicationHealth(cache, r);
      set('ReplicationHealthy', h.status, h.reason, h.message);
      const reach = reachabilityCondition(r.plan);
      set(REACHABLE_CONDITION, reach.status, reach.reason, reach.message);
    } else if (!c.some((x) => x.type === 'ReplicationHealthy'))
      set('ReplicationHealthy', 'Unknown', 'NotObserved', 'The instances have not been observed yet');
  }
  const instances = replicated(cache) ? (r ? instancesOf(r) : prev.instances) : undefined;

  return {
    observedGeneration: gen,
    conditions: c,
    phase: derivePhase(c, currentVersion !== undefined),
    replicas: running,
    readyReplicas: serving,
    selector: Object.entries(selector(cache))
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
    ...(currentVersion ? { currentVersion } : {}),
    binding: { name: bindingSecretName(cache) },
    endpoint: `${childNames(cache).clientService}.${cache.metadata.namespace}.svc:${ENGINE_DEFAULTS[cache.spec.engine].port}`,
    ...(primary ? { currentPrimary: primary } : {}),
    ...(instances ? { instances } : {}),
  };
}

type Instance = NonNullable<CacheStatus['instances']>[number];

/** Each instance's role and link, as the reconcile saw it (offsets in bytes of the replication stream). */
function instancesOf(r: ReplicationView): Instance[] {
  const primary = r.plan.servingPrimary;
  const atPrimary = primary ? r.observations.get(primary) : undefined;
  const primaryOffset = atPrimary?.reachable && atPrimary.server.writable ? atPrimary.server.lsn : undefined;
  return r.members.map((m): Instance => {
    const role = r.plan.roles.get(m.pod) ?? 'standby';
    const base = { name: m.pod, role };
    if (!m.uid) return { ...base, state: 'Missing' };
    const o = r.observations.get(m.pod);
    if (!o?.reachable) return { ...base, state: 'Unreachable' };
    const offset = { offset: Number(o.server.lsn) };
    if (o.server.writable) return { ...base, ...offset, state: m.pod === primary ? 'Primary' : 'Writable' };
    const lag =
      primaryOffset === undefined
        ? {}
        : { lagBytes: Number(primaryOffset > o.server.lsn ? primaryOffset - o.server.lsn : 0n) };
    const state = !o.server.streaming ? 'NotLinked' : role === 'replica' ? 'Linked' : 'Lagging';
    return { ...base, ...offset, ...lag, state };
  });
}

function replicationHealth(
  cache: CacheObject,
  r: ReplicationView,
): { status: 'True' | 'False' | 'Unknown'; reason: string; message: string } {
  const unsettled = replicationUnsettled(r.plan);
  if (unsettled) return unsettled;
  const primary = r.plan.servingPrimary!;
  const behind = notReplicating(r.members, r.plan.roles, primary, cache.spec.replicas);
  if (behind.length)
    return {
      status: 'False',
      reason: 'ReplicasNotLinked',
      message: `${behind.join(', ')} not linked to ${primary} within the lag bound${r.plan.waiting ? `; ${r.plan.waiting}` : ''}`,
    };
  return {
    status: 'True',
    reason: 'Linked',
    message: `${cache.spec.replicas - 1} replica(s) linked to ${primary}`,
  };
}

/**
 * Whether the primary refuses writes for want of linked replicas: by its own count (INFO's
 * min_slaves_good_slaves), which is what redis decides on; by the manager's look at the replicas
 * when the primary did not answer.
 */
function refusesWrites(r: ReplicationView, primary: string, needed: number): boolean {
  if (needed === 0) return false;
  const seen = r.observations.get(primary);
  if (seen?.reachable && seen.info.goodReplicas !== undefined) return seen.info.goodReplicas < needed;
  return [...r.plan.roles].filter(([pod, role]) => pod !== primary && role === 'replica').length < needed;
}
