// The images for real, as Pods on the real node: each engine serves a request
// under the uid the operators expect, and the images carry no data of their
// own. (The pause image is the sandbox of every Pod on the node, so each test
// here runs it too.)
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { ensureImages, IMAGE_NAMES, type ImageArchive } from './images.ts';
import { eventually, start, type TestEnv } from './index.ts';
import { nodeDir } from './real-node.ts';

const exec = promisify(execFile);

const EXPECTED_USER: Record<string, string> = {
  postgres: '999:999',
  mariadb: '999:999',
  redis: '999:999',
  memcached: '11211:11211',
  client: '65534:65534',
};

describe('images on the real node', () => {
  let env: TestEnv;
  let ns: string;
  let images: Map<string, ImageArchive>;
  let pods = 0;
  const ref = (name: string) => images.get(name)?.ref ?? assert.fail(`no image ${name}`);
  const kubectl = async (args: string[], input?: string) => {
    const run = exec(env.controlPlane.state.kubectl, ['--kubeconfig', env.kubeconfigPath, '-n', ns, ...args]);
    if (input !== undefined) run.child.stdin?.end(input);
    return (await run).stdout;
  };
  /** Runs `script` in a Pod of `name`'s image, as the image's own user; returns its output. */
  const sh = async (name: string, script: string, shell = 'sh') => {
    const pod = `${name}-${++pods}`;
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: pod },
        spec: {
          restartPolicy: 'Never',
          containers: [{ name, image: ref(name), command: [shell, '-c', script] }],
        },
      }),
    );
    const phase = await eventually(
      `${pod} finished`,
      async () => {
        const p = (await kubectl(['get', 'pod', pod, '-o', 'jsonpath={.status.phase}'])).trim();
        return (p === 'Succeeded' || p === 'Failed') && p;
      },
      120_000,
      250,
    );
    const logs = await kubectl(['logs', pod]);
    assert.equal(phase, 'Succeeded', logs);
    return logs;
  };

  before(async () => {
    images = new Map((await ensureImages(IMAGE_NAMES)).map((i) => [i.name, i]));
    env = await start({ realNodes: 1 });
    ns = await env.newNamespace('images', { realNode: true });
  });
  after(async () => env.stop());

  test('every image is loaded into the node under its regulon.local name', async () => {
    const socket = join(nodeDir(env.controlPlane.state.dir), 'containerd', 'containerd.sock');
    const listed = (
      await exec('ctr', ['--address', socket, '-n', 'k8s.io', 'images', 'ls', '-q'])
    ).stdout.split('\n');
    for (const name of IMAGE_NAMES) {
      assert.match(ref(name), new RegExp(`^regulon\\.local/${name}:[0-9.]+$`));
      assert.ok(listed.includes(ref(name)), `${ref(name)} not in ${listed.join(' ')}`);
    }
  });

  test('each image runs as the uid its operator expects', async () => {
    for (const [name, user] of Object.entries(EXPECTED_USER)) {
      assert.equal((await sh(name, 'echo "$(id -u):$(id -g)"')).trim(), user, name);
    }
  });

  test('postgres 15 initializes a cluster and answers a query; it ships no cluster of its own', async () => {
    const out = await sh(
      'postgres',
      [
        'set -e',
        'test -z "$(find /var/lib/postgresql /etc/postgresql -mindepth 1)"',
        'postgres --version',
        'initdb -D /tmp/pg -U postgres --auth=trust >/dev/null',
        'pg_ctl -D /tmp/pg -l /tmp/pg.log -o "-k /tmp -c listen_addresses=" -w start >/dev/null',
        'psql -h /tmp -U postgres -tAc "select 40 + 2"',
      ].join('\n'),
    );
    assert.match(out, /^postgres \(PostgreSQL\) 15\.\d+/);
    assert.match(out, /^42$/m);
  });

  test('mariadb 10.11 initializes a data directory and answers a query; mariadb-backup is there', async () => {
    const out = await sh(
      'mariadb',
      [
        'set -e',
        'test -z "$(find /var/lib/mysql -mindepth 1)"',
        'mariadbd --version',
        'mariadb-backup --version 2>&1',
        'mariadb-install-db --no-defaults --datadir=/tmp/db >/dev/null 2>&1',
        '(mariadbd --no-defaults --datadir=/tmp/db --socket=/tmp/db.sock --skip-networking >/tmp/db.log 2>&1 &)',
        // Polls until the server accepts connections (a wait-until, bounded at 30 s).
        'for i in $(seq 300); do mariadb-admin -S /tmp/db.sock ping >/dev/null 2>&1 && break; sleep 0.1; done',
        'mariadb -S /tmp/db.sock -N -e "select 40 + 2"',
      ].join('\n'),
    );
    assert.match(out, /mariadbd\s+Ver 10\.11\.\d+-MariaDB/);
    assert.match(out, /mariadb-backup based on MariaDB server 10\.11/);
    assert.match(out, /^42$/m);
  });

  test('redis 7.0 answers PING', async () => {
    const out = await sh(
      'redis',
      [
        'set -e',
        'redis-server --version',
        'redis-server --port 0 --unixsocket /tmp/redis.sock --daemonize yes >/dev/null',
        'for i in $(seq 300); do [ -S /tmp/redis.sock ] && break; sleep 0.1; done',
        'redis-cli -s /tmp/redis.sock ping',
      ].join('\n'),
    );
    assert.match(out, /Redis server v=7\.0\.\d+/);
    assert.match(out, /^PONG$/m);
  });

  test('memcached 1.6 answers `version`, and has SASL', async () => {
    const out = await sh(
      'memcached',
      [
        'set -e',
        'memcached -h | grep -- --enable-sasl',
        'memcached -d -l 127.0.0.1 -p 11211',
        'for i in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/11211) 2>/dev/null && break; sleep 0.1; done',
        'exec 3<>/dev/tcp/127.0.0.1/11211',
        "printf 'version\\r\\n' >&3",
        'read -r line <&3',
        'echo "$line"',
      ].join('\n'),
      'bash',
    );
    assert.match(out, /--enable-sasl/);
    assert.match(out, /^VERSION 1\.6\.\d+/m);
  });

  test('the client image has every client a test needs', async () => {
    const out = await sh(
      'client',
      'set -e; psql --version; mariadb --version; redis-cli --version; memcstat --version; dig -v 2>&1; curl --version; getent hosts localhost',
    );
    assert.match(out, /psql \(PostgreSQL\) 15\./);
    assert.match(out, /mariadb\s+Ver .*10\.11\./);
    assert.match(out, /redis-cli 7\.0\./);
    assert.match(out, /libmemcached/);
    assert.match(out, /DiG 9\./);
    assert.match(out, /^curl /m);
    assert.match(out, /localhost/);
  });
});
