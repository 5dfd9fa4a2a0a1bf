import type { V1Deployment, V1EnvVar, V1Service } from '@kubernetes/client-node';
import { Cache } from '@regulon/cache-controller';
import type { KubeObject } from '@regulon/client';
import { contentHash, recommendedLabels } from '@regulon/conventions';
import { Database, databaseSpecToHub } from '@regulon/database-controller';
import type { MyAppObject } from './api.ts';

export const MAX_NAME_LENGTH = 40;

/** Where the readiness probe asks when spec.readinessPath is not set. */
export const DEFAULT_READINESS_PATH = '/readyz';

/**
 * The readiness probe's timing. The application answers its readiness path
 * only after asking its database and its cache; the app image bounds each of
 * those at 3 s, so a probe waits up to 10 s for a slow but honest answer. Three
 * failures 5 s apart (15 s) take a Pod out of its Service: a dependency that
 * hiccups once does not.
 */
export const READINESS_PROBE = { periodSeconds: 5, timeoutSeconds: 10, failureThreshold: 3 } as const;

export function childNames(app: MyAppObject) {
  const n = app.metadata.name!;
  return { database: `${n}-db`, cache: `${n}-cache`, deployment: n, service: n };
}

function labels(app: MyAppObject, component: string): Record<string, string> {
  const n = app.metadata.name!;
  return recommendedLabels({ name: 'myapp', instance: n, component, partOf: n });
}

/** A Deployment's selector is immutable: these two labels select the application's Pods for good. */
export function selector(app: MyAppObject): Record<string, string> {
  return { 'app.kubernetes.io/name': 'myapp', 'app.kubernetes.io/instance': app.metadata.name! };
}

/** A binding Secret the application reads, with the resourceVersion it had when the template was rendered. */
export interface Binding {
  secret: string;
  resourceVersion: string;
}

/** The bindings the Deployment reads; undefined for a child the spec doesn't ask for. */
export interface Bindings {
  database: Binding | undefined;
  cache: Binding | undefined;
}

const ref = (secret: string, key: string, optional = false): V1EnvVar['valueFrom'] => ({
  secretKeyRef: { name: secret, key, ...(optional ? { optional } : {}) },
});

/**
 * Connection settings come from the children's binding Secrets by reference:
 * the values never pass through this controller, the MyApp or a ConfigMap.
 */
export function bindingEnv({ database, cache }: Bindings): V1EnvVar[] {
  const env: V1EnvVar[] = [];
  if (database) {
    const s = database.secret;
    env.push(
      { name: 'DATABASE_URL', valueFrom: ref(s, 'uri') },
      { name: 'DATABASE_HOST', valueFrom: ref(s, 'host') },
      { name: 'DATABASE_PORT', valueFrom: ref(s, 'port') },
      { name: 'DATABASE_USER', valueFrom: ref(s, 'username') },
      { name: 'DATABASE_PASSWORD', valueFrom: ref(s, 'password') },
      { name: 'DATABASE_NAME', valueFrom: ref(s, 'database', true) },
    );
  }
  if (cache) {
    const s = cache.secret;
    env.push(
      { name: 'CACHE_URL', valueFrom: ref(s, 'uri') },
      { name: 'CACHE_HOST', valueFrom: ref(s, 'host') },
      { name: 'CACHE_PORT', valueFrom: ref(s, 'port') },
      // memcached's SASL/auth-file user; absent for redis (its default user) and without auth.
      { name: 'CACHE_USER', valueFrom: ref(s, 'username', true) },
      // Absent when the cache runs without auth.
      { name: 'CACHE_PASSWORD', valueFrom: ref(s, 'password', true) },
    );
  }
  return env;
}

/** Changes when a bound Secret changes, so the Pods roll and read the new values. */
export function bindingsHash({ database, cache }: Bindings): string {
  return contentHash(
    [database, cache]
      .filter((b): b is Binding => b !== undefined)
      .map((b) => `${b.secret}@${b.resourceVersion}`)
      .join(','),
  );
}

/**
 * Every child the MyApp wants, in the order they are applied: the Database
 * and Cache its spec asks for, the Deployment once `bindings` are known
 * (undefined while it waits for the Secrets it reads), and the Service.
 */
export function desiredChildren(app: MyAppObject, bindings: Bindings | undefined): KubeObject[] {
  const { database, cache } = app.spec;
  const names = childNames(app);
  // The templates in the MyApp's spec are the children's specs as they are (the
  // Database's at the version MyApp v1alpha1 embeds, converted to the current one).
  return [
    ...(database
      ? [
          Database.object({
            metadata: { name: names.database, labels: labels(app, 'database') },
            spec: databaseSpecToHub(database),
          }),
        ]
      : []),
    ...(cache
      ? [Cache.object({ metadata: { name: names.cache, labels: labels(app, 'cache') }, spec: cache })]
      : []),
    ...(bindings ? [desiredDeployment(app, bindings)] : []),
    desiredService(app),
  ];
}

export function desiredDeployment(app: MyAppObject, bindings: Bindings): V1Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: childNames(app).deployment, labels: labels(app, 'application') },
    spec: {
      replicas: app.spec.replicas,
      selector: { matchLabels: selector(app) },
      template: {
        metadata: {
          labels: labels(app, 'application'),
          annotations: { 'regulon.dev/bindings-hash': bindingsHash(bindings) },
        },
        spec: {
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'app',
              image: app.spec.image,
              ports: [{ name: 'http', containerPort: app.spec.port }],
              env: [...((app.spec.env ?? []) as V1EnvVar[]), ...bindingEnv(bindings)],
              // Ready means the application can use its dependencies, not merely that it runs.
              readinessProbe: {
                httpGet: { path: app.spec.readinessPath ?? DEFAULT_READINESS_PATH, port: 'http' },
                ...READINESS_PROBE,
              },
              securityContext: {
                allowPrivilegeEscalation: false,
                runAsNonRoot: true,
                capabilities: { drop: ['ALL'] },
                seccompProfile: { type: 'RuntimeDefault' },
              },
            },
          ],
        },
      },
    },
  };
}

export function desiredService(app: MyAppObject): V1Service {
  const svc = serviceSpec(app);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: childNames(app).service, labels: labels(app, 'application') },
    spec: {
      type: svc.type,
      selector: selector(app),
      ports: [{ name: 'http', port: svc.port, targetPort: app.spec.port, protocol: 'TCP' }],
    },
  };
}

export function serviceSpec(app: MyAppObject): NonNullable<MyAppObject['spec']['service']> {
  return app.spec.service ?? { type: 'ClusterIP', port: 80 };
}
