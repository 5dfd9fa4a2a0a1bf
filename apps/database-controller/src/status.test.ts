// The rollout check behind Ready and currentVersion: the live StatefulSet must
// run the template the controller wants now, not only report settled revisions.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1StatefulSet } from '@kubernetes/client-node';
import type { DatabaseObject } from './api.ts';
import type { Observation } from './engine.ts';
import { desiredBackupCronJob, desiredStatefulSet, image } from './children.ts';
import { childNames } from './names.ts';
import { computeStatus, type DatabaseStatus } from './status.ts';
import { databaseWith } from './testing/parameters-corpus.ts';
import { plan, type Member, type PlanInput, type Server } from '@regulon/conventions';

/** The StatefulSet as the API server would report it once `db`'s template ran on every replica. */
function settled(db: DatabaseObject): V1StatefulSet {
  const sts = desiredStatefulSet(db, childNames(db).credentials, image(db));
  return {
    ...sts,
    metadata: { ...sts.metadata, generation: 2 },
    status: {
      observedGeneration: 2,
      replicas: 1,
      readyReplicas: 1,
      updatedReplicas: 1,
      currentRevision: 'r2',
      updateRevision: 'r2',
    },
  };
}

const statusOf = (db: DatabaseObject, sts: V1StatefulSet) =>
  computeStatus(db, {
    statefulSet: sts,
    backupJobs: [],
    problem: undefined,
    credentialsSecret: childNames(db).credentials,
  });

test('a settled StatefulSet running the desired template is Ready, and its version is current', () => {
  const db = databaseWith('postgres', { max_connections: '100' });
  const status = statusOf(db, settled(db));
  assert.equal(status.conditions?.find((c) => c.type === 'Ready')?.reason, 'AllReplicasReady');
  assert.equal(status.currentVersion, '16.6');
});

test('a settled StatefulSet running an older template (same image) is not Ready: the new one is not applied yet', () => {
  const before = databaseWith('postgres', { max_connections: '100' });
  // The parameters changed: the desired template carries another config hash, the live one still the old.
  const db = databaseWith('postgres', { max_connections: '200' });
  const status = statusOf(db, settled(before));
  assert.equal(status.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  assert.equal(status.conditions?.find((c) => c.type === 'Progressing')?.reason, 'RollingOut');
  assert.equal(status.phase, 'Provisioning');
});

test('a Database whose parameters cannot be rendered is never counted as rolled out (and computing it does not throw)', () => {
  const good = databaseWith('postgres', {});
  const db = databaseWith('postgres', { port: '1' });
  const status = statusOf(db, settled(good));
  assert.equal(status.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  assert.equal(status.currentVersion, undefined);
});

const DISCARDED =
  '2026-11-29T08:00:00Z: 3 transaction(s) the primary never had (GTID 0-101-4988 to 0-101-4990; the primary is at 0-100-5000), discarded';

test('a replicated mariadb reports GTID positions and lag in transactions, a lagging replica as not healthy, and what a former primary discarded', () => {
  const db = databaseWith('mariadb', {});
  db.spec.replicas = 3;
  const server = (writable: boolean, seq: bigint, applied: bigint, streaming = !writable) => ({
    writable,
    systemId: '0b6f6a4e-0000-4000-8000-000000000001',
    timeline: 100,
    lsn: seq,
    replayLsn: applied,
    streaming,
  });
  const servers = {
    'd-0': server(true, 5000n, 5000n),
    'd-1': server(false, 4990n, 4990n),
    'd-2': server(false, 5000n, 2000n),
  };
  const members = Object.entries(servers).map(([pod, s], ordinal) => ({
    pod,
    ordinal,
    uid: `uid-${pod}`,
    createdAt: 0,
    deleting: false,
    ready: true,
    troubleSince: undefined,
    server: s,
  }));
  const observe = (unreachable?: string) =>
    new Map<string, Observation>(
      Object.entries(servers).map(([pod, s]) => [
        pod,
        pod === unreachable
          ? { reachable: false as const, error: 'connect ETIMEDOUT' }
          : {
              reachable: true as const,
              server: s,
              position: `0-${s.timeline}-${s.replayLsn}`,
              ...(pod === 'd-1' ? { discarded: DISCARDED } : {}),
            },
      ]),
    );
  const replication = (observations: Map<string, Observation>) => ({
    replicated: true,
    topology: { primary: 'd-0', initialized: true, since: undefined },
    members,
    troubles: [],
    hosts: new Map(),
    observations,
    lagUnit: 'transactions' as const,
    plan: {
      step: undefined,
      roles: new Map([
        ['d-0', 'primary' as const],
        ['d-1', 'replica' as const],
        ['d-2', undefined],
      ]),
      currentPrimary: 'd-0',
      servingPrimary: 'd-0',
      unobserved: [],
      waiting: undefined,
      recheckInMs: undefined,
    },
  });
  const status = computeStatus(db, {
    statefulSet: settled(db),
    backupJobs: [],
    problem: undefined,
    credentialsSecret: childNames(db).credentials,
    replication: replication(observe()),
  });
  assert.deepEqual(status.instances, [
    { name: 'd-0', role: 'primary', state: 'Primary', timeline: 100, lsn: '0-100-5000' },
    {
      name: 'd-1',
      role: 'replica',
      state: 'Streaming',
      timeline: 100,
      lsn: '0-100-4990',
      discarded: DISCARDED,
      lagTransactions: 10,
    },
    {
      name: 'd-2',
      role: 'standby',
      state: 'Lagging',
      timeline: 100,
      lsn: '0-100-2000',
      lagTransactions: 3000,
    },
  ]);
  assert.equal(status.currentPrimary, 'd-0');
  assert.equal(status.systemIdentifier, '0b6f6a4e-0000-4000-8000-000000000001');
  const healthy = status.conditions?.find((c) => c.type === 'ReplicationHealthy');
  assert.equal(healthy?.status, 'False');
  assert.match(healthy?.message ?? '', /^d-2 not streaming from d-0 within the lag bound/);

  // While d-1 does not answer, what it said it discarded stays: it is no news when it answers again.
  const unanswered = computeStatus(
    { ...db, status },
    {
      statefulSet: settled(db),
      backupJobs: [],
      problem: undefined,
      credentialsSecret: childNames(db).credentials,
      replication: replication(observe('d-1')),
    },
  );
  assert.deepEqual(unanswered.instances?.[1], {
    name: 'd-1',
    role: 'replica',
    discarded: DISCARDED,
    state: 'Unreachable',
  });

  // d-2's replication stopped on an error: its server's words are in its entry and the condition.
  const diverged = `Got fatal error 1236 from master when reading data from binary log:\n'Error: connecting slave requested to start from GTID 0-100-2001, which is not in the master's binlog'`;
  servers['d-2'] = {
    ...server(false, 5000n, 2000n, false),
    replicationError: { message: `IO thread stopped (error 1236): ${diverged}`, fatal: true },
  } as ReturnType<typeof server>;
  const stopped = computeStatus(db, {
    statefulSet: settled(db),
    backupJobs: [],
    problem: undefined,
    credentialsSecret: childNames(db).credentials,
    replication: replication(observe()),
  });
  const oneLine = `IO thread stopped (error 1236): ${diverged.replace('\n', ' ')}`;
  assert.equal(stopped.instances?.[2]?.state, 'NotStreaming');
  assert.equal(stopped.instances?.[2]?.replicationError, oneLine);
  assert.equal(
    stopped.conditions?.find((c) => c.type === 'ReplicationHealthy')?.message,
    `d-2 not streaming from d-0 within the lag bound; d-2: ${oneLine}`,
  );
});

test('with an object store, BackupSucceeded and lastBackup follow the latest finished DatabaseBackup, never a Job', () => {
  const db: DatabaseObject = {
    ...databaseWith('postgres', {}),
    spec: {
      ...databaseWith('postgres', {}).spec,
      backup: {
        enabled: true,
        schedule: '0 3 * * *',
        historyLimit: 3,
        objectStore: { endpoint: 'https://s3.example.com', bucket: 'b', credentials: { secretName: 'keys' } },
      },
    },
  };
  const backup = (name: string, phase: 'Succeeded' | 'Failed' | 'Running', stoppedAt?: string) =>
    ({
      apiVersion: 'regulon.dev/v1alpha1',
      kind: 'DatabaseBackup',
      metadata: {
        name,
        namespace: db.metadata.namespace,
        creationTimestamp: new Date('2026-11-24T11:00:00Z'),
      },
      spec: { database: db.metadata.name! },
      status: {
        phase,
        ...(stoppedAt ? { stoppedAt } : {}),
        conditions: [
          {
            type: 'Succeeded',
            status: phase === 'Succeeded' ? 'True' : phase === 'Failed' ? 'False' : 'Unknown',
            reason: phase === 'Failed' ? 'BackupFailed' : 'Completed',
            message: phase === 'Failed' ? 'the store answered HTTP 403 (Forbidden)' : 'done',
            lastTransitionTime: '2026-11-24T12:00:00Z',
          },
        ],
      },
    }) as NonNullable<Parameters<typeof computeStatus>[1]['backups']>[number];
  const withBackups = (
    backups: ReturnType<typeof backup>[] | undefined,
    archiving?: { ok: boolean; message: string },
  ) =>
    computeStatus(db, {
      statefulSet: settled(db),
      // A succeeded Job of the old dump must not count: with an object store there is none to trust.
      backupJobs: [{ metadata: { name: 'j' }, status: { succeeded: 1, completionTime: new Date() } }],
      problem: undefined,
      credentialsSecret: childNames(db).credentials,
      backups,
      archiving,
    });
  const c = (s: ReturnType<typeof computeStatus>) => s.conditions?.find((x) => x.type === 'BackupSucceeded');

  assert.equal(c(withBackups([]))?.reason, 'NoBackupYet');
  assert.equal(withBackups([]).lastBackup, undefined);
  assert.equal(c(withBackups(undefined))?.reason, 'BackupControllerDisabled');

  const ok = withBackups([backup('a', 'Succeeded', '2026-11-24T12:00:00Z'), backup('b', 'Running')]);
  assert.equal(c(ok)?.status, 'True');
  assert.equal(ok.lastBackup, '2026-11-24T12:00:00Z');

  const failedLater = withBackups([
    backup('a', 'Succeeded', '2026-11-24T12:00:00Z'),
    backup('b', 'Failed', '2026-11-24T13:00:00Z'),
  ]);
  assert.equal(c(failedLater)?.status, 'False');
  assert.match(c(failedLater)!.message, /DatabaseBackup b failed: the store answered HTTP 403/);
  assert.equal(failedLater.lastBackup, '2026-11-24T12:00:00Z', 'the last good one');
  assert.equal(
    failedLater.conditions?.find((x) => x.type === 'Ready')?.status,
    'True',
    'serving is not backing up',
  );

  const noArchive = withBackups([backup('a', 'Succeeded', '2026-11-24T12:00:00Z')], {
    ok: false,
    message: 'Cannot archive WAL into b/x: the store answered HTTP 403 (Forbidden)',
  });
  assert.equal(c(noArchive)?.reason, 'ArchivingFailed');
});

/** A 3-instance postgres Database whose StatefulSet settled, and its status for these members, by the real plan(). */
function replicatedStatus(
  members: Member[],
  updatedReplicas = 3,
  sync?: { confirming: number },
  extra: { plan?: Partial<PlanInput>; prev?: DatabaseStatus; replicas?: number; primary?: string } = {},
) {
  const db = databaseWith('postgres', {});
  if (extra.prev) db.status = extra.prev;
  const replicas = extra.replicas ?? 3;
  db.spec.replicas = replicas;
  if (sync) db.spec.replication = { ...db.spec.replication, synchronous: true };
  const sts = settled(db);
  sts.status = { ...sts.status!, replicas: 3, readyReplicas: 3, updatedReplicas };
  const topology = { primary: extra.primary ?? 'd-0', initialized: true, since: undefined };
  const decided = plan({
    replicas,
    members,
    topology,
    systemId: undefined,
    failoverDelayMs: 0,
    maxLag: 100n,
    now: 1_000_000,
    switchoverTo: undefined,
    ...extra.plan,
  });
  return computeStatus(db, {
    statefulSet: sts,
    backupJobs: [],
    problem: undefined,
    credentialsSecret: childNames(db).credentials,
    replication: {
      replicated: true,
      topology,
      members,
      troubles: [],
      hosts: new Map(),
      observations: new Map(
        members.map((m) => [
          m.pod,
          m.server
            ? {
                reachable: true as const,
                server: m.server,
                position: String(m.server.lsn),
                ...(m.server.writable && sync ? { confirming: sync.confirming } : {}),
              }
            : { reachable: false as const, error: 'connect ETIMEDOUT' },
        ]),
      ),
      lagUnit: 'bytes',
      plan: decided,
    },
  });
}
const instance = (ordinal: number, server: Server | undefined, label?: 'primary' | 'replica'): Member => ({
  pod: `d-${ordinal}`,
  ordinal,
  uid: `uid-${ordinal}`,
  createdAt: 0,
  deleting: false,
  ready: true,
  troubleSince: undefined,
  label,
  server,
});
const pgServer = (writable: boolean, lsn: bigint, streaming = !writable): Server => ({
  writable,
  systemId: '7300000000000000001',
  timeline: 1,
  lsn,
  replayLsn: lsn,
  streaming,
});
const condition = (s: ReturnType<typeof computeStatus>, type: string) =>
  s.conditions?.find((c) => c.type === type);

test('a manager that reaches no instance, their Pods Ready: Ready stays, the roles are kept, and InstancesReachable says why', () => {
  const s = replicatedStatus([
    instance(0, undefined, 'primary'),
    instance(1, undefined, 'replica'),
    instance(2, undefined, 'replica'),
  ]);
  assert.equal(condition(s, 'Ready')?.status, 'True');
  assert.match(condition(s, 'Ready')?.message ?? '', /^3\/3 replicas ready, .*the manager cannot reach them/);
  assert.equal(s.currentPrimary, 'd-0');
  assert.equal(s.phase, 'Ready');
  assert.deepEqual(
    s.instances?.map((i) => `${i.name}:${i.role}:${i.state}`),
    ['d-0:primary:Unreachable', 'd-1:replica:Unreachable', 'd-2:replica:Unreachable'],
  );
  const reach = condition(s, 'InstancesReachable');
  assert.equal(reach?.status, 'False');
  assert.equal(reach?.reason, 'InstancesUnreachable');
  assert.match(reach?.message ?? '', /cannot reach d-0, d-1, d-2/);
  assert.equal(
    condition(s, 'ReplicationHealthy')?.status,
    'Unknown',
    'what it cannot see, it does not claim',
  );
});

test('an instance that does not replicate is never counted ready: the Ready message and readyReplicas name it', () => {
  // d-2: a former primary on its old timeline, not streaming; its Pod is Ready all the same.
  const s = replicatedStatus([
    instance(0, pgServer(true, 1000n)),
    instance(1, pgServer(false, 1000n)),
    instance(2, pgServer(false, 900n, false)),
  ]);
  assert.equal(s.readyReplicas, 2);
  assert.equal(condition(s, 'Ready')?.reason, 'ReplicasNotStreaming');
  assert.match(
    condition(s, 'Ready')?.message ?? '',
    /^2\/3 replicas ready, running .*: d-2 not replicating from d-0$/,
  );
  assert.equal(condition(s, 'ReplicationHealthy')?.status, 'False');
  assert.equal(condition(s, 'InstancesReachable')?.status, 'True');
  const all = replicatedStatus([
    instance(0, pgServer(true, 1000n)),
    instance(1, pgServer(false, 1000n)),
    instance(2, pgServer(false, 1000n)),
  ]);
  assert.equal(all.readyReplicas, 3);
  assert.match(condition(all, 'Ready')?.message ?? '', /^3\/3 replicas ready, running [\d.]+$/);
});

test('synchronous replication with no standby confirming: ReplicationHealthy says writes wait', () => {
  const members = [
    instance(0, pgServer(true, 1000n)),
    instance(1, pgServer(false, 1000n)),
    instance(2, pgServer(false, 1000n)),
  ];
  const waiting = replicatedStatus(members, 3, { confirming: 0 });
  assert.equal(condition(waiting, 'ReplicationHealthy')?.status, 'False');
  assert.equal(condition(waiting, 'ReplicationHealthy')?.reason, 'NoSynchronousStandby');
  assert.match(
    condition(waiting, 'ReplicationHealthy')?.message ?? '',
    /^Writes wait: no standby confirms d-0's commits/,
  );
  const confirmed = replicatedStatus(members, 3, { confirming: 1 });
  assert.equal(condition(confirmed, 'ReplicationHealthy')?.reason, 'Streaming');
  const asynchronous = replicatedStatus(members);
  assert.equal(
    condition(asynchronous, 'ReplicationHealthy')?.reason,
    'Streaming',
    'asynchronous: nothing waits',
  );
});

test('status.switchover: Waiting while the target catches up, Refused kept after the request is gone, a wait given up leaves nothing', () => {
  const members = [
    instance(0, pgServer(true, 1000n)),
    instance(1, pgServer(false, 850n)),
    instance(2, pgServer(false, 1000n)),
  ];
  const asked = (since: number, prev?: DatabaseStatus) =>
    replicatedStatus(members, 3, undefined, {
      plan: { switchoverTo: 'd-1', switchoverRequestedAt: 1_000_000 - since, switchoverCatchUpMs: 60_000 },
      ...(prev ? { prev } : {}),
    });
  const waiting = asked(10_000);
  assert.equal(waiting.switchover?.state, 'Waiting');
  assert.equal(waiting.switchover?.target, 'd-1');
  assert.match(waiting.switchover?.message ?? '', /^switchover to d-1 waits for it to catch up: 150 behind/);
  assert.equal(waiting.currentPrimary, 'd-0');
  assert.match(
    condition(waiting, 'ReplicationHealthy')?.message ?? '',
    /switchover to d-1 waits for it to catch up/,
  );
  // The same wait a reconcile later keeps its since.
  const later = asked(20_000, {
    ...waiting,
    switchover: { ...waiting.switchover, since: '2026-11-29T06:00:00Z' },
  });
  assert.equal(later.switchover?.since, '2026-11-29T06:00:00Z');

  const refused = asked(61_000, later);
  assert.equal(refused.switchover?.state, 'Refused');
  assert.notEqual(refused.switchover?.since, '2026-11-29T06:00:00Z', 'a new state, a new since');
  // The annotation is cleared on refusal: the reason stays in status until the next request.
  const after = replicatedStatus(members, 3, undefined, { prev: refused });
  assert.deepEqual(after.switchover, refused.switchover);
  // A wait whose request was withdrawn says nothing more.
  assert.equal(replicatedStatus(members, 3, undefined, { prev: waiting }).switchover, undefined);
});

test('backups enabled without an object store (stored before the CRD refused it): BackupSucceeded False, NoBackupDestination, whatever the dump did, and no lastBackup', () => {
  const base = databaseWith('postgres', {});
  const legacy: DatabaseObject = {
    ...base,
    spec: { ...base.spec, backup: { enabled: true, schedule: '0 3 * * *', historyLimit: 3 } },
  };
  const dump = { metadata: { name: 'd-backup-1' }, status: { succeeded: 1, completionTime: new Date() } };
  const status = (db: DatabaseObject) =>
    computeStatus(db, {
      statefulSet: settled(db),
      backupJobs: [dump],
      problem: undefined,
      credentialsSecret: childNames(db).credentials,
    });
  const c = (db: DatabaseObject) => status(db).conditions?.find((x) => x.type === 'BackupSucceeded');

  const reported = c(legacy);
  assert.equal(reported?.status, 'False');
  assert.equal(reported?.reason, 'NoBackupDestination');
  assert.match(reported?.message ?? '', /scratch volume deleted with its Pod, and can never be restored/);
  assert.match(reported?.message ?? '', /Set spec.backup.objectStore .* or spec.backup.enabled: false/);
  assert.match(reported?.message ?? '', /the latest dump, Job d-backup-1, completed/);
  assert.equal(status(legacy).lastBackup, undefined);
  // The Database itself still serves: the report does not make it unready.
  assert.equal(status(legacy).phase, 'Ready');

  // No spec.backup: no backups at all, said as such (no throwaway dump stands in for one).
  assert.equal(c(base)?.reason, 'BackupsDisabled');
  assert.match(c(base)?.message ?? '', /^No spec.backup: nothing backs this Database up/);
  const off: DatabaseObject = {
    ...legacy,
    spec: { ...legacy.spec, backup: { ...legacy.spec.backup!, enabled: false } },
  };
  assert.equal(c(off)?.message, 'Backups are disabled');
});

test('the dump CronJob exists only for backups enabled without an object store, never for a Database without spec.backup', () => {
  const base = databaseWith('postgres', {});
  const cron = (backup: DatabaseObject['spec']['backup']) =>
    desiredBackupCronJob({ ...base, spec: { ...base.spec, ...(backup ? { backup } : {}) } }, 'secret');
  assert.equal(cron(undefined), undefined);
  assert.equal(cron({ enabled: false, schedule: '0 3 * * *', historyLimit: 3 }), undefined);
  assert.equal(
    cron({
      enabled: true,
      schedule: '0 3 * * *',
      historyLimit: 3,
      objectStore: { endpoint: 'https://s3.example.com', bucket: 'b', credentials: { secretName: 'keys' } },
    }),
    undefined,
  );
  assert.equal(cron({ enabled: true, schedule: '0 4 * * *', historyLimit: 3 })?.spec?.schedule, '0 4 * * *');
});

test('while the StatefulSet is not rolled out, the Ready message counts the instances that serve their role, not the Pods the kubelet calls ready', () => {
  // d-2: the old primary on a lost node, its Pod Ready until the node controller notices, its server unreachable.
  const s = replicatedStatus(
    [instance(0, pgServer(true, 1000n)), instance(1, pgServer(false, 1000n)), instance(2, undefined)],
    2,
  );
  assert.equal(condition(s, 'Ready')?.status, 'False');
  assert.equal(condition(s, 'Ready')?.reason, 'ReplicasNotReady');
  assert.equal(condition(s, 'Ready')?.message, '2/3 replicas ready: d-2 not replicating from d-0');
});

test('scaling below the primary while no standby that stays is within the lag bound: ReplicationHealthy says the primary keeps serving, and why', () => {
  const members = [
    instance(0, pgServer(false, 700n)),
    instance(1, pgServer(false, 800n)),
    instance(2, pgServer(true, 1000n)),
  ];
  const waiting = replicatedStatus(members, 3, undefined, { replicas: 2, primary: 'd-2' });
  assert.equal(waiting.currentPrimary, 'd-2');
  const health = condition(waiting, 'ReplicationHealthy');
  assert.equal(health?.status, 'False');
  assert.equal(health?.reason, 'ReplicasNotStreaming');
  assert.match(
    health?.message ?? '',
    /scaling to 2: d-2, the primary, is removed once a standby that stays can take over without losing a write, and d-1, the most advanced standby, is 200 behind/,
  );
  assert.equal(waiting.switchover, undefined);
});
