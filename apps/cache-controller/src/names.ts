import { primaryLeaseName, recommendedLabels } from '@regulon/conventions';
import type { CacheObject } from './api.ts';

/**
 * The longest Cache name whose derived names stay valid: a StatefulSet's Pods
 * carry a `controller-revision-hash` label of `<name>-<hash>` (up to 11 more
 * characters) in a 63-character label value, and `<name>-hl` must be a DNS label.
 */
export const MAX_NAME_LENGTH = 52;

/** The most instances a Cache may run (spec.replicas' maximum). */
export const MAX_REPLICAS = 5;

export interface ChildNames {
  workload: string;
  clientService: string;
  headlessService: string;
  config: string;
  /** The generated auth Secret (when auth is on and none is referenced). */
  credentials: string;
  /** The binding Secret without a password (when auth is off). */
  binding: string;
  disruptionBudget: string;
  /** mode: replicated: the replicas that are linked to the primary and within the lag bound. */
  readOnlyService: string;
  /** mode: replicated: which instance may be writable (replication plan); read by the Pods at start. */
  topology: string;
  /** Under the instance agent: the Lease the primary's agent holds. */
  primaryLease: string;
  /** Under the instance agent: the instances' service account, and the Role (and binding) it has. */
  serviceAccount: string;
  agentRole: string;
}

export function childNames(cache: CacheObject): ChildNames {
  const n = cache.metadata.name!;
  return {
    workload: n,
    clientService: n,
    headlessService: `${n}-hl`,
    config: `${n}-config`,
    credentials: `${n}-credentials`,
    binding: `${n}-binding`,
    disruptionBudget: n,
    readOnlyService: `${n}-ro`,
    topology: `${n}-topology`,
    primaryLease: primaryLeaseName(n),
    serviceAccount: n,
    agentRole: `${n}-instance-agent`,
  };
}

export function authEnabled(cache: CacheObject): boolean {
  // Writing `auth` at all asks for it: enabled defaults to true (the API server fills it in).
  const auth = cache.spec.auth;
  return auth ? (auth.enabled ?? true) : false;
}

export function persistent(cache: CacheObject): boolean {
  return cache.spec.engine === 'redis' && (cache.spec.persistence?.enabled ?? false);
}

/** One primary and replicas (redis only, fixed at creation). */
export function replicated(cache: CacheObject): boolean {
  return cache.spec.engine === 'redis' && cache.spec.mode === 'replicated';
}

/** A StatefulSet (stable Pod names and, when persistent, a volume each) rather than a Deployment. */
export function stateful(cache: CacheObject): boolean {
  return persistent(cache) || replicated(cache);
}

/** The Pod label the primary carries, and the Services select on (shared with the replication plan). */
export { ROLE_LABEL } from '@regulon/conventions';

export function podName(cache: CacheObject, ordinal: number): string {
  return `${cache.metadata.name!}-${ordinal}`;
}

export function ordinalOf(cache: CacheObject, pod: string): number {
  return Number(pod.slice(cache.metadata.name!.length + 1));
}

/** The Secret the Pods read the password from, if auth is on: the referenced one or the generated one. */
export function authSecretName(cache: CacheObject): string | undefined {
  if (!authEnabled(cache)) return undefined;
  return cache.spec.auth?.secretName ?? childNames(cache).credentials;
}

/** The Secret applications bind to (status.binding.name). */
export function bindingSecretName(cache: CacheObject): string {
  return authSecretName(cache) ?? childNames(cache).binding;
}

/** The recommended app.kubernetes.io labels. */
export function labels(cache: CacheObject): Record<string, string> {
  return recommendedLabels({
    name: cache.spec.engine,
    instance: cache.metadata.name!,
    version: cache.spec.version,
    component: 'cache',
  });
}

/** The selector subset of the labels: what stays the same for the life of the Cache. */
export function selector(cache: CacheObject): Record<string, string> {
  return {
    'app.kubernetes.io/name': cache.spec.engine,
    'app.kubernetes.io/instance': cache.metadata.name!,
    // A Database may share the name (and in future the engine label): the component keeps the Pods apart.
    'app.kubernetes.io/component': 'cache',
  };
}

export const DEFAULT_FAILOVER_DELAY_S = 10;
