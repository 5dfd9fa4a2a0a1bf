// A MyApp on real Pods (the testenv's real node): the Database, Cache and
// MyApp controllers in one Manager on this host, Debian's postgres and redis
// through the image catalog, and regulon.local/app (tools/images/recipes/app.sh)
// as the application, whose /readyz answers 200 only when postgres answers a
// query and redis an authenticated PING with exactly the env the MyApp
// controller injects. So MyApp Ready here means real connections, and a broken
// credential shows on the MyApp. Figures are printed as test diagnostics:
//   npx regulon-testenv exec -- npx node --test apps/myapp-controller/src/app.integration.test.ts
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import type { EventsV1Event, V1Deployment, V1Pod, V1Secret } from '@kubernetes/client-node';
import { Cache, setupCacheController } from '@regulon/cache-controller';
import { KubeClient, Kinds, isNotFound } from '@regulon/client';
import { Database, setupDatabaseController, type DatabaseObject } from '@regulon/database-controller';
import { ImageCatalog } from '@regulon/image-catalog';
import { type Manager, type Condition, testManager } from '@regulon/runtime';
import { ensureImages, eventually, localImageCatalog, start, type TestEnv } from '@regulon/testenv';
import { MyApp, type MyAppObject } from './api.ts';
import { DEFAULT_READINESS_PATH } from './children.ts';
import { setupMyAppController } from './index.ts';

const run = promisify(execFile);
const NAME = 'shop';
const PORT = 8080;
const APP_PODS = `app.kubernetes.io/name=myapp,app.kubernetes.io/instance=${NAME}`;

const cond = (a: MyAppObject, type: string): Condition | undefined =>
  a.status?.conditions?.find((c) => c.type === type);
const current = (a: MyAppObject) => a.status?.observedGeneration === a.metadata.generation;
const isReady = (a: MyAppObject) => current(a) && cond(a, 'Ready')?.status === 'True';
const podReady = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

describe('MyApp with its application on real postgres and redis', { timeout: 15 * 60_000 }, () => {
  let env: TestEnv;
  let client: KubeClient;
  let mgr: Manager;
  let running: Promise<void>;
  let ns: string;
  let appImage: string;
  let versions: { postgres: string; redis: string };
  const apps = () => client.resource<MyAppObject>(MyApp.type);
  const get = () => apps().get(NAME, { namespace: ns });
  const deployment = () => client.resource<V1Deployment>(Kinds.Deployment).get(NAME, { namespace: ns });
  const appPods = async () =>
    (await client.resource<V1Pod>(Kinds.Pod).list({ namespace: ns, labelSelector: APP_PODS })).items.filter(
      (p) => !p.metadata?.deletionTimestamp,
    );
  /** The app Pods that run the Deployment's current template (its newest ReplicaSet's hash). */
  const currentPods = async () => {
    const d = await deployment();
    const hash = d.spec!.template.metadata!.annotations!['regulon.dev/bindings-hash'];
    return (await appPods()).filter((p) => p.metadata?.annotations?.['regulon.dev/bindings-hash'] === hash);
  };

  const kubectl = async (args: string[]) =>
    (
      await run(env.controlPlane.state.kubectl, ['--kubeconfig', env.kubeconfigPath, '-n', ns, ...args], {
        timeout: 60_000,
      })
    ).stdout;
  /**
   * What the application itself answers on `path`, asked from inside its own
   * Pod (the image has no HTTP client; bash's /dev/tcp is one).
   */
  const askApp = (pod: string, path: string) =>
    kubectl([
      'exec',
      pod,
      '-c',
      'app',
      '--',
      'bash',
      '-c',
      `exec 3<>/dev/tcp/127.0.0.1/${PORT}; printf 'GET ${path} HTTP/1.1\\r\\nHost: app\\r\\nConnection: close\\r\\n\\r\\n' >&3; cat <&3`,
    ]);

  /**
   * The app's answer on /readyz once it matches `want`. One answer can miss:
   * on the real node a new Pod's DNS lookups now and then lose a reply (seen
   * right after a roll), and a check then times out (`psql exit 124`) although
   * the kubelet's probe, which tolerates 3 failures, passed. So this asks
   * again for a while, and reports any miss as a diagnostic.
   */
  const appAnswers = async (t: { diagnostic: (s: string) => void }, pod: string, want: RegExp) => {
    const misses: string[] = [];
    const answer = await eventually(
      `${pod} answering ${want}`,
      async () => {
        const a = await askApp(pod, DEFAULT_READINESS_PATH);
        if (want.test(a)) return a;
        misses.push(a.split('\r\n\r\n')[1]?.trim() ?? a);
        return undefined;
      },
      30_000,
      500,
    );
    if (misses.length)
      t.diagnostic(`${pod}: ${misses.length} answer(s) before the expected one: ${misses.join('; ')}`);
    return answer;
  };

  /** The MyApp once its status describes its spec and `check` holds. */
  const until = (what: string, check: (a: MyAppObject) => boolean, timeoutMs = 180_000) =>
    eventually(
      what,
      async () => {
        const a = await get();
        return current(a) && check(a) ? a : undefined;
      },
      timeoutMs,
    );

  before(async () => {
    env = await start({ realNodes: 1 });
    await env.installCRDs([Database.crd(), Cache.crd(), MyApp.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 100, burst: 200 });
    ns = await env.newNamespace('myapp-real', { realNode: true });
    const local = await localImageCatalog();
    versions = { postgres: local['postgres']![0]!.version, redis: local['redis']![0]!.version };
    appImage = (await ensureImages(['app']))[0]!.ref;
    const catalog = ImageCatalog.fromDocument(local, 'testenv images');
    mgr = testManager(env.kubeConfig, { namespace: ns });
    setupDatabaseController(mgr, { imageCatalog: catalog });
    setupCacheController(mgr, { imageCatalog: catalog });
    setupMyAppController(mgr);
    running = mgr.start();
  });
  after(async () => {
    mgr?.stop();
    await running;
    client?.close();
    await env?.stop();
  });

  test('created with a postgres database and an authenticated redis cache: Ready once the app really connects to both', async (t) => {
    const started = Date.now();
    await apps().create(
      MyApp.object({
        metadata: { name: NAME, namespace: ns },
        spec: {
          image: appImage,
          replicas: 1,
          port: PORT,
          database: {
            engine: 'postgres',
            version: versions.postgres,
            replicas: 1,
            storage: { size: '1Gi' },
            backup: { enabled: false, schedule: '0 3 * * *', historyLimit: 1 },
          },
          cache: {
            engine: 'redis',
            version: versions.redis,
            replicas: 1,
            memory: '64Mi',
            auth: { enabled: true },
          },
        } as MyAppObject['spec'],
      }),
    );
    const app = await until('MyApp Ready', isReady, 240_000);
    t.diagnostic(`MyApp created to Ready with real postgres, redis and app Pods: ${seconds(started)}`);
    assert.equal(app.status?.available, '1/1');
    assert.equal(cond(app, 'DatabaseReady')?.status, 'True');
    assert.equal(cond(app, 'CacheReady')?.status, 'True');

    const [pod] = await currentPods();
    assert.ok(pod && podReady(pod), 'the app Pod is Ready');
    const probe = pod.spec!.containers[0]!.readinessProbe;
    assert.equal(probe?.httpGet?.path, DEFAULT_READINESS_PATH);
    assert.equal(probe?.httpGet?.port, 'http');
    // Ready because both answered: the app says so itself.
    const answer = await appAnswers(t, pod.metadata!.name!, /ready: database answered, cache answered/);
    assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(await askApp(pod.metadata!.name!, '/'), /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nok\n$/);
  });

  test('the cache removed from the spec: the app rolls without CACHE_* env and is Ready without a cache', async (t) => {
    const started = Date.now();
    await apps().patch(NAME, [{ op: 'remove', path: '/spec/cache' }], { type: 'json', namespace: ns });
    const app = await until(
      'Ready without a cache',
      (a) => isReady(a) && cond(a, 'CacheReady')?.reason === 'NotRequested',
    );
    t.diagnostic(`cache removed to Ready on the rolled app: ${seconds(started)}`);
    assert.equal(app.status?.available, '1/1');
    await eventually('Cache gone', () =>
      client
        .resource(Cache.type)
        .get(`${NAME}-cache`, { namespace: ns })
        .then(() => false, isNotFound),
    );
    // Every Pod left runs without the cache's env, is Ready, and the app checks no cache.
    const pods = await eventually('only Pods of the new template', async () => {
      const [all, now] = [await appPods(), await currentPods()];
      return all.length === 1 && now.length === 1 ? now : undefined;
    });
    const pod = pods[0]!;
    assert.ok(podReady(pod));
    const names = pod.spec!.containers[0]!.env!.map((e) => e.name);
    assert.deepEqual(
      names.filter((n) => n.startsWith('CACHE_')),
      [],
    );
    assert.ok(names.includes('DATABASE_URL'));
    await appAnswers(t, pod.metadata!.name!, /ready: database answered, cache not configured/);
  });

  test("the Database's credentials Secret given a wrong password: the new Pod fails its probe and the MyApp is not Ready; restored, Ready again", async (t) => {
    const db = await client.resource<DatabaseObject>(Database.type).get(`${NAME}-db`, { namespace: ns });
    const secretName = db.status!.binding!.name;
    const secrets = client.resource<V1Secret>(Kinds.Secret);
    // A rotation gone wrong: the password and the URL that embeds it both changed, the
    // database not. The app reads DATABASE_URL, so both must be wrong for it to fail.
    const original = (await secrets.get(secretName, { namespace: ns })).data!;
    const text = (b64: string | undefined) => Buffer.from(b64 ?? '', 'base64').toString();
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const wrongPassword = `not-the-password-${Date.now()}`;
    const wrongUri = text(original['uri']).replace(/^([a-z]+:\/\/[^:@/]*:)[^@]*@/, `$1${wrongPassword}@`);
    assert.ok(wrongUri.includes(`:${wrongPassword}@`), 'the URI carries the wrong password');
    const originalPassword = text(original['password']);

    const broken = Date.now();
    await secrets.patch(
      secretName,
      { data: { password: b64(wrongPassword), uri: b64(wrongUri) } },
      { type: 'merge', namespace: ns },
    );
    const notReady = await until(
      'MyApp not Ready, a replica failing its probe',
      (a) =>
        cond(a, 'Ready')?.status === 'False' &&
        /not ready \(readiness probe GET \/readyz on port 8080\)/.test(
          cond(a, 'DeploymentAvailable')?.message ?? '',
        ),
    );
    assert.equal(cond(notReady, 'DeploymentAvailable')?.reason, 'RollingOut');
    // The Database itself is fine: only the application's credentials are wrong.
    assert.equal(cond(notReady, 'DatabaseReady')?.status, 'True');

    // The new Pod runs and the kubelet's probe gets 503 from it; the app names the dependency.
    const failing = await eventually('a Pod of the new template failing its readiness probe', async () => {
      const [pod] = await currentPods();
      if (!pod || podReady(pod) || !pod.status?.containerStatuses?.[0]?.state?.running) return undefined;
      const events = await client.resource<EventsV1Event>(Kinds.Event).list({ namespace: ns });
      const unhealthy = events.items.some(
        (e) =>
          e.regarding?.name === pod.metadata!.name &&
          e.reason === 'Unhealthy' &&
          /Readiness probe failed: HTTP probe failed with statuscode: 503/.test(e.note ?? ''),
      );
      return unhealthy ? pod : undefined;
    });
    t.diagnostic(
      `wrong password to the new Pod failing its probe (503), MyApp not Ready: ${seconds(broken)}`,
    );
    // psql's exit 2: the server refused the connection (authentication), not a timeout.
    const answer = await appAnswers(t, failing.metadata!.name!, /database: psql exit 2\n/);
    assert.match(answer, /^HTTP\/1\.1 503 Service Unavailable\r\n/);
    for (const password of [wrongPassword, originalPassword])
      assert.equal(answer.includes(password), false, 'no password in the answer');
    // Failing its probe, the new Pod holds the MyApp not Ready (not only while it starts).
    const stillBroken = await get();
    assert.equal(cond(stillBroken, 'Ready')?.status, 'False');
    assert.equal(cond(stillBroken, 'DeploymentAvailable')?.reason, 'RollingOut');
    // The old replica, with the working password, still serves.
    assert.equal((await get()).status?.available, '1/1');

    const restored = Date.now();
    await secrets.patch(
      secretName,
      { data: { password: original['password']!, uri: original['uri']! } },
      { type: 'merge', namespace: ns },
    );
    await until('Ready again', isReady);
    t.diagnostic(`password restored to MyApp Ready: ${seconds(restored)}`);
    const pods = await eventually('only Ready Pods of the restored template', async () => {
      const [all, now] = [await appPods(), await currentPods()];
      return all.length === 1 && now.length === 1 && now.every(podReady) ? now : undefined;
    });
    await appAnswers(t, pods[0]!.metadata!.name!, /ready: database answered, cache not configured/);
  });
  test("the Database's credentials Secret deleted: the Database asks for it back and generates none, the app keeps running; restored from a copy, the app rolls onto it and serves", async (t) => {
    const databases = client.resource<DatabaseObject>(Database.type);
    const db = await databases.get(`${NAME}-db`, { namespace: ns });
    const secretName = db.status!.binding!.name;
    const secrets = client.resource<V1Secret>(Kinds.Secret);
    // The copy a backup of the namespace's Secrets would hold (`kubectl get -o yaml`, Velero):
    // its owner reference names this same Database, so the restored Secret is the Database's again.
    const copy = await secrets.get(secretName, { namespace: ns });
    const [pod] = await currentPods();
    assert.ok(pod && podReady(pod));

    const lost = Date.now();
    await secrets.delete(secretName, { namespace: ns });
    const reported = await eventually(
      'the Database reports its lost Secret',
      async () => {
        const d = await databases.get(`${NAME}-db`, { namespace: ns });
        const degraded = d.status?.conditions?.find((c) => c.type === 'Degraded');
        return degraded?.status === 'True' && degraded.reason === 'CredentialsSecretLost' ? d : undefined;
      },
      60_000,
    );
    t.diagnostic(`Secret deleted to CredentialsSecretLost on the Database: ${seconds(lost)}`);
    const ready = reported.status!.conditions!.find((c) => c.type === 'Ready')!;
    assert.equal(ready.status, 'False');
    assert.match(ready.message, new RegExp(`restore the Secret ${secretName} from a backup`));
    // No new password: a new Secret would not open the existing data.
    await assert.rejects(secrets.get(secretName, { namespace: ns }), isNotFound);
    const events = await client.resource<EventsV1Event>(Kinds.Event).list({ namespace: ns });
    assert.ok(
      events.items.some(
        (e) =>
          e.regarding?.name === `${NAME}-db` && e.reason === 'CredentialsSecretLost' && e.type === 'Warning',
      ),
      'a Warning Event on the Database',
    );
    await until('MyApp says its database is not ready', (a) => cond(a, 'DatabaseReady')?.status === 'False');
    // The running app keeps the credentials it started with and still works: its Deployment is
    // not rolled onto a Secret that is not there (its Pods could not start).
    await appAnswers(t, pod.metadata!.name!, /ready: database answered/);
    assert.deepEqual(
      (await currentPods()).map((p) => p.metadata!.name),
      [pod.metadata!.name],
      'no roll while the Secret is missing',
    );

    const restored = Date.now();
    await secrets.create({
      metadata: {
        name: secretName,
        namespace: ns,
        labels: copy.metadata?.labels ?? {},
        ownerReferences: copy.metadata?.ownerReferences ?? [],
      },
      type: copy.type ?? 'Opaque',
      data: copy.data ?? {},
    });
    await eventually(
      'the Database Ready again',
      async () => {
        const d = await databases.get(`${NAME}-db`, { namespace: ns });
        return d.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? d : undefined;
      },
      120_000,
    );
    await until('MyApp Ready again', isReady);
    t.diagnostic(`Secret restored to Database and MyApp Ready: ${seconds(restored)}`);
    // A restored Secret is a new object: the app rolls onto it (the MyApp follows its bound
    // Secrets' versions, never their values), and the new Pod connects with what it reads.
    const rolled = await eventually('only Ready Pods of the rolled template', async () => {
      const [all, now] = [await appPods(), await currentPods()];
      return all.length === 1 && now.length === 1 && now.every(podReady) ? now : undefined;
    });
    assert.notEqual(rolled[0]!.metadata!.name, pod.metadata!.name, 'a new app Pod');
    await appAnswers(t, rolled[0]!.metadata!.name!, /ready: database answered/);
  });

  test("the database's primary fails over: the app reconnects through the client Service, with no MyApp change and no app Pod replaced", async (t) => {
    const databases = client.resource<DatabaseObject>(Database.type);
    await apps().patch(NAME, [{ op: 'replace', path: '/spec/database/replicas', value: 3 }], {
      type: 'json',
      namespace: ns,
    });
    const replicated = await eventually(
      'the database with a primary and two streaming replicas',
      async () => {
        const d = await databases.get(`${NAME}-db`, { namespace: ns });
        const streaming = d.status?.instances?.filter((i) => i.state === 'Streaming').length;
        return d.status?.readyReplicas === 3 && streaming === 2 && d.status.currentPrimary ? d : undefined;
      },
      240_000,
    );
    const app = await until('MyApp Ready with the replicated database', isReady);
    const [pod] = await currentPods();
    assert.ok(pod && podReady(pod));
    const primary = replicated.status!.currentPrimary!;

    const t0 = Date.now();
    await client.resource<V1Pod>(Kinds.Pod).delete(primary, { namespace: ns });
    const promoted = await eventually(
      'another instance primary',
      async () => {
        const d = await databases.get(`${NAME}-db`, { namespace: ns });
        const now = d.status?.currentPrimary;
        return now && now !== primary ? now : undefined;
      },
      120_000,
      200,
    );
    const promotedAfter = seconds(t0);
    // The app asks the database through the client Service, which follows the primary.
    await appAnswers(t, pod.metadata!.name!, /ready: database answered/);
    const reconnectedAfter = seconds(t0);
    const settled = await until('MyApp Ready after the failover', isReady);
    t.diagnostic(
      `primary ${primary} deleted: ${promoted} primary after ${promotedAfter}, the app's own check answered again after ${reconnectedAfter}, MyApp Ready after ${seconds(t0)}`,
    );
    assert.equal(settled.metadata.generation, app.metadata.generation, 'no change to the MyApp');
    const now = await currentPods();
    assert.deepEqual(
      now.map((p) => p.metadata!.name),
      [pod.metadata!.name],
      'the same app Pod',
    );
    assert.equal(
      now[0]!.status?.containerStatuses?.[0]?.restartCount,
      pod.status?.containerStatuses?.[0]?.restartCount,
      'the app container did not restart',
    );
  });
});
