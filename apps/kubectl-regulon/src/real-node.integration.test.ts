// The plugin against a real postgres on the real node: a one-instance Database
// (and a redis Cache) run by their controllers (in this process, the local image catalog),
// then `kubectl regulon psql` answers a query through the kubectl the test
// environment runs (the plugin's own kubectl exec, with its --kubeconfig and
// -n), and `status` shows the primary the controller found. One instance, no
// agent: what the plugin adds is the exec and the reading, not replication.
//   flock /tmp/regulon-realnode.lock npx regulon-testenv exec -- node --test apps/kubectl-regulon/src/real-node.integration.test.ts
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { V1Secret } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import { Cache, setupCacheController, type CacheObject } from '@regulon/cache-controller';
import { Database, setupDatabaseController, type DatabaseObject } from '@regulon/database-controller';
import { ImageCatalog } from '@regulon/image-catalog';
import { testManager, type Manager } from '@regulon/runtime';
import { eventually, localImageCatalog, start, type TestEnv } from '@regulon/testenv';
import { run } from './cli.ts';

const NAME = 'pg';
const CACHE = 'sessions';

describe(
  'kubectl regulon on the real node: psql and status on a real postgres, redis-cli on a real redis',
  { timeout: 5 * 60_000 },
  () => {
    let env: TestEnv;
    let client: KubeClient;
    let ns: string;
    let mgr: Manager;
    let running: Promise<void>;

    /** The plugin in this process; kubectl exec runs the test environment's kubectl, its output captured. */
    const kubectl = async (...args: string[]) => {
      let stdout = '';
      let stderr = '';
      const spawned: string[][] = [];
      const code = await run(['-n', ns, '--kubeconfig', env.controlPlane.kubeconfigPath, ...args], {
        out: (t) => (stdout += t),
        err: (t) => (stderr += t),
        stdinIsTTY: false,
        spawn: (command, argv) =>
          new Promise((resolve) => {
            assert.equal(command, 'kubectl');
            spawned.push(argv);
            const child = execFile(env.controlPlane.state.kubectl, argv, (err, out, errOut) => {
              stdout += out;
              stderr += errOut;
              resolve(err ? (typeof err.code === 'number' ? err.code : 1) : 0);
            });
            child.stdin?.end();
          }),
      });
      return { code, stdout, stderr, spawned };
    };

    before(async () => {
      env = await start({ realNodes: 1 });
      await env.installCRDs([Database.crd(), Cache.crd()]);
      client = KubeClient.fromKubeConfig(env.kubeConfig);
      ns = await env.newNamespace('kubectl-psql', { realNode: true });
      const local = await localImageCatalog();
      mgr = testManager(env.kubeConfig, { namespace: ns });
      const catalog = ImageCatalog.fromDocument(local, 'testenv images');
      setupDatabaseController(mgr, { imageCatalog: catalog });
      setupCacheController(mgr, { imageCatalog: catalog });
      running = mgr.start();
      await client.resource<DatabaseObject>(Database.type).create(
        Database.object({
          metadata: { name: NAME, namespace: ns },
          spec: {
            engine: 'postgres',
            version: local['postgres']![0]!.version,
            replicas: 1,
            storage: { size: '256Mi' },
            backup: { enabled: false, schedule: '0 3 * * *', historyLimit: 1 },
          },
        }),
      );
      // `auth: {}`: a generated password, which the redis container holds as REDISCLI_AUTH.
      await client.resource<CacheObject>(Cache.type).create(
        Cache.object({
          metadata: { name: CACHE, namespace: ns },
          spec: {
            engine: 'redis',
            version: local['redis']![0]!.version,
            replicas: 1,
            memory: '32Mi',
            maxMemoryPercent: 10,
            auth: {},
          },
        }),
      );
    });
    after(async () => {
      mgr?.stop();
      await running;
      client?.close();
      await env?.stop();
    });

    test('psql runs a query in the primary as the generated user; status names that primary', async (t) => {
      const startedAt = Date.now();
      const ready = await eventually(
        'the Database Ready',
        async () => {
          const db = await client.resource<DatabaseObject>(Database.type).get(NAME, { namespace: ns });
          return db.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
            ? db
            : undefined;
        },
        180_000,
      );
      t.diagnostic(`Database Ready after ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);

      const { code, stdout, stderr, spawned } = await kubectl(
        'psql',
        NAME,
        '--',
        '-tAXc',
        'select 1, current_user, pg_is_in_recovery()',
      );
      assert.equal(code, 0, stderr);
      assert.equal(stdout, '1|postgres|f\n');
      assert.equal(spawned.length, 1);
      assert.deepEqual(spawned[0]!.slice(0, 3), ['exec', '-i', `${NAME}-0`]);
      // The generated password (read here by the test; the plugin reads no Secret) is on no command line.
      const secret = await client
        .resource<V1Secret>(Kinds.Secret)
        .get(`${NAME}-credentials`, { namespace: ns });
      const password = Buffer.from(secret.data!['password']!, 'base64').toString();
      assert.ok(password.length >= 16);
      assert.ok(!spawned[0]!.some((a) => a.includes(password)));
      assert.ok(!stdout.includes(password) && !stderr.includes(password));

      const failing = await kubectl('psql', NAME, '--', '-tAXc', 'select * from no_such_table');
      assert.equal(failing.code, 1, 'psql exit code, through kubectl and the plugin');
      assert.match(failing.stderr, /relation "no_such_table" does not exist/);

      const status = await kubectl('status', 'db', NAME);
      assert.equal(status.code, 0, status.stderr);
      t.diagnostic(`\n${status.stdout}`);
      assert.match(status.stdout, new RegExp(`^Database ${ns}/${NAME}: Ready\n`));
      if (ready.status?.currentPrimary) assert.match(status.stdout, new RegExp(`Primary: +${NAME}-0\n`));
      assert.match(status.stdout, new RegExp(`\n {2}${NAME}-0 +primary +Primary`));
    });

    test('redis-cli runs in the redis instance, authenticated by the password its container holds', async () => {
      await eventually(
        'the Cache Ready',
        async () => {
          const c = await client.resource<CacheObject>(Cache.type).get(CACHE, { namespace: ns });
          return c.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') || undefined;
        },
        180_000,
      );
      // Without the password, or a wrong one, redis answers NOAUTH or WRONGPASS, not PONG.
      const { code, stdout, stderr, spawned } = await kubectl('redis-cli', CACHE, '--', 'ping');
      assert.equal(code, 0, stderr);
      assert.equal(stdout, 'PONG\n');
      // A standalone Cache without persistence is a Deployment: its one Pod, whatever its name.
      assert.deepEqual(spawned[0]!.slice(0, 2), ['exec', '-i']);
      assert.match(spawned[0]![2]!, new RegExp(`^${CACHE}-`));
      const wrong = await kubectl('psql', CACHE);
      assert.equal(wrong.code, 1);
      assert.equal(wrong.stderr, `error: Database "${CACHE}" not found in namespace "${ns}"\n`);
    });
  },
);
