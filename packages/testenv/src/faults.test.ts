import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readlinkSync } from 'node:fs';
import { test } from 'node:test';
import { cutPodOffFrom, faultsUnsupported } from './faults.ts';
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
