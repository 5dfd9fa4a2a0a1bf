import type { Member, Plan, Role, Server } from './plan.ts';

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
 * trouble, counted by `clock` under `key` (unique per owner and instance).
 */
export function memberOf(o: {
  name: string;
  ordinal: number;
  pod: InstancePod | undefined;
  server: Server | undefined;
  clock: TroubleClock;
  key: string;
  now: number;
  outdated: boolean;
}): Member {
  const { pod, server, clock, key, now } = o;
  const ready = pod ? podReady(pod) : false;
  let troubleSince: number | undefined;
  if (ready && server !== undefined) clock.clear(key);
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
  const meta = pod?.metadata;
  return {
    pod: o.name,
    ordinal: o.ordinal,
    uid: meta?.uid,
    createdAt: ms(meta?.creationTimestamp),
    deleting: !!meta?.deletionTimestamp,
    deletionGraceSeconds: meta?.deletionGracePeriodSeconds,
    // The API server sets deletionTimestamp to the deletion's time plus its grace.
    deletingSince:
      meta?.deletionTimestamp && meta.deletionGracePeriodSeconds !== undefined
        ? ms(meta.deletionTimestamp)! - meta.deletionGracePeriodSeconds * 1000
        : undefined,
    ready,
    troubleSince,
    server,
    outdated: o.outdated,
  };
}

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
