import type { V1PolicyRule } from '@kubernetes/client-node';

/**
 * Everything the MyApp controller does to the API, as RBAC rules (the
 * manager's ClusterRole is generated from these). Exactly the verbs used:
 * list/watch for the shared informers, create + patch for server-side apply,
 * delete for the Database or Cache a spec no longer asks for.
 */
export const MYAPP_RBAC: readonly V1PolicyRule[] = [
  { apiGroups: ['regulon.dev'], resources: ['myapps'], verbs: ['list', 'watch'] },
  { apiGroups: ['regulon.dev'], resources: ['myapps/status'], verbs: ['patch'] },
  { apiGroups: ['regulon.dev'], resources: ['myapps/finalizers'], verbs: ['update'] },
  {
    apiGroups: ['regulon.dev'],
    resources: ['databases', 'caches'],
    verbs: ['list', 'watch', 'create', 'patch', 'delete'],
  },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['list', 'watch', 'create', 'patch'] },
  { apiGroups: [''], resources: ['services'], verbs: ['list', 'watch', 'create', 'patch'] },
  // Binding Secrets are only watched as metadata (their resourceVersion rolls the app); never read or written.
  { apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch'] },
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
];
