import { Gauge, type Registry } from 'prom-client';
import { oncePerRegistry } from '@regulon/util';

/**
 * Replicas that stream but trail beyond their owner's `maxLag`: the plan takes them out of the
 * read-only Service (their status state `Lagging`). The bound is the owner's spec, which only
 * the manager reads, so this gauge, not the instances' own lag series, is what an alert on
 * "lag over the Database's bound" watches.
 */
export const LAGGING_METRIC = 'regulon_replication_lagging_instances';

/** The status state of an instance that streams beyond the owner's bound (both kinds write it). */
export const LAGGING_STATE = 'Lagging';

const gaugeOf = oncePerRegistry(
  (registry) =>
    new Gauge<'kind' | 'owner_namespace' | 'owner'>({
      name: LAGGING_METRIC,
      help: "Replicas that stream but trail beyond their owner's maxLag, out of the read-only Service",
      labelNames: ['kind', 'owner_namespace', 'owner'],
      registers: [registry],
    }),
);

/** Records, after each reconcile of a replicated owner, how many of its instances are Lagging. */
export function laggingReporter(
  registry: Registry,
  kind: string,
): (
  owner: { metadata: { namespace?: string | undefined; name?: string | undefined } },
  instances: readonly { state?: string | undefined }[] | undefined,
) => void {
  const g = gaugeOf(registry);
  return (owner, instances) =>
    g.set(
      { kind, owner_namespace: owner.metadata.namespace ?? '', owner: owner.metadata.name ?? '' },
      (instances ?? []).filter((i) => i.state === LAGGING_STATE).length,
    );
}
