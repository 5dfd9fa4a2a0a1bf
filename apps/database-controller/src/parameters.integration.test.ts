// spec.parameters at admission, on a real API server: every input that could
// put a second setting into the engine's configuration file, or set one the
// operator manages, is rejected with a message that names the field; ordinary
// settings go through. Table-driven: the rows are in testing/parameters-corpus.ts.
// And a Database stored before those rules existed is refused by the renderer
// and reported with kubectl, not written into the engine's configuration.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { InvalidError, KubeClient, Kinds, isNotFound, type KubeObject } from '@regulon/client';
import type { CustomResourceDefinition } from '@regulon/crd';
import { type Manager, type Condition, testManager } from '@regulon/runtime';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import { Database, type DatabaseObject } from './api.ts';
import { setupDatabaseController } from './index.ts';
import { PARAMETER_ROWS as ROWS, VALUE, RESERVED, databaseWith, named } from './testing/parameters-corpus.ts';
import type { Engine } from './versions.ts';

let env: TestEnv;
let client: KubeClient;
const dbs = () => client.resource<DatabaseObject>(Database.type);
const database = (namespace: string, name: string, engine: Engine, parameters: Record<string, string>) =>
  databaseWith(engine, parameters, { name, namespace });

before(async () => {
  env = await start();
  await env.installCRDs([Database.crd()]);
  client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 200, burst: 200 });
});
after(async () => {
  // Whatever a test did to it, the CRD is left as the operator ships it.
  await env.installCRDs([Database.crd()]);
  client.close();
  await env.stop();
});

describe('spec.parameters at admission', () => {
  let ns: string;
  before(async () => {
    ns = await env.newNamespace('params');
  });

  for (const [i, row] of ROWS.entries()) {
    test(`${row.rejected ? 'rejected' : 'accepted'}: ${row.what}`, async () => {
      const create = dbs().create(database(ns, `p${i}`, row.engine, row.parameters), { dryRun: true });
      if (!row.rejected) {
        await create;
        return;
      }
      await assert.rejects(create, (err: Error) => {
        assert.ok(err instanceof InvalidError, `${row.what}: ${err.message}`);
        assert.match(err.message, row.rejected!, row.what);
        return true;
      });
    });
  }

  test('an update is held to the same rules as a create', async () => {
    await dbs().create(database(ns, 'updated', 'mysql', { max_connections: '100' }));
    const patch = (parameters: Record<string, string>) =>
      dbs().patch('updated', { spec: { parameters } }, { type: 'merge', namespace: ns });
    await assert.rejects(patch({ max_connections: '100\nport = 3307' }), (err: Error) => {
      assert.match(err.message, VALUE('max_connections'));
      return true;
    });
    await assert.rejects(patch({ bind_address: '10.1.2.3' }), (err: Error) => {
      assert.match(err.message, named(RESERVED, 'bind_address'));
      return true;
    });
    await patch({ max_connections: '200' });
  });
});

/** The Database CRD as it was before spec.parameters had rules: what objects stored back then passed. */
function withoutParameterRules(crd: CustomResourceDefinition): CustomResourceDefinition {
  const copy = JSON.parse(JSON.stringify(crd)) as CustomResourceDefinition;
  type Node = Record<string, unknown> & { properties?: Record<string, Node> };
  const rules = 'x-kubernetes-validations';
  const spec = (copy.spec.versions[0]!.schema.openAPIV3Schema as Node).properties!['spec']!;
  const parameters = spec.properties!['parameters']!;
  spec[rules] = (spec[rules] as Array<{ fieldPath?: string }>).filter((r) => r.fieldPath !== '.parameters');
  delete parameters[rules];
  delete (parameters['additionalProperties'] as Node)[rules];
  return copy;
}

describe('a Database stored before the parameter rules existed', () => {
  let ns: string;
  let mgr: Manager;
  let running: Promise<void>;
  const cond = (db: DatabaseObject, type: string): Condition | undefined =>
    db.status?.conditions?.find((c) => c.type === type);

  before(async () => {
    ns = await env.newNamespace('params-stored');
    mgr = testManager(env.kubeConfig, { namespace: ns });
    setupDatabaseController(mgr);
    running = mgr.start();
  });
  after(async () => {
    mgr.stop();
    await running;
  });

  test('is Degraded with reason InvalidParameters and a Warning Event, nothing is applied, and a fix heals it', async () => {
    await env.installCRDs([withoutParameterRules(Database.crd())]);
    try {
      // The rule-less schema is served a moment after the CRD is written: until then the rules refuse it.
      await eventually('stored under the rule-less CRD', () =>
        dbs()
          .create(
            database(ns, 'legacy', 'mysql', {
              max_connections: '100\nport = 3307',
              bind_address: '10.1.2.3',
            }),
          )
          .then(
            () => true,
            (err: unknown) => {
              if (err instanceof InvalidError) return false;
              throw err;
            },
          ),
      );
    } finally {
      await env.installCRDs([Database.crd()]);
    }
    const db = await eventually('Degraded InvalidParameters', async () => {
      const d = await dbs().get('legacy', { namespace: ns });
      const c = cond(d, 'Degraded');
      return c?.status === 'True' && c.reason === 'InvalidParameters' ? d : undefined;
    });
    const message = cond(db, 'Degraded')!.message;
    assert.match(message, /^spec\.parameters: /);
    assert.match(message, /"bind_address" is a setting the operator manages/);
    assert.match(message, /the value of "max_connections" contains a line break/);
    assert.equal(cond(db, 'Ready')?.status, 'False');
    await eventually('a Warning Event', async () => {
      const events = await client
        .resource<KubeObject & { reason?: string; type?: string; regarding?: { name?: string } }>(Kinds.Event)
        .list({ namespace: ns });
      return events.items.some(
        (e) => e.type === 'Warning' && e.reason === 'InvalidParameters' && e.regarding?.name === 'legacy',
      );
    });
    // Refused before anything was applied: no configuration with the injected line, no Pods reading it.
    for (const type of [Kinds.ConfigMap, Kinds.StatefulSet])
      await assert.rejects(
        client.resource(type).get(type === Kinds.ConfigMap ? 'legacy-config' : 'legacy', { namespace: ns }),
        isNotFound,
      );
    // Reported, not retried: a spec problem is no error to back off from.
    const errors = (
      await mgr.registry.getSingleMetric('controller_runtime_reconcile_errors_total')!.get()
    ).values
      .filter((v) => v.labels['controller'] === 'database')
      .reduce((n, v) => n + v.value, 0);
    assert.equal(errors, 0);

    await dbs().patch(
      'legacy',
      { spec: { parameters: { max_connections: '100', bind_address: null } } },
      { type: 'merge', namespace: ns },
    );
    await eventually('Ready', async () => {
      const d = await dbs().get('legacy', { namespace: ns });
      return d.status?.phase === 'Ready' && d.status.observedGeneration === d.metadata.generation;
    });
    const config = await client
      .resource<V1ConfigMap>(Kinds.ConfigMap)
      .get('legacy-config', { namespace: ns });
    assert.equal(
      config.data?.['my.cnf'],
      '[mysqld]\nport = 3306\nbind-address = 0.0.0.0\nmax_connections = 100\n',
    );
  });
});
