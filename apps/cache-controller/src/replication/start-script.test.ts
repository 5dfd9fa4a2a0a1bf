import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { REPLICATED_DATA_DIR, replicatedRedisScript, TOPOLOGY_MOUNT } from './start-script.ts';

/**
 * Runs the start script under sh with the redis tools stubbed: `redis-cli ROLE`
 * answers `master` for the hosts in MASTERS, nothing for those in DOWN and
 * `slave` for the others, `getent` lists PEERS, `sleep`
 * (the script waiting for a primary) stops the script, and `redis-server`
 * prints the role file and whether the password is still in its env.
 */
const scratch: string[] = [];
after(() => scratch.forEach((d) => rmSync(d, { recursive: true, force: true })));

function start(o: {
  pod: string;
  topology: { primary: string; initialized: boolean };
  persistent?: boolean;
  hasData?: boolean;
  masters?: string[];
  /** Hosts that do not answer. */
  down?: string[];
  peers?: string[];
  password?: string;
}) {
  const dir = mkdtempSync(join(tmpdir(), 'redis-start-'));
  scratch.push(dir);
  const bin = join(dir, 'bin');
  const topology = join(dir, 'topology');
  const data = join(dir, 'data');
  const run = join(dir, 'run');
  for (const d of [bin, topology, run]) mkdirSync(d, { recursive: true });
  if (o.hasData) mkdirSync(join(data, 'appendonlydir'), { recursive: true });
  writeFileSync(join(topology, 'primary'), o.topology.primary);
  writeFileSync(join(topology, 'initialized'), String(o.topology.initialized));
  const stub = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  stub(
    'redis-cli',
    'host=$3; case " $DOWN " in *" $host "*) exit 1 ;; esac; case " $MASTERS " in *" $host "*) echo master; echo 100 ;; *) echo slave ;; esac',
  );
  stub('getent', 'for p in $PEERS; do echo "$p STREAM $p"; done');
  stub('sleep', 'echo WAITING; kill -TERM $PPID');
  stub('redis-server', `echo "ROLE:$(cat ${run}/role.conf)"; echo "AUTH_ENV:\${REDISCLI_AUTH:-unset}"`);
  const script = replicatedRedisScript({
    conf: '/etc/redis/redis.conf',
    runDir: run,
    port: 6379,
    persistent: o.persistent ?? false,
    auth: o.password !== undefined,
  })
    .replaceAll(TOPOLOGY_MOUNT, topology)
    .replaceAll(REPLICATED_DATA_DIR, data);
  const r = spawnSync('sh', ['-c', script], {
    encoding: 'utf8',
    timeout: 10_000,
    env: {
      PATH: `${bin}:${process.env['PATH']}`,
      POD_NAME: o.pod,
      PRIMARY_HOST: 'c.ns.svc',
      PEERS_HOST: 'c-hl.ns.svc',
      MASTERS: (o.masters ?? []).join(' '),
      DOWN: (o.down ?? []).join(' '),
      PEERS: (o.peers ?? []).join(' '),
      ...(o.password !== undefined ? { REDISCLI_AUTH: o.password } : {}),
    },
  });
  const auth = o.password !== undefined ? readFileSync(join(run, 'auth.conf'), 'utf8') : undefined;
  return { out: r.stdout, err: r.stderr, auth };
}

describe('replicated redis start script', () => {
  test('the named instance of a new Cache starts as the primary', () => {
    const r = start({ pod: 'c-0', topology: { primary: 'c-0', initialized: false } });
    assert.match(r.out, /^ROLE:$/m, r.err);
  });

  test('any other instance waits for a primary behind the client Service, then follows it', () => {
    const r = start({ pod: 'c-1', topology: { primary: 'c-0', initialized: false }, masters: ['c.ns.svc'] });
    assert.match(r.out, /^ROLE:replicaof c\.ns\.svc 6379$/m, r.err);
    const waiting = start({ pod: 'c-1', topology: { primary: 'c-0', initialized: false } });
    assert.match(waiting.out, /WAITING/);
    assert.doesNotMatch(waiting.out, /ROLE:/, 'not started before a primary serves');
  });

  test('without persistence, a named primary that restarts empty never comes back writable: it waits for the failover', () => {
    const r = start({
      pod: 'c-0',
      topology: { primary: 'c-0', initialized: true },
      masters: ['c.ns.svc'],
    });
    assert.match(r.out, /WAITING/);
    assert.doesNotMatch(r.out, /ROLE:/);
  });

  test('with its data, the named instance is the primary only while no peer is writable', () => {
    const alone = start({
      pod: 'c-0',
      topology: { primary: 'c-0', initialized: true },
      persistent: true,
      hasData: true,
      peers: ['10.0.0.2'],
      down: ['10.0.0.2'],
    });
    assert.match(alone.out, /^ROLE:$/m, alone.err);
    // A topology file the kubelet has not refreshed yet still names it; the promoted peer answers master.
    const fenced = start({
      pod: 'c-0',
      topology: { primary: 'c-0', initialized: true },
      persistent: true,
      hasData: true,
      peers: ['10.0.0.2'],
      masters: ['10.0.0.2'],
    });
    assert.match(fenced.out, /^ROLE:replicaof c\.ns\.svc 6379$/m, fenced.err);
    const former = start({
      pod: 'c-0',
      topology: { primary: 'c-2', initialized: true },
      persistent: true,
      hasData: true,
    });
    assert.match(former.out, /^ROLE:replicaof c\.ns\.svc 6379$/m, 'a former primary rejoins as a replica');
  });

  test('with its data, a named primary that restarts while a replica runs does not come back writable: the replica may hold writes its append-only file lacks, so it waits for the failover', () => {
    const restarted = start({
      pod: 'c-0',
      topology: { primary: 'c-0', initialized: true },
      persistent: true,
      hasData: true,
      peers: ['10.0.0.2', '10.0.0.3'],
      down: ['10.0.0.3'],
    });
    assert.match(restarted.out, /WAITING/, restarted.err);
    assert.doesNotMatch(restarted.out, /ROLE:/, 'not started before another instance is promoted');
    assert.match(restarted.err, /a replica runs: it may hold writes this append-only file lacks/);
  });

  test('the password reaches redis as requirepass and masterauth (escaped), and leaves the env before exec', () => {
    const r = start({ pod: 'c-0', topology: { primary: 'c-0', initialized: false }, password: 'p"a\\ss' });
    assert.equal(r.auth, 'requirepass "p\\"a\\\\ss"\nmasterauth "p\\"a\\\\ss"\n');
    assert.match(r.out, /^AUTH_ENV:unset$/m);
    assert.doesNotMatch(r.out + r.err, /p"a/);
  });
});
