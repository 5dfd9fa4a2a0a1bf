// The Go reference operator renders exactly what the TypeScript controller
// renders: the same apply bodies (applied-hash included), the same generated
// credentials, the same status — so the benchmark compares the same work.
// Every case goes through render.ts and through `reference-go render`, and
// the two outputs must be deep-equal.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { before, describe, it } from 'node:test';
import type { V1StatefulSet, V1StatefulSetStatus } from '@kubernetes/client-node';
import type { Condition } from '@regulon/runtime';
import { render, renderChildren, type RenderCase } from './render.ts';
import { referenceBinary } from './reference.ts';
import { postgresFilesProblem } from './reference-go/gen-postgres-files.ts';

const NOW = '2025-03-04T05:06:07.891Z';
const EARLIER = '2025-03-01T00:00:00Z';

const OWNER = { apiVersion: 'regulon.dev/v1beta1', kind: 'Database' };

function database(name: string, spec: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const { metadata, ...rest } = extra as { metadata?: Record<string, unknown> };
  return {
    ...OWNER,
    metadata: { name, namespace: 'team-a', uid: `uid-${name}`, generation: 1, ...metadata },
    spec: { engine: 'postgres', version: '16.8', replicas: 1, storage: { size: '1Gi' }, ...spec },
    ...rest,
  };
}

/**
 * A StatefulSet as the API server reports it after the controller applied it
 * for `db`: its spec is render.ts's apply body, so a settled status means the
 * desired template has rolled out. `image` stands for a template applied for
 * another version, `size` for the claim size the StatefulSet was created with.
 */
function statefulSet(
  db: ReturnType<typeof database>,
  status: V1StatefulSetStatus,
  opts: { image?: string; size?: string; generation?: number } = {},
): V1StatefulSet {
  const applied = renderChildren({
    database: db,
    password: 'unused',
    now: NOW,
  } as unknown as RenderCase).find((c) => c.kind === 'StatefulSet')?.apply as V1StatefulSet | undefined;
  const container = applied?.spec?.template.spec?.containers[0];
  const claim = applied?.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests;
  if (!applied || !container || !claim)
    throw new Error(`render.ts gave no StatefulSet for ${db.metadata.name}`);
  if (opts.image) container.image = opts.image;
  if (opts.size) claim['storage'] = opts.size;
  return { ...applied, metadata: { ...applied.metadata, generation: opts.generation ?? 1 }, status };
}

const rolledOut = (n: number, generation = 1): V1StatefulSetStatus => ({
  observedGeneration: generation,
  replicas: n,
  readyReplicas: n,
  updatedReplicas: n,
  availableReplicas: n,
  currentRevision: 'rev-1',
  updateRevision: 'rev-1',
});

/**
 * A Pod of `db` as the reconcile lists it: ready or not (since `readySince`),
 * with or without the role label.
 */
function pod(
  db: { metadata: { name: string } },
  ordinal: number,
  opts: { ready: boolean; role?: string | undefined; since?: string; deleting?: boolean },
) {
  const name = `${db.metadata.name}-${ordinal}`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'team-a',
      uid: `uid-${name}`,
      creationTimestamp: EARLIER,
      ...(opts.deleting ? { deletionTimestamp: NOW } : {}),
      labels: {
        'app.kubernetes.io/instance': db.metadata.name,
        'apps.kubernetes.io/pod-index': String(ordinal),
        ...(opts.role !== undefined ? { 'regulon.dev/role': opts.role } : {}),
      },
    },
    status: {
      podIP: `10.0.0.${ordinal + 1}`,
      conditions: [
        { type: 'Ready', status: opts.ready ? 'True' : 'False', lastTransitionTime: opts.since ?? EARLIER },
      ],
    },
  };
}

/**
 * The topology ConfigMap's data, as the controller writes it (divergedData at its default), for a
 * Database of `members` instances: one whose spec names another count has it applied again.
 */
const topology = (primary: string, initialized: boolean, since?: string, members = 1) => ({
  primary,
  initialized: String(initialized),
  ...(since ? { since } : {}),
  divergedData: 'Discard',
  members: String(members),
});

function job(name: string, status: Record<string, unknown>) {
  return { apiVersion: 'batch/v1', kind: 'Job', metadata: { name, namespace: 'team-a' }, status };
}

const condition = (type: string, status: string, reason: string, at = EARLIER, generation = 1) => ({
  type,
  status,
  reason,
  message: `was ${reason}`,
  lastTransitionTime: at,
  observedGeneration: generation,
});

const resources = {
  requests: { cpu: '250m', memory: '256Mi' },
  limits: { cpu: 2, memory: '1Gi', 'ephemeral-storage': 0.5 },
};

const dbRolling = database('orders', {
  replicas: 3,
  replication: { synchronous: true },
  backup: { enabled: true, schedule: '30 2 * * 1-5', historyLimit: 5 },
  resources,
  parameters: {
    max_connections: '200',
    search_path: `"$user", public`,
    log_line_prefix: `it's '%m'`,
    application_name: String.raw`C:\dumps\it's`,
  },
  storage: { size: '10Gi', storageClassName: 'fast-ssd' },
  pvcRetentionPolicy: 'Delete',
});
const dbReady = database('inventory', {
  engine: 'mysql',
  version: '8.4.4',
  backup: { enabled: false, schedule: '0 3 * * *', historyLimit: 3 },
  credentials: { secretName: 'inventory-admin' },
  // Not as the API server spells them (2, 1Gi, 500m): Go reads the live StatefulSet typed, so it
  // sees those spellings, and both sides must still find the desired template rolled out.
  resources: { limits: { cpu: 2, memory: '1024Mi', 'ephemeral-storage': 0.5 } },
  parameters: { sql_mode: `'STRICT_ALL_TABLES'`, 'max-connections': '300', innodb_buffer_pool_size: '1G' },
});
const dbUpgrade = database(
  'billing',
  { version: '16.8', allowMajorVersionUpgrade: false },
  {
    metadata: { generation: 4 },
  },
);

const dbScaling = database('scaled', {
  replicas: 3,
  storage: { size: 21474836480 },
  resources: { requests: { cpu: 1.5, memory: 1073741824 } },
  backup: { enabled: true, schedule: '@daily', historyLimit: 1 },
});
const dbBackups = database('reports', {
  parameters: { work_mem: '64MB', a_1: 'x', a1: 'y', A: 'z' },
  // Backups with nowhere to go: only a Database stored before the CRD refused them has this.
  backup: { enabled: true, schedule: '0 3 * * *', historyLimit: 3 },
});
const dbTuned = database('tuned', { parameters: { max_connections: '200' } });
const backupsOff = { backup: { enabled: false, schedule: '0 3 * * *', historyLimit: 3 } };
/** What the benchmark creates: postgres, 1 replica, backups off. */
const dbBench = database('bench', backupsOff);
const dbNew = database('newdb', backupsOff);
const dbLost = database('lost', { engine: 'mysql', version: '8.0.41', ...backupsOff });
const dbWobbly = database('wobbly', backupsOff);
const dbSwitch = database('switch', backupsOff, {
  metadata: { annotations: { 'regulon.dev/switchover-to': 'switch-1' } },
});
const dbStray = database('stray', backupsOff);

/** What a case's name promises of the status: its phase, the Progressing and ReplicationHealthy reasons. */
interface Expected {
  phase: string;
  progressing: string;
  replication?: string;
}

const CASES: Array<{ name: string; input: unknown; expect?: Expected }> = [
  {
    name: 'postgres, 1 replica, no spec.backup (so no backups), nothing observed yet',
    input: { database: database('app', {}), password: 'c2VjcmV0LXBhc3N3b3Jk_-x', now: NOW },
  },
  {
    name: 'mysql, 1 replica, backups off, no generation, password needing escapes',
    input: {
      database: (() => {
        const db = database('shop', {
          engine: 'mysql',
          version: '8.0.41',
          backup: { enabled: false, schedule: '0 3 * * *', historyLimit: 3 },
        });
        delete (db.metadata as { generation?: number }).generation;
        return db;
      })(),
      password: `a/b+c=d&e f?g#h%i'j(k)l*m!n~o`,
      now: '2025-12-31T23:59:59.999Z',
    },
  },
  {
    name: 'postgres, 3 replicas, resources, quoted parameters, storage class, retention Delete, rolling out',
    input: {
      database: {
        ...dbRolling,
        status: {
          observedGeneration: 1,
          conditions: [
            condition('Degraded', 'False', 'AsExpected'),
            condition('Ready', 'Unknown', 'StatefulSetMissing'),
            condition('Progressing', 'Unknown', 'Creating'),
            condition('BackupSucceeded', 'Unknown', 'NoBackupYet'),
          ],
        },
      },
      password: 'pw',
      statefulSet: statefulSet(
        dbRolling,
        {
          observedGeneration: 1,
          replicas: 3,
          readyReplicas: 1,
          updatedReplicas: 2,
          currentRevision: 'rev-1',
          updateRevision: 'rev-2',
        },
        { size: '10Gi' },
      ),
      backupJobs: [
        job('orders-backup-1', { succeeded: 1, completionTime: '2025-03-02T03:00:41Z' }),
        job('orders-backup-2', {
          failed: 3,
          conditions: [{ type: 'Failed', status: 'True', lastTransitionTime: '2025-03-03T03:01:00Z' }],
        }),
        job('orders-backup-3', { active: 1 }),
      ],
      now: NOW,
    },
    expect: { phase: 'Provisioning', progressing: 'RollingOut' },
  },
  {
    name: 'mysql, 1 replica, referenced credentials, resources, rolled out, its ready Pod observed: Ready, transition times kept where unchanged',
    input: {
      database: {
        ...dbReady,
        status: {
          observedGeneration: 1,
          phase: 'Provisioning',
          conditions: [
            condition('Degraded', 'False', 'AsExpected'),
            condition('Ready', 'False', 'ReplicasNotReady'),
            condition('Progressing', 'True', 'RollingOut'),
            condition('BackupSucceeded', 'Unknown', 'BackupsDisabled'),
            condition('example.com/Custom', 'True', 'SomeoneElse'),
          ],
        },
      },
      password: 'unused',
      statefulSet: statefulSet(dbReady, rolledOut(1)),
      topology: topology('inventory-0', true),
      pods: [pod(dbReady, 0, { ready: true, role: 'primary' })],
      now: NOW,
    },
    expect: { phase: 'Ready', progressing: 'Stable', replication: 'SingleInstance' },
  },
  {
    name: 'postgres rolled out on the previous version: Upgrading, Updating',
    input: {
      database: {
        ...dbUpgrade,
        status: {
          currentVersion: '16.6',
          lastBackup: '2025-02-01T03:00:00Z',
          conditions: [condition('Ready', 'True', 'AllReplicasReady', EARLIER, 3)],
        },
      },
      password: 'x',
      statefulSet: statefulSet(dbUpgrade, rolledOut(1, 4), { image: 'postgres:16.6', generation: 4 }),
      now: NOW,
    },
    expect: { phase: 'Updating', progressing: 'Upgrading' },
  },
  {
    name: 'scaling from 1 to 3, storage grown past the created claim, quantities as numbers',
    input: {
      database: dbScaling,
      password: 'y',
      statefulSet: statefulSet(dbScaling, rolledOut(1), { size: '5Gi' }),
      backupJobs: [
        job('scaled-backup-a', { succeeded: 1, completionTime: '2025-03-03T03:00:05.750Z' }),
        job('scaled-backup-b', { succeeded: 1, completionTime: '2025-03-01T03:00:00Z' }),
      ],
      now: NOW,
    },
    expect: { phase: 'Provisioning', progressing: 'Scaling' },
  },
  {
    name: 'backups with no object store: NoBackupDestination whatever the dumps did, the latest (failed) named, no lastBackup from a dump',
    input: {
      database: dbBackups,
      password: 'z',
      statefulSet: statefulSet(dbBackups, { ...rolledOut(1), readyReplicas: 0 }),
      backupJobs: [
        job('reports-backup-old', { succeeded: 1, completionTime: '2025-03-01T03:00:00Z' }),
        job('reports-backup-new', {
          conditions: [
            { type: 'Complete', status: 'False' },
            { type: 'Failed', status: 'True', lastTransitionTime: '2025-03-02T03:00:00Z' },
          ],
        }),
      ],
      now: NOW,
    },
  },
  {
    name: 'not rolled out yet but Ready before: status changes, times move only where status changes',
    input: {
      database: {
        ...database('ledger', { replicas: 3 }, { metadata: { generation: 2 } }),
        status: {
          observedGeneration: 1,
          currentVersion: '16.8',
          phase: 'Ready',
          lastBackup: '2025-02-28T03:00:00Z',
          // Carried while the reconcile does not observe the instances.
          currentPrimary: 'ledger-0',
          systemIdentifier: '7312345678901234567',
          instances: [{ name: 'ledger-0', role: 'primary', state: 'Primary' }],
          conditions: [
            condition('Degraded', 'False', 'AsExpected'),
            condition('Ready', 'True', 'AllReplicasReady'),
            condition('Progressing', 'False', 'Stable'),
            condition('BackupSucceeded', 'True', 'BackupCompleted'),
            condition('ReplicationHealthy', 'True', 'Streaming'),
          ],
        },
      },
      password: 'q',
      statefulSet: statefulSet(database('ledger', { replicas: 3 }), rolledOut(3, 1), { generation: 2 }),
      now: NOW,
    },
  },
  {
    name: 'settled StatefulSet whose template differs from the desired one (a changed parameter, same image): not Ready, RollingOut',
    input: {
      database: {
        ...dbTuned,
        status: {
          observedGeneration: 1,
          currentVersion: '16.8',
          phase: 'Ready',
          conditions: [
            condition('Degraded', 'False', 'AsExpected'),
            condition('Ready', 'True', 'AllReplicasReady'),
            condition('Progressing', 'False', 'Stable'),
          ],
        },
      },
      password: 't',
      // Settled on the configuration max_connections = 100 gave: the config-hash annotation differs.
      statefulSet: statefulSet(database('tuned', { parameters: { max_connections: '100' } }), rolledOut(1)),
      now: NOW,
    },
    expect: { phase: 'Updating', progressing: 'RollingOut' },
  },
  {
    name: 'backups with no object store and without schedule or history limit: the dump CronJob as sent',
    input: {
      database: database('sparse', { backup: { enabled: true } }),
      password: 'r',
      now: NOW,
    },
  },
  {
    name: "the benchmark's Database once its Pod is ready: primary label, topology initialised (Event), requeue",
    input: {
      database: dbBench,
      password: 'bench-pw',
      replicationPassword: 'replication-pw',
      statefulSet: statefulSet(dbBench, rolledOut(1)),
      topology: topology('bench-0', false, '2025-03-01T00:00:00Z'),
      pods: [pod(dbBench, 0, { ready: true })],
      now: NOW,
    },
    expect: { phase: 'Ready', progressing: 'Stable', replication: 'SingleInstance' },
  },
  {
    name: 'no topology recorded yet and no Pod: the first topology is applied, no primary while it initialises',
    input: {
      database: dbNew,
      password: 'n',
      statefulSet: statefulSet(dbNew, { ...rolledOut(1), readyReplicas: 0 }),
      pods: [],
      now: NOW,
    },
    expect: { phase: 'Provisioning', progressing: 'RollingOut', replication: 'SingleInstance' },
  },
  {
    name: 'mysql whose only Pod has not been ready for longer than the failover delay: label removed, NoPrimary',
    input: {
      database: {
        ...dbLost,
        status: {
          observedGeneration: 1,
          currentVersion: '8.0.41',
          currentPrimary: 'lost-0',
          conditions: [condition('Ready', 'True', 'AllReplicasReady')],
        },
      },
      password: 'l',
      statefulSet: statefulSet(dbLost, { ...rolledOut(1), readyReplicas: 0 }),
      topology: topology('lost-0', true),
      pods: [pod(dbLost, 0, { ready: false, role: 'primary' })],
      now: NOW,
    },
    expect: { phase: 'Updating', progressing: 'RollingOut', replication: 'SingleInstance' },
  },
  {
    name: 'a Pod not ready for three seconds: one instance has no standby to fail over to, so no countdown and no requeue',
    input: {
      database: dbWobbly,
      password: 'w',
      statefulSet: statefulSet(dbWobbly, { ...rolledOut(1), readyReplicas: 0 }),
      topology: topology('wobbly-0', true, '2025-03-01T00:00:00.250Z'),
      pods: [pod(dbWobbly, 0, { ready: false, since: '2025-03-04T05:06:05Z' })],
      now: NOW,
    },
  },
  {
    name: 'a switchover requested on one instance is refused (Warning) and the request removed',
    input: {
      database: dbSwitch,
      password: 's',
      statefulSet: statefulSet(dbSwitch, rolledOut(1)),
      // Recorded with another divergedData than the spec's: the topology is applied again to carry it.
      topology: { ...topology('switch-0', true), divergedData: 'Keep' },
      pods: [pod(dbSwitch, 0, { ready: true, role: 'primary' })],
      now: NOW,
    },
    expect: { phase: 'Ready', progressing: 'Stable', replication: 'SingleInstance' },
  },
  {
    name: 'a writable Pod on another ordinal than the named primary: its label removed, fenced (Warning, delete)',
    input: {
      database: dbStray,
      password: 'x',
      statefulSet: statefulSet(dbStray, rolledOut(1)),
      topology: topology('stray-0', true),
      pods: [pod(dbStray, 3, { ready: true, role: 'primary' })],
      now: NOW,
    },
  },
  {
    name: 'a ready Pod being deleted keeps its label and is still the current primary',
    input: {
      database: dbStray,
      password: 'x',
      statefulSet: statefulSet(dbStray, rolledOut(1)),
      topology: topology('stray-0', true),
      pods: [pod(dbStray, 0, { ready: true, role: 'primary', deleting: true })],
      now: NOW,
    },
  },
];

/** The phase and the Progressing reason of a rendered status. */
function promised(out: unknown, expected: Expected): Expected {
  const { phase, conditions } = (out as { status: { phase: string; conditions: Condition[] } }).status;
  const reason = (type: string) => conditions.find((c) => c.type === type)?.reason ?? 'none';
  return {
    phase,
    progressing: reason('Progressing'),
    ...('replication' in expected ? { replication: reason('ReplicationHealthy') } : {}),
  };
}

/** Renders every case with one `reference-go render` run (the input is an array). */
async function renderGo(binary: string, inputs: unknown[]): Promise<unknown[]> {
  const child = spawn(binary, ['render'], { stdio: ['pipe', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (d: Buffer) => out.push(d));
  child.stderr.on('data', (d: Buffer) => err.push(d));
  const done = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  child.stdin.end(JSON.stringify(inputs));
  const code = await done;
  if (code !== 0) throw new Error(`reference-go render exited ${code}: ${Buffer.concat(err).toString()}`);
  return JSON.parse(Buffer.concat(out).toString('utf8')) as unknown[];
}

/** Every path where the two JSON values differ, one per line. */
function differences(go: unknown, ts: unknown, path = '$'): string[] {
  if (go === ts) return [];
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
  if (Array.isArray(go) && Array.isArray(ts)) {
    const lines: string[] = [];
    if (go.length !== ts.length) lines.push(`${path}: go has ${go.length} items, ts has ${ts.length}`);
    for (let i = 0; i < Math.min(go.length, ts.length); i++)
      lines.push(...differences(go[i], ts[i], `${path}[${i}]`));
    return lines;
  }
  if (isObj(go) && isObj(ts) && !Array.isArray(go) && !Array.isArray(ts)) {
    const keys = [...new Set([...Object.keys(go), ...Object.keys(ts)])].sort();
    return keys.flatMap((k) => {
      const p = `${path}.${k}`;
      if (!(k in go)) return [`${p}: missing in go (ts: ${JSON.stringify(ts[k])})`];
      if (!(k in ts)) return [`${p}: only in go (${JSON.stringify(go[k])})`];
      return differences(go[k], ts[k], p);
    });
  }
  return [`${path}: go ${JSON.stringify(go)} != ts ${JSON.stringify(ts)}`];
}

describe('reference-go render matches render.ts', () => {
  let outputs: unknown[] = [];

  before(async () => {
    const binary = await referenceBinary((s) => process.stderr.write(`[reference-go] ${s}\n`));
    outputs = await renderGo(
      binary,
      CASES.map((c) => c.input),
    );
  });

  for (const [i, c] of CASES.entries()) {
    it(c.name, async () => {
      const ts = JSON.parse(JSON.stringify(await render(c.input as RenderCase))) as unknown;
      const go = outputs[i];
      const diff = differences(go, ts);
      assert.deepStrictEqual(go, ts, `reference-go differs from render.ts:\n  ${diff.join('\n  ')}`);
      if (c.expect) assert.deepStrictEqual(promised(ts, c.expect), c.expect);
    });
  }

  it('renders a single case (not an array) the same way', async () => {
    const binary = await referenceBinary();
    const [first] = await renderGo(binary, [CASES[0]!.input]);
    const single = await new Promise<unknown>((resolve, reject) => {
      const child = spawn(binary, ['render']);
      const out: Buffer[] = [];
      child.stdout.on('data', (d: Buffer) => out.push(d));
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0
          ? resolve(JSON.parse(Buffer.concat(out).toString('utf8')))
          : reject(new Error(`exit ${code}`)),
      );
      child.stdin.end(JSON.stringify(CASES[0]!.input));
    });
    assert.deepStrictEqual(single, first);
  });

  it('the cases cover what the status depends on', () => {
    const phases = new Set(outputs.map((o) => (o as { status: { phase: string } }).status.phase));
    for (const p of ['Pending', 'Provisioning', 'Ready', 'Updating'])
      assert.ok(phases.has(p), `a case ends in ${p}`);
    const kinds = outputs.flatMap((o) =>
      (o as { children: Array<{ kind: string; delete?: true }> }).children.map(
        (c) => `${c.kind}${c.delete ? '-' : '+'}`,
      ),
    );
    for (const k of ['PodDisruptionBudget+', 'PodDisruptionBudget-', 'CronJob+', 'CronJob-']) {
      assert.ok(kinds.includes(k), `a case ${k.endsWith('+') ? 'applies' : 'deletes'} a ${k.slice(0, -1)}`);
    }
    type Out = {
      status: { conditions: Condition[] };
      topology?: unknown;
      replicationCredentials?: unknown;
      replication?: { calls: Array<{ verb: string; kind?: string; body?: unknown }> };
    };
    const reasons = new Set(
      outputs.flatMap((o) => (o as Out).status.conditions.map((c) => `${c.type}/${c.reason}`)),
    );
    for (const r of [
      'ReplicationHealthy/SingleInstance',
      'ReplicationHealthy/NotObserved',
      'ReplicationHealthy/Streaming',
      'Ready/NoPrimary',
    ])
      assert.ok(reasons.has(r), `a case's status has ${r}`);
    const calls = new Set(
      outputs.flatMap((o) =>
        ((o as Out).replication?.calls ?? []).map((c) => `${c.verb} ${c.kind ?? ''}`.trim()),
      ),
    );
    for (const c of ['list Pod', 'patch Pod', 'apply ConfigMap', 'event', 'delete Pod', 'patch Database'])
      assert.ok(calls.has(c), `a case's replication step makes a call: ${c}`);
    assert.ok(outputs.some((o) => (o as Out).topology) && outputs.some((o) => !(o as Out).topology));
    assert.ok(outputs.some((o) => (o as Out).replicationCredentials));
  });

  it('postgres-files.json (the texts reference-go embeds) is current', () => {
    assert.equal(postgresFilesProblem(), undefined);
  });
});
