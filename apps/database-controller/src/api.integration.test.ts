// What the API server says about a Database it refuses, with no controller
// running: every input of the admission corpus is rejected with a message
// naming its field, or accepted; and of a refused change, the cause a person
// has to act on comes first, and a rule that only follows from it does not
// speak at all.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { InvalidError, KubeClient } from '@regulon/client';
import { admit, caseTitle, problemWith } from '@regulon/crd/testing';
import { start, type TestEnv } from '@regulon/testenv';
import { Database, type DatabaseObject } from './api.ts';
import { DATABASE_CORPUS } from './testing/admission-corpus.ts';

describe('Database admission corpus', () => {
  let env: TestEnv;
  let client: KubeClient;
  let ns: string;

  before(async () => {
    env = await start();
    await env.installCRDs([Database.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 200, burst: 200 });
    ns = await env.newNamespace('db-admission');
  });
  after(async () => {
    client?.close();
    await env?.stop();
  });

  for (const [i, c] of DATABASE_CORPUS.cases.entries())
    test(caseTitle(c), async () => {
      const admission = await admit(client, DATABASE_CORPUS, c, { name: `a${i}`, namespace: ns });
      assert.equal(problemWith(c, admission), undefined);
    });
});

describe('Database changes the API server refuses', () => {
  let env: TestEnv;
  let client: KubeClient;
  let ns: string;
  let n = 0;
  const dbs = () => client.resource<DatabaseObject>(Database.type);

  before(async () => {
    env = await start();
    await env.installCRDs([Database.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig);
    ns = await env.newNamespace('db-api');
  });
  after(async () => {
    client?.close();
    await env?.stop();
  });

  /** A stored postgres Database at `version`. */
  const stored = async (version: string) => {
    const name = `d${++n}`;
    await dbs().create(
      Database.object({
        metadata: { name, namespace: ns },
        spec: { engine: 'postgres', version, replicas: 1, storage: { size: '1Gi' } },
      }),
    );
    return name;
  };
  /** The causes, in the order the API server reports them, of refusing `spec` as a change to `name`. */
  const refused = async (name: string, spec: Record<string, unknown>) => {
    const err = await dbs()
      .patch(name, { spec }, { type: 'merge', namespace: ns })
      .then(
        () => assert.fail(`${JSON.stringify(spec)} was accepted`),
        (e: unknown) => e,
      );
    assert.ok(err instanceof InvalidError, String(err));
    return err.causes.map((c) => `${c.field}: ${c.message}`);
  };

  test('an engine change is reported as one first, and never as a major version upgrade or downgrade', async () => {
    const name = await stored('16.8');
    for (const change of [
      { engine: 'mysql' },
      { engine: 'mysql', version: '8.4.4' },
      { engine: 'mysql', version: '8.0.40' },
      { engine: 'mysql', version: '8.4.4', allowMajorVersionUpgrade: true },
    ]) {
      const causes = await refused(name, change);
      assert.match(causes[0] ?? '', /^spec\.engine: .*engine is immutable/, JSON.stringify(change));
      assert.deepEqual(
        causes.filter((c) => /major version|downgrade/.test(c)),
        [],
        JSON.stringify(change),
      );
    }
  });

  test('a downgrade across a major version is reported as a downgrade, not as a major upgrade', async () => {
    const name = await stored('17.2');
    assert.deepEqual(await refused(name, { version: '16.8' }), [
      'spec.version: Invalid value: version cannot be downgraded from 17.2 to 16.8',
    ]);
  });

  test('a malformed version is reported as malformed, not as a major upgrade or downgrade', async () => {
    const name = await stored('16.8');
    for (const version of ['latest', '17.2-rc1']) {
      const causes = await refused(name, { version });
      assert.deepEqual(causes, [
        "spec.version: Invalid value: version must be a dotted number such as 16.8 (one the manager's image catalog lists)",
      ]);
    }
  });

  test('versions compare as numbers: 16.10 is newer than 16.9, whatever the image catalog lists', async () => {
    const name = await stored('16.10');
    assert.deepEqual(await refused(name, { version: '16.9' }), [
      'spec.version: Invalid value: version cannot be downgraded from 16.10 to 16.9',
    ]);
    const older = await stored('16.9');
    const upgraded = await dbs().patch(
      older,
      { spec: { version: '16.10' } },
      { type: 'merge', namespace: ns },
    );
    assert.equal(upgraded.spec.version, '16.10');
  });

  test('a major upgrade without the opt-in still names the opt-in', async () => {
    const name = await stored('16.8');
    assert.deepEqual(await refused(name, { version: '17.2' }), [
      'spec.version: Invalid value: upgrading from 16.8 to 17.2 is a major version upgrade: set spec.allowMajorVersionUpgrade: true to confirm it',
    ]);
  });
});
