import type { V1Deployment, V1StatefulSet } from '@kubernetes/client-node';
import {
  contentHash,
  derivePhase,
  setCondition,
  setProblemConditions,
  type Condition,
  type Problem,
} from '@regulon/runtime';
import type { CacheObject } from './api.ts';
import { CONFIG_HASH_ANNOTATION, image } from './children.ts';
import { renderConfig } from './config.ts';
import { childNames, persistent, selector } from './names.ts';
import { ENGINE_DEFAULTS } from './versions.ts';

export type CacheStatus = NonNullable<CacheObject['status']>;

export type Workload = V1Deployment | V1StatefulSet;

export interface Observed {
  /** The Deployment or StatefulSet this Cache controls, as the cache last saw it. */
  workload: Workload | undefined;
  problem: Problem | undefined;
  bindingSecret: string;
  /** The image the catalog gives spec.version (default: the official one); undefined when it has none. */
  image?: string | undefined;
}

/**
 * The workload runs the template this Cache wants (image, config hash,
 * replicas) and its controller has rolled it out: every replica updated and
 * ready, no old Pod left. The template check matters: right after an apply
 * the cache may still hold the previous object, rolled out and "done".
 */
export function rolledOut(
  cache: CacheObject,
  w: Workload | undefined,
  wanted: string | undefined = image(cache),
): boolean {
  const s = w?.status;
  if (!w || !s) return false;
  const want = cache.spec.replicas;
  const template = w.spec?.template;
  const templateCurrent =
    w.spec?.replicas === want &&
    wanted !== undefined &&
    template?.spec?.containers?.[0]?.image === wanted &&
    template.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] === contentHash(renderConfig(cache).content);
  // A StatefulSet also says when the roll is over: its current revision catches up with the update revision.
  const revisionsCurrent =
    !persistent(cache) ||
    (w as V1StatefulSet).status?.currentRevision === (w as V1StatefulSet).status?.updateRevision;
  return (
    templateCurrent &&
    revisionsCurrent &&
    (s.observedGeneration ?? 0) >= (w.metadata?.generation ?? 0) &&
    (s.updatedReplicas ?? 0) === want &&
    (s.readyReplicas ?? 0) === want &&
    s.replicas === want
  );
}

/** Everything the status says, computed from what was observed; written only when it changed. */
export function computeStatus(cache: CacheObject, o: Observed, now: Date = new Date()): CacheStatus {
  const gen = cache.metadata.generation ?? 0;
  const prev = cache.status ?? {};
  const w = o.workload;
  const kind = persistent(cache) ? 'StatefulSet' : 'Deployment';
  const want = cache.spec.replicas;
  const ready = w?.status?.readyReplicas ?? 0;
  const done = rolledOut(cache, w, 'image' in o ? o.image : image(cache));
  // currentVersion moves only once every Pod runs the new version.
  const currentVersion = done ? cache.spec.version : prev.currentVersion;
  let c: Condition[] = prev.conditions ?? [];
  const set = (type: string, status: 'True' | 'False' | 'Unknown', reason: string, message: string) => {
    c = setCondition(c, { type, status, reason, message, observedGeneration: gen }, now);
  };

  // Degraded and Stalled; a problem is also what Ready names (`kubectl wait` and kstatus read Ready).
  c = setProblemConditions(c, o.problem, { observedGeneration: gen, now });
  if (!o.problem) {
    if (!w) set('Ready', 'Unknown', 'WorkloadMissing', `The ${kind} does not exist yet`);
    else if (done)
      set(
        'Ready',
        'True',
        'AllReplicasReady',
        `${ready}/${want} replicas ready, running ${cache.spec.version}`,
      );
    else set('Ready', 'False', 'ReplicasNotReady', `${ready}/${want} replicas ready`);
  }

  const running = w?.status?.replicas ?? 0;
  // Nothing rolls out while a problem blocks the reconcile: saying "Creating" would claim what isn't happening.
  if (o.problem && o.problem.stalled !== false)
    set('Progressing', 'False', o.problem.reason, `Blocked: ${o.problem.message}`);
  else if (!w) set('Progressing', 'Unknown', 'Creating', `Creating the ${kind}`);
  else if (done) set('Progressing', 'False', 'Stable', 'Nothing to roll out');
  else if (currentVersion && currentVersion !== cache.spec.version)
    set('Progressing', 'True', 'Upgrading', `Rolling ${currentVersion} to ${cache.spec.version}`);
  else if (running !== want || w.spec?.replicas !== want)
    set('Progressing', 'True', 'Scaling', `Scaling from ${running} to ${want} replicas`);
  else set('Progressing', 'True', 'RollingOut', `${w.status?.updatedReplicas ?? 0}/${want} replicas updated`);

  return {
    observedGeneration: gen,
    conditions: c,
    phase: derivePhase(c, currentVersion !== undefined),
    replicas: running,
    readyReplicas: ready,
    selector: Object.entries(selector(cache))
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
    ...(currentVersion ? { currentVersion } : {}),
    binding: { name: o.bindingSecret },
    endpoint: `${childNames(cache).clientService}.${cache.metadata.namespace}.svc:${ENGINE_DEFAULTS[cache.spec.engine].port}`,
  };
}
