// The Database controller in a Manager against the real control plane
// (KWOK makes Pods Ready and Jobs complete; PVCs bind to kwok-volume).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type {
  V1ConfigMap,
  V1PersistentVolumeClaim,
  V1Pod,
  V1Secret,
  V1Service,
  V1ServiceAccount,
  V1StatefulSet,
} from '@kubernetes/client-node';
import {
  InvalidError,
  KubeClient,
  Kinds,
  isNotFound,
  type KubeObject,
  type ResourceType,
} from '@regulon/client';
import { testManager, type Condition, type Manager } from '@regulon/runtime';
import { eventually, kstatus, start, type TestEnv } from '@regulon/testenv';
import { Database, type DatabaseObject } from './api.ts';
import {
  FENCED_CONDITION,
  FENCED_INSTANCES_ANNOTATION,
  FENCED_POD_ANNOTATION,
  INVALID_FENCING,
} from './fencing.ts';
import { setupDatabaseController } from './index.ts';
import { ROLE_LABEL } from './names.ts';

const cond = (db: DatabaseObject, type: string): Condition | undefined =>
  db.status?.conditions?.find((c) => c.type === type);

describe('Database controller', () => {
  let env: TestEnv;
  let client: KubeClient;
  let mgr: Manager;
  let running: Promise<void>;
  let ns: string;
  const dbs = () => client.resource<DatabaseObject>(Database.type);

  before(async () => {
    env = await start();
    await env.installCRDs([Database.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 200, burst: 200 });
    ns = await env.newNamespace('db');
    mgr = testManager(env.kubeConfig, { namespace: ns });
    setupDatabaseController(mgr);
    running = mgr.start();
  });
  after(async () => {
    mgr.stop();
    await running;
    client.close();
    await env.stop();
  });

  const create = (name: string, spec: Partial<DatabaseObject['spec']> = {}) =>
    dbs().create(
      Database.object({
        metadata: { name, namespace: ns },
        spec: {
          engine: 'postgres',
          version: '16.6',
          replicas: 1,
          storage: { size: '1Gi' },
          ...spec,
        },
      }),
    );
  const get = (name: string) => dbs().get(name, { namespace: ns });
  const patch = (name: string, spec: Record<string, unknown>) =>
    dbs().patch(name, { spec }, { type: 'merge', namespace: ns });
  const ready = (name: string, extra: (db: DatabaseObject) => boolean = () => true) =>
    eventually(`${name} Ready`, async () => {
      const db = await get(name);
      return db.status?.phase === 'Ready' &&
        db.status.observedGeneration === db.metadata.generation &&
        extra(db)
        ? db
        : undefined;
    });
  /** A hot loop reconciles hundreds of times in a 3 s window; settled Databases reconcile a handful. */
  const MAX_QUIET_RECONCILES = 30;
  const reconciles = async (results?: string[]) => {
    const m = await mgr.registry.getSingleMetric('controller_runtime_reconcile_total')!.get();
    return m.values
      .filter(
        (v) =>
          v.labels['controller'] === 'database' &&
          (results === undefined || results.includes(String(v.labels['result']))),
      )
      .reduce((n, v) => n + v.value, 0);
  };

  test('create: every child exists, owned and labelled, and the Database becomes Ready with a trustworthy status', async () => {
    await create('orders');
    const db = await ready('orders');
    const uid = db.metadata.uid;
    const owned = (o: KubeObject) =>
      o.metadata?.ownerReferences?.some((r) => r.uid === uid && r.controller === true);
    const sts = await client.resource<V1StatefulSet>(Kinds.StatefulSet).get('orders', { namespace: ns });
    assert.ok(owned(sts));
    assert.equal(sts.spec?.serviceName, 'orders-hl');
    assert.equal(sts.spec?.template.spec?.containers[0]?.image, 'postgres:16.6');
    assert.equal(sts.spec?.template.spec?.securityContext?.runAsNonRoot, true);
    assert.deepEqual(sts.spec?.template.spec?.containers[0]?.securityContext?.capabilities?.drop, ['ALL']);
    assert.ok(sts.spec?.template.metadata?.annotations?.['regulon.dev/config-hash']);
    assert.equal(sts.metadata?.labels?.['app.kubernetes.io/managed-by'], 'regulon');
    const headless = await client.resource<V1Service>(Kinds.Service).get('orders-hl', { namespace: ns });
    assert.equal(headless.spec?.clusterIP, 'None');
    const svc = await client.resource<V1Service>(Kinds.Service).get('orders', { namespace: ns });
    assert.equal(svc.spec?.selector?.['regulon.dev/role'], 'primary');
    await assert.rejects(client.resource(Kinds.Service).get('orders-ro', { namespace: ns }), isNotFound);
    const sa = await client.resource<V1ServiceAccount>(Kinds.ServiceAccount).get('orders', { namespace: ns });
    assert.equal(sa.automountServiceAccountToken, false);
    assert.ok(owned(await client.resource(Kinds.ConfigMap).get('orders-config', { namespace: ns })));
    // No spec.backup, no backups: no dump CronJob stands in for one, and the status says so.
    await assert.rejects(client.resource(Kinds.CronJob).get('orders-backup', { namespace: ns }), isNotFound);
    assert.equal(cond(db, 'BackupSucceeded')?.reason, 'BackupsDisabled');
    assert.match(
      cond(db, 'BackupSucceeded')?.message ?? '',
      /^No spec\.backup: nothing backs this Database up/,
    );
    const secret = await client.resource<V1Secret>(Kinds.Secret).get('orders-credentials', { namespace: ns });
    assert.deepEqual(Object.keys(secret.data ?? {}).sort(), [
      'database',
      'host',
      'password',
      'port',
      'provider',
      'type',
      'uri',
      'username',
    ]);
    // The primary Pod carries the role label the client Service selects on.
    await eventually('primary labelled', async () => {
      const pods = await client
        .resource(Kinds.Pod)
        .list({ namespace: ns, labelSelector: 'app.kubernetes.io/instance=orders,regulon.dev/role=primary' });
      return pods.items.length === 1;
    });

    assert.equal(db.status?.readyReplicas, 1);
    assert.equal(db.status?.currentVersion, '16.6');
    assert.equal(db.status?.binding?.name, 'orders-credentials');
    assert.equal(db.status?.endpoint, `orders.${ns}.svc:5432`);
    for (const type of ['Ready', 'Progressing', 'Degraded', 'BackupSucceeded']) {
      const c = cond(db, type);
      assert.ok(c, `${type} is set`);
      assert.equal(c.observedGeneration, db.metadata.generation);
      assert.match(c.reason, /^[A-Z][A-Za-z]+$/);
    }
    assert.equal(cond(db, 'Ready')?.status, 'True');
    assert.equal(cond(db, 'Degraded')?.status, 'False');
    assert.equal(cond(db, 'BackupSucceeded')?.status, 'Unknown');
  });

  test('a mysql Database runs the official mysql image and becomes Ready', async () => {
    await create('inventory', { engine: 'mysql', version: '8.4.4' });
    const db = await ready('inventory');
    const sts = await client.resource<V1StatefulSet>(Kinds.StatefulSet).get('inventory', { namespace: ns });
    assert.equal(sts.spec?.template.spec?.containers[0]?.image, 'mysql:8.4.4');
    assert.equal(db.status?.endpoint, `inventory.${ns}.svc:3306`);
    const secret = await client
      .resource<V1Secret>(Kinds.Secret)
      .get('inventory-credentials', { namespace: ns });
    assert.match(Buffer.from(secret.data!['uri']!, 'base64').toString(), /^mysql:\/\/root:[^@]+@inventory\./);
    await dbs().delete('inventory', { namespace: ns });
  });

  test('generated credentials are never regenerated, whatever else changes', async () => {
    const before = await client.resource<V1Secret>(Kinds.Secret).get('orders-credentials', { namespace: ns });
    await patch('orders', { parameters: { max_connections: '50' } });
    await ready('orders', (db) => db.metadata.generation! > 1);
    const after = await client.resource<V1Secret>(Kinds.Secret).get('orders-credentials', { namespace: ns });
    assert.equal(after.data?.['password'], before.data?.['password']);
    assert.equal(
      after.metadata?.resourceVersion,
      before.metadata?.resourceVersion,
      'the Secret was not written at all',
    );
  });

  test('scale 1 -> 3 -> 2 -> 1: the StatefulSet, the PDB and the read-only Service follow; simulated Pods are never called replicated', async () => {
    await patch('orders', { replicas: 3 });
    await eventually('StatefulSet at 3', async () => {
      const sts = await client.resource<V1StatefulSet>(Kinds.StatefulSet).get('orders', { namespace: ns });
      return sts.spec?.replicas === 3 && sts.status?.readyReplicas === 3;
    });
    await client.resource(Kinds.PodDisruptionBudget).get('orders', { namespace: ns });
    const ro = await client.resource<V1Service>(Kinds.Service).get('orders-ro', { namespace: ns });
    assert.equal(ro.spec?.selector?.['regulon.dev/role'], 'replica');
    // KWOK's Pods run no server: with more than one instance the manager asks each over SQL, gets
    // no answer, and says so, instead of calling three Ready Pods a replicated database. What the
    // kubelet reports Ready keeps the role it had (orders-0, the primary while it ran alone: a
    // manager cut off from the Pods must not empty a serving database's Services); no Pod gains one.
    // Once all three are Ready by the kubelet (the StatefulSet's readyReplicas can run ahead of the cache).
    const honest = await eventually(
      'InstancesReachable=False naming all three, Ready naming the replicas',
      async () => {
        const d = await get('orders');
        const reach = cond(d, 'InstancesReachable');
        return d.status?.observedGeneration === d.metadata.generation &&
          reach?.status === 'False' &&
          /cannot reach orders-0, orders-1, orders-2;/.test(reach.message ?? '') &&
          cond(d, 'Ready')?.reason === 'ReplicasNotStreaming'
          ? d
          : undefined;
      },
    );
    assert.equal(cond(honest, 'ReplicationHealthy')?.status, 'Unknown');
    assert.equal(cond(honest, 'Ready')?.status, 'True', 'orders-0 serves, by the kubelet');
    assert.match(
      cond(honest, 'Ready')?.message ?? '',
      /^1\/3 replicas ready, .*: orders-1, orders-2 not replicating/,
    );
    assert.equal(
      honest.status?.readyReplicas,
      1,
      'the replicas are not counted: nothing says they replicate',
    );
    assert.deepEqual(
      honest.status?.instances?.map((i) => `${i.name}:${i.role}:${i.state}`),
      ['orders-0:primary:Unreachable', 'orders-1:standby:Unreachable', 'orders-2:standby:Unreachable'],
    );
    const labelled = await client
      .resource(Kinds.Pod)
      .list({ namespace: ns, labelSelector: 'app.kubernetes.io/instance=orders,regulon.dev/role' });
    assert.deepEqual(
      labelled.items.map((p) => `${p.metadata?.name}:${p.metadata?.labels?.['regulon.dev/role']}`),
      ['orders-0:primary'],
      'no Pod is selected by a Service on no evidence; the one that had its role keeps it',
    );
    await patch('orders', { replicas: 2 });
    await eventually('StatefulSet at 2', async () => {
      const sts = await client.resource<V1StatefulSet>(Kinds.StatefulSet).get('orders', { namespace: ns });
      return sts.spec?.replicas === 2;
    });
    await client.resource(Kinds.PodDisruptionBudget).get('orders', { namespace: ns });
    await client.resource(Kinds.Service).get('orders-ro', { namespace: ns });
    await patch('orders', { replicas: 1 });
    await eventually('PDB and read-only Service removed at 1 replica', async () => {
      const gone = async (type: ResourceType, name: string) =>
        client
          .resource(type)
          .get(name, { namespace: ns })
          .then(() => false, isNotFound);
      return (await gone(Kinds.PodDisruptionBudget, 'orders')) && (await gone(Kinds.Service, 'orders-ro'));
    });
    // One instance again (its readiness probe queries with the credentials): Ready, and the primary.
    // Replicated until the removed Pods are gone (KWOK ends them a moment after the StatefulSet
    // counts one replica): they are instances the manager cannot reach until then.
    const single = await ready(
      'orders',
      (d) =>
        d.status?.readyReplicas === 1 &&
        d.status.replicas === 1 &&
        cond(d, 'ReplicationHealthy')?.reason === 'SingleInstance',
    );
    assert.equal(single.status?.currentPrimary, 'orders-0');
  });

  test('minor upgrade rolls the Pods; currentVersion moves only once every Pod runs it', async () => {
    await patch('orders', { version: '16.8' });
    const seen = new Set<string>();
    const db = await eventually('upgraded', async () => {
      const d = await get('orders');
      seen.add(`${d.status?.currentVersion}/${d.status?.phase}`);
      // While the StatefulSet still runs old Pods the status keeps the old version.
      if (d.status?.currentVersion === '16.8') {
        const sts = await client.resource<V1StatefulSet>(Kinds.StatefulSet).get('orders', { namespace: ns });
        assert.equal(sts.status?.currentRevision, sts.status?.updateRevision);
        assert.equal(sts.status?.updatedReplicas, d.spec.replicas);
        return d.status.phase === 'Ready' ? d : undefined;
      }
      return undefined;
    });
    assert.equal(db.status?.currentVersion, '16.8');
    assert.ok(
      !seen.has('16.8/Updating'),
      `currentVersion never runs ahead of the rollout: ${[...seen].join(', ')}`,
    );
  });

  test('a major upgrade is refused without the opt-in, with a clear message, and proceeds with it', async () => {
    await assert.rejects(patch('orders', { version: '17.2' }), (err: InvalidError) => {
      assert.ok(err instanceof InvalidError);
      assert.match(err.message, /major version upgrade: set spec.allowMajorVersionUpgrade: true/);
      return true;
    });
    await patch('orders', { version: '17.2', allowMajorVersionUpgrade: true });
    await ready('orders', (db) => db.status?.currentVersion === '17.2');
  });

  test('storage grow is applied to the PVCs (the StatefulSet template keeps its creation size)', async () => {
    await patch('orders', { storage: { size: '2Gi' } });
    await eventually('PVC grown', async () => {
      const pvc = await client
        .resource<V1PersistentVolumeClaim>(Kinds.PersistentVolumeClaim)
        .get('data-orders-0', { namespace: ns });
      return pvc.spec?.resources?.requests?.['storage'] === '2Gi';
    });
    const sts = await client.resource<V1StatefulSet>(Kinds.StatefulSet).get('orders', { namespace: ns });
    assert.equal(sts.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.['storage'], '1Gi');
  });

  test('drift is reverted: a deleted client Service comes back, edited StatefulSet replicas are restored', async () => {
    await client.resource(Kinds.Service).delete('orders', { namespace: ns });
    await eventually('client Service recreated', () =>
      client
        .resource(Kinds.Service)
        .get('orders', { namespace: ns })
        .then(
          () => true,
          () => false,
        ),
    );
    await client
      .resource(Kinds.StatefulSet)
      .patch('orders', { spec: { replicas: 4 } }, { type: 'merge', namespace: ns });
    await eventually('replicas restored', async () => {
      const sts = await client.resource<V1StatefulSet>(Kinds.StatefulSet).get('orders', { namespace: ns });
      return sts.spec?.replicas === 1;
    });
  });

  test('bad input is rejected by the API server with a message a person understands', async () => {
    const cases: Array<[string, Partial<DatabaseObject['spec']> & Record<string, unknown>, RegExp]> = [
      [
        'unknown engine',
        { engine: 'oracle' as 'postgres' },
        /spec.engine: Unsupported value: "oracle": supported values: "postgres", "mariadb", "mysql"/,
      ],
      [
        'replicas 0',
        { replicas: 0 },
        /spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1/,
      ],
      [
        'replicas 6',
        { replicas: 6 },
        /spec.replicas: Invalid value: 6: spec.replicas in body should be less than or equal to 5/,
      ],
      [
        '6-field cron',
        { backup: { enabled: false, schedule: '0 0 3 * * *', historyLimit: 3 } },
        /backup\.schedule must be five fields \(minute hour day-of-month month day-of-week\)/,
      ],
      [
        'reserved parameter',
        { parameters: { port: '6543' } },
        /parameters may not set settings the operator manages/,
      ],
      ['malformed version', { version: 'latest' }, /version must be a dotted number such as 16\.8/],
    ];
    for (const [what, spec, message] of cases) {
      await assert.rejects(create(`bad-${what.replace(/\W+/g, '-')}`, spec), (err: Error) => {
        assert.ok(err instanceof InvalidError, `${what}: ${err.message}`);
        assert.match(err.message, message, what);
        return true;
      });
    }
    // Rules on changes: downgrade, storage shrink, engine change.
    await create('rules', { version: '16.8', storage: { size: '2Gi' } });
    const changes: Array<[string, Record<string, unknown>, RegExp]> = [
      ['downgrade', { version: '16.6' }, /version cannot be downgraded from 16.8 to 16.6/],
      ['storage shrink', { storage: { size: '1Gi' } }, /storage.size can grow but never shrink/],
      ['engine change', { engine: 'mysql', version: '8.4.4' }, /engine is immutable/],
    ];
    for (const [what, spec, message] of changes) {
      await assert.rejects(patch('rules', spec), (err: Error) => {
        assert.ok(err instanceof InvalidError, `${what}: ${err.message}`);
        assert.match(err.message, message, what);
        return true;
      });
    }
  });

  test('what only reconcile can know goes to Degraded and an Event, without a hot loop', async () => {
    // A name too long for its children is refused at admission now; a name already taken by a user's
    // Secret (the generated credentials' name) is something only reconcile finds.
    const taken = 'taken';
    await client.resource<V1Secret>(Kinds.Secret).create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'taken-credentials', namespace: ns },
      stringData: { password: 'the user’s own' },
    });
    await create(taken);
    await create('byo', { credentials: { secretName: 'missing-secret' } });
    // Well-formed, but the image catalog (here the official images) has no such version.
    await create('old', { version: '9.6' });
    const degraded = async (name: string, reason: string) =>
      eventually(`${name} Degraded ${reason}`, async () => {
        const d = await get(name);
        const c = cond(d, 'Degraded');
        return c?.status === 'True' &&
          c.reason === reason &&
          d.status?.phase === 'Degraded' &&
          cond(d, 'Ready')?.status === 'False'
          ? d
          : undefined;
      });
    await degraded(taken, 'ChildConflict');
    await degraded('byo', 'CredentialsSecretMissing');
    const old = await degraded('old', 'VersionNotInCatalog');
    assert.match(
      cond(old, 'Degraded')?.message ?? '',
      /^postgres 9\.6 is not in the image catalog \(the official images\); it has 15\.10, .*17\.4\. Set spec\.version/,
    );
    assert.equal(cond(old, 'Stalled')?.status, 'True');
    assert.equal(
      await client
        .resource<V1StatefulSet>(Kinds.StatefulSet)
        .get('old', { namespace: ns })
        .catch(() => undefined),
      undefined,
      'nothing runs a version the catalog lacks',
    );
    const events = await eventually('Warning events', async () => {
      const list = await client
        .resource<KubeObject & { reason?: string; type?: string; regarding?: { name?: string } }>(Kinds.Event)
        .list({ namespace: ns });
      const mine = list.items.filter(
        (e) =>
          e.type === 'Warning' &&
          ['ChildConflict', 'CredentialsSecretMissing', 'VersionNotInCatalog'].includes(e.reason ?? ''),
      );
      return mine.length >= 3 ? mine : undefined;
    });
    assert.ok(events.some((e) => e.regarding?.name === taken));
    // Quiet period: once the other Databases have settled nothing changes, so nothing reconciles.
    await ready('rules');
    await ready('orders');
    // Settled: the counter stops moving once the last status writes have echoed
    // back. Stable over 2 s, not one 500 ms gap: the earlier Databases' Pods go
    // through scheduling, volume binding and readiness in bursts with pauses.
    let last = -1;
    let stableSamples = 0;
    await eventually('reconciles settle', async () => {
      const now = await reconciles();
      stableSamples = now === last ? stableSamples + 1 : 0;
      last = now;
      await new Promise((r) => setTimeout(r, 500));
      return stableSamples >= 4;
    });
    // A loop over the Degraded Databases would rewrite their status (their
    // resourceVersion moves) or spin the reconcile counter by hundreds. The
    // other Databases' Pods may still move now and then, so a handful of
    // their reconciles is allowed: CI saw 9 and 12 in this window.
    const versions = async () => [
      (await get(taken)).metadata.resourceVersion,
      (await get('byo')).metadata.resourceVersion,
    ];
    const versionsBefore = await versions();
    const before = await reconciles();
    const retriesBefore = await reconciles(['error', 'requeue']);
    await new Promise((r) => setTimeout(r, 3000)); // a measured quiet window, not a wait for a condition
    const during = (await reconciles()) - before;
    assert.deepEqual(await versions(), versionsBefore, 'a Degraded Database was rewritten in a quiet window');
    // Degraded is a state to report, not an error to retry with backoff.
    assert.equal(
      await reconciles(['error', 'requeue']),
      retriesBefore,
      'reconciles retried in a quiet window',
    );
    assert.ok(during <= MAX_QUIET_RECONCILES, `no hot loop: ${during} reconciles in 3 s`);
    // The missing Secret appears: the Database heals without any other change.
    await client.resource<V1Secret>(Kinds.Secret).create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'missing-secret', namespace: ns },
      stringData: { username: 'app', password: 'supplied' },
    });
    await ready('byo');
  });

  test("a user's ConfigMap named <db>-config is never adopted or overwritten: ChildConflict, Stalled, an Event; deleting it lets the Database proceed", async () => {
    const configMaps = () => client.resource<V1ConfigMap>(Kinds.ConfigMap);
    const mine = await configMaps().create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'users-config', namespace: ns },
      data: { 'postgresql.conf': 'shared_buffers = 1GB\n' },
    });
    await create('users');
    const conflict = await eventually('users Degraded ChildConflict', async () => {
      const d = await get('users');
      return cond(d, 'Degraded')?.reason === 'ChildConflict' ? d : undefined;
    });
    assert.match(
      cond(conflict, 'Degraded')!.message,
      /ConfigMap .*\/users-config already exists and was not created by it, not by Database users; leaving it untouched/,
    );
    for (const type of ['Ready', 'Stalled'])
      assert.equal(cond(conflict, type)?.reason, 'ChildConflict', `${type} names the conflict`);
    assert.equal(cond(conflict, 'Stalled')?.status, 'True');
    assert.equal((await kstatus(conflict)).status, 'Failed');
    await eventually('Warning Event ChildConflict', async () => {
      const list = await client
        .resource<KubeObject & { reason?: string; type?: string; regarding?: { name?: string } }>(Kinds.Event)
        .list({ namespace: ns });
      return list.items.some(
        (e) => e.type === 'Warning' && e.reason === 'ChildConflict' && e.regarding?.name === 'users',
      );
    });
    const after = await configMaps().get('users-config', { namespace: ns });
    assert.deepEqual(after.data, mine.data, 'content not overwritten');
    assert.equal(
      after.metadata?.ownerReferences,
      undefined,
      'not adopted: deleting the Database would delete it',
    );
    assert.equal(after.metadata?.resourceVersion, mine.metadata?.resourceVersion, 'not written at all');
    await assert.rejects(
      client.resource(Kinds.StatefulSet).get('users', { namespace: ns }),
      isNotFound,
      'no Pods mounting a ConfigMap that is not the Database’s',
    );

    // Only the deletion wakes the Database: no owner reference leads from the user's ConfigMap to it.
    await configMaps().delete('users-config', { namespace: ns });
    await ready('users');
    const owned = await configMaps().get('users-config', { namespace: ns });
    assert.equal(owned.metadata?.ownerReferences?.[0]?.uid, conflict.metadata.uid);
    await dbs().delete('users', { namespace: ns });
  });

  test('kstatus (what Flux and kpt read): Current when Ready, InProgress while scaling, Failed while stalled, Current once fixed', async () => {
    await create('kst');
    assert.equal((await kstatus(await ready('kst'))).status, 'Current');

    // A minor upgrade is a rollout: every status written for it until Ready again is InProgress,
    // none Failed. A watch sees each write. On KWOK a new Pod is Ready within milliseconds, so a
    // reconcile slowed by a loaded machine could see the rollout begin and end at once and write
    // no InProgress at all: the nodes are cordoned for the upgrade, so the new Pod waits, Pending,
    // until the status has said InProgress.
    const nodes = client.resource(Kinds.Node);
    const cordon = async (unschedulable: boolean) => {
      for (const n of (await nodes.list()).items)
        await nodes.patch(n.metadata!.name!, { spec: { unschedulable } }, { type: 'merge' });
    };
    const writes: DatabaseObject[] = [];
    const watching = new AbortController();
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const watched = (async () => {
      for await (const e of client.watch<DatabaseObject>(Database.type, {
        namespace: ns,
        fieldSelector: 'metadata.name=kst',
        signal: watching.signal,
        onOpen: opened,
      }))
        if (e.type === 'MODIFIED') writes.push(e.object);
    })();
    await open;
    await cordon(true);
    let changed: DatabaseObject;
    try {
      changed = await patch('kst', { version: '16.8' });
      // InProgress in a status written for the change: a status not yet written for it reads as
      // InProgress too (observedGeneration behind), and lifting the cordon on that alone let the
      // rollout start and end between two reconciles of a loaded machine.
      await eventually('kst InProgress while its new Pod cannot be scheduled', async () => {
        const d = await get('kst');
        return (
          d.status?.observedGeneration === d.metadata.generation && (await kstatus(d)).status === 'InProgress'
        );
      });
    } finally {
      await cordon(false);
    }
    try {
      await eventually('kst upgraded and Ready', async () => {
        const d = await get('kst');
        return (await kstatus(d)).status === 'Current' && d.status?.currentVersion === '16.8';
      });
    } finally {
      watching.abort();
      await watched.catch(() => {});
    }
    const forChange = writes.filter((d) => d.status?.observedGeneration === changed.metadata.generation);
    const seen = await Promise.all(
      forChange.map(async (d) => `${(await kstatus(d)).status}/${cond(d, 'Ready')?.reason}`),
    );
    assert.ok(
      seen.some((s) => s.startsWith('InProgress/')),
      `InProgress while the replicas start: ${seen.join(' ')}`,
    );
    assert.ok(!seen.some((s) => s.startsWith('Failed/')), `never Failed: ${seen.join(' ')}`);

    // Stalled: a referenced Secret that doesn't exist needs a person; kstatus says Failed with the cause.
    await create('kst-byo', { credentials: { secretName: 'kst-byo-secret' } });
    const stalled = await eventually('kst-byo Failed', async () => {
      const r = await kstatus(await get('kst-byo'));
      return r.status === 'Failed' ? r : undefined;
    });
    assert.match(
      stalled.message,
      /Secret kst-byo-secret named in spec.credentials.secretName does not exist/,
    );
    await client.resource<V1Secret>(Kinds.Secret).create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'kst-byo-secret', namespace: ns },
      stringData: { username: 'app', password: 'supplied' },
    });
    assert.equal((await kstatus(await ready('kst-byo'))).status, 'Current');
    await dbs().delete('kst', { namespace: ns });
    await dbs().delete('kst-byo', { namespace: ns });
  });

  test('a restarted manager re-verifies converged Databases and writes nothing', async () => {
    const ns2 = await env.newNamespace('db-restart');
    const managerIn = () => {
      const m = testManager(env.kubeConfig, { namespace: ns2 });
      setupDatabaseController(m);
      return { m, done: m.start() };
    };
    const first = managerIn();
    const sample = (name: string, spec: Partial<DatabaseObject['spec']>) =>
      dbs().create(
        Database.object({
          metadata: { name, namespace: ns2 },
          spec: { engine: 'postgres', version: '16.6', replicas: 1, storage: { size: '1Gi' }, ...spec },
        }),
      );
    await sample('pg', { replicas: 1, resources: { requests: { cpu: '250m', memory: '256Mi' } } });
    await sample('my', { engine: 'mysql', version: '8.4.3', parameters: { max_connections: '200' } });
    for (const name of ['pg', 'my'])
      await eventually(`${name} Ready`, async () => {
        const db = await dbs().get(name, { namespace: ns2 });
        return db.status?.phase === 'Ready' && db.status.observedGeneration === db.metadata.generation;
      });
    first.m.stop();
    await first.done;

    const second = managerIn();
    try {
      const sum = async (
        metric: string,
        keep: (labels: Partial<Record<string, string | number>>) => boolean,
      ) =>
        (await second.m.registry.getSingleMetric(metric)!.get()).values
          .filter((v) => keep(v.labels))
          .reduce((n, v) => n + v.value, 0);
      await eventually('both Databases re-verified', async () => {
        const done = await sum('controller_runtime_reconcile_total', (l) => l['controller'] === 'database');
        const depth = await sum('workqueue_depth', (l) => l['name'] === 'database');
        return done >= 2 && depth === 0;
      });
      const writes = await sum('rest_client_requests_total', (l) => l['method'] !== 'GET');
      const reads = await sum('rest_client_requests_total', (l) => l['method'] === 'GET');
      assert.equal(writes, 0, 'no apply, status or label write for converged children');
      assert.ok(reads > 0, 'it did list and watch (the counter counts)');
    } finally {
      second.m.stop();
      await second.done;
    }
  });

  test('a deleted credentials Secret is never replaced while the data volume exists: Degraded, Event, healed by restoring it', async () => {
    // A brand new Database still gets generated credentials.
    await create('ledger');
    await ready('ledger');
    const secrets = () => client.resource<V1Secret>(Kinds.Secret);
    const original = await secrets().get('ledger-credentials', { namespace: ns });
    assert.ok(original.data?.['password']);
    await eventually('data volume exists', async () =>
      client
        .resource(Kinds.PersistentVolumeClaim)
        .get('data-ledger-0', { namespace: ns })
        .then(() => true, isNotFound),
    );
    const noSecret = () =>
      secrets()
        .get('ledger-credentials', { namespace: ns })
        .then(() => false, isNotFound);

    await secrets().delete('ledger-credentials', { namespace: ns });
    const lost = await eventually('ledger Degraded CredentialsSecretLost', async () => {
      const d = await get('ledger');
      return cond(d, 'Degraded')?.status === 'True' && cond(d, 'Degraded')?.reason === 'CredentialsSecretLost'
        ? d
        : undefined;
    });
    // The reconcile that wrote Degraded ran after the deletion and created nothing.
    assert.ok(await noSecret(), 'no new password after the reconcile that saw the loss');
    assert.match(cond(lost, 'Degraded')!.message, /restore the Secret ledger-credentials from a backup/);
    assert.equal(cond(lost, 'Ready')?.status, 'False');
    assert.equal(cond(lost, 'Ready')?.reason, 'CredentialsSecretLost');
    assert.equal(lost.status?.phase, 'Degraded');
    await eventually('Warning Event CredentialsSecretLost', async () => {
      const list = await client
        .resource<KubeObject & { reason?: string; type?: string; regarding?: { name?: string } }>(Kinds.Event)
        .list({ namespace: ns });
      return list.items.some(
        (e) => e.type === 'Warning' && e.reason === 'CredentialsSecretLost' && e.regarding?.name === 'ledger',
      );
    });
    // One more reconcile, proven by observedGeneration catching up with a spec change: still no new Secret.
    const changed = await patch('ledger', { parameters: { max_connections: '60' } });
    await eventually('ledger reconciled again', async () => {
      const d = await get('ledger');
      return d.status?.observedGeneration === changed.metadata.generation &&
        cond(d, 'Degraded')?.reason === 'CredentialsSecretLost'
        ? d
        : undefined;
    });
    assert.ok(await noSecret(), 'no new password on a later reconcile either');

    // Restored from a backup (what `kubectl get -o yaml` saved, without the server-set fields): healthy again.
    await secrets().create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'ledger-credentials',
        namespace: ns,
        labels: original.metadata!.labels!,
        ownerReferences: original.metadata!.ownerReferences!,
      },
      type: original.type!,
      data: original.data,
    });
    const healed = await ready('ledger');
    assert.equal(cond(healed, 'Degraded')?.status, 'False');
    const after = await secrets().get('ledger-credentials', { namespace: ns });
    assert.equal(after.data?.['password'], original.data['password'], 'the original password');
    await dbs().delete('ledger', { namespace: ns });
  });

  test('delete: children are garbage-collected and the PVCs stay', async () => {
    await dbs().delete('orders', { namespace: ns });
    await eventually('children gone', async () => {
      const gone = async (type: ResourceType, name: string) =>
        client
          .resource(type)
          .get(name, { namespace: ns })
          .then(() => false, isNotFound);
      return (
        (await gone(Kinds.StatefulSet, 'orders')) &&
        (await gone(Kinds.Service, 'orders')) &&
        (await gone(Kinds.Secret, 'orders-credentials')) &&
        (await gone(Kinds.ConfigMap, 'orders-config'))
      );
    });
    const pvc = await client
      .resource<V1PersistentVolumeClaim>(Kinds.PersistentVolumeClaim)
      .get('data-orders-0', { namespace: ns });
    assert.equal(pvc.metadata?.deletionTimestamp, undefined);
  });

  test('a Database recreated on the retained volumes of a deleted one gets no new password: Degraded, no StatefulSet', async () => {
    // The previous test deleted `orders`; its data-orders-0 claim stays, initialised with the old password.
    await create('orders');
    const lost = await eventually('orders Degraded CredentialsSecretLost', async () => {
      const d = await get('orders');
      return cond(d, 'Degraded')?.reason === 'CredentialsSecretLost' ? d : undefined;
    });
    assert.equal(cond(lost, 'Ready')?.status, 'False');
    const absent = (type: typeof Kinds.Secret, name: string) =>
      client
        .resource(type)
        .get(name, { namespace: ns })
        .then(() => false, isNotFound);
    assert.ok(await absent(Kinds.Secret, 'orders-credentials'), 'no new password for the existing volume');
    assert.ok(
      await absent(Kinds.StatefulSet, 'orders'),
      'no Pods started on the volume without its password',
    );
    await dbs().delete('orders', { namespace: ns });
  });

  // KWOK Pods: no engine runs, so the agent's half (stopping the engine) is the real-node
  // replication suite's. Here: the fenced instance's Pod loses its role label (out of the
  // Services) and gets the mark its agent reads, the status says so, and an annotation that
  // cannot be read is a condition and one Warning Event that changes no fence.
  test('fencing: the Pod marked and out of the Services; an unreadable annotation changes nothing', async () => {
    await create('fenced');
    const pod = () => client.resource<V1Pod>(Kinds.Pod).get('fenced-0', { namespace: ns });
    const annotate = (value: string | null) =>
      dbs().patch(
        'fenced',
        { metadata: { annotations: { [FENCED_INSTANCES_ANNOTATION]: value } } },
        { type: 'merge', namespace: ns },
      );
    const fenced = (status: string, reason: string) =>
      eventually(`${FENCED_CONDITION} ${status} ${reason}`, async () => {
        const db = await get('fenced');
        const c = cond(db, FENCED_CONDITION);
        return c?.status === status && c.reason === reason ? { db, c } : undefined;
      });
    const warnings = async () =>
      (
        await client
          .resource<KubeObject & { reason?: string; type?: string }>(Kinds.Event)
          .list({ namespace: ns })
      ).items.filter((e) => e.type === 'Warning' && e.reason === INVALID_FENCING);

    await eventually('the instance serving as the primary', async () => {
      const p = await pod().catch(() => undefined);
      return p?.metadata?.labels?.[ROLE_LABEL] === 'primary' ? p : undefined;
    });
    assert.equal(cond(await get('fenced'), FENCED_CONDITION), undefined, 'never fenced: no condition');

    // Not JSON: the condition and a Warning Event, once; nothing is fenced.
    await annotate('fenced-0');
    const { c } = await fenced('False', INVALID_FENCING);
    assert.match(c.message, /is not JSON/);
    await eventually('the Warning Event', async () => ((await warnings()).length ? true : undefined));
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal((await warnings()).length, 1);
    assert.equal((await pod()).metadata?.annotations?.[FENCED_POD_ANNOTATION], undefined);

    await annotate('["fenced-0"]');
    await eventually('the fence mark on the Pod, its role label gone', async () => {
      const p = await pod();
      return p.metadata?.annotations?.[FENCED_POD_ANNOTATION] === 'true' && !p.metadata.labels?.[ROLE_LABEL]
        ? p
        : undefined;
    });
    // KWOK keeps the Pod Ready (no agent stops an engine): the engine is said to be still stopping.
    const on = await fenced('True', 'Stopping');
    assert.match(on.c.message, /Fenced: fenced-0; still stopping: fenced-0/);
    assert.equal(on.db.status?.instances?.find((i) => i.name === 'fenced-0')?.state, 'Fencing');

    // Unreadable again: the fence stays as it was.
    await annotate('["*", "fenced-0"]');
    const kept = await fenced('True', INVALID_FENCING);
    assert.match(kept.c.message, /stands alone; the fence stays as it was \(fenced-0\)/);
    assert.equal((await pod()).metadata?.annotations?.[FENCED_POD_ANNOTATION], 'true');

    await annotate(null);
    await eventually('the mark gone, the role label back', async () => {
      const p = await pod();
      return !p.metadata?.annotations?.[FENCED_POD_ANNOTATION] &&
        p.metadata?.labels?.[ROLE_LABEL] === 'primary'
        ? p
        : undefined;
    });
    await fenced('False', 'NotFenced');
    await dbs().delete('fenced', { namespace: ns });
  });
});
