// The Cache controller in a Manager against the real control plane
// (KWOK makes Pods Ready; PVCs bind to kwok-volume).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type {
  V1ConfigMap,
  V1Deployment,
  V1PodDisruptionBudget,
  V1Secret,
  V1Service,
  V1StatefulSet,
} from '@kubernetes/client-node';
import {
  InvalidError,
  KubeClient,
  Kinds,
  isNotFound,
  retyped,
  type KubeObject,
  type ResourceType,
} from '@regulon/client';
import { type Manager, type Condition, testManager } from '@regulon/runtime';
import { eventually, kstatus, start, type TestEnv } from '@regulon/testenv';
import { Cache, type CacheObject } from './api.ts';
import { setupCacheController } from './index.ts';

const cond = (c: CacheObject, type: string): Condition | undefined =>
  c.status?.conditions?.find((x) => x.type === type);
const HASH = 'regulon.dev/config-hash';

describe('Cache controller', () => {
  let env: TestEnv;
  let client: KubeClient;
  let mgr: Manager;
  let running: Promise<void>;
  let ns: string;
  const caches = () => client.resource<CacheObject>(Cache.type);

  before(async () => {
    env = await start();
    await env.installCRDs([Cache.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 200, burst: 200 });
    ns = await env.newNamespace('cache');
    mgr = testManager(env.kubeConfig, { namespace: ns });
    setupCacheController(mgr);
    running = mgr.start();
  });
  after(async () => {
    mgr.stop();
    await running;
    client.close();
    await env.stop();
  });

  const create = (name: string, spec: Partial<CacheObject['spec']> & Record<string, unknown> = {}) =>
    caches().create(
      Cache.object({
        metadata: { name, namespace: ns },
        spec: {
          engine: 'redis',
          version: '7.4.10',
          replicas: 1,
          memory: '256Mi',
          maxMemoryPercent: 75,
          ...spec,
        },
      }),
    );
  const get = (name: string) => caches().get(name, { namespace: ns });
  const patch = (name: string, spec: Record<string, unknown>) =>
    caches().patch(name, { spec }, { type: 'merge', namespace: ns });
  const read = <T extends KubeObject>(type: ResourceType, name: string) =>
    client.resource(retyped<T>(type)).get(name, { namespace: ns });
  const gone = (type: ResourceType, name: string) => read(type, name).then(() => false, isNotFound);
  const ready = (name: string, extra: (c: CacheObject) => boolean = () => true) =>
    eventually(`${name} Ready`, async () => {
      const c = await get(name);
      return c.status?.phase === 'Ready' && c.status.observedGeneration === c.metadata.generation && extra(c)
        ? c
        : undefined;
    });
  const configHash = async (kind: ResourceType, name: string) =>
    (await read<V1Deployment>(kind, name)).spec?.template.metadata?.annotations?.[HASH];
  const secretValue = (s: V1Secret, key: string) => Buffer.from(s.data?.[key] ?? '', 'base64').toString();
  const podsOf = async (name: string) =>
    (
      await client
        .resource<KubeObject & { spec?: { containers?: { image?: string }[] } }>(Kinds.Pod)
        .list({ namespace: ns, labelSelector: `app.kubernetes.io/instance=${name}` })
    ).items;
  const metric = async (name: string) => {
    const m = await mgr.registry.getSingleMetric(name)?.get();
    return (m?.values ?? [])
      .filter((v) => v.labels['controller'] === 'cache')
      .reduce((n, v) => n + v.value, 0);
  };

  test('memcached: a Deployment sized from spec.memory, its arguments in a ConfigMap, a binding Secret, and Ready', async () => {
    await create('mc', { engine: 'memcached', version: '1.6.44' });
    const c = await ready('mc');
    const uid = c.metadata.uid;
    const owned = (o: KubeObject) =>
      o.metadata?.ownerReferences?.some((r) => r.uid === uid && r.controller === true);

    const d = await read<V1Deployment>(Kinds.Deployment, 'mc');
    assert.ok(owned(d));
    const pod = d.spec!.template.spec!;
    const container = pod.containers[0]!;
    assert.equal(container.image, 'memcached:1.6.44');
    assert.equal(container.resources?.limits?.['memory'], '256Mi');
    assert.equal(pod.securityContext?.runAsNonRoot, true);
    assert.equal(pod.securityContext?.seccompProfile?.type, 'RuntimeDefault');
    assert.deepEqual(container.securityContext?.capabilities?.drop, ['ALL']);
    assert.equal(container.securityContext?.allowPrivilegeEscalation, false);
    assert.equal(container.securityContext?.readOnlyRootFilesystem, true);
    assert.ok(container.readinessProbe && container.livenessProbe);
    assert.ok(d.spec?.template.metadata?.annotations?.[HASH]);
    assert.equal(d.metadata?.labels?.['app.kubernetes.io/managed-by'], 'regulon');
    await assert.rejects(read(Kinds.StatefulSet, 'mc'), isNotFound);

    const cm = await read<V1ConfigMap>(Kinds.ConfigMap, 'mc-config');
    assert.ok(owned(cm));
    assert.match(cm.data?.['memcached.args'] ?? '', /^--memory-limit=192$/m, '256Mi × 75% = 192 MB');
    const svc = await read<V1Service>(Kinds.Service, 'mc');
    assert.equal(svc.spec?.type, 'ClusterIP');
    assert.deepEqual(
      svc.spec?.ports?.map((p) => p.port),
      [11211],
    );
    assert.equal((await read<V1Service>(Kinds.Service, 'mc-hl')).spec?.clusterIP, 'None');
    assert.ok(await gone(Kinds.PodDisruptionBudget, 'mc'), 'no PDB at 1 replica');

    const binding = await read<V1Secret>(Kinds.Secret, 'mc-binding');
    assert.ok(owned(binding));
    assert.deepEqual(Object.keys(binding.data ?? {}).sort(), ['host', 'port', 'provider', 'type', 'uri']);
    assert.equal(secretValue(binding, 'uri'), `memcached://mc.${ns}.svc:11211`);

    assert.equal(c.status?.readyReplicas, 1);
    assert.equal(c.status?.currentVersion, '1.6.44');
    assert.equal(c.status?.binding?.name, 'mc-binding');
    assert.equal(c.status?.endpoint, `mc.${ns}.svc:11211`);
    for (const type of ['Ready', 'Progressing', 'Degraded']) {
      const x = cond(c, type);
      assert.ok(x, `${type} is set`);
      assert.equal(x.observedGeneration, c.metadata.generation);
      assert.match(x.reason, /^[A-Z][A-Za-z]+$/);
    }
    assert.equal(cond(c, 'Ready')?.status, 'True');
    assert.equal(cond(c, 'Progressing')?.status, 'False');
    assert.equal(cond(c, 'Degraded')?.status, 'False');
  });

  test('redis: a Deployment whose redis.conf has maxmemory from the limit and the eviction policy, no auth', async () => {
    await create('rd', { memory: '512Mi', evictionPolicy: 'allkeys-lfu' });
    const c = await ready('rd');
    const d = await read<V1Deployment>(Kinds.Deployment, 'rd');
    assert.equal(d.spec?.template.spec?.containers[0]?.image, 'redis:7.4.10');
    assert.deepEqual(d.spec?.template.spec?.containers[0]?.env ?? [], []);
    const conf = (await read<V1ConfigMap>(Kinds.ConfigMap, 'rd-config')).data?.['redis.conf'] ?? '';
    assert.match(conf, /^maxmemory 402653184$/m, '512Mi × 75%');
    assert.match(conf, /^maxmemory-policy allkeys-lfu$/m);
    assert.doesNotMatch(conf, /requirepass|include/);
    assert.equal(
      secretValue(await read<V1Secret>(Kinds.Secret, 'rd-binding'), 'uri'),
      `redis://rd.${ns}.svc:6379`,
    );
    assert.equal(c.status?.binding?.name, 'rd-binding');
    assert.equal(c.status?.endpoint, `rd.${ns}.svc:6379`);
    assert.equal(c.status?.currentVersion, '7.4.10');
  });

  test('redis with persistence and auth: StatefulSet, headless Service, volume template, credentials generated once', async () => {
    await create('rp', {
      version: '8.0.5',
      persistence: { enabled: true, size: '1Gi' },
      auth: { enabled: true },
    });
    const c = await ready('rp');
    const sts = await read<V1StatefulSet>(Kinds.StatefulSet, 'rp');
    assert.equal(sts.spec?.serviceName, 'rp-hl');
    assert.equal(sts.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.['storage'], '1Gi');
    assert.equal(sts.spec?.template.spec?.containers[0]?.image, 'redis:8.0.5');
    assert.ok(sts.spec?.template.spec?.containers[0]?.volumeMounts?.some((m) => m.name === 'data'));
    assert.equal((await read<V1Service>(Kinds.Service, 'rp-hl')).spec?.clusterIP, 'None');
    await assert.rejects(read(Kinds.Deployment, 'rp'), isNotFound);
    await eventually('PVC bound', async () => {
      const pvc = await read<KubeObject & { status?: { phase?: string } }>(
        Kinds.PersistentVolumeClaim,
        'data-rp-0',
      );
      return pvc.status?.phase === 'Bound';
    });

    const secret = await read<V1Secret>(Kinds.Secret, 'rp-credentials');
    assert.deepEqual(Object.keys(secret.data ?? {}).sort(), [
      'host',
      'password',
      'port',
      'provider',
      'type',
      'uri',
    ]);
    const password = secretValue(secret, 'password');
    assert.ok(password.length >= 24);
    assert.equal(secretValue(secret, 'uri'), `redis://:${encodeURIComponent(password)}@rp.${ns}.svc:6379`);
    assert.ok(await gone(Kinds.Secret, 'rp-binding'), 'no password-less binding while auth is on');
    const cm = await read<V1ConfigMap>(Kinds.ConfigMap, 'rp-config');
    const conf = cm.data?.['redis.conf'] ?? '';
    assert.match(conf, /^appendonly yes$/m);
    assert.match(conf, /^include \/run\/redis\/auth.conf$/m);
    assert.ok(!JSON.stringify(cm).includes(password), 'the password is not in the ConfigMap');
    assert.ok(!JSON.stringify(sts).includes(password), 'nor in the StatefulSet');
    assert.deepEqual(sts.spec?.template.spec?.containers[0]?.env, [
      { name: 'REDISCLI_AUTH', valueFrom: { secretKeyRef: { name: 'rp-credentials', key: 'password' } } },
    ]);
    assert.equal(c.status?.binding?.name, 'rp-credentials');
  });

  test('scale 1 -> 3 (through the scale subresource) -> 1: workload replicas and the PDB follow', async () => {
    await caches().patch(
      'mc',
      { spec: { replicas: 3 } },
      { type: 'merge', namespace: ns, subresource: 'scale' },
    );
    await ready('mc', (c) => c.status?.readyReplicas === 3);
    assert.equal((await read<V1Deployment>(Kinds.Deployment, 'mc')).spec?.replicas, 3);
    const pdb = await read<V1PodDisruptionBudget>(Kinds.PodDisruptionBudget, 'mc');
    assert.equal(pdb.spec?.maxUnavailable, 1);
    await patch('mc', { replicas: 1 });
    await ready('mc', (c) => c.status?.readyReplicas === 1 && c.status.replicas === 1);
    await eventually('PDB removed at 1 replica', () => gone(Kinds.PodDisruptionBudget, 'mc'));
  });

  test('a version bump rolls the Pods; Ready again only once every Pod runs the new image', async () => {
    await patch('rd', { replicas: 2 });
    await ready('rd', (c) => c.status?.readyReplicas === 2);
    await patch('rd', { version: '7.4.11' });
    const seen = new Set<string>();
    const c = await eventually('upgraded', async () => {
      const x = await get('rd');
      seen.add(`${x.status?.currentVersion}/${x.status?.phase}`);
      if (x.status?.phase === 'Ready' && x.status.observedGeneration === x.metadata.generation) {
        // Whenever the status says Ready for this generation, the Deployment has rolled out every Pod.
        const d = await read<V1Deployment>(Kinds.Deployment, 'rd');
        assert.equal(d.spec?.template.spec?.containers[0]?.image, 'redis:7.4.11');
        assert.equal(d.status?.updatedReplicas, 2);
        assert.equal(d.status?.replicas, 2);
        return x;
      }
      return undefined;
    });
    assert.equal(c.status?.currentVersion, '7.4.11');
    assert.ok(
      !seen.has('7.4.11/Updating'),
      `currentVersion never runs ahead of the roll: ${[...seen].join(', ')}`,
    );
    const pods = await eventually('old Pods gone', async () => {
      const p = (await podsOf('rd')).filter((x) => !x.metadata?.deletionTimestamp);
      return p.length === 2 ? p : undefined;
    });
    assert.deepEqual(
      pods.map((p) => p.spec?.containers?.[0]?.image),
      ['redis:7.4.11', 'redis:7.4.11'],
    );
  });

  test('turning auth on creates the Secret and rolls the config; the password is never regenerated', async () => {
    const before = await configHash(Kinds.Deployment, 'rd');
    await patch('rd', { auth: { enabled: true } });
    const c = await ready('rd', (x) => x.status?.binding?.name === 'rd-credentials');
    const secret = await read<V1Secret>(Kinds.Secret, 'rd-credentials');
    assert.ok(secretValue(secret, 'password'));
    const after = await configHash(Kinds.Deployment, 'rd');
    assert.notEqual(after, before, 'config hash changed');
    const conf = (await read<V1ConfigMap>(Kinds.ConfigMap, 'rd-config')).data?.['redis.conf'] ?? '';
    assert.match(conf, /^include \/run\/redis\/auth.conf$/m);
    assert.ok(!conf.includes(secretValue(secret, 'password')));
    await eventually('password-less binding removed', () => gone(Kinds.Secret, 'rd-binding'));
    assert.equal(c.status?.readyReplicas, 2);

    // maxMemoryPercent rolls the config again; the Secret is not touched.
    await patch('rd', { maxMemoryPercent: 50 });
    await ready('rd', (x) => x.metadata.generation! > c.metadata.generation!);
    assert.notEqual(await configHash(Kinds.Deployment, 'rd'), after);
    assert.match(
      (await read<V1ConfigMap>(Kinds.ConfigMap, 'rd-config')).data?.['redis.conf'] ?? '',
      /^maxmemory 268435456$/m,
    );
    const again = await read<V1Secret>(Kinds.Secret, 'rd-credentials');
    assert.equal(
      again.metadata?.resourceVersion,
      secret.metadata?.resourceVersion,
      'the Secret was not written at all',
    );
  });

  test('changing maxMemoryPercent rolls the Pods onto the new memcached arguments', async () => {
    const before = await configHash(Kinds.Deployment, 'mc');
    await patch('mc', { maxMemoryPercent: 50 });
    await ready('mc', (c) => c.metadata.generation! > 1);
    const after = await configHash(Kinds.Deployment, 'mc');
    assert.notEqual(after, before);
    assert.match(
      (await read<V1ConfigMap>(Kinds.ConfigMap, 'mc-config')).data?.['memcached.args'] ?? '',
      /^--memory-limit=128$/m,
    );
    await eventually('every Pod carries the new hash', async () => {
      const pods = (await podsOf('mc')).filter((p) => !p.metadata?.deletionTimestamp);
      return pods.length === 1 && pods.every((p) => p.metadata?.annotations?.[HASH] === after);
    });
  });

  test('persistence is fixed at creation: turning it on (or off) is refused with the reason and the way out', async () => {
    const refused = (name: string, spec: Record<string, unknown>, message: RegExp) =>
      assert.rejects(patch(name, spec), (err: Error) => {
        assert.ok(err instanceof InvalidError, err.message);
        assert.match(err.message, message);
        return true;
      });
    await refused(
      'rd',
      { persistence: { enabled: true, size: '1Gi' } },
      /spec.persistence: Invalid value: .*persistence cannot be turned on after creation: .*Create a new Cache with persistence.enabled: true/,
    );
    await refused(
      'rp',
      { persistence: { enabled: false, size: '1Gi' } },
      /persistence cannot be turned off after creation/,
    );
    await refused('rp', { persistence: null }, /persistence cannot be turned off after creation/);
    await refused(
      'rp',
      { persistence: { enabled: true, size: '2Gi' } },
      /persistence.size cannot change after creation/,
    );
    await refused(
      'rp',
      { version: '7.4.11' },
      /version cannot be downgraded from 8.0.5 to 7.4.11 while persistence is enabled/,
    );
    // Upgrades of a persistent redis are fine, and roll the StatefulSet.
    await patch('rp', { version: '8.0.6' });
    await ready('rp', (c) => c.status?.currentVersion === '8.0.6');
  });

  test('drift is reverted: a deleted Service comes back, edited Deployment replicas and ConfigMap are restored', async () => {
    const uid = (await read(Kinds.Service, 'mc')).metadata?.uid;
    await client.resource(Kinds.Service).delete('mc', { namespace: ns });
    await eventually('client Service recreated', async () => {
      const s = await read(Kinds.Service, 'mc').catch(() => undefined);
      return s && s.metadata?.uid !== uid;
    });
    await client
      .resource(Kinds.Deployment)
      .patch('mc', { spec: { replicas: 4 } }, { type: 'merge', namespace: ns });
    await eventually(
      'replicas restored',
      async () => (await read<V1Deployment>(Kinds.Deployment, 'mc')).spec?.replicas === 1,
    );
    await client
      .resource(Kinds.ConfigMap)
      .patch(
        'mc-config',
        { data: { 'memcached.args': '--memory-limit=1\n' } },
        { type: 'merge', namespace: ns },
      );
    await eventually('config restored', async () =>
      /^--memory-limit=128$/m.test(
        (await read<V1ConfigMap>(Kinds.ConfigMap, 'mc-config')).data?.['memcached.args'] ?? '',
      ),
    );
    await ready('mc', (c) => c.status?.readyReplicas === 1);
  });

  test('bad input is rejected by the API server with a message a person understands', async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      [
        'unknown engine',
        { engine: 'valkey' },
        /spec.engine: Unsupported value: "valkey": supported values: "redis", "memcached"/,
      ],
      [
        'evictionPolicy on memcached',
        { engine: 'memcached', version: '1.6.45', evictionPolicy: 'allkeys-lru' },
        /spec.evictionPolicy: Forbidden: evictionPolicy is only supported by redis/,
      ],
      [
        'persistence on memcached',
        { engine: 'memcached', version: '1.6.45', persistence: { enabled: true, size: '1Gi' } },
        /spec.persistence: Forbidden: persistence is only supported by redis/,
      ],
      [
        'maxMemoryPercent 5',
        { maxMemoryPercent: 5 },
        /spec.maxMemoryPercent: Invalid value: 5: spec.maxMemoryPercent in body should be greater than or equal to 10/,
      ],
      [
        'maxMemoryPercent 96',
        { maxMemoryPercent: 96 },
        /spec.maxMemoryPercent: Invalid value: 96: spec.maxMemoryPercent in body should be less than or equal to 95/,
      ],
      ['replicas 6', { replicas: 6 }, /spec.replicas in body should be less than or equal to 5/],
      ['memory too small', { memory: '16Mi' }, /memory must be between 32Mi and 64Gi/],
      ['memory not a quantity', { memory: '1GB' }, /spec.memory in body should match/],
      ['unknown eviction policy', { evictionPolicy: 'lru' }, /spec.evictionPolicy: Unsupported value: "lru"/],
      ['malformed version', { version: '7.4-alpine' }, /version must be a dotted number such as 7\.4\.11/],
      [
        'secretName with auth off',
        { auth: { enabled: false, secretName: 'x' } },
        /auth.secretName needs auth.enabled: true/,
      ],
    ];
    for (const [what, spec, message] of cases) {
      await assert.rejects(create(`bad-${what.replace(/\W+/g, '-')}`, spec), (err: Error) => {
        assert.ok(err instanceof InvalidError, `${what}: ${err.message}`);
        assert.match(err.message, message, what);
        return true;
      });
    }
    await assert.rejects(patch('mc', { engine: 'redis', version: '7.4.10' }), /engine is immutable/);
  });

  test('a version the image catalog lacks: VersionNotInCatalog, Stalled and an Event, nothing runs; a listed version heals it', async () => {
    // Well-formed, so admission takes it; the catalog (here the official images) has no 6.2.
    await create('old-redis', { version: '6.2.14' });
    const c = await eventually('old-redis VersionNotInCatalog', async () => {
      const got = await get('old-redis');
      return cond(got, 'Degraded')?.reason === 'VersionNotInCatalog' ? got : undefined;
    });
    assert.match(
      cond(c, 'Degraded')!.message,
      /^redis 6\.2\.14 is not in the image catalog \(the official images\); it has 7\.2\.15, .*8\.0\.6\. Set spec\.version/,
    );
    assert.equal(cond(c, 'Stalled')?.status, 'True');
    assert.equal(cond(c, 'Ready')?.reason, 'VersionNotInCatalog');
    assert.ok(await gone(Kinds.Deployment, 'old-redis'), 'nothing runs a version the catalog lacks');
    await eventually('a VersionNotInCatalog Warning', async () => {
      const list = await client
        .resource<KubeObject & { reason?: string; type?: string; regarding?: { name?: string } }>(Kinds.Event)
        .list({ namespace: ns });
      return list.items.some(
        (e) =>
          e.type === 'Warning' && e.reason === 'VersionNotInCatalog' && e.regarding?.name === 'old-redis',
      );
    });
    await patch('old-redis', { version: '7.4.11' });
    const healed = await ready('old-redis');
    assert.equal(cond(healed, 'Stalled')?.status, 'False');
    assert.equal(
      (await read<V1Deployment>(Kinds.Deployment, 'old-redis')).spec?.template.spec?.containers[0]?.image,
      'redis:7.4.11',
    );
  });

  test('a missing referenced Secret: Degraded and a Warning Event, no crash, no hot loop; heals when it appears', async () => {
    await create('byo', { auth: { secretName: 'byo-auth' } });
    // A name too long for its children is refused at admission now; a name already taken by a user's
    // ConfigMap is something only reconcile finds.
    await client.resource<V1ConfigMap>(Kinds.ConfigMap).create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'taken-config', namespace: ns },
      data: { 'memcached.args': '-m 64' },
    });
    await create('taken', { engine: 'memcached', version: '1.6.45' });
    const degraded = (name: string, reason: string) =>
      eventually(`${name} Degraded ${reason}`, async () => {
        const c = await get(name);
        const d = cond(c, 'Degraded');
        return d?.status === 'True' &&
          d.reason === reason &&
          c.status?.phase === 'Degraded' &&
          cond(c, 'Ready')?.status === 'False'
          ? c
          : undefined;
      });
    const byo = await degraded('byo', 'AuthSecretMissing');
    assert.match(
      cond(byo, 'Degraded')!.message,
      /Secret byo-auth named in spec.auth.secretName does not exist/,
    );
    await degraded('taken', 'ChildConflict');
    assert.ok(await gone(Kinds.Deployment, 'byo'), 'no workload that could only fail to start');
    const events = await eventually('Warning events', async () => {
      const list = await client
        .resource<KubeObject & { reason?: string; type?: string; regarding?: { name?: string } }>(Kinds.Event)
        .list({ namespace: ns });
      const mine = list.items.filter(
        (e) => e.type === 'Warning' && ['AuthSecretMissing', 'ChildConflict'].includes(e.reason ?? ''),
      );
      return mine.length >= 2 ? mine : undefined;
    });
    assert.ok(events.some((e) => e.regarding?.name === 'byo' && e.reason === 'AuthSecretMissing'));

    // Quiet period: once everything has settled nothing changes, so nothing reconciles.
    for (const name of ['mc', 'rd', 'rp']) await ready(name);
    let last = -1;
    await eventually('reconciles settle', async () => {
      const now = await metric('controller_runtime_reconcile_total');
      const stable = now === last;
      last = now;
      await new Promise((r) => setTimeout(r, 500));
      return stable;
    });
    const before = await metric('controller_runtime_reconcile_total');
    await new Promise((r) => setTimeout(r, 3000)); // a measured quiet window, not a wait for a condition
    const during = (await metric('controller_runtime_reconcile_total')) - before;
    assert.ok(during <= 1, `no hot loop: ${during} reconciles in 3 s`);
    assert.equal(await metric('controller_runtime_reconcile_panics_total'), 0, 'no reconcile crashed');
    assert.equal(await metric('controller_runtime_reconcile_errors_total'), 0, 'no reconcile failed');

    // The Secret appears: the Cache heals without any other change.
    await client.resource<V1Secret>(Kinds.Secret).create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'byo-auth', namespace: ns },
      stringData: { password: 'supplied' },
    });
    const healed = await ready('byo');
    assert.equal(healed.status?.binding?.name, 'byo-auth');
    assert.equal(cond(healed, 'Degraded')?.status, 'False');
    const d = await read<V1Deployment>(Kinds.Deployment, 'byo');
    assert.deepEqual(d.spec?.template.spec?.containers[0]?.env?.[0]?.valueFrom?.secretKeyRef, {
      name: 'byo-auth',
      key: 'password',
    });
    assert.ok(await gone(Kinds.Secret, 'byo-credentials'), 'nothing generated when a Secret is referenced');
  });

  test('kstatus (what Flux and kpt read): Current when Ready, InProgress while scaling, Failed while stalled, Current once fixed', async () => {
    // Persistent, so that each new replica waits for its volume: a rollout long enough to observe.
    await create('kst', { version: '8.0.5', persistence: { enabled: true, size: '1Gi' } });
    assert.equal((await kstatus(await ready('kst'))).status, 'Current');

    const changed = await patch('kst', { replicas: 3 });
    const seen: string[] = [];
    await eventually('kst scaled and Ready', async () => {
      const c = await get('kst');
      const { status } = await kstatus(c);
      if (c.status?.observedGeneration === changed.metadata.generation)
        seen.push(`${status}/${cond(c, 'Ready')?.reason}`);
      return status === 'Current' && c.status?.readyReplicas === 3;
    });
    assert.ok(
      seen.some((x) => x.startsWith('InProgress/')),
      `InProgress while the replicas start: ${seen.join(' ')}`,
    );
    assert.ok(!seen.some((x) => x.startsWith('Failed/')), `never Failed: ${seen.join(' ')}`);

    await create('kst-byo', { engine: 'memcached', version: '1.6.45', auth: { secretName: 'kst-byo-auth' } });
    const stalled = await eventually('kst-byo Failed', async () => {
      const r = await kstatus(await get('kst-byo'));
      return r.status === 'Failed' ? r : undefined;
    });
    assert.match(stalled.message, /Secret kst-byo-auth named in spec.auth.secretName does not exist/);
    await client.resource<V1Secret>(Kinds.Secret).create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'kst-byo-auth', namespace: ns },
      stringData: { password: 'supplied' },
    });
    assert.equal((await kstatus(await ready('kst-byo'))).status, 'Current');
    await caches().delete('kst', { namespace: ns });
    await caches().delete('kst-byo', { namespace: ns });
  });

  test('a deleted auth Secret is never replaced while Pods run with its password: Degraded, Event, healed by restoring it', async () => {
    // A brand new Cache still gets generated credentials.
    await create('vault', { auth: { enabled: true } });
    await ready('vault', (c) => c.status?.binding?.name === 'vault-credentials');
    const original = await read<V1Secret>(Kinds.Secret, 'vault-credentials');
    assert.ok(secretValue(original, 'password').length >= 24);

    await client.resource(Kinds.Secret).delete('vault-credentials', { namespace: ns });
    const lost = await eventually('vault Degraded CredentialsSecretLost', async () => {
      const c = await get('vault');
      return cond(c, 'Degraded')?.status === 'True' && cond(c, 'Degraded')?.reason === 'CredentialsSecretLost'
        ? c
        : undefined;
    });
    // The reconcile that wrote Degraded ran after the deletion and created nothing.
    assert.ok(
      await gone(Kinds.Secret, 'vault-credentials'),
      'no new password after the reconcile that saw the loss',
    );
    assert.match(cond(lost, 'Degraded')!.message, /restore the Secret vault-credentials from a backup/);
    assert.equal(cond(lost, 'Ready')?.status, 'False');
    assert.equal(cond(lost, 'Ready')?.reason, 'CredentialsSecretLost');
    assert.equal(lost.status?.phase, 'Degraded');
    await eventually('Warning Event CredentialsSecretLost', async () => {
      const list = await client
        .resource<KubeObject & { reason?: string; type?: string; regarding?: { name?: string } }>(Kinds.Event)
        .list({ namespace: ns });
      return list.items.some(
        (e) => e.type === 'Warning' && e.reason === 'CredentialsSecretLost' && e.regarding?.name === 'vault',
      );
    });
    // One more reconcile, proven by observedGeneration catching up with a spec change: still no new Secret.
    const changed = await patch('vault', { maxMemoryPercent: 70 });
    await eventually('vault reconciled again', async () => {
      const c = await get('vault');
      return c.status?.observedGeneration === changed.metadata.generation &&
        cond(c, 'Degraded')?.reason === 'CredentialsSecretLost'
        ? c
        : undefined;
    });
    assert.ok(await gone(Kinds.Secret, 'vault-credentials'), 'no new password on a later reconcile either');

    // Restored from a backup (what `kubectl get -o yaml` saved, without the server-set fields): healthy again.
    await client.resource<V1Secret>(Kinds.Secret).create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'vault-credentials',
        namespace: ns,
        labels: original.metadata!.labels!,
        ownerReferences: original.metadata!.ownerReferences!,
      },
      type: original.type!,
      data: original.data!,
    });
    const healed = await ready('vault');
    assert.equal(cond(healed, 'Degraded')?.status, 'False');
    const after = await read<V1Secret>(Kinds.Secret, 'vault-credentials');
    assert.equal(secretValue(after, 'password'), secretValue(original, 'password'), 'the original password');
    await caches().delete('vault', { namespace: ns });
  });

  test('delete: every child is garbage-collected, the persistent volumes with them', async () => {
    await caches().delete('rp', { namespace: ns });
    await caches().delete('mc', { namespace: ns });
    await caches().delete('rd', { namespace: ns });
    await eventually('children gone', async () => {
      const all = await Promise.all([
        gone(Kinds.StatefulSet, 'rp'),
        gone(Kinds.Service, 'rp'),
        gone(Kinds.Service, 'rp-hl'),
        gone(Kinds.ConfigMap, 'rp-config'),
        gone(Kinds.Secret, 'rp-credentials'),
        gone(Kinds.Deployment, 'mc'),
        gone(Kinds.Service, 'mc'),
        gone(Kinds.Service, 'mc-hl'),
        gone(Kinds.ConfigMap, 'mc-config'),
        gone(Kinds.Secret, 'mc-binding'),
        gone(Kinds.Deployment, 'rd'),
        gone(Kinds.Secret, 'rd-credentials'),
        gone(Kinds.ConfigMap, 'rd-config'),
      ]);
      return all.every(Boolean);
    });
    await eventually('PVC deleted with the StatefulSet (whenDeleted: Delete)', async () => {
      const pvc = await read(Kinds.PersistentVolumeClaim, 'data-rp-0').catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      return !pvc || pvc.metadata?.deletionTimestamp !== undefined;
    });
  });
});
