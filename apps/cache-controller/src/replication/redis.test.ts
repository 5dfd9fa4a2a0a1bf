import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { plan, type Member, type PlanInput } from '@regulon/conventions';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { observe, parseReplicationInfo, toServer } from './redis.ts';

// INFO replication as redis 7.0 (the Debian image's) answers it.
const PRIMARY_INFO = `# Replication\r
role:master\r
connected_slaves:2\r
slave0:ip=10.0.0.11,port=6379,state=online,offset=5230,lag=0\r
slave1:ip=10.0.0.12,port=6379,state=online,offset=5230,lag=1\r
master_failover_state:no-failover\r
master_replid:1b3d6e0c5a2f4b8e9d7c6a5b4e3f2d1c0b9a8e7f\r
master_replid2:0000000000000000000000000000000000000000\r
master_repl_offset:5230\r
second_repl_offset:-1\r
repl_backlog_active:1\r
`;
const replicaInfo = (offset: number, link: 'up' | 'down', host = 'c.ns.svc') => `# Replication\r
role:slave\r
master_host:${host}\r
master_port:6379\r
master_link_status:${link}\r
master_last_io_seconds_ago:1\r
master_sync_in_progress:0\r
slave_read_repl_offset:${offset}\r
slave_repl_offset:${offset}\r
slave_priority:100\r
slave_read_only:1\r
replica_announced:1\r
connected_slaves:0\r
master_replid:1b3d6e0c5a2f4b8e9d7c6a5b4e3f2d1c0b9a8e7f\r
master_repl_offset:${offset}\r
`;

describe('redis INFO replication', () => {
  test('a primary: writable, its offset, its replicas', () => {
    const info = parseReplicationInfo(PRIMARY_INFO);
    assert.deepEqual(info, {
      role: 'master',
      offset: 5230n,
      linkUp: false,
      masterHost: undefined,
      connectedReplicas: 2,
      goodReplicas: undefined,
    });
    assert.deepEqual(toServer(info), {
      writable: true,
      systemId: '',
      timeline: 0,
      lsn: 5230n,
      replayLsn: 5230n,
      streaming: false,
    });
  });

  test("a primary with min-replicas-to-write counts the replicas that acknowledged in time: its own view, before any replica's", () => {
    const info = parseReplicationInfo(
      PRIMARY_INFO.replace('lag=1\r\n', 'lag=7\r\n').replace(
        'master_failover_state',
        'min_slaves_good_slaves:1\r\nmaster_failover_state',
      ),
    );
    assert.equal(info.connectedReplicas, 2);
    assert.equal(info.goodReplicas, 1);
  });

  test('a replica streams only while its link is up', () => {
    const up = parseReplicationInfo(replicaInfo(5100, 'up'));
    assert.equal(up.masterHost, 'c.ns.svc');
    assert.deepEqual([toServer(up).writable, toServer(up).streaming, toServer(up).lsn], [false, true, 5100n]);
    assert.equal(toServer(parseReplicationInfo(replicaInfo(5100, 'down'))).streaming, false);
  });

  test('an answer without a role is an error, not a replica', () => {
    assert.throws(() => parseReplicationInfo('-NOAUTH Authentication required.'), /no role/);
  });
});

const NOW = 1_000_000;
const member = (ordinal: number, info: string | undefined, extra: Partial<Member> = {}): Member => ({
  pod: `c-${ordinal}`,
  ordinal,
  uid: `uid-${ordinal}`,
  createdAt: NOW - 600_000,
  deleting: false,
  ready: info !== undefined,
  troubleSince: info === undefined ? NOW - 60_000 : undefined,
  server: info === undefined ? undefined : toServer(parseReplicationInfo(info)),
  ...extra,
});
const input = (members: Member[], extra: Partial<PlanInput> = {}): PlanInput => ({
  replicas: 3,
  members,
  topology: { primary: 'c-0', initialized: true, since: NOW - 3_600_000 },
  systemId: undefined,
  failoverDelayMs: 10_000,
  maxLag: 1024n,
  now: NOW,
  switchoverTo: undefined,
  ...extra,
});

describe('the replication plan on what redis answers', () => {
  test('linked replicas within the lag bound are the -ro Service; a lagging or unlinked one is not', () => {
    const p = plan(
      input([
        member(0, PRIMARY_INFO),
        member(1, replicaInfo(5200, 'up')),
        member(2, replicaInfo(1000, 'up')),
      ]),
    );
    assert.equal(p.step, undefined);
    assert.deepEqual(
      [...p.roles],
      [
        ['c-0', 'primary'],
        ['c-1', 'replica'],
        ['c-2', undefined],
      ],
    );
    const down = plan(input([member(0, PRIMARY_INFO), member(1, replicaInfo(5230, 'down'))]));
    assert.equal(down.roles.get('c-1'), undefined, 'a replica whose link is down serves stale reads');
  });

  test('a lost primary: after the delay, the replica with the highest offset takes over, then is promoted', () => {
    const members = [
      member(0, undefined),
      member(1, replicaInfo(5100, 'down')),
      member(2, replicaInfo(5230, 'down')),
    ];
    const early = plan(input(members, { now: NOW - 55_000 }));
    assert.equal(early.step, undefined, 'within the failover delay');
    assert.match(early.waiting ?? '', /c-2 takes over/);
    const moved = plan(input(members));
    assert.equal(moved.step?.kind, 'topology');
    assert.equal(moved.step?.kind === 'topology' && moved.step.topology.primary, 'c-2');
    // The next reconcile reads the new topology: c-0's Pod is gone, so c-2 is promoted (REPLICAOF NO ONE).
    const next = plan(
      input([member(1, replicaInfo(5100, 'down')), member(2, replicaInfo(5230, 'down'))], {
        topology: { primary: 'c-2', initialized: true, since: NOW },
      }),
    );
    assert.deepEqual(next.step, { kind: 'promote', pod: 'c-2' });
  });

  test('a primary whose Pod is deleted hands over at once; it is never promoted back while it stops', () => {
    const deleting = member(0, PRIMARY_INFO, { deleting: true });
    const handover = plan(
      input([deleting, member(1, replicaInfo(5230, 'up')), member(2, replicaInfo(5000, 'up'))]),
    );
    assert.equal(handover.step?.kind === 'topology' && handover.step.topology.primary, 'c-1');
    const stopping = plan(
      input([deleting, member(1, replicaInfo(5230, 'down')), member(2, replicaInfo(5000, 'down'))], {
        topology: { primary: 'c-1', initialized: true, since: NOW },
      }),
    );
    assert.equal(stopping.step, undefined);
    assert.match(stopping.waiting ?? '', /waiting for c-0 to stop before c-1 is promoted/);
    assert.equal(stopping.roles.get('c-0'), undefined, 'no longer in the client Service');
  });

  test('a returning old primary that came up writable is fenced: two writable instances never both serve', () => {
    const returned = member(0, PRIMARY_INFO, { createdAt: NOW - 1000 });
    const newPrimary = member(2, PRIMARY_INFO.replace('master_repl_offset:5230', 'master_repl_offset:9000'));
    const p = plan(
      input([returned, member(1, replicaInfo(9000, 'up')), newPrimary], {
        topology: { primary: 'c-2', initialized: true, since: NOW - 60_000 },
      }),
    );
    assert.equal(p.step?.kind, 'fence');
    assert.equal(p.step?.kind === 'fence' && p.step.pod, 'c-0');
    assert.equal(p.roles.get('c-0'), undefined);
    assert.equal(p.roles.get('c-2'), 'primary');
  });
});

describe('asking a redis that does not answer', () => {
  test('a server that accepts the connection and never answers (hung) is unreachable within the deadline, not a question left waiting', async () => {
    // The kernel of a SIGSTOPped server completes the TCP handshake; the server never reads.
    const held: Socket[] = [];
    const server = createServer((socket) => held.push(socket));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    try {
      const started = Date.now();
      const answer = await observe({ host: '127.0.0.1', port, password: 'secret' });
      const took = Date.now() - started;
      assert.equal(answer.reachable, false);
      assert.match(answer.reachable ? '' : answer.error, /no answer within 4000 ms/);
      assert.ok(took < 6_000, `answered in ${took} ms`);
      assert.ok(held.length >= 1, 'the connection was accepted');
    } finally {
      for (const socket of held) socket.destroy();
      server.close();
    }
  });
});
