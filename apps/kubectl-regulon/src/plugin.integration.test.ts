// The plugin's entry function against a real API server (no node, no
// controller): what a person's command writes lands in the API as the
// Database controller reads it, and what the status subresource holds is what
// `status` prints. The controller's side (the annotations' effects) is
// written here by the test, as the controller's status.ts would write it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import {
  Database,
  DatabaseBackup,
  FORCE_PROMOTE_ANNOTATION,
  SWITCHOVER_ANNOTATION,
  type DatabaseBackupObject,
  type DatabaseObject,
} from '@regulon/database-controller';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import { parse } from 'yaml';
import { run, type RunOptions } from './cli.ts';
import type { StatusReport } from './report.ts';
import { replicatedDatabase } from './testing/fixtures.ts';

describe('kubectl regulon against the API server', () => {
  let env: TestEnv;
  let client: KubeClient;
  let ns: string;
  const dbs = () => client.resource<DatabaseObject>(Database.type);
  const backups = () => client.resource<DatabaseBackupObject>(DatabaseBackup.type);

  /**
   * The controller's part of a switchover to `target`: once it sees the annotation, it removes
   * it and ends its reconcile by writing `status` (replication.ts, then status.ts).
   */
  const controllerAnswers = (target: string, status: Record<string, unknown>) =>
    eventually('the switchover-to annotation', async () => {
      const db = await dbs().get('orders', { namespace: ns });
      return db.metadata.annotations?.[SWITCHOVER_ANNOTATION] === target ? db : undefined;
    }).then(async () => {
      await dbs().patch(
        'orders',
        { metadata: { annotations: { [SWITCHOVER_ANNOTATION]: null } } },
        { type: 'merge', namespace: ns },
      );
      await dbs().patchStatus('orders', { status }, { namespace: ns });
    });

  /** `kubectl regulon -n NS --kubeconfig … ARGS`, in this process (ARGS may end with `-- …`). */
  const kubectl = async (...args: string[]) => kubectlWith({}, ...args);
  const kubectlWith = async (opts: Partial<RunOptions>, ...args: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await run(['-n', ns, '--kubeconfig', env.controlPlane.kubeconfigPath, ...args], {
      out: (t) => (stdout += t),
      err: (t) => (stderr += t),
      cwd: scratch,
      ...opts,
    });
    return { code, stdout, stderr };
  };
  const scratch = mkdtempSync(join(tmpdir(), 'kubectl-regulon-it-'));

  before(async () => {
    env = await start();
    await env.installCRDs([Database.crd(), DatabaseBackup.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig);
    ns = await env.newNamespace('kubectl-regulon');
    // The fixture's Database, its status written through the status subresource as the controller writes it.
    const { status, ...fixture } = replicatedDatabase();
    const created = await dbs().create({ ...fixture, metadata: { name: 'orders', namespace: ns } });
    await dbs().patchStatus('orders', { status }, { namespace: ns });
    await client.resource(Kinds.Event).create({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: 'orders.switchover', namespace: ns },
      eventTime: new Date().toISOString().replace('Z', '000Z') as never,
      type: 'Normal',
      reason: 'SwitchoverStarted',
      action: 'Switchover',
      note: 'Switching over from orders-0 to orders-1',
      reportingController: 'regulon.dev/database',
      reportingInstance: 'test',
      regarding: {
        apiVersion: Database.apiVersion,
        kind: 'Database',
        name: 'orders',
        namespace: ns,
        uid: created.metadata.uid!,
      },
    });
  });
  after(async () => {
    client.close();
    rmSync(scratch, { recursive: true, force: true });
    await env.stop();
  });

  test('status -o json: the Database, its instances, conditions and Events', async () => {
    const { code, stdout, stderr } = await kubectl('status', 'db', 'orders', '-o', 'json');
    assert.equal(stderr, '');
    assert.equal(code, 0);
    const report = JSON.parse(stdout) as StatusReport;
    assert.equal(report.kind, 'Database');
    assert.equal(report.namespace, ns);
    assert.equal(report.phase, 'Ready');
    assert.equal(report.currentPrimary, 'orders-1');
    assert.deepEqual(
      report.instances.map((i) => [i.name, i.role, i.state, i.lagBytes ?? null, i.timeline, i.position]),
      [
        ['orders-0', 'replica', 'Streaming', 0, 2, '0/5000148'],
        ['orders-1', 'primary', 'Primary', null, 2, '0/5000148'],
        ['orders-2', 'standby', 'Lagging', 16_777_544, 2, '0/4000000'],
      ],
    );
    assert.ok(
      report.conditions.some((c) => c.type === 'ReplicationHealthy' && c.reason === 'ReplicasLagging'),
    );
    assert.deepEqual(
      report.events.map((e) => [e.type, e.reason, e.note]),
      [['Normal', 'SwitchoverStarted', 'Switching over from orders-0 to orders-1']],
    );
    assert.equal(report.backup?.destination, `https://minio.storage.svc:9000/backups/${ns}/orders`);
  });

  test('status -o yaml: the same document as -o json', async () => {
    const json = await kubectl('status', 'db', 'orders', '-o', 'json');
    const yaml = await kubectl('status', 'db', 'orders', '-o', 'yaml');
    assert.equal(yaml.code, 0);
    assert.deepEqual(parse(yaml.stdout), JSON.parse(json.stdout));
  });

  test('status: the one screen a person reads', async (t) => {
    const { code, stdout } = await kubectl('status', 'database', 'orders');
    assert.equal(code, 0);
    t.diagnostic(`\n${stdout}`);
    assert.match(stdout, new RegExp(`^Database ${ns}/orders: Ready\n`));
    assert.match(stdout, /orders-2 {2}standby {2}Lagging {4}16\.0 MiB {2}2 {9}0\/4000000\n/);
    assert.match(stdout, /Normal {2}SwitchoverStarted {2}Switching over from orders-0 to orders-1\n/);
  });

  test('a Database that does not exist: exit 1 and one line saying where it looked', async () => {
    const { code, stdout, stderr } = await kubectl('status', 'db', 'nope');
    assert.equal(code, 1);
    assert.equal(stdout, '');
    assert.equal(stderr, `error: Database "nope" not found in namespace "${ns}"\n`);
  });

  test('switchover without --to annotates the least lagging streaming replica', async () => {
    const { code, stdout, stderr } = await kubectl('switchover', 'orders');
    assert.equal(code, 0, stderr);
    assert.equal(stdout, `switchover of Database ${ns}/orders requested: orders-1 -> orders-0\n`);
    assert.match(stderr, /follow it with: kubectl regulon status database orders/);
    const db = await dbs().get('orders', { namespace: ns });
    assert.equal(db.metadata.annotations?.[SWITCHOVER_ANNOTATION], 'orders-0');
  });

  test('switchover --to --wait: done once the status names the target the primary', async () => {
    const controller = controllerAnswers('orders-2', { currentPrimary: 'orders-2' });
    const { code, stdout, stderr } = await kubectl(
      'switchover',
      'orders',
      '--to',
      'orders-2',
      '--wait',
      '--timeout',
      '30s',
    );
    await controller;
    assert.equal(code, 0, stderr);
    assert.equal(
      stdout,
      `switchover of Database ${ns}/orders requested: orders-1 -> orders-2\norders-2 is the primary\n`,
    );
  });

  test('switchover --wait: a refusal exits 1 with the reason the status gives', async () => {
    const since = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const controller = controllerAnswers('orders-1', {
      switchover: {
        target: 'orders-1',
        state: 'Refused',
        message: 'orders-1 trails by 32 MiB after 60 s',
        since,
      },
    });
    const { code, stderr } = await kubectl(
      'switchover',
      'orders',
      '--to',
      'orders-1',
      '--wait',
      '--timeout=30s',
    );
    await controller;
    assert.equal(code, 1);
    assert.match(stderr, /error: switchover to orders-1 refused: orders-1 trails by 32 MiB after 60 s\n$/);
  });

  test('switchover to an instance the Database does not have is refused before asking', async () => {
    const { code, stderr } = await kubectl('switchover', 'orders', '--to', 'orders-9');
    assert.equal(code, 1);
    assert.equal(
      stderr,
      'error: orders-9 is not an instance of Database "orders" (orders-0, orders-1, orders-2)\n',
    );
  });

  test('promote: refused while a primary serves; with none, the force-promote annotation', async () => {
    const serving = await kubectl('promote', 'orders', 'orders-0');
    assert.equal(serving.code, 1);
    assert.match(serving.stderr, /has a serving primary \(orders-2\).*switchover orders --to orders-0\n$/);
    assert.equal(
      (await dbs().get('orders', { namespace: ns })).metadata.annotations?.[FORCE_PROMOTE_ANNOTATION],
      undefined,
    );

    await dbs().patchStatus('orders', { status: { currentPrimary: null } }, { namespace: ns });
    const { code, stdout, stderr } = await kubectl('promote', 'orders', 'orders-0');
    assert.equal(code, 0, stderr);
    assert.equal(stdout, `promotion of orders-0 ordered for Database ${ns}/orders\n`);
    assert.match(stderr, /discarded: the ForcedFailover Event says from which position/);
    const db = await dbs().get('orders', { namespace: ns });
    assert.equal(db.metadata.annotations?.[FORCE_PROMOTE_ANNOTATION], 'orders-0');
  });

  test('backup --name creates the DatabaseBackup and prints its name', async () => {
    const { code, stdout, stderr } = await kubectl('backup', 'orders', '--name', 'before-upgrade');
    assert.equal(code, 0, stderr);
    assert.equal(stdout, 'databasebackup/before-upgrade created\n');
    const b = await backups().get('before-upgrade', { namespace: ns });
    assert.deepEqual(b.spec, { database: 'orders' });
  });

  test('backup --wait exits 1 with the reason when the backup fails', async () => {
    const controller = eventually('the DatabaseBackup', () =>
      backups().get('nightly', { namespace: ns }),
    ).then(() =>
      backups().patchStatus(
        'nightly',
        {
          status: {
            phase: 'Failed',
            conditions: [
              {
                type: 'Succeeded',
                status: 'False',
                reason: 'BackupFailed',
                message: 'pgBackRest: unable to reach the repository',
                lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
              },
            ],
          },
        },
        { namespace: ns },
      ),
    );
    const { code, stdout, stderr } = await kubectl(
      'backup',
      'orders',
      '--name',
      'nightly',
      '--wait',
      '--timeout',
      '30s',
    );
    await controller;
    assert.equal(stdout, 'databasebackup/nightly created\n');
    assert.equal(code, 1);
    assert.equal(
      stderr,
      'error: DatabaseBackup nightly failed: pgBackRest: unable to reach the repository\n',
    );
  });

  test('logs: the instance Pods by their labels; one whose log cannot be read is named, exit 1', async (t) => {
    const pod = (name: string, labels: Record<string, string>): V1Pod => ({
      metadata: { name, namespace: ns, labels },
      // A node that does not exist: the Pod never runs, so its log is never there to read.
      spec: { nodeName: 'nowhere', containers: [{ name: 'postgres', image: 'postgres:16.8' }] },
    });
    const labels = { 'app.kubernetes.io/name': 'postgres', 'app.kubernetes.io/instance': 'orders' };
    await client.resource<V1Pod>(Kinds.Pod).create(pod('orders-0', labels));
    // Not an instance: another Database's Pod, and a Job's Pod of this one.
    await client
      .resource<V1Pod>(Kinds.Pod)
      .create(pod('other-0', { ...labels, 'app.kubernetes.io/instance': 'other' }));
    await client
      .resource<V1Pod>(Kinds.Pod)
      .create(pod('orders-backup-x', { ...labels, 'batch.kubernetes.io/job-name': 'orders-backup' }));
    const { code, stderr } = await kubectl('logs', 'db', 'orders', '--tail', '5');
    t.diagnostic(stderr);
    assert.equal(code, 1);
    assert.match(
      stderr,
      /^orders-0 \(replica\) logs unavailable: .+\nerror: could not read the logs of orders-0\n$/,
    );
  });

  test('restore --backup: a new Database with the source spec and recovery.backup, as the CRD accepts it', async () => {
    const { code, stdout, stderr } = await kubectl(
      'restore',
      'orders',
      'orders-copy',
      '--backup',
      'before-upgrade',
    );
    assert.equal(code, 0, stderr);
    assert.equal(stdout, 'database/orders-copy created, restoring from databasebackup/before-upgrade\n');
    assert.match(stderr, /before-upgrade has not succeeded yet: the restore starts once it has/);
    const db = await dbs().get('orders-copy', { namespace: ns });
    assert.deepEqual(db.spec.bootstrap, { recovery: { backup: 'before-upgrade' } });
    assert.equal(db.spec.engine, 'postgres');
    assert.equal(db.spec.version, '16.8');
    assert.equal(db.spec.replicas, 3);
    assert.equal(String(db.spec.storage.size), '10Gi');
    assert.equal(db.spec.backup?.objectStore?.bucket, 'backups');
    assert.equal(db.spec.backup?.objectStore?.path, undefined, 'its own repository: the default path');
    assert.equal(db.metadata.annotations?.['regulon.dev/restored-from'], `${ns}/orders`);

    const again = await kubectl('restore', 'orders', 'orders-copy', '--backup', 'before-upgrade');
    assert.equal(again.code, 1);
    assert.equal(again.stderr, `error: Database "orders-copy" already exists in namespace "${ns}"\n`);
    const failed = await kubectl('restore', 'orders', 'orders-x', '--backup', 'nightly');
    assert.equal(failed.code, 1);
    assert.equal(
      failed.stderr,
      'error: DatabaseBackup "nightly" failed: there is nothing to restore from it\n',
    );
    const missing = await kubectl('restore', 'orders', 'orders-x', '--backup', 'nope');
    assert.equal(missing.stderr, `error: DatabaseBackup "nope" not found in namespace "${ns}"\n`);
  });

  test('restore --time -o yaml --wait: recovery.source is the source repository, done once Ready', async () => {
    const at = '2026-11-24T12:00:00Z';
    const controller = eventually('the restored Database', () =>
      dbs().get('orders-noon', { namespace: ns }),
    ).then((db) =>
      dbs().patchStatus(
        'orders-noon',
        {
          status: {
            phase: 'Ready',
            conditions: [
              {
                type: 'Ready',
                status: 'True',
                reason: 'AllReplicasReady',
                message: '3/3 replicas ready',
                observedGeneration: db.metadata.generation,
                lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
              },
            ],
          },
        },
        { namespace: ns },
      ),
    );
    const { code, stdout, stderr } = await kubectl(
      'restore',
      'orders',
      'orders-noon',
      '--time',
      at,
      '-o',
      'yaml',
      '--wait',
      '--timeout',
      '30s',
    );
    await controller;
    assert.equal(code, 0, stderr);
    const cut = stdout.lastIndexOf('database/');
    const printed = parse(stdout.slice(0, cut)) as DatabaseObject;
    const last = stdout.slice(cut);
    assert.equal(printed.metadata.name, 'orders-noon');
    assert.equal(last, 'database/orders-noon is Ready\n');
    const db = await dbs().get('orders-noon', { namespace: ns });
    assert.deepEqual(db.spec.bootstrap?.recovery, {
      source: {
        endpoint: 'https://minio.storage.svc:9000',
        bucket: 'backups',
        path: `${ns}/orders`,
        region: 'us-east-1',
        credentials: {
          secretName: 'store-keys',
          accessKeyIdKey: 'ACCESS_KEY_ID',
          secretAccessKeyKey: 'ACCESS_SECRET_KEY',
        },
      },
      targetTime: at,
    });
  });

  test('restore --dry-run prints the Database and creates nothing', async () => {
    const { code, stdout } = await kubectl('restore', 'orders', 'orders-dry', '--dry-run');
    assert.equal(code, 0);
    const printed = parse(stdout) as DatabaseObject;
    assert.equal(printed.kind, 'Database');
    assert.equal(printed.spec.bootstrap?.recovery?.source?.path, `${ns}/orders`);
    await assert.rejects(dbs().get('orders-dry', { namespace: ns }), /not found/);
  });

  test('psql: kubectl exec into the primary with the connection flags; the exit code is the client one', async () => {
    await dbs().patchStatus('orders', { status: { currentPrimary: 'orders-0' } }, { namespace: ns });
    const calls: { command: string; args: string[] }[] = [];
    const spawn = (command: string, args: string[]) => {
      calls.push({ command, args });
      return Promise.resolve(3);
    };
    const { code, stderr } = await kubectlWith(
      { spawn, stdinIsTTY: false },
      'psql',
      'orders',
      '--',
      '-c',
      'select 1',
    );
    assert.equal(stderr, '');
    assert.equal(code, 3);
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!.command, 'kubectl');
    assert.deepEqual(calls[0]!.args.slice(0, 11), [
      'exec',
      '-i',
      'orders-0',
      '-n',
      ns,
      '--kubeconfig',
      env.controlPlane.kubeconfigPath,
      '-c',
      'postgres',
      '--',
      'sh',
    ]);
    assert.deepEqual(calls[0]!.args.slice(-3), ['psql', '-c', 'select 1']);
    const wrong = await kubectlWith({ spawn }, 'mysql', 'orders');
    assert.equal(wrong.code, 1);
    assert.equal(wrong.stderr, 'error: Database "orders" runs postgres: use kubectl regulon psql orders\n');
  });

  test('report: the object, its children, Events and status in a tar.gz and a zip; no Secret data', async () => {
    const labels = { 'app.kubernetes.io/name': 'postgres', 'app.kubernetes.io/instance': 'orders' };
    await client.resource(Kinds.Secret).create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'orders-credentials', namespace: ns, labels },
      stringData: { username: 'postgres', password: 'hunter2-do-not-leak' },
    });
    await client.resource(Kinds.ConfigMap).create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'orders-config', namespace: ns, labels },
      data: { 'postgresql.conf': 'max_connections = 100\n', 'start.sh': 'exec postgres\n' },
    });
    for (const file of ['bundle.tar.gz', 'bundle.zip']) {
      const { code, stdout, stderr } = await kubectl('report', 'db', 'orders', '-f', file);
      assert.equal(code, 0, stderr);
      assert.equal(stdout, `${file}\n`);
      assert.match(stderr, /files, \d+ KiB; \d+ could not be collected \(errors\.txt\)\n$/);
      const out = join(scratch, file.replace('.', '-'));
      execFileSync('mkdir', [out]);
      if (file.endsWith('.zip')) execFileSync('unzip', ['-q', join(scratch, file), '-d', out]);
      else execFileSync('tar', ['-xzf', join(scratch, file), '-C', out]);
      const [top] = readdirSync(out);
      assert.match(top!, /^databases-orders-report-\d{8}t\d{6}z$/);
      const read = (p: string) => readFileSync(join(out, top!, p), 'utf8');
      const all = execFileSync('find', [join(out, top!), '-type', 'f'], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map((p) => p.slice(join(out, top!).length + 1))
        .sort();
      for (const expected of [
        'README.txt',
        'children/pods/orders-0.yaml',
        'children/pods/orders-backup-x.yaml',
        'configmaps.yaml',
        'errors.txt',
        'events.yaml',
        'object.yaml',
        'secrets.yaml',
        'status.txt',
        'status.yaml',
      ])
        assert.ok(all.includes(expected), `${expected} in ${all.join(', ')}`);
      assert.ok(!all.some((p) => p.includes('other-0')), 'another Database Pod is left out');
      assert.equal((parse(read('object.yaml')) as DatabaseObject).metadata.name, 'orders');
      assert.deepEqual((parse(read('secrets.yaml')) as { secrets: string[] }).secrets, [
        'orders-credentials',
      ]);
      assert.deepEqual((parse(read('configmaps.yaml')) as { configMaps: unknown }).configMaps, [
        { name: 'orders-config', keys: ['postgresql.conf', 'start.sh'] },
      ]);
      assert.match(read('events.yaml'), /reason: SwitchoverStarted/);
      assert.match(read('status.txt'), new RegExp(`^Database ${ns}/orders: Ready\n`));
      assert.match(read('errors.txt'), /^logs of orders-0\/postgres: /m);
      for (const p of all) {
        const text = read(p);
        assert.doesNotMatch(text, /hunter2|aHVudGVyMi1kby1ub3QtbGVhaw/, p);
      }
    }
  });

  test('the packed tarball installs offline, alone, and its kubectl-regulon prints the same status', async () => {
    const node = process.execPath;
    const out = join(scratch, 'pack');
    const packed = execFileSync(node, [join(import.meta.dirname, '..', 'pack.ts'), '--out', out], {
      encoding: 'utf8',
    });
    const tarball = packed.trim().split('\n').at(-1)!;
    assert.match(tarball, /regulon-kubectl-regulon-\d+\.\d+\.\d+\.tgz$/);
    const prefix = join(scratch, 'global');
    // --offline: nothing to fetch, everything it needs is in the tarball.
    execFileSync(
      'npm',
      ['install', '--global', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', tarball],
      {
        encoding: 'utf8',
      },
    );
    const bin = join(prefix, 'bin', 'kubectl-regulon');
    // Run by the Node on PATH first in line for the bin's shebang: the test's own.
    const childEnv = { ...process.env, PATH: `${join(node, '..')}:${process.env.PATH}` };
    assert.match(
      execFileSync(bin, ['--help'], { encoding: 'utf8', env: childEnv }),
      /^kubectl regulon: day-two operations/,
    );
    const installed = execFileSync(
      bin,
      ['status', 'db', 'orders', '-o', 'json', '-n', ns, '--kubeconfig', env.controlPlane.kubeconfigPath],
      { encoding: 'utf8', env: childEnv },
    );
    const inProcess = await kubectl('status', 'db', 'orders', '-o', 'json');
    assert.deepEqual(JSON.parse(installed), JSON.parse(inProcess.stdout));
  });
});
