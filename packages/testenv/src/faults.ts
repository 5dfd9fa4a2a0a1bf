// Faults the kubelet does not report, for tests on the real node: here, a
// process on this host cut off from the Pods while the API server (on
// loopback) stays reachable, as a manager on the wrong side of a partition.
import { sh } from './host.ts';
import { NODE_NETWORK } from './node-config.ts';

export interface Partition {
  /** Lets the packets through again. Idempotent. */
  heal(): void;
}

/**
 * Drops every packet that a process of group `gid` on this host sends to the
 * real node's Pods. Dropped, not refused: a connect hangs until its own
 * timeout, as across a real partition. Matched by the sending process's group
 * (`-m owner --gid-owner`), so that the test's own samplers, in another group,
 * keep their view: start the process to cut off with that group (root may
 * `spawn(..., { gid })` and keeps its uid). The rule is also undone by the real
 * node's teardown, which removes every rule added since the node started.
 */
export function cutOffFromPods(gid: number): Partition {
  const rule = [
    'OUTPUT',
    '-m',
    'owner',
    '--gid-owner',
    String(gid),
    '-d',
    NODE_NETWORK.podSubnet,
    '-j',
    'DROP',
  ];
  sh('iptables', ['-w', '-I', ...rule]);
  let healed = false;
  return {
    heal() {
      if (healed) return;
      healed = true;
      sh('iptables', ['-w', '-D', ...rule]);
    },
  };
}
