/** Identifies a REST resource: enough to build its URL and its apiVersion. */
export interface ResourceType {
  /** API group; '' for the core group (served under /api). */
  group: string;
  version: string;
  kind: string;
  /** Lower-case plural resource name used in URLs, e.g. `deployments`. */
  plural: string;
  namespaced: boolean;
}

function rt(group: string, version: string, kind: string, plural: string, namespaced: boolean): ResourceType {
  return Object.freeze({ group, version, kind, plural, namespaced });
}

export const Kinds = Object.freeze({
  ConfigMap: rt('', 'v1', 'ConfigMap', 'configmaps', true),
  Secret: rt('', 'v1', 'Secret', 'secrets', true),
  Service: rt('', 'v1', 'Service', 'services', true),
  ServiceAccount: rt('', 'v1', 'ServiceAccount', 'serviceaccounts', true),
  Pod: rt('', 'v1', 'Pod', 'pods', true),
  Node: rt('', 'v1', 'Node', 'nodes', false),
  Namespace: rt('', 'v1', 'Namespace', 'namespaces', false),
  PersistentVolumeClaim: rt('', 'v1', 'PersistentVolumeClaim', 'persistentvolumeclaims', true),
  Event: rt('events.k8s.io', 'v1', 'Event', 'events', true),
  Deployment: rt('apps', 'v1', 'Deployment', 'deployments', true),
  ReplicaSet: rt('apps', 'v1', 'ReplicaSet', 'replicasets', true),
  StatefulSet: rt('apps', 'v1', 'StatefulSet', 'statefulsets', true),
  Job: rt('batch', 'v1', 'Job', 'jobs', true),
  CronJob: rt('batch', 'v1', 'CronJob', 'cronjobs', true),
  PodDisruptionBudget: rt('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets', true),
  Lease: rt('coordination.k8s.io', 'v1', 'Lease', 'leases', true),
  CustomResourceDefinition: rt(
    'apiextensions.k8s.io',
    'v1',
    'CustomResourceDefinition',
    'customresourcedefinitions',
    false,
  ),
  Role: rt('rbac.authorization.k8s.io', 'v1', 'Role', 'roles', true),
  RoleBinding: rt('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings', true),
  ClusterRole: rt('rbac.authorization.k8s.io', 'v1', 'ClusterRole', 'clusterroles', false),
  ClusterRoleBinding: rt(
    'rbac.authorization.k8s.io',
    'v1',
    'ClusterRoleBinding',
    'clusterrolebindings',
    false,
  ),
  SubjectAccessReview: rt('authorization.k8s.io', 'v1', 'SubjectAccessReview', 'subjectaccessreviews', false),
});

/** `v1` for the core group, `group/version` otherwise. */
export function apiVersionOf(t: ResourceType): string {
  return t.group === '' ? t.version : `${t.group}/${t.version}`;
}

/** Root of a group-version: `/api/v1` or `/apis/<group>/<version>`. */
export function groupVersionPath(group: string, version: string): string {
  return group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
}

/**
 * Path of a collection (no `name`) or an object, optionally a subresource.
 * Without a namespace a namespaced type addresses all namespaces, which is
 * only meaningful for list and watch; callers that need one enforce it.
 */
export function resourcePath(
  t: ResourceType,
  namespace?: string,
  name?: string,
  subresource?: string,
): string {
  let path = groupVersionPath(t.group, t.version);
  if (t.namespaced && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${t.plural}`;
  if (name !== undefined) {
    if (name === '') throw new TypeError(`${t.kind}: empty name`);
    path += `/${encodeURIComponent(name)}`;
    if (subresource) path += `/${subresource}`;
  }
  return path;
}
