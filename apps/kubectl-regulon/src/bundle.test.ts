import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { REDACTED, redact } from './bundle.ts';

describe('redact', () => {
  test('a Secret keeps its keys, every value REDACTED, and loses the last-applied copy of its data', () => {
    const secret: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'orders-credentials',
        annotations: {
          'kubectl.kubernetes.io/last-applied-configuration': '{"data":{"password":"aHVudGVyMg=="}}',
        },
        managedFields: [{ manager: 'kubectl' }],
      },
      type: 'servicebinding.io/postgres',
      data: { username: 'cG9zdGdyZXM=', password: 'aHVudGVyMg==' },
      stringData: { uri: 'postgres://postgres:hunter2@orders:5432/app' },
    };
    const out = redact(secret);
    assert.deepEqual(out, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'orders-credentials',
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': REDACTED },
      },
      type: 'servicebinding.io/postgres',
      data: { username: REDACTED, password: REDACTED },
      stringData: { uri: REDACTED },
    });
    assert.doesNotMatch(JSON.stringify(out), /hunter2|aHVudGVyMg/);
    assert.equal(secret.data!.password, 'aHVudGVyMg==', 'the input is not changed');
  });

  test('inline environment values named like credentials, in any container, are REDACTED; references stay', () => {
    const pod: V1Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'shop-0', managedFields: [{ manager: 'x' }] },
      spec: {
        initContainers: [{ name: 'init', env: [{ name: 'API_TOKEN', value: 't0k' }] }],
        containers: [
          {
            name: 'app',
            env: [
              { name: 'DB_PASSWORD', value: 'hunter2' },
              { name: 'REDISCLI_AUTH', value: 'hunter3' },
              { name: 'AWS_ACCESS_KEY_ID', value: 'AKIA' },
              { name: 'LOG_LEVEL', value: 'debug' },
              { name: 'SUPERUSER_PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
            ],
          },
        ],
      },
    };
    const out = redact(pod);
    assert.equal(out.metadata!.managedFields, undefined);
    assert.deepEqual(out.spec!.initContainers![0]!.env, [{ name: 'API_TOKEN', value: REDACTED }]);
    assert.deepEqual(out.spec!.containers[0]!.env, [
      { name: 'DB_PASSWORD', value: REDACTED },
      { name: 'REDISCLI_AUTH', value: REDACTED },
      { name: 'AWS_ACCESS_KEY_ID', value: REDACTED },
      { name: 'LOG_LEVEL', value: 'debug' },
      { name: 'SUPERUSER_PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
    ]);
  });
});
