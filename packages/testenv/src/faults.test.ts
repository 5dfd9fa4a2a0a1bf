import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readlinkSync } from 'node:fs';
import { test } from 'node:test';
import { cutPodOffFrom, faultsUnsupported, hostAddressesIn, localAddresses, outermost } from './faults.ts';
import { sh } from './host.ts';
import { eventually } from './wait.ts';

// A process in a network namespace of its own stands in for a Pod's sandbox: the rules are the
// same iptables rules, made the same way, and the namespace goes when its last process does.
test(
  "a Pod's partition: its rules in the Pod's network namespace alone; namespaceGone once no process holds the namespace",
  { skip: faultsUnsupported() },
  async () => {
    const sandbox = spawn('unshare', ['--net', 'sleep', '60'], { stdio: 'ignore' });
    try {
      const ours = readlinkSync('/proc/self/ns/net');
      const pid = await eventually('a process in a network namespace of its own', () => {
        try {
          return readlinkSync(`/proc/${sandbox.pid}/ns/net`) !== ours && sandbox.pid;
        } catch {
          return undefined;
        }
      });
      // TEST-NET-1: an address nothing here uses.
      const cut = cutPodOffFrom(pid, ['192.0.2.1']);
      const inside = () => sh('nsenter', [`--net=/proc/${pid}/ns/net`, 'iptables', '-w', '-S']);
      assert.match(inside(), /-A OUTPUT -d 192\.0\.2\.1\/32 -j DROP/);
      assert.match(inside(), /-A INPUT -s 192\.0\.2\.1\/32 -j DROP/);
      assert.doesNotMatch(sh('iptables', ['-w', '-S']), /192\.0\.2\.1/, "not in this host's namespace");
      assert.equal(cut.namespaceGone(), false);
      sandbox.kill('SIGKILL');
      await once(sandbox, 'exit');
      assert.equal(cut.namespaceGone(), true);
      cut.heal();
    } finally {
      sandbox.kill('SIGKILL');
    }
  },
);

test("a namespace's own addresses, from its fib_trie: the host LOCAL leaves, not the routes or broadcasts", () => {
  const trie = [
    'Main:',
    '  +-- 0.0.0.0/0 3 0 5',
    '     |-- 0.0.0.0',
    '        /0 universe UNICAST',
    '     +-- 10.245.0.0/24 2 0 2',
    '        |-- 10.245.0.0',
    '           /24 link UNICAST',
    '        |-- 10.245.0.7',
    '           /32 host LOCAL',
    '        |-- 10.245.0.255',
    '           /32 link BROADCAST',
    'Local:',
    '        |-- 10.245.0.7',
    '           /32 host LOCAL',
  ].join('\n');
  assert.deepEqual(localAddresses(trie), ['10.245.0.7']);
});

test(
  'every address a network namespace on this host holds within the subnets, whatever runs there',
  { skip: faultsUnsupported() },
  async () => {
    // TEST-NET-3, on the loopback of a namespace of its own: nothing else here holds it.
    const held = spawn(
      'unshare',
      ['--net', 'sh', '-c', 'ip link set lo up && ip addr add 203.0.113.9/32 dev lo && exec sleep 60'],
      { stdio: 'ignore' },
    );
    try {
      const found = await eventually('the address held', () => {
        const all = hostAddressesIn(['203.0.113.0/24']);
        return all.length > 0 && all;
      });
      assert.deepEqual(
        found.map((a) => a.ip),
        ['203.0.113.9'],
      );
      assert.equal(found[0]!.netns, readlinkSync(`/proc/${held.pid}/ns/net`));
      assert.deepEqual(hostAddressesIn(['203.0.114.0/24']), [], 'outside the subnet');
      held.kill('SIGKILL');
      await once(held, 'exit');
      assert.deepEqual(hostAddressesIn(['203.0.113.0/24']), [], 'gone with its namespace');
    } finally {
      held.kill('SIGKILL');
    }
  },
);

test("a server's process, not a fork of it that still carries its command line, even when PIDs wrapped", () => {
  // 30001 the server (parent 4000, the container's init); 812 and 30050 forks of it, 812 after a
  // wrap; 77 a second server under the same init.
  const parents = new Map([
    [30001, 4000],
    [812, 30001],
    [30050, 30001],
    [77, 4000],
  ]);
  assert.deepEqual(outermost(parents), [77, 30001]);
  assert.deepEqual(outermost(new Map([[812, 30001]])), [812], 'a fork whose server was not seen is kept');
});
