import type { V1PolicyRule } from '@kubernetes/client-node';
import { AGENT_MANAGER_RULES } from '@regulon/instance-agent/pod';

/**
 * Everything the Cache controller does to the API, as RBAC rules, in the
 * shape the manager's generated ClusterRole is built from (as DATABASE_RBAC).
 * Exactly the verbs used, no wildcards:
 * - list/watch: the shared informers (reads come from the cache, never a GET);
 * - create + patch: children are server-side applied, which is a PATCH, and an
 *   apply that creates the object is also authorized as `create`;
 * - delete: only for children it removes when the spec no longer wants them.
 */
export const CACHE_RBAC: readonly V1PolicyRule[] = [
  { apiGroups: ['regulon.dev'], resources: ['caches'], verbs: ['list', 'watch'] },
  // Status is server-side applied on the subresource; the spec is never written.
  { apiGroups: ['regulon.dev'], resources: ['caches/status'], verbs: ['patch'] },
  // Children carry a controller ownerReference with blockOwnerDeletion: clusters that run the
  // OwnerReferencesPermissionEnforcement admission plugin require update on the owner's finalizers for that.
  { apiGroups: ['regulon.dev'], resources: ['caches/finalizers'], verbs: ['update'] },
  // delete: the workload of the other kind, should the persistence rule ever have been bypassed.
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['list', 'watch', 'create', 'patch', 'delete'] },
  // get: a replicated redis's update revision, read from the API server (the cache may be a moment behind).
  {
    apiGroups: ['apps'],
    resources: ['statefulsets'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
  },
  { apiGroups: [''], resources: ['services'], verbs: ['list', 'watch', 'create', 'patch'] },
  // get: a replicated redis's topology, read from the API server before it is acted on.
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'patch'] },
  // A replicated redis's Pods: watched as metadata (readiness changes wake the Cache), listed with their
  // addresses, role-labelled (patch), and deleted to fence a former primary or roll a new template.
  { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch', 'patch', 'delete'] },
  // The PodDisruptionBudget exists only with replicas > 1.
  {
    apiGroups: ['policy'],
    resources: ['poddisruptionbudgets'],
    verbs: ['list', 'watch', 'create', 'patch', 'delete'],
  },
  // Secrets are watched as metadata only and created once, never rewritten; get: a replicated redis's
  // password, read for the reconcile's connections to its instances and never kept past it;
  // delete: the password-less binding Secret once auth is turned on.
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
  // Warning Events on Caches (events.k8s.io/v1), aggregated into series by patch.
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
];

/**
 * What the controller needs beyond CACHE_RBAC when it runs replicated redis
 * under the instance agent (--instance-agent-image, which deploy/ sets):
 * AGENT_MANAGER_RULES (@regulon/instance-agent), and the instances' own
 * service account, which a Cache has only then.
 */
export const CACHE_INSTANCE_AGENT_RBAC: readonly V1PolicyRule[] = [
  ...AGENT_MANAGER_RULES,
  { apiGroups: [''], resources: ['serviceaccounts'], verbs: ['list', 'watch', 'create', 'patch', 'delete'] },
];
