// SCRATCH (to be deleted): MariaDB replication by hand on the real node, no controller.
//   npx regulon-testenv exec -- npx node --import /tmp/mlab/hook.mjs --test apps/database-controller/src/mariadb/scratch.integration.test.ts
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import { ensureImages, eventually, start, type TestEnv } from '@regulon/testenv';
import { cliConnect } from '/tmp/mlab/cli-session.ts';
import { probe, promote, toServer } from './instance.ts';
import { renderMycnf, renderStartScript, CONFIG_MOUNT, DATA_MOUNT, TOPOLOGY_MOUNT } from './start-script.ts';

const exec = promisify(execFile);
let env: TestEnv;
let client: KubeClient;
let ns: string;
const t0 = Date.now();
const at = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
const say = (m: string) => console.log(`[${at()}] ${m}`);
const secret = (extra: string) => `${extra}${randomBytes(12).toString('base64url')}`;
const suPw = secret(`su'"\\`);
const replPw = secret(`re'"\\`);
// Defaults files for the host-side CLI (the stand-in for mysql2), inside the image's rootfs.
const esc = (s: string) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
writeFileSync('/tmp/mlab/bundle/rootfs/lab/repl.cnf', `[client]\nuser=regulon_replication\npassword="${esc(replPw)}"\n`, { mode: 0o600 });
writeFileSync('/tmp/mlab/bundle/rootfs/lab/su.cnf', `[client]\nuser=app_admin\npassword="${esc(suPw)}"\n`, { mode: 0o600 });
const connect = cliConnect('/lab/repl.cnf');
const asApp = cliConnect('/lab/su.cnf');

const kubectl = async (...args: string[]) =>
  (await exec(env.controlPlane.state.kubectl, ['--kubeconfig', env.kubeconfigPath, '-n', ns, ...args])).stdout;
const pod = (name: string) => client.resource<V1Pod>(Kinds.Pod).get(name, { namespace: ns });
const ipOf = async (name: string) => (await pod(name)).status?.podIP;
const setTopology = (primary: string, initialized: boolean) =>
  client.resource(Kinds.ConfigMap).patch('m-topology', { data: { primary, initialized: String(initialized) } }, { type: 'merge', namespace: ns });
const label = (name: string, role: string | null) =>
  client.resource(Kinds.Pod).patch(name, { metadata: { labels: { 'regulon.dev/role': role } } }, { type: 'merge', namespace: ns });
const state = async (name: string) => {
  const ip = await ipOf(name);
  if (!ip) return undefined;
  const p = await probe({ host: ip, password: 'cli' }, connect);
  return p.reachable ? p : undefined;
};
/** SQL through the client Service, from the client Pod (credentials from the Secret, by env). */
const throughService = (sql: string) =>
  kubectl('exec', 'client', '--', 'sh', '-c', `MYSQL_PWD="$PW" mariadb -h m -u "$U" -N -B -e "$1"`, 'sql', sql);
const rowsOn = async (name: string) =>
  (await (await asApp({ host: (await ipOf(name))!, password: 'cli' })).query('select count(*) as n from app.t'))[0]?.['n'];

before(async () => {
  env = await start({ realNodes: 1 });
  client = KubeClient.fromKubeConfig(env.kubeConfig);
  ns = await env.newNamespace('mdb', { realNode: true });
  const images = await ensureImages(['mariadb', 'client'], { build: false });
  const ref = (n: string) => images.find((i) => i.name === n)!.ref;
  const cm = client.resource(Kinds.ConfigMap);
  const sec = client.resource(Kinds.Secret);
  await sec.create({ metadata: { name: 'm-credentials', namespace: ns }, stringData: { username: 'app_admin', password: suPw, database: 'app' } });
  await sec.create({ metadata: { name: 'm-replication', namespace: ns }, stringData: { password: replPw } });
  await cm.create({ metadata: { name: 'm-config', namespace: ns }, data: { 'my.cnf': renderMycnf(), 'start.sh': renderStartScript() } });
  await cm.create({ metadata: { name: 'm-topology', namespace: ns }, data: { primary: 'm-0', initialized: 'false' } });
  const svc = client.resource(Kinds.Service);
  await svc.create({
    metadata: { name: 'm-headless', namespace: ns },
    spec: { clusterIP: 'None', publishNotReadyAddresses: true, selector: { app: 'm' }, ports: [{ name: 'mysql', port: 3306 }] },
  });
  await svc.create({
    metadata: { name: 'm', namespace: ns },
    spec: { selector: { app: 'm', 'regulon.dev/role': 'primary' }, ports: [{ name: 'mysql', port: 3306 }] },
  });
  const fromSecret = (name: string, s: string, key: string) => ({ name, valueFrom: { secretKeyRef: { name: s, key } } });
  await client.resource(Kinds.StatefulSet).create({
    metadata: { name: 'm', namespace: ns },
    spec: {
      replicas: 2,
      podManagementPolicy: 'Parallel',
      serviceName: 'm-headless',
      selector: { matchLabels: { app: 'm' } },
      template: {
        metadata: { labels: { app: 'm' } },
        spec: {
          securityContext: { runAsUser: 999, runAsGroup: 999, runAsNonRoot: true },
          terminationGracePeriodSeconds: 30,
          containers: [
            {
              name: 'mariadb',
              image: ref('mariadb'),
              command: ['bash', `${CONFIG_MOUNT}/start.sh`],
              ports: [{ name: 'mysql', containerPort: 3306 }],
              env: [
                { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                { name: 'PRIMARY_HOST', value: `m.${ns}.svc` },
                { name: 'PEERS_HOST', value: `m-headless.${ns}.svc` },
                fromSecret('SUPERUSER', 'm-credentials', 'username'),
                fromSecret('SUPERUSER_PASSWORD', 'm-credentials', 'password'),
                fromSecret('DATABASE', 'm-credentials', 'database'),
                fromSecret('REPLICATION_PASSWORD', 'm-replication', 'password'),
              ],
              readinessProbe: {
                exec: { command: ['sh', '-c', 'MYSQL_PWD="$SUPERUSER_PASSWORD" mariadb -h 127.0.0.1 -u "$SUPERUSER" -e "select 1" >/dev/null'] },
                periodSeconds: 2,
                timeoutSeconds: 4,
              },
              volumeMounts: [
                { name: 'data', mountPath: DATA_MOUNT },
                { name: 'config', mountPath: CONFIG_MOUNT },
                { name: 'topology', mountPath: TOPOLOGY_MOUNT },
              ],
            },
          ],
          volumes: [
            { name: 'config', configMap: { name: 'm-config' } },
            { name: 'topology', configMap: { name: 'm-topology' } },
          ],
        },
      },
      volumeClaimTemplates: [
        { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
      ],
    },
  });
  await client.resource(Kinds.Pod).create({
    metadata: { name: 'client', namespace: ns },
    spec: {
      containers: [
        {
          name: 'client',
          image: ref('client'),
          command: ['sleep', 'infinity'],
          env: [fromSecret('U', 'm-credentials', 'username'), fromSecret('PW', 'm-credentials', 'password')],
        },
      ],
    },
  });
  say('objects created');
});

after(async () => {
  await env?.stop();
  client?.close();
});

test('m-0 initialises, m-1 clones and replicates; m-1 takes over; m-0 rejoins as its replica', { timeout: 15 * 60_000 }, async () => {
  const primary0 = await eventually('m-0 answers as a writable primary', async () => {
    const s = await state('m-0');
    return s && toServer(s).writable ? s : undefined;
  }, 240_000, 500);
  say(`m-0 writable, cluster ${primary0.systemId}`);
  await setTopology('m-0', true);
  await label('m-0', 'primary');
  const cloned = Date.now();
  const replica = await eventually('m-1 streams from m-0', async () => {
    const s = await state('m-1');
    return s && toServer(s).streaming ? s : undefined;
  }, 240_000, 500);
  say(`m-1 streams (${Date.now() - cloned} ms after m-0 was labelled); same cluster: ${replica.systemId === primary0.systemId}`);
  assert.equal(replica.systemId, primary0.systemId);

  await eventually('the client Pod runs', async () => (await pod('client')).status?.phase === 'Running', 120_000);
  await eventually('the client Service reaches m-0', async () => {
    try {
      return (await throughService('select @@hostname')).trim() === 'm-0';
    } catch {
      return false;
    }
  }, 60_000, 500);
  const values = Array.from({ length: 1000 }, (_, i) => `(${i + 1})`).join(',');
  await throughService(`create table app.t (id int primary key); insert into app.t values ${values}`);
  const wrote = Date.now();
  await eventually('m-1 has the 1000 rows', async () => String(await rowsOn('m-1')) === '1000', 30_000, 100);
  say(`1000 rows written through the Service are on m-1 after ${Date.now() - wrote} ms`);
  const writeOnReplica = await (async () => {
    try {
      await (await asApp({ host: (await ipOf('m-1'))!, password: 'cli' })).query('insert into app.t values (5000)');
      return 'accepted';
    } catch (e) {
      return (e as Error).message;
    }
  })();
  say(`a write on m-1 as the application: ${writeOnReplica}`);
  assert.match(writeOnReplica, /read-only/);

  // Failover by hand, in the manager's order: the topology first, then m-0 stopped, then promotion.
  const oldUid = (await pod('m-0')).metadata!.uid!;
  const lost = Date.now();
  await setTopology('m-1', true);
  await label('m-0', null);
  await client.resource(Kinds.Pod).delete('m-0', { namespace: ns });
  await eventually('the old m-0 is gone', async () => {
    try {
      return (await pod('m-0')).metadata?.uid !== oldUid;
    } catch {
      return true;
    }
  }, 90_000, 200);
  say(`old m-0 stopped ${Date.now() - lost} ms after the delete`);
  const promoting = Date.now();
  await promote({ host: (await ipOf('m-1'))!, password: 'cli' }, connect);
  say(`promote(m-1) took ${Date.now() - promoting} ms`);
  const promoted = await state('m-1');
  assert.ok(promoted && toServer(promoted).writable, 'm-1 writable after promote()');
  await label('m-1', 'primary');
  await eventually('the client Service reaches m-1', async () => {
    try {
      return (await throughService('select @@hostname')).trim() === 'm-1';
    } catch {
      return false;
    }
  }, 60_000, 200);
  await throughService('insert into app.t values (1001),(1002)');
  say(`first write through the Service on m-1 ${Date.now() - lost} ms after m-0 was deleted`);

  const rejoin = Date.now();
  const back = await eventually('m-0 streams from m-1', async () => {
    const s = await state('m-0');
    return s && toServer(s).streaming && !toServer(s).writable ? s : undefined;
  }, 240_000, 500);
  say(`m-0 back as a streaming read-only replica ${Date.now() - rejoin} ms after m-1 took writes (source ${back.replica?.sourceHost}, timeline ${back.timeline})`);
  await eventually('m-0 caught up (1002 rows)', async () => String(await rowsOn('m-0')) === '1002', 30_000, 100);
  say(`m-0 caught up ${Date.now() - rejoin} ms after the rejoin started`);
  await throughService('insert into app.t values (1003)');
  const w = Date.now();
  await eventually('m-0 has the next write', async () => String(await rowsOn('m-0')) === '1003', 30_000, 50);
  say(`a write on m-1 reached m-0 in ${Date.now() - w} ms`);
  const logs = await kubectl('logs', 'm-0');
  say(`m-0's start: ${logs.split('\n').filter((l) => l.startsWith('regulon:')).join(' | ')}`);
  const primaryNow = (await state('m-1'))!;
  say(`positions: m-1 ${primaryNow.lsn} (timeline ${primaryNow.timeline}), m-0 ${(await state('m-0'))!.replayLsn}`);
});
