// What every backup test against the real node needs, whatever the engine: a
// control plane with a real node, the S3 store (versitygw over HTTPS with its
// own CA) with its bucket, the store's keys (and wrong ones) and CA as Secrets,
// the Database controller with backups in a Manager on this host (its
// instances under the instance agent when a file asks for it), and the checks
// every backup test makes: Ready with an explanation when it is not, a
// DatabaseBackup finished, Events, and no key in any status, Event or log.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import { ImageCatalog } from '@regulon/image-catalog';
import { type Condition, type Manager, testManager } from '@regulon/runtime';
import {
  eventually,
  loadImagesIntoRealNode,
  localImageCatalog,
  start,
  startObjectStore,
  type ObjectStore,
  type TestEnv,
} from '@regulon/testenv';
import { ensureManagerImage } from '../../../../tools/manager-image/image.ts';
import { Database, type DatabaseObject } from '../api.ts';
import { DatabaseBackup, type DatabaseBackupObject } from '../backup/api.ts';
import { setupDatabaseController } from '../index.ts';

export const BUCKET = 'backups';
export const WRONG_KEYS = { id: 'REGULONWRONGKEYID', secret: 'regulon-wrong-secret-key-value' };

export const cond = (conditions: Condition[] | undefined, type: string) =>
  conditions?.find((c) => c.type === type);
export const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

export interface BackupSuiteOptions {
  engine: 'postgres' | 'mariadb';
  namespacePrefix: string;
  storage: string;
  /** How long a Database may take to turn Ready, or a backup to finish, by default. */
  patienceMs: number;
  /**
   * The instances run under the instance agent (copied from the manager image, built or taken
   * from its cache): they publish their engine's series for a real Prometheus, and a primary is
   * promoted only through the primary Lease the agents hold. Off by default: the files that do
   * not watch the instances' series keep their speed.
   */
  instanceAgent?: boolean;
}

export interface BackupSuite {
  readonly env: TestEnv;
  readonly client: KubeClient;
  readonly mgr: Manager;
  readonly ns: string;
  /** The engine version the local image catalog has. */
  readonly version: string;
  readonly store: ObjectStore;
  /** Stops the store's processes (SIGSTOP): it keeps its data and answers nothing until resumed. */
  pauseStore: () => void;
  resumeStore: () => void;
  objectStore: (
    secretName?: string,
    path?: string,
    bucket?: string,
  ) => NonNullable<NonNullable<DatabaseObject['spec']['backup']>['objectStore']>;
  createDatabase: (name: string, extra?: Partial<DatabaseObject['spec']>) => Promise<DatabaseObject>;
  /** The Database once Ready; when it never gets there, the error says its conditions and its first Pod's log. */
  ready: (name: string, timeoutMs?: number) => Promise<DatabaseObject>;
  explain: (name: string) => Promise<string>;
  backupOf: (name: string, database: string) => Promise<DatabaseBackupObject>;
  finished: (name: string, timeoutMs?: number) => Promise<DatabaseBackupObject>;
  listEvents: () => Promise<Array<Record<string, unknown>>>;
  eventsAbout: (
    name: string,
    type: 'Normal' | 'Warning',
    reason?: string,
  ) => Promise<Array<Record<string, unknown>>>;
  /** Neither the store's keys nor the wrong ones: in no status, no Event, no instance's log. */
  assertNoKeysAnywhere: () => Promise<void>;
  /**
   * Takes a backup of `database` that the store must refuse, and checks that the
   * failure shows everywhere a user looks: the DatabaseBackup Failed with the
   * store's answer (`message`), a Warning Event on it, BackupSucceeded=False on
   * the Database, which stays Ready (serving is not backing up). Returns the message.
   */
  assertBackupFailsVisibly: (backup: string, database: string, message: RegExp) => Promise<string>;
  /**
   * A Database `name` whose object store names a bucket that does not exist:
   * its backup fails visibly saying so, no bucket is created behind the user,
   * no key shows anywhere. Returns the backup's message.
   */
  assertMissingBucketReported: (name: string) => Promise<string>;
}

/** Registers the suite's before and after hooks in the calling describe; its fields are set once before has run. */
export function backupSuite(options: BackupSuiteOptions): BackupSuite {
  const { engine } = options;
  let env: TestEnv;
  let client: KubeClient;
  let mgr: Manager;
  let running: Promise<void>;
  let ns: string;
  let version: string;
  let store: ObjectStore;
  let storePaused = false;
  const dbs = () => client.resource(Database);
  const backups = () => client.resource(DatabaseBackup);
  const podLog = (pod: string, tailLines?: number) =>
    client.request<string>({
      method: 'GET',
      path: `/api/v1/namespaces/${ns}/pods/${pod}/log`,
      query: { container: engine, ...(tailLines ? { tailLines: String(tailLines) } : {}) },
    });

  before(async () => {
    env = await start({ realNodes: 1 });
    await env.installCRDs([Database.crd(), DatabaseBackup.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 100, burst: 200 });
    ns = await env.newNamespace(options.namespacePrefix, { realNode: true });
    store = await startObjectStore({ env });
    await store.createBucket(BUCKET);
    const local = await localImageCatalog();
    version = local[engine]![0]!.version;
    const secrets = client.resource<V1Secret>(Kinds.Secret);
    await secrets.create({
      metadata: { name: 'store-keys', namespace: ns },
      stringData: { ACCESS_KEY_ID: store.accessKeyId, ACCESS_SECRET_KEY: store.secretAccessKey },
    });
    await secrets.create({
      metadata: { name: 'wrong-keys', namespace: ns },
      stringData: { ACCESS_KEY_ID: WRONG_KEYS.id, ACCESS_SECRET_KEY: WRONG_KEYS.secret },
    });
    await secrets.create({
      metadata: { name: 'store-ca', namespace: ns },
      stringData: { 'ca.crt': store.caPem },
    });
    let instanceAgentImage: string | undefined;
    if (options.instanceAgent) {
      const image = await ensureManagerImage();
      loadImagesIntoRealNode(env.controlPlane.state.dir, [image]);
      instanceAgentImage = image.ref;
    }
    mgr = testManager(env.kubeConfig, { namespace: ns });
    setupDatabaseController(mgr, {
      imageCatalog: ImageCatalog.fromDocument(local, 'testenv images'),
      backups: true,
      kubeConfig: env.kubeConfig,
      instanceAgentImage,
    });
    running = mgr.start();
  });

  after(async () => {
    if (store) suite.resumeStore();
    mgr?.stop();
    await running;
    client?.close();
    await store?.stop();
    await env?.stop();
  });

  const suite: BackupSuite = {
    get env() {
      return env;
    },
    get client() {
      return client;
    },
    get mgr() {
      return mgr;
    },
    get ns() {
      return ns;
    },
    get version() {
      return version;
    },
    get store() {
      return store;
    },
    pauseStore: () => {
      process.kill(-store.pid, 'SIGSTOP');
      storePaused = true;
    },
    resumeStore: () => {
      if (storePaused) process.kill(-store.pid, 'SIGCONT');
      storePaused = false;
    },
    objectStore: (secretName = 'store-keys', path?: string, bucket = BUCKET) => ({
      endpoint: store.podEndpoint!,
      bucket,
      ...(path ? { path } : {}),
      credentials: { secretName },
      caSecret: { name: 'store-ca' },
    }),
    createDatabase: (name, extra = {}) =>
      dbs().create(
        Database.object({
          metadata: { name, namespace: ns },
          spec: {
            engine,
            version,
            replicas: 1,
            storage: { size: options.storage },
            backup: {
              enabled: true,
              schedule: '0 3 * * *',
              historyLimit: 1,
              objectStore: suite.objectStore(),
            },
            ...extra,
          },
        }),
      ),
    ready: (name, timeoutMs = options.patienceMs) =>
      eventually(
        `${name} Ready`,
        async () => {
          const db = await dbs().get(name, { namespace: ns });
          return cond(db.status?.conditions, 'Ready')?.status === 'True' ? db : undefined;
        },
        timeoutMs,
      ).catch(async (err: unknown) => {
        throw new Error(`${(err as Error).message}\n${await suite.explain(name)}`);
      }),
    explain: async (name) => {
      const db = await dbs()
        .get(name, { namespace: ns })
        .catch(() => undefined);
      const text = await podLog(`${name}-0`, 30).catch((e: unknown) => `(no log: ${(e as Error).message})`);
      return `status: ${JSON.stringify(db?.status?.conditions?.map((c) => `${c.type}=${c.status} ${c.message}`))}\n--- ${name}-0 log:\n${String(text)}`;
    },
    backupOf: (name, database) =>
      backups().create(DatabaseBackup.object({ metadata: { name, namespace: ns }, spec: { database } })),
    finished: (name, timeoutMs = options.patienceMs) =>
      eventually(
        `DatabaseBackup ${name} finished`,
        async () => {
          const b = await backups().get(name, { namespace: ns });
          return b.status?.phase === 'Succeeded' || b.status?.phase === 'Failed' ? b : undefined;
        },
        timeoutMs,
      ),
    listEvents: async () =>
      (
        await client.request<{ items: Array<Record<string, unknown>> }>({
          method: 'GET',
          path: `/apis/events.k8s.io/v1/namespaces/${ns}/events`,
        })
      ).items,
    eventsAbout: async (name, type, reason) =>
      (await suite.listEvents()).filter(
        (e) =>
          e['type'] === type &&
          (reason === undefined || e['reason'] === reason) &&
          (e['regarding'] as { name?: string } | undefined)?.name === name,
      ),
    assertNoKeysAnywhere: async () => {
      const pods = await client.resource<V1Pod>(Kinds.Pod).list({ namespace: ns });
      const logs = await Promise.all(
        pods.items.map((p) =>
          podLog(p.metadata!.name!)
            .then(String)
            .catch(() => ''),
        ),
      );
      const everything = JSON.stringify({
        events: await suite.listEvents(),
        databases: (await dbs().list({ namespace: ns })).items.map((x) => x.status),
        backups: (await backups().list({ namespace: ns })).items.map((x) => x.status),
        logs,
      });
      for (const secret of [WRONG_KEYS.id, WRONG_KEYS.secret, store.accessKeyId, store.secretAccessKey])
        assert.ok(!everything.includes(secret), 'a key appears in a status, an Event or a log');
    },
    assertBackupFailsVisibly: async (backup, database, message) => {
      await suite.backupOf(backup, database);
      const b = await suite.finished(backup);
      const succeeded = cond(b.status?.conditions, 'Succeeded');
      assert.equal(b.status?.phase, 'Failed', JSON.stringify(b.status?.conditions));
      assert.equal(succeeded?.reason, 'BackupFailed');
      assert.match(succeeded?.message ?? '', message);
      const db = await eventually(`BackupSucceeded=False on ${database}`, async () => {
        const d = await dbs().get(database, { namespace: ns });
        return cond(d.status?.conditions, 'BackupSucceeded')?.status === 'False' ? d : undefined;
      });
      assert.equal(cond(db.status?.conditions, 'Ready')?.status, 'True', 'serving is not backing up');
      await eventually(`a Warning Event on ${backup}`, async () =>
        (await suite.eventsAbout(backup, 'Warning', 'BackupFailed')).length > 0 ? true : undefined,
      );
      return succeeded.message;
    },
    assertMissingBucketReported: async (name) => {
      const bucket = 'no-such-bucket';
      await suite.createDatabase(name, {
        backup: {
          enabled: true,
          schedule: '0 3 * * *',
          historyLimit: 1,
          objectStore: suite.objectStore('store-keys', undefined, bucket),
        },
      });
      await suite.ready(name);
      const said = await suite.assertBackupFailsVisibly(`${name}-1`, name, /bucket does not exist/);
      const head = await store.request({ method: 'HEAD', bucket });
      assert.equal(head.status, 404, 'the operator never creates a bucket behind the user');
      await suite.assertNoKeysAnywhere();
      return said;
    },
  };
  return suite;
}
