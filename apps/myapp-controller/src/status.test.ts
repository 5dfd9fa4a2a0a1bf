import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Deployment } from '@kubernetes/client-node';
import { Database, type DatabaseObject } from '@regulon/database-controller';
import type { Live } from '@regulon/runtime';
import { MyApp, type MyAppObject } from './api.ts';
import { desiredDeployment, type Binding } from './children.ts';
import type { ChildView, Observed } from './observe.ts';
import { computeStatus } from './status.ts';

const app: Live<MyAppObject> = {
  ...MyApp.object({
    metadata: {},
    spec: {
      image: 'ghcr.io/example/shop:1.0',
      replicas: 2,
      port: 8080,
      database: { engine: 'postgres', version: '16.6', replicas: 1, storage: { size: '1Gi' } },
    },
  }),
  metadata: { name: 'shop', namespace: 'ns', uid: 'u-shop', generation: 2 },
};

const readyDatabase: DatabaseObject = Database.object({
  metadata: { name: 'shop-db', namespace: 'ns', generation: 1 },
  spec: app.spec.database!,
  status: {
    observedGeneration: 1,
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'AllReplicasReady',
        message: '1/1',
        lastTransitionTime: '2025-01-01T00:00:00Z',
      },
    ],
    binding: { name: 'shop-db-credentials' },
  },
});

const binding: Binding = { secret: 'shop-db-credentials', resourceVersion: '7' };
const database = (over: Partial<ChildView> = {}): ChildView => ({
  type: Database,
  name: 'shop-db',
  foreign: undefined,
  current: readyDatabase,
  exists: true,
  binding,
  ...over,
});

/** A Deployment whose every replica is available, running the template rendered with `rendered`. */
function settledDeployment(rendered: Binding): V1Deployment {
  const d = desiredDeployment(app, { database: rendered, cache: undefined });
  return {
    ...d,
    metadata: { ...d.metadata, generation: 1 },
    status: {
      observedGeneration: 1,
      replicas: 2,
      updatedReplicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
    },
  };
}

const observed = (over: Partial<Observed> = {}): Observed => ({
  database: database(),
  cache: undefined,
  deployment: settledDeployment(binding),
  missingEnvSecrets: new Map(),
  secretsRead: ['shop-db-credentials'],
  ...over,
});

const cond = (s: ReturnType<typeof computeStatus>, type: string) =>
  s.conditions?.find((c) => c.type === type);

test('Ready once every child is ready and the Deployment runs the wanted template on every replica', () => {
  const s = computeStatus(app, observed(), undefined);
  assert.equal(cond(s, 'Ready')?.status, 'True');
  assert.equal(cond(s, 'DeploymentAvailable')?.reason, 'Available');
  assert.equal(cond(s, 'CacheReady')?.reason, 'NotRequested');
  assert.equal(s.available, '2/2');
  assert.equal(s.phase, 'Ready');
});

test('a Deployment still running the template of a rotated binding Secret is not Available, however settled', () => {
  const rotated = { ...binding, resourceVersion: '8' };
  const s = computeStatus(app, observed({ database: database({ binding: rotated }) }), undefined);
  assert.equal(cond(s, 'DeploymentAvailable')?.status, 'False');
  assert.equal(cond(s, 'DeploymentAvailable')?.reason, 'RollingOut');
  assert.equal(cond(s, 'Ready')?.reason, 'WaitingForDependencies');
});

test('a Database named like the child but controlled by another owner is a ChildConflict component', () => {
  const foreign = Database.object({
    metadata: {
      name: 'shop-db',
      namespace: 'ns',
      ownerReferences: [
        { apiVersion: 'v1', kind: 'ConfigMap', name: 'other', uid: 'u-other', controller: true },
      ],
    },
    spec: app.spec.database!,
  });
  const problem = { reason: 'ChildConflict', message: 'taken' };
  const s = computeStatus(
    app,
    observed({
      database: database({ foreign, current: undefined, binding: undefined }),
      deployment: undefined,
    }),
    problem,
  );
  const db = s.components?.find((c) => c.kind === 'Database');
  assert.equal(db?.reason, 'ChildConflict');
  assert.match(
    db.message,
    /Database ns\/shop-db already exists and is controlled by ConfigMap other, not by MyApp shop/,
  );
  assert.equal(cond(s, 'DeploymentAvailable')?.message, 'not created: ChildConflict');
  assert.equal(cond(s, 'Ready')?.reason, 'ChildConflict', 'Ready names the problem');
  assert.equal(cond(s, 'Stalled')?.status, 'True');
});

test('without a binding Secret the Deployment waits for it, and the status says so rather than "creating"', () => {
  const s = computeStatus(
    app,
    observed({ database: database({ current: undefined, binding: undefined }), deployment: undefined }),
    undefined,
  );
  assert.equal(cond(s, 'DeploymentAvailable')?.reason, 'WaitingForBindings');
  assert.equal(cond(s, 'DatabaseReady')?.reason, 'WaitingForStatus');
  assert.match(
    cond(s, 'Ready')!.message,
    /Database shop-db \(WaitingForStatus\), Deployment shop \(WaitingForBindings\)/,
  );
});

test('a replica whose readiness probe fails keeps the MyApp not Ready, and the message names the probe', () => {
  const settled = settledDeployment(binding);
  // A rolled template whose new Pod runs but does not pass its probe; the old one still serves.
  const rolling: V1Deployment = {
    ...settled,
    status: { ...settled.status, replicas: 3, updatedReplicas: 1, readyReplicas: 2, availableReplicas: 2 },
  };
  const s = computeStatus(app, observed({ deployment: rolling }), undefined);
  assert.equal(cond(s, 'DeploymentAvailable')?.reason, 'RollingOut');
  assert.equal(
    cond(s, 'DeploymentAvailable')?.message,
    '2/2 replicas available; 1 not ready (readiness probe GET /readyz on port 8080)',
  );
  assert.equal(cond(s, 'Ready')?.status, 'False');
});
