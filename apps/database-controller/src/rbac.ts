import type { V1PolicyRule } from '@kubernetes/client-node';
import { AGENT_MANAGER_RULES } from '@regulon/instance-agent/pod';

/**
 * Everything the Database controller does to the API, as RBAC rules: the
 * manager's ClusterRole is generated from this (tools/scripts/rbac.ts), so a
 * new call here without a new verb fails the RBAC test against a real API
 * server instead of in production. Exactly the verbs used, no wildcards:
 * - list/watch: the shared informers (reads come from the cache, never a GET);
 * - create + patch: children are server-side applied, which is a PATCH, and an
 *   apply that creates the object is also authorized as `create`;
 * - delete: only for the optional children it removes when the spec drops them.
 */
export const DATABASE_RBAC: readonly V1PolicyRule[] = [
  // patch: only to remove a switchover request (annotation) once carried out or refused.
  { apiGroups: ['regulon.dev'], resources: ['databases'], verbs: ['list', 'watch', 'patch'] },
  // Status is server-side applied on the subresource; the spec is never written.
  { apiGroups: ['regulon.dev'], resources: ['databases/status'], verbs: ['patch'] },
  // Children carry a controller ownerReference with blockOwnerDeletion: clusters that run the
  // OwnerReferencesPermissionEnforcement admission plugin require update on the owner's finalizers for that.
  { apiGroups: ['regulon.dev'], resources: ['databases/finalizers'], verbs: ['update'] },
  // get: with several instances the manager replaces the Pods itself, comparing each Pod's
  // revision with the StatefulSet's update revision read from the API server (a cached one a
  // moment old would have an up-to-date Pod replaced for nothing).
  { apiGroups: ['apps'], resources: ['statefulsets'], verbs: ['get', 'list', 'watch', 'create', 'patch'] },
  // The read-only Service goes away when replicas drop to 1.
  { apiGroups: [''], resources: ['services'], verbs: ['list', 'watch', 'create', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['serviceaccounts'], verbs: ['list', 'watch', 'create', 'patch'] },
  // get: the topology ConfigMap (which instance is the primary) is read from the API server, never
  // from a cache that may be a moment behind the manager's own last change of it.
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'patch'] },
  // The PodDisruptionBudget exists only with replicas > 1; the backup CronJob only with backups on.
  {
    apiGroups: ['policy'],
    resources: ['poddisruptionbudgets'],
    verbs: ['list', 'watch', 'create', 'patch', 'delete'],
  },
  { apiGroups: ['batch'], resources: ['cronjobs'], verbs: ['list', 'watch', 'create', 'patch', 'delete'] },
  // Secrets are watched as metadata only and generated credentials are created once: no
  // update or patch, so the controller never rewrites a password. get: the replication
  // role's password (its own `<name>-replication` Secret), which the manager connects to
  // the instances with; it is read per reconcile and never kept or logged. (RBAC cannot
  // name Secrets by a pattern, so the verb covers the namespace's Secrets.)
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create'] },
  // Pods: a list of a Database's Pods (their IPs and readiness), a merge patch of the role
  // label the Services select on, and delete to fence a former primary before a promotion.
  { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch', 'patch', 'delete'] },
  // Backup Jobs are read for status (the CronJob creates them).
  { apiGroups: ['batch'], resources: ['jobs'], verbs: ['list', 'watch'] },
  // Volume growth: one GET per PVC (not cached: PVCs are few and rarely read) and a merge patch of the size.
  // The same GETs tell, while the credentials Secret is absent, whether data initialised with its password exists.
  { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'patch'] },
  // Warning Events on Databases (events.k8s.io/v1), aggregated into series by patch.
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  // pgBackRest runs in the postgres container, next to the data it reads: with spec.backup.objectStore
  // the manager execs `pgbackrest stanza-create` on the primary (and the DatabaseBackup controller
  // starts and checks backups there). An exec over WebSocket is authorized as `create` on pods/exec.
  { apiGroups: [''], resources: ['pods/exec'], verbs: ['create'] },
];

/**
 * The DatabaseBackup controller's calls (setupDatabaseController with
 * `backups: true`), beyond DATABASE_RBAC: its own kind and status, and
 * Events on it. Its exec into the primary is DATABASE_RBAC's pods/exec.
 */
export const DATABASE_BACKUP_RBAC: readonly V1PolicyRule[] = [
  // list/watch: the informers of both controllers (the Database's status follows its DatabaseBackups).
  // create: the Database controller makes one per slot of spec.backup.schedule (backup/schedule.ts).
  { apiGroups: ['regulon.dev'], resources: ['databasebackups'], verbs: ['list', 'watch', 'create'] },
  { apiGroups: ['regulon.dev'], resources: ['databasebackups/status'], verbs: ['patch'] },
];

/**
 * What the controller needs beyond DATABASE_RBAC when it runs the instance
 * agent (--instance-agent-image, which deploy/ sets): AGENT_MANAGER_RULES
 * (@regulon/instance-agent). The instances' service accounts are
 * DATABASE_RBAC's: a Database always has one.
 */
export const INSTANCE_AGENT_RBAC: readonly V1PolicyRule[] = AGENT_MANAGER_RULES;
