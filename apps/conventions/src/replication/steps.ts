import type { Context } from '@regulon/runtime';
import { FENCE_GRACE_SECONDS, type Step, type Topology } from './plan.ts';

/** What carrying out a plan's step needs from the engine and the kind: the rest (Events, logs) is shared. */
export interface StepActions {
  /** Writes the topology ConfigMap. */
  recordTopology(t: Topology): Promise<void>;
  /** Deletes the Pod the plan saw (its uid), with this grace period (seconds) or the Pod's own. */
  deletePod(pod: string, uid: string, gracePeriodSeconds?: number): Promise<void>;
  /** Makes the instance writable; false when it can't be reached now (the next reconcile tries again). */
  promote(pod: string): Promise<boolean>;
}

/**
 * Carries out one step of plan() with the Events every replicating kind
 * reports: `Initialized`, `FailoverStarted`, `ForcedFailover` (a person's order, saying what
 * may be lost) and `SwitchoverStarted` when the topology moves, `Fencing`, `Promoted`, `RollingUpdate`, `ReplicaRestarted`, `SwitchoverRefused`.
 */
export async function carryOutStep(
  ctx: Pick<Context, 'event' | 'warn' | 'log'>,
  step: Step,
  topology: Topology,
  actions: StepActions,
  clock: () => number = Date.now,
): Promise<void> {
  switch (step.kind) {
    case 'topology': {
      const moved = step.topology.primary !== topology.primary;
      // `since` is when the record is written, not when the reconcile began: a Pod created before
      // it may have read the previous primary's name, and plan() tells them apart by it (a
      // reconcile's observations can take seconds, while a deleted Pod's successor is created).
      await actions.recordTopology({ ...step.topology, since: moved ? clock() : topology.since });
      if (step.reason === 'Failover') ctx.warn('FailoverStarted', step.message);
      else if (step.reason === 'ForcedFailover') ctx.warn('ForcedFailover', step.message);
      else
        ctx.event('Normal', step.reason === 'Switchover' ? 'SwitchoverStarted' : 'Initialized', step.message);
      ctx.log.info({ primary: step.topology.primary, reason: step.reason }, step.message);
      return;
    }
    case 'fence':
      ctx.warn('Fencing', step.message);
      // Unclean: a short grace; the object still goes only once the kubelet has stopped the containers.
      await actions.deletePod(step.pod, step.uid, step.graceful ? undefined : FENCE_GRACE_SECONDS);
      return;
    case 'promote':
      if (!(await actions.promote(step.pod))) return;
      ctx.event('Normal', 'Promoted', `${step.pod} is the primary now`);
      ctx.log.info({ primary: step.pod }, 'promoted');
      return;
    case 'replace':
      if (step.reason === 'ReplicationStopped') ctx.warn('ReplicaRestarted', step.message);
      else ctx.event('Normal', 'RollingUpdate', step.message);
      ctx.log.info({ pod: step.pod }, step.message);
      await actions.deletePod(step.pod, step.uid);
      return;
    case 'refuseSwitchover':
      ctx.warn('SwitchoverRefused', step.message);
      return;
  }
}
