import { createHash } from 'node:crypto';
import type { V1Deployment, V1EnvVar, V1Service } from '@kubernetes/client-node';
import type { MyAppObject } from './api.ts';

export const MAX_NAME_LENGTH = 40;

export function childNames(app: MyAppObject) {
  const n = app.metadata.name!;
  return { database: `${n}-db`, cache: `${n}-cache`, deployment: n, service: n };
}

export function labels(app: MyAppObject): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'myapp',
    'app.kubernetes.io/instance': app.metadata.name!,
    'app.kubernetes.io/component': 'application',
    'app.kubernetes.io/part-of': app.metadata.name!,
    'app.kubernetes.io/managed-by': 'regulon',
  };
}

export function selector(app: MyAppObject): Record<string, string> {
  return { 'app.kubernetes.io/name': 'myapp', 'app.kubernetes.io/instance': app.metadata.name! };
}

/** A binding Secret the application reads, with the resourceVersion it had when the template was rendered. */
export interface Binding {
  secret: string;
  resourceVersion: string;
}

const ref = (secret: string, key: string, optional = false): V1EnvVar['valueFrom'] => ({
  secretKeyRef: { name: secret, key, ...(optional ? { optional } : {}) },
});

/**
 * Connection settings come from the children's binding Secrets by reference:
 * the values never pass through this controller, the MyApp or a ConfigMap.
 */
export function bindingEnv(database: Binding | undefined, cache: Binding | undefined): V1EnvVar[] {
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
      // Absent when the cache runs without auth.
      { name: 'CACHE_PASSWORD', valueFrom: ref(s, 'password', true) },
    );
  }
  return env;
}

/** Changes when a bound Secret changes, so the Pods roll and read the new values. */
export function bindingsHash(bindings: Array<Binding | undefined>): string {
  const parts = bindings
    .filter((b): b is Binding => b !== undefined)
    .map((b) => `${b.secret}@${b.resourceVersion}`);
  return createHash('sha256').update(parts.join(',')).digest('hex').slice(0, 16);
}

export function desiredDeployment(
  app: MyAppObject,
  database: Binding | undefined,
  cache: Binding | undefined,
): V1Deployment {
  return {
    metadata: { name: childNames(app).deployment, labels: labels(app) },
    spec: {
      replicas: app.spec.replicas,
      selector: { matchLabels: selector(app) },
      template: {
        metadata: {
          labels: labels(app),
          annotations: { 'regulon.dev/bindings-hash': bindingsHash([database, cache]) },
        },
        spec: {
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'app',
              image: app.spec.image,
              ports: [{ name: 'http', containerPort: app.spec.port }],
              env: [...((app.spec.env ?? []) as V1EnvVar[]), ...bindingEnv(database, cache)],
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
  const svc = app.spec.service ?? { type: 'ClusterIP', port: 80 };
  return {
    metadata: { name: childNames(app).service, labels: labels(app) },
    spec: {
      type: svc.type,
      selector: selector(app),
      ports: [{ name: 'http', port: svc.port, targetPort: app.spec.port, protocol: 'TCP' }],
    },
  };
}
