// The kustomize base of one manager: its namespace, ServiceAccount, Deployment
// and metrics Service, and the kustomization that lists them. The Deployment
// is what a @regulon/runtime Manager needs and what the restricted Pod
// Security Standard admits.
import { yamlDocument } from './yaml.ts';

export interface ManagerSettings {
  /** The Deployment's, ServiceAccount's and (unless rbac says otherwise) roles' name. */
  name: string;
  /** Where the manager runs: the Namespace the base creates, and where its Lease lives. */
  namespace: string;
  /** The manager's container image. */
  image: string;
  /** Default 1. More only with leader election: the others are warm standbys. */
  replicas?: number | undefined;
  /** The container's arguments (after the image's entrypoint). */
  args?: readonly string[] | undefined;
  /** Extra environment variables, in this order after POD_NAMESPACE and POD_NAME. */
  env?: Readonly<Record<string, string>> | undefined;
  /** Default IfNotPresent. */
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never' | undefined;
  /** The port the Manager serves /metrics on (its metricsBindAddress; default 8080). */
  metricsPort?: number | undefined;
  /** The port the Manager serves /healthz and /readyz on (its healthBindAddress; default 8081). */
  healthPort?: number | undefined;
  /** Default requests cpu 100m, memory 128Mi; limits memory 256Mi (no CPU limit). */
  resources?:
    | {
        requests?: Readonly<Record<string, string>> | undefined;
        limits?: Readonly<Record<string, string>> | undefined;
      }
    | undefined;
  /** The numeric user (and group) the container runs as; default 65532, the distroless `nonroot`. */
  runAsUser?: number | undefined;
  /** Default 45: longer than the Manager's 30 s graceful shutdown, so in-flight reconciles finish. */
  terminationGracePeriodSeconds?: number | undefined;
}

export const MANAGER_CONTAINER = 'manager';
export const DEFAULT_METRICS_PORT = 8080;
export const DEFAULT_HEALTH_PORT = 8081;

/** The labels every object of the base carries, and the Pods' selector (`app.kubernetes.io/name`). */
export function managerLabels(name: string, component: string): Record<string, string> {
  return { 'app.kubernetes.io/name': name, 'app.kubernetes.io/component': component };
}

export function namespaceYaml(namespace: string, header: string): string {
  return `${header}${yamlDocument({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: namespace,
      labels: {
        // The manager runs under the restricted Pod Security Standard; so must anything else put here.
        'pod-security.kubernetes.io/enforce': 'restricted',
        'pod-security.kubernetes.io/enforce-version': 'latest',
      },
    },
  })}`;
}

export function serviceAccountYaml(name: string, namespace: string, header: string): string {
  return `${header}${yamlDocument({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name, namespace, labels: managerLabels(name, 'manager') },
  })}`;
}

/** The manager's Deployment, run as its ServiceAccount `serviceAccount`. */
export function deploymentYaml(manager: ManagerSettings, serviceAccount: string, header: string): string {
  const metricsPort = manager.metricsPort ?? DEFAULT_METRICS_PORT;
  const healthPort = manager.healthPort ?? DEFAULT_HEALTH_PORT;
  const user = manager.runAsUser ?? 65532;
  const labels = managerLabels(manager.name, 'manager');
  const seccompProfile = { type: 'RuntimeDefault' };
  const probe = (path: string, periodSeconds: number) => ({
    httpGet: { path, port: 'health' },
    periodSeconds,
    timeoutSeconds: 2,
    failureThreshold: 3,
  });
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: manager.name, namespace: manager.namespace, labels },
    spec: {
      replicas: manager.replicas ?? 1,
      revisionHistoryLimit: 5,
      selector: { matchLabels: { 'app.kubernetes.io/name': manager.name } },
      template: {
        metadata: { labels, annotations: { 'kubectl.kubernetes.io/default-container': MANAGER_CONTAINER } },
        spec: {
          serviceAccountName: serviceAccount,
          terminationGracePeriodSeconds: manager.terminationGracePeriodSeconds ?? 45,
          securityContext: { runAsNonRoot: true, runAsUser: user, runAsGroup: user, seccompProfile },
          containers: [
            {
              name: MANAGER_CONTAINER,
              image: manager.image,
              imagePullPolicy: manager.imagePullPolicy ?? 'IfNotPresent',
              ...(manager.args?.length ? { args: [...manager.args] } : {}),
              env: [
                // Where the manager's Lease lives, and its identity in it.
                { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                ...Object.entries(manager.env ?? {}).map(([name, value]) => ({ name, value })),
              ],
              ports: [
                { name: 'metrics', containerPort: metricsPort, protocol: 'TCP' },
                { name: 'health', containerPort: healthPort, protocol: 'TCP' },
              ],
              livenessProbe: probe('/healthz', 10),
              readinessProbe: probe('/readyz', 5),
              resources: {
                requests: { ...(manager.resources?.requests ?? { cpu: '100m', memory: '128Mi' }) },
                limits: { ...(manager.resources?.limits ?? { memory: '256Mi' }) },
              },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                runAsNonRoot: true,
                capabilities: { drop: ['ALL'] },
                seccompProfile,
              },
              volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
            },
          ],
          volumes: [{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }],
        },
      },
    },
  };
  return `${header}${yamlDocument(deployment)}`;
}

/** A ClusterIP Service in front of every replica's /metrics (a standby's too). */
export function metricsServiceYaml(manager: ManagerSettings, header: string): string {
  return `${header}${yamlDocument({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: `${manager.name}-metrics`,
      namespace: manager.namespace,
      labels: managerLabels(manager.name, 'metrics'),
    },
    spec: {
      type: 'ClusterIP',
      selector: { 'app.kubernetes.io/name': manager.name },
      ports: [
        {
          name: 'metrics',
          port: manager.metricsPort ?? DEFAULT_METRICS_PORT,
          targetPort: 'metrics',
          protocol: 'TCP',
        },
      ],
    },
  })}`;
}

export interface KustomizationOptions {
  /** Comment lines above the document, each starting with `#`, ending in a newline. */
  header: string;
  /** Sets every namespaced object's namespace (kustomize `namespace`). */
  namespace?: string | undefined;
  /** An `app.kubernetes.io/part-of` label on every object (not in selectors). */
  partOf?: string | undefined;
  /** The files of the base, in this order. */
  resources: readonly string[];
  /** Patch files applied to them. */
  patches?: readonly string[] | undefined;
  /** Transformer configuration files (kustomize `configurations`), such as name references kustomize does not know. */
  configurations?: readonly string[] | undefined;
}

export function kustomizationYaml(options: KustomizationOptions): string {
  const k = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    ...(options.namespace ? { namespace: options.namespace } : {}),
    ...(options.partOf ? { labels: [{ pairs: { 'app.kubernetes.io/part-of': options.partOf } }] } : {}),
    resources: [...options.resources],
    ...(options.patches?.length ? { patches: options.patches.map((path) => ({ path })) } : {}),
    ...(options.configurations?.length ? { configurations: [...options.configurations] } : {}),
  };
  return `${options.header}${yamlDocument(k)}`;
}
