import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConflictError, type KubeClient } from '@regulon/client';
import { FENCED_INSTANCES_ANNOTATION } from '@regulon/database-controller';
import { realClock } from '@regulon/util';
import { parseCommandLine } from './args.ts';
import { UsageError, UserError } from './errors.ts';
import type { CommandEnv } from './env.ts';
import { editFencedInstances, fence, instancesOf } from './fence.ts';
import { replicatedDatabase } from './testing/fixtures.ts';

const ALL = ['orders-0', 'orders-1', 'orders-2'];

describe('fence and unfence', () => {
  test('the command line: DATABASE and POD or --all, --wait with --timeout', () => {
    assert.deepEqual(parseCommandLine(['fence', 'orders', 'orders-1', '-n', 'shop']), {
      global: { namespace: 'shop', context: undefined, kubeconfig: undefined },
      command: {
        name: 'fence',
        database: 'orders',
        pod: 'orders-1',
        all: false,
        wait: false,
        timeoutMs: 300_000,
      },
    });
    const all = parseCommandLine(['unfence', 'orders', '--all', '--wait', '--timeout', '90s']).command;
    assert.deepEqual(all, {
      name: 'unfence',
      database: 'orders',
      pod: undefined,
      all: true,
      wait: true,
      timeoutMs: 90_000,
    });
    for (const [argv, why] of [
      [['fence'], /missing DATABASE/],
      [['fence', 'orders'], /missing POD \(or --all\)/],
      [['fence', 'orders', 'orders-1', '--all'], /not both/],
      [['unfence', 'orders', 'orders-1', 'orders-2'], /unexpected argument "orders-2"/],
      [['fence', 'orders', 'orders-1', '--timeout', '1m'], /--timeout goes with --wait/],
    ] as const)
      assert.throws(
        () => parseCommandLine(argv),
        (e: Error) => e instanceof UsageError && why.test(e.message),
      );
    assert.equal(parseCommandLine(['help', 'fence']).command.name, 'help');
  });

  test('the annotation is edited, never replaced: other entries stay', () => {
    const fence = (pod: string) => ({ name: 'fence' as const, pod, all: false });
    const unfence = (pod: string) => ({ name: 'unfence' as const, pod, all: false });
    assert.equal(editFencedInstances(undefined, fence('orders-1'), ALL), '["orders-1"]');
    assert.equal(editFencedInstances('["orders-2"]', fence('orders-1'), ALL), '["orders-1","orders-2"]');
    assert.equal(editFencedInstances('["orders-1"]', fence('orders-1'), ALL), '["orders-1"]');
    assert.equal(editFencedInstances('["*"]', fence('orders-1'), ALL), '["*"]');
    assert.equal(editFencedInstances('["orders-1","orders-2"]', unfence('orders-1'), ALL), '["orders-2"]');
    assert.equal(
      editFencedInstances('["orders-1"]', unfence('orders-1'), ALL),
      null,
      'the last one: removed',
    );
    assert.equal(editFencedInstances(undefined, unfence('orders-1'), ALL), null);
    assert.equal(
      editFencedInstances('["*"]', unfence('orders-1'), ALL),
      '["orders-0","orders-2"]',
      'every other instance stays fenced',
    );
    assert.equal(editFencedInstances('["orders-1"]', { name: 'fence', all: true }, ALL), '["*"]');
    assert.equal(editFencedInstances('["orders-1"]', { name: 'unfence', all: true }, ALL), null);
    // A value the controller cannot read either: said, and only --all replaces it.
    assert.throws(
      () => editFencedInstances('orders-1', fence('orders-2'), ALL),
      (e: Error) => e instanceof UserError && /not JSON.*replace it with --all/.test(e.message),
    );
    assert.equal(editFencedInstances('orders-1', { name: 'unfence', all: true }, ALL), null);
  });

  test("the instances: the status's, else one per spec.replicas", () => {
    const db = replicatedDatabase();
    assert.deepEqual(instancesOf(db), ALL);
    db.status = { ...db.status, instances: [] };
    db.spec.replicas = 2;
    assert.deepEqual(instancesOf(db), ['orders-0', 'orders-1']);
  });

  test('an edit by someone else between the read and the write conflicts, and is kept: the edit is done again on it', async () => {
    const db = replicatedDatabase();
    db.metadata.resourceVersion = '1';
    db.metadata.annotations = { [FENCED_INSTANCES_ANNOTATION]: '["orders-2"]' };
    const patches: unknown[] = [];
    let reads = 0;
    const client = {
      resource: () => ({
        get: () => {
          reads++;
          // Once fenced, the controller's status says so (what --wait reads).
          if (reads >= 3)
            db.status = {
              ...db.status,
              instances: db.status!.instances!.map((i) =>
                i.name === 'orders-1' ? { ...i, state: 'Fenced' } : i,
              ),
            };
          return Promise.resolve(structuredClone(db));
        },
        patch: (
          _name: string,
          body: { metadata: { resourceVersion: string; annotations: Record<string, string> } },
        ) => {
          patches.push(body);
          // Someone fenced orders-0 between the plugin's first read and its write.
          if (patches.length === 1) {
            db.metadata.resourceVersion = '2';
            db.metadata.annotations = { [FENCED_INSTANCES_ANNOTATION]: '["orders-0","orders-2"]' };
          }
          if (body.metadata.resourceVersion !== db.metadata.resourceVersion)
            return Promise.reject(new ConflictError(409, { message: 'the object has been modified' }));
          db.metadata.annotations = body.metadata.annotations;
          return Promise.resolve(structuredClone(db));
        },
      }),
    } as unknown as KubeClient;
    let out = '';
    const env = {
      client,
      namespace: 'shop',
      out: (t: string) => (out += t),
      err: () => undefined,
      clock: realClock,
    } as unknown as CommandEnv;
    await fence(env, {
      name: 'fence',
      database: 'orders',
      pod: 'orders-1',
      all: false,
      wait: true,
      timeoutMs: 10_000,
    });
    assert.deepEqual(
      patches.map((p) => (p as { metadata: unknown }).metadata),
      [
        { resourceVersion: '1', annotations: { [FENCED_INSTANCES_ANNOTATION]: '["orders-1","orders-2"]' } },
        {
          resourceVersion: '2',
          annotations: { [FENCED_INSTANCES_ANNOTATION]: '["orders-0","orders-1","orders-2"]' },
        },
      ],
    );
    assert.match(out, /orders-1 is fenced \(engine stopped\)\n$/);
  });
});
