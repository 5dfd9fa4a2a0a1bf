// Faults the kubelet does not report, for tests on the real node: a process
// on this host cut off from the Pods (or from one Pod) while the API server
// (on loopback) stays reachable, as a manager on the wrong side of a
// partition; a process cut off from the API server; and the loss of the
// second real node (its kubelet stopped, its Pods cut off).
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { NETNS_DIR, sh } from './host.ts';
import { NODE_NETWORK } from './node-config.ts';
import { SECOND_NODE, secondRealNodeState } from './second-node.ts';
import { isAlive } from './process.ts';

export interface Partition {
  /** Lets the packets through again. Idempotent. */
  heal(): void;
}

/** A partition made inside a Pod's network namespace (see cutPodOffFrom). */
export interface PodPartition extends Partition {
  /**
   * Whether the namespace is gone: no process in it, and not held by a bind mount in /run/netns
   * (the container runtime's, until the sandbox is torn down). With it go its interface, and what
   * its sockets still held to send: a connection the partition stalled can no longer deliver.
   */
  namespaceGone(): boolean;
}

/**
 * Drops every packet that a process of group `gid` on this host sends to the
 * real nodes' Pods. Dropped, not refused: a connect hangs until its own
 * timeout, as across a real partition. Matched by the sending process's group
 * (`-m owner --gid-owner`), so that the test's own samplers, in another group,
 * keep their view: start the process to cut off with that group (root may
 * `spawn(..., { gid })` and keeps its uid). The rule is also undone by the real
 * node's teardown, which removes every rule added since the node started.
 */
export function cutOffFromPods(gid: number): Partition {
  // Both real nodes' Pods (10.245.0.0/24 and 10.245.1.0/24).
  return dropFromGroup(gid, ['-d', SECOND_NODE.clusterCIDR]);
}

/**
 * Drops what a process of group `gid` sends to one Pod's address alone, as
 * {@link cutOffFromPods} does to them all: a manager that still reaches every
 * other instance, and the API server, while one instance is on the far side
 * of a partition from it.
 */
export function cutOffFromPod(gid: number, podIp: string): Partition {
  return dropFromGroup(gid, ['-d', `${podIp}/32`]);
}

/**
 * Drops every packet that a process of group `gid` sends to the API server at
 * `server` (the control plane's URL, on this host): the agent or manager in
 * that group keeps running and keeps its view of the Pods, but every request
 * and watch hangs, as for a process on the far side of a partition from the
 * control plane. Matched by group as {@link cutOffFromPods} is. Needs root and
 * iptables; see {@link faultsUnsupported}.
 */
export function cutOffFromApiServer(gid: number, server: string): Partition {
  const url = new URL(server);
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return dropFromGroup(gid, ['-d', url.hostname, '-p', 'tcp', '--dport', port]);
}

/** Drops what processes of group `gid` send that `match` matches, until heal(). */
function dropFromGroup(gid: number, match: string[]): Partition {
  const rule = ['OUTPUT', '-m', 'owner', '--gid-owner', String(gid), ...match, '-j', 'DROP'];
  sh('iptables', ['-w', '-I', ...rule]);
  let healed = false;
  return {
    heal() {
      if (healed) return;
      healed = true;
      // Gone already when a real node's teardown, which restores the rules
      // it found, ran meanwhile.
      try {
        sh('iptables', ['-w', '-C', ...rule]);
      } catch {
        return;
      }
      sh('iptables', ['-w', '-D', ...rule]);
    },
  };
}

/**
 * Cuts a Pod on a real node off from `addresses` alone, e.g. the API server's
 * Service and endpoint addresses: every packet between them is dropped, the
 * rest flows. The Pod is named by the host PID of any of its processes (its
 * containers share its sandbox's network namespace). The rules live in that
 * namespace, so they go with the sandbox; `heal()` removes them sooner.
 */
export function cutPodOffFrom(pid: number, addresses: readonly string[]): PodPartition {
  return podRules(
    pid,
    addresses.flatMap((ip) => [
      ['INPUT', '-s', ip, '-j', 'DROP'],
      ['OUTPUT', '-d', ip, '-j', 'DROP'],
    ]),
  );
}

/** The host PIDs of a Pod's processes whose argv `matches` (the kubelet's cgroups carry the Pod's uid), in PID order. */
export function podPids(podUid: string, matches: (argv: string[]) => boolean): number[] {
  return [...podProcesses(podUid, matches).keys()].sort((a, b) => a - b);
}

/**
 * The host PID of the Pod's server that `matches`: of the matching processes, the first whose
 * parent does not match too. A process just forked (a postgres backend, a redis save) carries its
 * parent's command line until it sets its own title, and PIDs wrap on a busy machine, so the
 * first match alone could be a fork that came before the server it was forked from.
 */
export function podServerPid(podUid: string, matches: (argv: string[]) => boolean): number | undefined {
  return outermost(podProcesses(podUid, matches))[0];
}

/**
 * The processes of a Pod's containers that descend from a container's own first process (PID 1 in
 * its namespace): the engine and what it started, never the sandbox, nor the processes the kubelet
 * execs beside them (probes, hooks). A hang stops the first kind only: a probe stopped with them
 * would keep its exec open (containerd waits for its output until the kubelet's 2 min runtime
 * request timeout), and the kubelet would probe nothing meanwhile.
 */
export function containerProcessTrees(podUid: string): number[] {
  const pids = podPids(podUid, (argv) => !isSandbox(argv));
  const parent = new Map<number, number>();
  const first = new Set<number>();
  for (const pid of pids) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      parent.set(pid, Number(/^PPid:\s+(\d+)/m.exec(status)?.[1] ?? 0));
      if (/^NSpid:.*\s1$/m.test(status)) first.add(pid);
    } catch {
      // The process ended while being read.
    }
  }
  const descends = (pid: number) => {
    for (let p: number | undefined = pid, hops = 0; p && hops < 64; p = parent.get(p), hops++)
      if (first.has(p)) return true;
    return false;
  };
  return pids.filter(descends);
}

/** SIGSTOP, unless the process ended since it was listed (a short-lived exec, a backend). */
export function stopProcess(pid: number): void {
  try {
    process.kill(pid, 'SIGSTOP');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/** A Pod's processes whose argv `matches`, as PID to parent PID. */
function podProcesses(podUid: string, matches: (argv: string[]) => boolean): Map<number, number> {
  const found = new Map<number, number>();
  const marks = [podUid, podUid.replace(/-/g, '_')];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cgroup = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
      if (!marks.some((m) => cgroup.includes(m))) continue;
      if (!matches(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'))) continue;
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      found.set(Number(pid), Number(/^PPid:\s+(\d+)/m.exec(status)?.[1] ?? 0));
    } catch {
      // The process ended while being read.
    }
  }
  return found;
}

/** Of processes given as PID to parent PID, those whose parent is not among them, in PID order. */
export function outermost(parents: ReadonlyMap<number, number>): number[] {
  return [...parents]
    .filter(([, parent]) => !parents.has(parent))
    .map(([pid]) => pid)
    .sort((a, b) => a - b);
}

/** The real nodes' Pod subnets: where hostAddressesIn finds their containers' addresses. */
export const REAL_NODE_POD_SUBNETS: readonly string[] = [
  NODE_NETWORK.podSubnet,
  SECOND_NODE.network.podSubnet,
];

/** An IPv4 address a network namespace on this host holds; `netns` names the namespace (its inode link). */
export interface HostAddress {
  ip: string;
  netns: string;
}

/**
 * Every IPv4 address within `subnets` (CIDRs) that a network namespace on this host holds: a
 * container's address whatever the API server says of its Pod (an object deleted while its
 * containers run on, a node the control plane counts lost). Each namespace is read through one of
 * its processes' /proc/<pid>/net/fib_trie, which shows that process's namespace, so none is entered.
 */
export function hostAddressesIn(subnets: readonly string[]): HostAddress[] {
  const ranges = subnets.map(parseCidr);
  const within = (ip: string) => ranges.some(([base, mask]) => (ipv4(ip) & mask) >>> 0 === base);
  const seen = new Set<string>();
  const found: HostAddress[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const netns = readlinkSync(`/proc/${pid}/ns/net`);
      if (seen.has(netns)) continue;
      seen.add(netns);
      for (const ip of localAddresses(readFileSync(`/proc/${pid}/net/fib_trie`, 'utf8')))
        if (within(ip)) found.push({ ip, netns });
    } catch {
      // The process ended while being read.
    }
  }
  return found;
}

/** The namespace's own addresses in a fib_trie listing: each "/32 host LOCAL" leaf names one. */
export function localAddresses(fibTrie: string): string[] {
  const addresses = new Set<string>();
  let leaf: string | undefined;
  for (const line of fibTrie.split('\n')) {
    const at = /\|-- (\d+\.\d+\.\d+\.\d+)/.exec(line);
    if (at) leaf = at[1];
    else if (leaf && /\/32 host LOCAL/.test(line)) addresses.add(leaf);
  }
  return [...addresses];
}

const ipv4 = (ip: string): number => ip.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);

function parseCidr(cidr: string): [base: number, mask: number] {
  const [ip, bits] = cidr.split('/');
  const prefix = Number(bits ?? 32);
  if (!ip || !/^\d+\.\d+\.\d+\.\d+$/.test(ip) || !(prefix >= 0 && prefix <= 32))
    throw new Error(`not an IPv4 CIDR: ${cidr}`);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return [(ipv4(ip) & mask) >>> 0, mask];
}

/**
 * Whether argv is a Pod's sandbox process, which holds its network namespace: the real node's
 * pause image runs catatonit in pause mode (tools/images/recipes/pause.sh); Kubernetes' own runs /pause.
 */
export const isSandbox = (argv: string[]): boolean => /(^|\/)(pause|catatonit)$/.test(argv[0] ?? '');

/** The host PID of a running Pod's sandbox: what cutPodOffFrom and refusePodConnectionsTo take. */
export function podSandboxPid(podUid: string): number {
  const pid = podPids(podUid, isSandbox)[0];
  if (pid === undefined) throw new Error(`no sandbox process of Pod ${podUid} on this machine`);
  return pid;
}

/**
 * Makes a Pod on a real node refuse its own connections to `address:port`:
 * each is answered at once with a TCP reset, as a service that is down on a
 * host that is up answers (a dropped packet, cutPodOffFrom's, is a hang
 * instead). Everything else flows. The rules go with the sandbox, or sooner
 * with `heal()`.
 */
export function refusePodConnectionsTo(pid: number, address: string, port: number): PodPartition {
  return podRules(pid, [
    [
      'OUTPUT',
      '-d',
      address,
      '-p',
      'tcp',
      '--dport',
      String(port),
      '-j',
      'REJECT',
      '--reject-with',
      'tcp-reset',
    ],
  ]);
}

/** Appends `rules` to the filter table of the network namespace of process `pid`, until heal(). */
function podRules(pid: number, rules: string[][]): PodPartition {
  // The namespace's identity: `pid` may end (a fence) while the rules stay.
  const netns = readlinkSync(`/proc/${pid}/ns/net`);
  const ipt = (inNs: number, ...args: string[]) =>
    sh('nsenter', [`--net=/proc/${inNs}/ns/net`, 'iptables', '-w', ...args]);
  const ruleExists = (inNs: number, rule: string[]) => {
    try {
      ipt(inNs, '-C', ...rule);
      return true;
    } catch {
      // -C fails for a rule that is not there, and for a process that ended: asked again then.
      return !isAlive(inNs);
    }
  };
  for (const rule of rules) ipt(pid, '-A', ...rule);
  let healed = false;
  return {
    heal() {
      if (healed) return;
      healed = true;
      for (const rule of rules) {
        // Through a process still in that namespace (none left: the rules went with it). The one
        // found may end before nsenter enters (a probe's exec, a backend): a rule is done with only
        // once it is deleted or, asked through a process that still runs, no longer there. A cut
        // left behind silently once kept a standby from its primary for minutes.
        let removed = false;
        for (let attempt = 0; attempt < 5 && !removed; attempt++) {
          const inNs = findProcessInNetns(netns);
          if (inNs === undefined) return;
          try {
            ipt(inNs, '-D', ...rule);
            removed = true;
          } catch {
            removed = isAlive(inNs) && !ruleExists(inNs, rule);
          }
        }
        if (!removed)
          throw new Error(`testenv: could not remove "${rule.join(' ')}" from ${netns}: the cut stays`);
      }
    },
    namespaceGone: () => findProcessInNetns(netns) === undefined && !boundInNetnsDir(netns),
  };
}

/** Whether a bind mount in /run/netns holds the network namespace `link` (readlink's `net:[INODE]`). */
function boundInNetnsDir(link: string): boolean {
  const inode = /\[(\d+)\]/.exec(link)?.[1];
  if (!existsSync(NETNS_DIR)) return false;
  for (const entry of readdirSync(NETNS_DIR))
    try {
      if (String(statSync(join(NETNS_DIR, entry)).ino) === inode) return true;
    } catch {
      // Unmounted and removed while listed.
    }
  return false;
}

/** A process in the network namespace `link` (as readlink /proc/PID/ns/net prints it), if any. */
function findProcessInNetns(link: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/net`) === link) return Number(entry);
    } catch {
      // Ended, or not ours to read.
    }
  }
  return undefined;
}

/** Why this process cannot make the partitions above, or undefined when it can. */
export function faultsUnsupported(): string | undefined {
  if (process.getuid?.() !== 0) return 'partitions need root (iptables rules matched by group)';
  try {
    sh('iptables', ['-w', '-S', 'OUTPUT']);
  } catch (err) {
    return `partitions need iptables, which did not answer: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`;
  }
  return undefined;
}

/**
 * Stops the second real node's kubelet alone (SIGSTOP), its network untouched: nothing on the node
 * reports or acts for the control plane, and what runs there runs on. A Pod deleted with
 * `--force` meanwhile leaves its containers running, the way they outlive their Pod on a node
 * whose kubelet hangs. `resume()` lets it go on (idempotent); the node's teardown kills it either way.
 */
export function pauseSecondRealNodeKubelet(controlPlaneDir: string): { resume(): void } {
  const kubelet = secondRealNodeState(controlPlaneDir)?.components['kubelet'];
  if (!kubelet) throw new Error(`testenv: no second real node runs for ${controlPlaneDir}`);
  process.kill(kubelet.pid, 'SIGSTOP');
  let resumed = false;
  return {
    resume() {
      if (resumed) return;
      resumed = true;
      process.kill(kubelet.pid, 'SIGCONT');
    },
  };
}

export interface NodeLoss {
  /** Lets the node's packets through again and resumes its kubelet. Idempotent. */
  heal(): void;
}

/**
 * Loses the machine's second real node (`real-node-1`) the way a node is lost
 * in a real cluster: its kubelet stops (SIGSTOP: no status, no lease renewal,
 * the node goes NotReady in the API once the controller-manager's grace
 * period passes) and every packet between its network namespace and the rest
 * (the host, the API server, node 0's Pods) is dropped. Its containers keep
 * running and its Pod objects stay: nothing confirms their end. `heal()`
 * undoes both; the node's teardown removes the rules too (they are in its
 * `REGULON-NODE1-` chains).
 */
export function loseSecondRealNode(controlPlaneDir: string): NodeLoss {
  const kubelet = pauseSecondRealNodeKubelet(controlPlaneDir);
  const { hostLink, chainPrefix } = SECOND_NODE;
  const chain = `${chainPrefix}LOSS`;
  const jumps = [
    ['FORWARD', '-i', hostLink],
    ['FORWARD', '-o', hostLink],
    ['INPUT', '-i', hostLink],
    ['OUTPUT', '-o', hostLink],
  ];
  const ipt = (...args: string[]) => sh('iptables', ['-w', ...args]);
  try {
    ipt('-N', chain);
    ipt('-A', chain, '-j', 'DROP');
    for (const [builtin, ...match] of jumps) ipt('-I', builtin!, '1', ...match, '-j', chain);
  } catch (err) {
    kubelet.resume();
    throw err;
  }
  let healed = false;
  return {
    heal() {
      if (healed) return;
      healed = true;
      for (const [builtin, ...match] of jumps) ipt('-D', builtin!, ...match, '-j', chain);
      ipt('-F', chain);
      ipt('-X', chain);
      kubelet.resume();
    },
  };
}
