import type { Condition, Context } from '@regulon/runtime';
import { Gauge, type Registry } from 'prom-client';
import { oncePerRegistry } from '@regulon/util';
import type { Plan } from './plan.ts';

/**
 * A synchronous failover that waits for its quorum (Plan.quorum) is an outage a person may have
 * to end: it says so in ReplicationHealthy (this reason), a Warning Event when the wait starts,
 * and a gauge of the standbys it waits for, for alerts.
 */
export const QUORUM_REASON = 'FailoverQuorumNotReached';
export const QUORUM_METRIC = 'regulon_replication_failover_quorum_missing_instances';

type Labels = 'kind' | 'owner_namespace' | 'owner';
const gaugeOf = oncePerRegistry(
  (registry) =>
    new Gauge<Labels>({
      name: QUORUM_METRIC,
      help: 'Standbys a synchronous failover waits to hear from before it may promote one (0: none waited for)',
      labelNames: ['kind', 'owner_namespace', 'owner'],
      registers: [registry],
    }),
);

export function failoverQuorumReporter(
  registry: Registry,
  kind: string,
): (
  owner: { metadata: { namespace?: string | undefined; name?: string | undefined } },
  previous: readonly Condition[] | undefined,
  plan: Plan,
  ctx: Pick<Context, 'warn'>,
) => void {
  const g = gaugeOf(registry);
  return (owner, previous, plan, ctx) => {
    g.set(
      { kind, owner_namespace: owner.metadata.namespace ?? '', owner: owner.metadata.name ?? '' },
      plan.quorum?.silent.length ?? 0,
    );
    const before = previous?.find((c) => c.type === 'ReplicationHealthy')?.reason;
    if (plan.quorum && before !== QUORUM_REASON) ctx.warn(QUORUM_REASON, plan.waiting ?? QUORUM_REASON);
  };
}
