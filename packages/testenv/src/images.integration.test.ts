// The images for real: built (or taken from the cache) by ensureImages(),
// imported into a private containerd, and run. Each engine serves a request,
// under the uid the operators expect. The containerd is this test's own: its
// root, state, socket, runc root and FIFOs live in one temporary directory,
// and the last test checks that stopping it leaves nothing behind.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { ensureDebianPackages } from './debian.ts';
import { ensureImages, IMAGE_NAMES, type ImageArchive } from './images.ts';
import { isAlive } from './process.ts';
import { eventually } from './wait.ts';

const exec = promisify(execFile);

/**
 * A containerd of its own for one test file. containerd 1.6 puts every shim's
 * socket in /run/containerd/s (a fixed path, named by a hash of this
 * containerd's socket, the namespace and the container); everything else is
 * under `dir`, whose state.json records who started it, so that a later run
 * cleans up after a test process that was killed before its `after` hook.
 */
class PrivateContainerd {
  static readonly dirPrefix = 'regulon-ctd-';
  readonly dir: string;
  readonly socket: string;
  private readonly state: { owner: number; containerd: number };
  /** Container ids, and so runc's cgroup names, start with this. */
  private readonly prefix: string;
  private next = 0;
  private stopped = false;

  private constructor(dir: string, state: { owner: number; containerd: number }) {
    this.dir = dir;
    this.state = state;
    this.socket = join(dir, 'containerd.sock');
    this.prefix = `regulon-images-test-${state.owner}-`;
  }

  static async start(): Promise<PrivateContainerd> {
    const dir = mkdtempSync(join(tmpdir(), PrivateContainerd.dirPrefix));
    writeFileSync(join(dir, 'config.toml'), config(dir));
    // What the kubelet would mount: without it `localhost` does not resolve,
    // and mariadb-install-db refuses to run.
    writeFileSync(join(dir, 'hosts'), '127.0.0.1\tlocalhost\n::1\tlocalhost\n');
    const log = openSync(join(dir, 'containerd.log'), 'a');
    const child = spawn('containerd', ['--config', join(dir, 'config.toml')], {
      detached: true,
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    child.unref();
    if (child.pid === undefined) throw new Error('could not start containerd');
    const state = { owner: process.pid, containerd: child.pid };
    writeFileSync(join(dir, 'state.json'), JSON.stringify(state));
    const ctd = new PrivateContainerd(dir, state);
    try {
      await eventually('containerd to serve', async () => (await ctd.ctr('version'), true), 30_000, 100);
    } catch (err) {
      await ctd.stop();
      throw err;
    }
    return ctd;
  }

  /** Stops the private containerds of test processes that died without stopping them. */
  static async sweep(): Promise<void> {
    for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith(PrivateContainerd.dirPrefix))) {
      const dir = join(tmpdir(), name);
      let state: { owner: number; containerd: number };
      try {
        state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as typeof state;
      } catch {
        continue; // not started by this test, or still being set up
      }
      if (!isAlive(state.owner)) await new PrivateContainerd(dir, state).stop();
    }
  }

  async ctr(...args: string[]): Promise<string> {
    const { stdout } = await exec('ctr', ['--address', this.socket, '-n', 'k8s.io', ...args], {
      maxBuffer: 16 << 20,
    });
    return stdout;
  }

  /** `ctr run --rm` a command in `ref`; resolves with its stdout, rejects if it exits non-zero. */
  run(ref: string, command: string[], extra: string[] = []): Promise<string> {
    const id = `${this.prefix}${this.next++}`;
    return this.ctr(
      'run',
      '--rm',
      '--fifo-dir',
      join(this.dir, 'fifo'),
      '--runc-root',
      join(this.dir, 'runc'),
      // runc's own cgroup per container (named by its id), removed with it.
      '--cgroup',
      '',
      '--mount',
      `type=bind,src=${join(this.dir, 'hosts')},dst=/etc/hosts,options=rbind:ro`,
      ...extra,
      ref,
      id,
      ...command,
    );
  }

  /** What is left of this containerd on the machine: processes, mounts, cgroups, files. */
  leftovers(): string[] {
    const found: string[] = [];
    if (isAlive(this.state.containerd)) found.push(`containerd ${this.state.containerd}`);
    for (const pid of this.shims()) found.push(`shim ${pid}`);
    for (const m of this.mounts()) found.push(`mount ${m}`);
    for (const c of this.cgroups()) found.push(`cgroup ${c}`);
    if (existsSync(this.dir)) found.push(`dir ${this.dir}`);
    return found;
  }

  /**
   * Removes every container, stops containerd and its shims, unmounts and
   * deletes `dir`. The containerd does it when it is still there; what a dead
   * one left behind (its containers' processes, shims, mounts, cgroups) is
   * found and removed directly.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (isAlive(this.state.containerd)) {
      const ids = (await this.ctr('containers', 'ls', '-q').catch(() => '')).split('\n').filter(Boolean);
      for (const id of ids) {
        await this.ctr('task', 'rm', '-f', id).catch(() => {});
        await this.ctr('containers', 'rm', id).catch(() => {});
      }
      await kill(this.state.containerd);
    }
    for (const c of this.cgroups()) await Promise.all(cgroupProcs(c).map((pid) => kill(pid, 'SIGKILL')));
    for (const pid of this.shims()) await kill(pid);
    for (const m of this.mounts().reverse()) {
      await exec('umount', [m]).catch(() => exec('umount', ['-l', m]));
    }
    for (const c of this.cgroups()) rmdirSync(c);
    const still = this.mounts();
    if (still.length) throw new Error(`still mounted, ${this.dir} left in place: ${still.join(', ')}`);
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Shims serving this containerd: its socket path, unique to this run, is in their command line. */
  private shims(): number[] {
    return readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
          return argv[0]?.endsWith('containerd-shim-runc-v2') && argv.includes(this.socket);
        } catch {
          return false; // exited meanwhile
        }
      })
      .map(Number);
  }

  private mounts(): string[] {
    return readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[4] ?? '')
      .filter((m) => m.startsWith(this.dir + '/'))
      .sort((a, b) => a.length - b.length);
  }

  /** runc names each container's cgroup after its id, in every hierarchy (at most a few levels down). */
  private cgroups(): string[] {
    const found: string[] = [];
    const walk = (dir: string, depth: number) => {
      let entries: string[];
      try {
        entries = readdirSync(dir, { withFileTypes: true })
          .filter((e) => e.isDirectory())
          .map((e) => e.name);
      } catch {
        return;
      }
      for (const e of entries) {
        if (e.startsWith(this.prefix)) found.push(join(dir, e));
        else if (depth > 0) walk(join(dir, e), depth - 1);
      }
    };
    walk('/sys/fs/cgroup', 3);
    return found;
  }
}

function config(dir: string): string {
  return `version = 2
root = "${dir}/root"
state = "${dir}/state"
[grpc]
  address = "${dir}/containerd.sock"
[ttrpc]
  address = "${dir}/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  # The machine lacks CAP_SYS_RESOURCE: containerd must not lower oom_score_adj.
  restrict_oom_score_adj = true
  sandbox_image = "regulon.local/pause:0.1"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${dir}/cni/bin"
    conf_dir = "${dir}/cni/net.d"
`;
}

function cgroupProcs(dir: string): number[] {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

async function kill(pid: number, first: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  };
  signal(first);
  try {
    await eventually(`pid ${pid} to exit`, () => !isAlive(pid), 10_000);
  } catch {
    signal('SIGKILL');
    await eventually(`pid ${pid} to exit after SIGKILL`, () => !isAlive(pid), 5_000);
  }
}

/** The uid:gid each image runs as: the ones the operators' Pods ask for. */
const EXPECTED_USER: Record<string, string> = {
  postgres: '999:999',
  mariadb: '999:999',
  redis: '999:999',
  memcached: '11211:11211',
  client: '65534:65534',
};

describe('images in containerd', () => {
  let ctd: PrivateContainerd | undefined;
  let images: Map<string, ImageArchive>;
  const ref = (name: string) => images.get(name)?.ref ?? assert.fail(`no image ${name}`);
  const sh = (name: string, script: string) => ctd!.run(ref(name), ['sh', '-c', script]);

  before(async () => {
    if (process.getuid?.() !== 0) {
      throw new Error('this test runs a containerd, which needs root (overlay mounts, cgroups)');
    }
    await ensureDebianPackages(['containerd', 'runc'], 'the image test (a private containerd)');
    await PrivateContainerd.sweep();
    const log = (line: string) => process.stderr.write(`[images] ${line}\n`);
    images = new Map((await ensureImages(IMAGE_NAMES, { log })).map((i) => [i.name, i]));
    ctd = await PrivateContainerd.start();
  });
  after(async () => ctd?.stop());

  test('every archive imports under its regulon.local name', async () => {
    for (const image of images.values()) await ctd!.ctr('images', 'import', image.archive);
    const listed = (await ctd!.ctr('images', 'ls', '-q')).split('\n');
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
    const out = await ctd!.run(ref('memcached'), [
      'bash',
      '-c',
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
    ]);
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

  test('pause waits for a signal, and stops on SIGTERM', async () => {
    const id = 'regulon-images-test-pause';
    await ctd!.ctr(
      'run',
      '-d',
      '--fifo-dir',
      join(ctd!.dir, 'fifo'),
      '--runc-root',
      join(ctd!.dir, 'runc'),
      '--cgroup',
      '',
      ref('pause'),
      id,
    );
    const task = async () => {
      const row = (await ctd!.ctr('task', 'ls')).split('\n').find((l) => l.startsWith(id + ' '));
      const [, pid, status] = row?.trim().split(/\s+/) ?? [];
      return { pid: Number(pid), status };
    };
    // catatonit -P blocks reading its signalfd: it never exits by itself.
    const waiting = async () => {
      const { pid, status } = await task();
      return status === 'RUNNING' && readFileSync(`/proc/${pid}/wchan`, 'utf8') === 'signalfd_read_iter';
    };
    await eventually('pause to block waiting for a signal', waiting);
    await ctd!.ctr('task', 'kill', '-s', 'SIGTERM', id);
    await eventually('pause to stop on SIGTERM', async () => (await task()).status === 'STOPPED');
    await ctd!.ctr('task', 'rm', id);
    await ctd!.ctr('containers', 'rm', id);
  });

  test('stopping the private containerd leaves no process, mount, cgroup or directory behind', async () => {
    const c = ctd!;
    await c.stop();
    assert.deepEqual(c.leftovers(), []);
  });
});
