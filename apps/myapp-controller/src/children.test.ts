import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MyApp, type MyAppObject } from './api.ts';
import { DEFAULT_READINESS_PATH, desiredDeployment, READINESS_PROBE, type Bindings } from './children.ts';

const app = (over: Partial<MyAppObject['spec']> = {}): MyAppObject =>
  MyApp.object({
    metadata: { name: 'shop', namespace: 'ns' },
    spec: { image: 'regulon.local/app:12', replicas: 1, port: 8080, ...over },
  });
const bindings: Bindings = {
  database: { secret: 'shop-db-credentials', resourceVersion: '1' },
  cache: { secret: 'shop-cache-credentials', resourceVersion: '1' },
};
const container = (a: MyAppObject, b: Bindings = bindings) =>
  desiredDeployment(a, b).spec!.template.spec!.containers[0]!;

test('the app container is probed for readiness on its own port, at /readyz by default', () => {
  assert.deepEqual(container(app()).readinessProbe, {
    httpGet: { path: DEFAULT_READINESS_PATH, port: 'http' },
    ...READINESS_PROBE,
  });
  assert.equal(DEFAULT_READINESS_PATH, '/readyz');
  assert.deepEqual(container(app()).ports, [{ name: 'http', containerPort: 8080 }]);
});

test('spec.readinessPath moves the probe', () => {
  assert.equal(
    container(app({ readinessPath: '/health/deps' })).readinessProbe?.httpGet?.path,
    '/health/deps',
  );
});

test('the probe waits longer than the app image bounds its two dependency checks (3 s each)', () => {
  assert.ok(READINESS_PROBE.timeoutSeconds >= 2 * 3);
});

test('the cache env carries the optional user (memcached) and password by reference, no values', () => {
  const env = container(app()).env!;
  assert.deepEqual(
    env.filter((e) => e.name.startsWith('CACHE_')).map((e) => [e.name, e.valueFrom?.secretKeyRef]),
    [
      ['CACHE_URL', { name: 'shop-cache-credentials', key: 'uri' }],
      ['CACHE_HOST', { name: 'shop-cache-credentials', key: 'host' }],
      ['CACHE_PORT', { name: 'shop-cache-credentials', key: 'port' }],
      ['CACHE_USER', { name: 'shop-cache-credentials', key: 'username', optional: true }],
      ['CACHE_PASSWORD', { name: 'shop-cache-credentials', key: 'password', optional: true }],
    ],
  );
  assert.ok(env.every((e) => e.value === undefined));
});

test('without a cache there is no CACHE_* env, so the app does not check one', () => {
  const env = container(app(), { ...bindings, cache: undefined }).env!;
  assert.equal(
    env.some((e) => e.name.startsWith('CACHE_')),
    false,
  );
});
