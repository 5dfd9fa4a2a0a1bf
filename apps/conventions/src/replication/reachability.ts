import type { Condition, Context } from '@regulon/runtime';
import { Gauge, type Registry } from 'prom-client';
import { oncePerRegistry } from '@regulon/util';
import type { Plan } from './plan.ts';
import { QUORUM_REASON } from './quorum-report.ts';

/**
 * A manager cut off from the instances changes nothing (plan() keeps the roles
 * of Pods the kubelet reports Ready), and says so: the `InstancesReachable`
 * condition, a Warning Event when it starts and a Normal one when it ends, and
 * a gauge for alerts. The instances' own state is the kubelet's word meanwhile.
 */
export const REACHABLE_CONDITION = 'InstancesReachable';
export const UNREACHABLE_METRIC = 'regulon_replication_unreachable_instances';

/** The condition for what the plan saw: True when every Ready instance answered this manager. */
export function reachabilityCondition(plan: Plan): {
  status: 'True' | 'False';
  reason: string;
  message: string;
} {
  if (!plan.unobserved.length)
    return { status: 'True', reason: 'AllReachable', message: 'The manager reaches every ready instance' };
  return {
    status: 'False',
    reason: 'InstancesUnreachable',
    message:
      `The manager cannot reach ${plan.unobserved.join(', ')}; the kubelet reports their Pods Ready, ` +
      "so their roles are kept and nothing fails over on the manager's word alone",
  };
}

/**
 * ReplicationHealthy, where the engine's own words do not count yet: False while no
 * instance holds the primary role (FailoverQuorumNotReached while a synchronous failover waits
 * for its quorum), Unknown while the manager cannot see every instance.
 */
export function replicationUnsettled(
  plan: Plan,
): { status: 'False' | 'Unknown'; reason: string; message: string } | undefined {
  if (!plan.servingPrimary)
    return {
      status: 'False',
      reason: plan.quorum ? QUORUM_REASON : 'NoPrimary',
      message: plan.waiting ?? 'No instance accepts writes',
    };
  if (plan.unobserved.length)
    return {
      status: 'Unknown',
      reason: 'InstancesUnreachable',
      message: reachabilityCondition(plan).message,
    };
  return undefined;
}

type Labels = 'kind' | 'owner_namespace' | 'owner';
const gaugeOf = oncePerRegistry(
  (registry) =>
    new Gauge<Labels>({
      name: UNREACHABLE_METRIC,
      help: 'Instances whose Pod the kubelet reports Ready but whose server does not answer the manager',
      labelNames: ['kind', 'owner_namespace', 'owner'],
      registers: [registry],
    }),
);

/**
 * Records each replicated owner's reachability after its reconcile: the gauge
 * (labelled by kind, namespace and name, never an address) and, on a change of
 * the condition from what the owner's status last said, an Event.
 */
export function reachabilityReporter(
  registry: Registry,
  kind: string,
): (
  owner: { metadata: { namespace?: string | undefined; name?: string | undefined } },
  previous: readonly Condition[] | undefined,
  plan: Plan,
  ctx: Pick<Context, 'event' | 'warn'>,
) => void {
  const g = gaugeOf(registry);
  return (owner, previous, plan, ctx) => {
    const labels = {
      kind,
      owner_namespace: owner.metadata.namespace ?? '',
      owner: owner.metadata.name ?? '',
    };
    g.set(labels, plan.unobserved.length);
    const now = reachabilityCondition(plan);
    const before = previous?.find((c) => c.type === REACHABLE_CONDITION)?.status;
    if (now.status === 'False' && before !== 'False') ctx.warn(now.reason, now.message);
    if (now.status === 'True' && before === 'False') ctx.event('Normal', 'InstancesReachable', now.message);
  };
}
