import { appliedHash, canonicalJson, isConverged, withAppliedHash } from './converged.ts';

export interface BenchmarkResult {
  benchmark: string;
  value: number;
  unit: string;
}

/** About the size and depth of a Database's StatefulSet as applied: the largest child a reconcile hashes. */
function statefulSetBody(i: number): unknown {
  const labels = {
    'app.kubernetes.io/name': 'postgres',
    'app.kubernetes.io/instance': `db-${i}`,
    'app.kubernetes.io/managed-by': 'regulon',
  };
  const env = Array.from({ length: 8 }, (_, e) => ({
    name: `ENV_${e}`,
    valueFrom: { secretKeyRef: { name: `db-${i}-credentials`, key: `key-${e}` } },
  }));
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: {
      name: `db-${i}`,
      namespace: 'bench',
      labels,
      ownerReferences: [
        {
          apiVersion: 'regulon.dev/v1alpha1',
          kind: 'Database',
          name: `db-${i}`,
          uid: `uid-${i}`,
          controller: true,
        },
      ],
    },
    spec: {
      replicas: 1,
      serviceName: `db-${i}-headless`,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels, annotations: { 'regulon.dev/config-hash': 'abcdef0123456789' } },
        spec: {
          serviceAccountName: `db-${i}`,
          securityContext: { runAsNonRoot: true, fsGroup: 999, runAsUser: 999 },
          containers: [
            {
              name: 'postgres',
              image: 'postgres:16.6',
              ports: [{ name: 'postgres', containerPort: 5432 }],
              env,
              // Spelled as a user might: the server stores 100m and 256Mi, and drops the empty args.
              args: [],
              resources: { requests: { cpu: '0.1', memory: '262144Ki' }, limits: { memory: '262144Ki' } },
              readinessProbe: { exec: { command: ['pg_isready', '-U', 'postgres'] }, periodSeconds: 10 },
              volumeMounts: [
                { name: 'data', mountPath: '/var/lib/postgresql/data' },
                { name: 'config', mountPath: '/etc/postgresql' },
              ],
            },
          ],
          volumes: [{ name: 'config', configMap: { name: `db-${i}-config` } }],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: 'data' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
        },
      ],
    },
  };
}

/**
 * `body` as the API server would return it: the applied values in its own
 * spelling (quantities canonical, `env: []` dropped), plus what defaulting and
 * the server add, so the check walks the whole body and takes every
 * normal-form branch.
 */
function liveForm(body: unknown): unknown {
  const live = structuredClone(body) as {
    metadata: Record<string, unknown>;
    spec: { template: { spec: { containers: Array<Record<string, unknown>> } } };
  };
  live.metadata['uid'] = 'uid';
  live.metadata['resourceVersion'] = '12345';
  const container = live.spec.template.spec.containers[0]!;
  container['resources'] = { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '256Mi' } };
  container['terminationMessagePath'] = '/dev/termination-log';
  container['imagePullPolicy'] = 'IfNotPresent';
  delete container['args'];
  return live;
}

function perSecond(n: number, run: (i: number) => unknown): number {
  const start = performance.now();
  for (let i = 0; i < n; i++) run(i);
  return n / ((performance.now() - start) / 1000);
}

/**
 * Every reconcile hashes each child it applies, converged or not. Side by
 * side with JSON.stringify of the same body: V8's native serializer, which
 * sorts nothing, is the floor for a canonical form written in JavaScript.
 */
export function runConvergedBenchmarks(): BenchmarkResult[] {
  const n = 20_000;
  const bodies = Array.from({ length: 100 }, (_, i) => statefulSetBody(i));
  const body = (i: number) => bodies[i % bodies.length];
  const applied = bodies.map((b) => withAppliedHash(b as { metadata: Record<string, unknown> }));
  const lives = applied.map(liveForm);
  if (!applied.every((a, i) => isConverged(a, lives[i])))
    throw new Error('the live forms must match: a mismatch stops the check early');
  for (let i = 0; i < 2_000; i++) appliedHash(body(i)); // warm up the JIT
  return [
    {
      benchmark: 'JSON.stringify, StatefulSet body',
      value: Math.round(perSecond(n, (i) => JSON.stringify(body(i)))),
      unit: 'per s',
    },
    {
      benchmark: 'canonicalJson, StatefulSet body',
      value: Math.round(perSecond(n, (i) => canonicalJson(body(i)))),
      unit: 'per s',
    },
    {
      benchmark: 'appliedHash, StatefulSet body',
      value: Math.round(perSecond(n, (i) => appliedHash(body(i)))),
      unit: 'per s',
    },
    {
      // The converged check proper, in the API server's normal form, on a child that matches.
      benchmark: 'isConverged, StatefulSet body vs its live form',
      value: Math.round(perSecond(n, (i) => isConverged(applied[i % 100]!, lives[i % 100]))),
      unit: 'per s',
    },
  ];
}
