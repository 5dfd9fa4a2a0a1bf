import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1ConfigMap,
  V1CronJob,
  V1CustomResourceDefinition,
  V1Deployment,
  V1Job,
  V1Lease,
  V1Namespace,
  V1Node,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodDisruptionBudget,
  V1ReplicaSet,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1Service,
  V1ServiceAccount,
  V1StatefulSet,
  V1SubjectAccessReview,
  EventsV1Event,
} from '@kubernetes/client-node';
import type { KubeObject, PartialObjectMetadata } from './types.ts';

/**
 * Identifies a REST resource: enough to build its URL and its apiVersion.
 * `T` is the type of its objects, so that a read through a typed kind needs
 * no type argument and a mismatch is a compile error.
 */
export interface ResourceType<T extends KubeObject = KubeObject> {
  /** API group; '' for the core group (served under /api). */
  group: string;
  version: string;
  kind: string;
  /** Lower-case plural resource name used in URLs, e.g. `deployments`. */
  plural: string;
  namespaced: boolean;
  /**
   * Read and watched as metadata only (PartialObjectMetadata): less memory,
   * and no Secret data held by the process. A property of the handle, so the
   * watch a controller declares and the reads it makes cannot disagree.
   */
  readonly metadataOnly?: boolean | undefined;
  /** Never set: carries `T` for the type checker. */
  readonly __object?: T | undefined;
}

/** The object type a kind handle reads: `ObjectOf<typeof Kinds.Pod>` is V1Pod. */
export type ObjectOf<K> = K extends ResourceType<infer T> ? T : never;

function rt<T extends KubeObject>(
  group: string,
  version: string,
  kind: string,
  plural: string,
  namespaced: boolean,
): ResourceType<T> {
  return Object.freeze({ group, version, kind, plural, namespaced });
}

/**
 * The metadata-only handle of a kind: the informer behind it lists and
 * watches PartialObjectMetadata, and reads through it return only metadata.
 */
export function metadataOnly<T extends KubeObject>(
  type: ResourceType<T>,
): ResourceType<PartialObjectMetadata> {
  const { group, version, kind, plural, namespaced } = type;
  return Object.freeze({ group, version, kind, plural, namespaced, metadataOnly: true });
}

/**
 * The same resource read as another shape. For code that declares its own
 * wire type: client-node's classes type timestamps as Date, while the JSON
 * this client returns carries the API server's strings.
 */
export function retyped<T extends KubeObject>(type: ResourceType): ResourceType<T> {
  return type as ResourceType<T>;
}

/** Two handles name the same kind (metadata-only or not). */
export function sameKind(a: ResourceType, b: ResourceType): boolean {
  return a.group === b.group && a.kind === b.kind;
}

export const Kinds = Object.freeze({
  ConfigMap: rt<V1ConfigMap>('', 'v1', 'ConfigMap', 'configmaps', true),
  Secret: rt<V1Secret>('', 'v1', 'Secret', 'secrets', true),
  Service: rt<V1Service>('', 'v1', 'Service', 'services', true),
  ServiceAccount: rt<V1ServiceAccount>('', 'v1', 'ServiceAccount', 'serviceaccounts', true),
  Pod: rt<V1Pod>('', 'v1', 'Pod', 'pods', true),
  Node: rt<V1Node>('', 'v1', 'Node', 'nodes', false),
  Namespace: rt<V1Namespace>('', 'v1', 'Namespace', 'namespaces', false),
  PersistentVolumeClaim: rt<V1PersistentVolumeClaim>(
    '',
    'v1',
    'PersistentVolumeClaim',
    'persistentvolumeclaims',
    true,
  ),
  Event: rt<EventsV1Event>('events.k8s.io', 'v1', 'Event', 'events', true),
  Deployment: rt<V1Deployment>('apps', 'v1', 'Deployment', 'deployments', true),
  ReplicaSet: rt<V1ReplicaSet>('apps', 'v1', 'ReplicaSet', 'replicasets', true),
  StatefulSet: rt<V1StatefulSet>('apps', 'v1', 'StatefulSet', 'statefulsets', true),
  Job: rt<V1Job>('batch', 'v1', 'Job', 'jobs', true),
  CronJob: rt<V1CronJob>('batch', 'v1', 'CronJob', 'cronjobs', true),
  PodDisruptionBudget: rt<V1PodDisruptionBudget>(
    'policy',
    'v1',
    'PodDisruptionBudget',
    'poddisruptionbudgets',
    true,
  ),
  Lease: rt<V1Lease>('coordination.k8s.io', 'v1', 'Lease', 'leases', true),
  CustomResourceDefinition: rt<V1CustomResourceDefinition>(
    'apiextensions.k8s.io',
    'v1',
    'CustomResourceDefinition',
    'customresourcedefinitions',
    false,
  ),
  Role: rt<V1Role>('rbac.authorization.k8s.io', 'v1', 'Role', 'roles', true),
  RoleBinding: rt<V1RoleBinding>('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings', true),
  ClusterRole: rt<V1ClusterRole>('rbac.authorization.k8s.io', 'v1', 'ClusterRole', 'clusterroles', false),
  ClusterRoleBinding: rt<V1ClusterRoleBinding>(
    'rbac.authorization.k8s.io',
    'v1',
    'ClusterRoleBinding',
    'clusterrolebindings',
    false,
  ),
  SubjectAccessReview: rt<V1SubjectAccessReview>(
    'authorization.k8s.io',
    'v1',
    'SubjectAccessReview',
    'subjectaccessreviews',
    false,
  ),
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
