import type { Topology } from './plan.ts';

/**
 * The topology ConfigMap's key for the number of instances (spec.replicas),
 * beside the topology: what the agents' quorum answers count a majority of.
 */
export const MEMBERS_KEY = 'members';

/** The topology ConfigMap's data (see plan.ts): what the instances' start scripts read. */
export function topologyData(t: Topology): Record<string, string> {
  return {
    primary: t.primary,
    initialized: String(t.initialized),
    ...(t.since !== undefined ? { since: new Date(t.since).toISOString() } : {}),
  };
}

/** The topology a ConfigMap's data records; undefined when it records none. */
export function topologyFromData(d: Record<string, string> | undefined): Topology | undefined {
  if (!d?.['primary']) return undefined;
  const since = d['since'] ? Date.parse(d['since']) : NaN;
  return {
    primary: d['primary'],
    initialized: d['initialized'] === 'true',
    since: Number.isNaN(since) ? undefined : since,
  };
}
