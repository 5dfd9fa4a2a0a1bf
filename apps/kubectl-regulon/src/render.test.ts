import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Cache } from '@regulon/cache-controller';
import { MyApp } from '@regulon/myapp-controller';
import { age, bytes, renderStatus } from './render.ts';
import { MAX_EVENTS, statusReport } from './report.ts';
import { backupOf, event, NOW, replicatedDatabase } from './testing/fixtures.ts';

const SCREEN = `Database shop/orders: Ready
Spec:        postgres 16.8, 3 replicas (3 ready)
Primary:     orders-1
Endpoint:    orders.shop.svc:5432
Switchover:  to orders-1: Started 20m ago: Switching over from orders-0 to orders-1

Instances
  NAME      ROLE     STATE      LAG       TIMELINE  POSITION
  orders-0  replica  Streaming  0 B       2         0/5000148
  orders-1  primary  Primary    -         2         0/5000148
  orders-2  standby  Lagging    16.0 MiB  2         0/4000000

Backups
  Destination: https://minio.storage.svc:9000/backups/shop/orders
  Last backup: 2026-12-01T03:00:41Z (10h ago)
  Newest:      orders-20261201t030000z: Succeeded, started 11h ago
  WAL archive: archiving, no failure reported

Conditions
  TYPE                STATUS  REASON            AGE  MESSAGE
  Ready               True    AllReplicasReady  19m  3/3 replicas ready, running 16.8
  Progressing         False   Settled           19m  Every Pod runs the current template
  Degraded            False   AsExpected        28h  No problem
  Stalled             False   AsExpected        28h  No problem
  BackupSucceeded     True    BackupCompleted   10h  DatabaseBackup orders-20261201t030000z completed (20261201-030012F)
  ReplicationHealthy  False   ReplicasLagging   5m   orders-2 trails the primary by 16777544 bytes (maxLag 16777216)

Events (newest last)
  AGE  TYPE    REASON             MESSAGE
  20m  Normal  SwitchoverStarted  Switching over from orders-0 to orders-1
  19m  Normal  Promoted           orders-1 promoted (x2)
`;

const report = () =>
  statusReport({
    kind: 'Database',
    object: replicatedDatabase(),
    backups: [
      backupOf('orders-20261130t030000z', 'Succeeded', '2026-11-30T03:00:00Z'),
      backupOf('orders-20261201t030000z', 'Succeeded', '2026-12-01T03:00:00Z'),
    ],
    // Listed out of order: the API server lists by name, not time.
    events: [
      event('Promoted', 'orders-1 promoted', '2026-12-01T13:40:03Z', {
        series: { count: 2, lastObservedTime: '2026-12-01T13:41:00Z' },
      }),
      event('SwitchoverStarted', 'Switching over from orders-0 to orders-1', '2026-12-01T13:40:00Z'),
    ],
  });

describe('status of a replicated Database', () => {
  test('one screen: spec, primary, instances with lag, timeline and LSN, backups, conditions, Events', () => {
    assert.equal(renderStatus(report(), NOW), SCREEN);
  });

  test('the document -o json|yaml prints holds the same content', () => {
    const r = report();
    assert.deepEqual(r.spec, { engine: 'postgres', version: '16.8', replicas: 3 });
    assert.equal(r.currentPrimary, 'orders-1');
    assert.deepEqual(r.instances[2], {
      name: 'orders-2',
      role: 'standby',
      state: 'Lagging',
      lagBytes: 16_777_544,
      lagTransactions: undefined,
      timeline: 2,
      position: '0/4000000',
      replicationError: undefined,
    });
    assert.equal(r.backup?.latest?.name, 'orders-20261201t030000z');
    assert.equal(r.backup?.archive.state, 'ok');
    assert.equal(r.conditions.length, 6);
    assert.deepEqual(
      r.events.map((e) => [e.reason, e.time, e.count]),
      [
        ['SwitchoverStarted', '2026-12-01T13:40:00Z', 1],
        ['Promoted', '2026-12-01T13:41:00Z', 2],
      ],
    );
    // Round-trips through JSON: no Date, no undefined that a reader would trip on as a value.
    assert.deepEqual((JSON.parse(JSON.stringify(r)) as typeof r).instances[1], {
      name: 'orders-1',
      role: 'primary',
      state: 'Primary',
      timeline: 2,
      position: '0/5000148',
    });
  });

  test(`at most ${MAX_EVENTS} Events, the newest, newest last`, () => {
    const events = Array.from({ length: 15 }, (_, i) =>
      event(`E${i}`, `n${i}`, `2026-12-01T13:${String(10 + i).padStart(2, '0')}:00Z`),
    ).reverse();
    const r = statusReport({ kind: 'Database', object: replicatedDatabase(), events });
    assert.deepEqual(
      r.events.map((e) => e.reason),
      ['E5', 'E6', 'E7', 'E8', 'E9', 'E10', 'E11', 'E12', 'E13', 'E14'],
    );
  });

  test('failing WAL archiving is shown with the reason BackupSucceeded gives', () => {
    const db = replicatedDatabase();
    const c = db.status!.conditions!.find((x) => x.type === 'BackupSucceeded')!;
    Object.assign(c, { status: 'False', reason: 'ArchivingFailed', message: 'archive-push: 403 Forbidden' });
    const screen = renderStatus(statusReport({ kind: 'Database', object: db, events: [] }), NOW);
    assert.match(screen, /WAL archive: FAILING: archive-push: 403 Forbidden\n/);
    assert.match(screen, /Events \(newest last\)\n {2}none\n$/);
  });

  test('a Database without an object store says its backups go nowhere', () => {
    const db = replicatedDatabase();
    db.spec.backup = { enabled: true, schedule: '0 3 * * *' } as typeof db.spec.backup;
    const r = statusReport({ kind: 'Database', object: db, events: [] });
    assert.match(r.backup!.destination, /^none \(no objectStore/);
    assert.equal(r.backup!.archive.state, 'none');
  });

  test('a mariadb replica that does not replicate: lag in transactions, GTID, and why', () => {
    const db = replicatedDatabase();
    db.spec.engine = 'mariadb';
    db.status!.instances = [
      { name: 'orders-0', role: 'primary', state: 'Primary', timeline: 1, lsn: '0-1-42' },
      {
        name: 'orders-1',
        role: 'standby',
        state: 'NotStreaming',
        timeline: 1,
        lsn: '0-1-40',
        lagTransactions: 2,
        replicationError: 'Error 1236: Could not find GTID state requested by slave in any binlog files',
      },
    ];
    const screen = renderStatus(statusReport({ kind: 'Database', object: db, events: [] }), NOW);
    assert.match(screen, /orders-1 {2}standby {2}NotStreaming {2}2 trx {2}1 {9}0-1-40\n/);
    assert.match(screen, /orders-1: Error 1236: Could not find GTID state/);
  });
});

describe('status of the other kinds', () => {
  test('a replicated redis Cache: offsets and lag in bytes, no backup section', () => {
    const cache = Cache.object({
      metadata: { name: 'sessions', namespace: 'shop' },
      spec: { engine: 'redis', version: '8.0.6', replicas: 2, mode: 'replicated' } as never,
      status: {
        phase: 'Ready',
        readyReplicas: 2,
        currentPrimary: 'sessions-0',
        instances: [
          { name: 'sessions-0', role: 'primary', state: 'Primary', offset: 5120 },
          { name: 'sessions-1', role: 'replica', state: 'Linked', offset: 4096, lagBytes: 1024 },
        ],
      },
    });
    const screen = renderStatus(statusReport({ kind: 'Cache', object: cache, events: [] }), NOW);
    assert.match(
      screen,
      /^Cache shop\/sessions: Ready\nSpec: {8}redis 8\.0\.6, replicated, 2 replicas \(2 ready\)\n/,
    );
    assert.match(screen, /sessions-1 {2}replica {2}Linked {3}1\.0 KiB {2}- {9}4096\n/);
    assert.doesNotMatch(screen, /Backups/);
  });

  test('a MyApp: its image and components', () => {
    const app = MyApp.object({
      metadata: { name: 'shop', namespace: 'shop' },
      spec: { image: 'ghcr.io/example/shop:1.0', replicas: 2 } as never,
      status: {
        phase: 'Provisioning',
        available: '0/2',
        components: [
          {
            kind: 'Database',
            name: 'shop-db',
            ready: false,
            reason: 'Provisioning',
            message: '0/1 replicas ready',
          },
        ],
      },
    });
    const screen = renderStatus(statusReport({ kind: 'MyApp', object: app, events: [] }), NOW);
    assert.match(
      screen,
      /^MyApp shop\/shop: Provisioning\nSpec: {8}image ghcr\.io\/example\/shop:1\.0, 2 replicas\n/,
    );
    assert.match(screen, /Database {2}shop-db {2}false {2}Provisioning {2}0\/1 replicas ready/);
    assert.match(screen, /Conditions\n {2}none yet/);
  });
});

describe('formats', () => {
  test('ages as kubectl prints them', () => {
    const at = (s: number) => new Date(NOW.getTime() - s * 1000).toISOString();
    assert.deepEqual(
      [5, 119, 120, 7199, 7200, 172_799, 172_800].map((s) => age(at(s), NOW)),
      ['5s', '119s', '2m', '119m', '2h', '47h', '2d'],
    );
    assert.equal(age(undefined, NOW), '-');
  });
  test('bytes in binary units', () => {
    assert.deepEqual([0, 1023, 1024, 16_777_216].map(bytes), ['0 B', '1023 B', '1.0 KiB', '16.0 MiB']);
  });
});
