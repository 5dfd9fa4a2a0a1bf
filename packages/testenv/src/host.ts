// What a real node changes on the machine, recorded before it changes it and
// undone from the record alone, so that `down` after a crashed test process
// leaves the machine as it was. Every step of the undo tolerates having been
// done already: a second `down` is a no-op.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface HostRecord {
  /** sysctl path (under /proc/sys) → the value before the node changed it. */
  sysctls: Record<string, string>;
  /** `iptables-save` / `ip6tables-save` output before the node started. */
  iptablesBefore: { v4: string; v6: string };
  /** The Linux bridge the Pods' veths hang off. */
  bridge: string;
  /** The cgroup (in every v1 hierarchy) that holds the kubelet's and the Pods' cgroups. */
  cgroupRoot: string;
  /** Mounts at or under these directories are the node's. */
  mountPrefixes: string[];
  /** Network namespaces (bind mounts in /run/netns) that existed before: the others are the node's. */
  netnsBefore: string[];
  /**
   * Entries of /run/containerd that existed before. containerd 1.6 puts its
   * shims' sockets in /run/containerd/s whatever its config says, and a
   * killed shim leaves its socket behind.
   */
  containerdRunBefore: string[];
  /**
   * When set, only iptables chains named with this prefix (and the rules in
   * them or jumping to them) are the node's: a second node, started while the
   * first one's kube-proxy keeps adding rules, must leave those alone.
   */
  iptablesChainPrefix?: string | undefined;
}

const CGROUP_FS = '/sys/fs/cgroup';
/** Where the container runtime bind-mounts a sandbox's network namespace. */
export const NETNS_DIR = '/run/netns';
const CONTAINERD_RUN = '/run/containerd';

export function sh(cmd: string, args: string[], input?: string): string {
  return execFileSync(cmd, args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });
}

function trySh(cmd: string, args: string[], input?: string): string | undefined {
  try {
    return sh(cmd, args, input);
  } catch {
    return undefined;
  }
}

export function snapshotHost(bridge: string, cgroupRoot: string, mountPrefixes: string[]): HostRecord {
  return {
    sysctls: {},
    iptablesBefore: { v4: trySh('iptables-save', []) ?? '', v6: trySh('ip6tables-save', []) ?? '' },
    bridge,
    cgroupRoot,
    mountPrefixes,
    netnsBefore: existsSync(NETNS_DIR) ? readdirSync(NETNS_DIR) : [],
    containerdRunBefore: containerdRunEntries(),
  };
}

/** Every path under /run/containerd (and the directory itself), parents before children. */
export function containerdRunEntries(): string[] {
  if (!existsSync(CONTAINERD_RUN)) return [];
  const out = [CONTAINERD_RUN];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      out.push(p);
      if (e.isDirectory()) walk(p);
    }
  };
  walk(CONTAINERD_RUN);
  return out;
}

/** Sets a sysctl, remembering its first value in `record` so that {@link restoreHost} puts it back. */
export function setSysctl(record: HostRecord, key: string, value: string): void {
  const path = join('/proc/sys', key.replaceAll('.', '/'));
  if (!(key in record.sysctls)) record.sysctls[key] = readFileSync(path, 'utf8').trim();
  writeFileSync(path, value);
}

/** Creates the node's cgroup in every v1 hierarchy (cpuset needs its CPUs and memory nodes copied in). */
export function createCgroupRoot(name: string): void {
  for (const h of cgroupHierarchies()) {
    const dir = join(CGROUP_FS, h, name);
    if (!existsSync(dir)) execFileSync('mkdir', ['-p', dir]);
    if (h === 'cpuset') {
      for (const f of ['cpuset.cpus', 'cpuset.mems'])
        writeFileSync(join(dir, f), readFileSync(join(CGROUP_FS, h, f), 'utf8').trim());
    }
  }
}

function cgroupHierarchies(): string[] {
  return readdirSync(CGROUP_FS).filter((h) => {
    const p = join(CGROUP_FS, h);
    return statSync(p).isDirectory() && existsSync(join(p, 'cgroup.procs'));
  });
}

/** Pids of every process in the node's cgroup tree, in any hierarchy. */
export function cgroupPids(name: string): number[] {
  const pids = new Set<number>();
  const walk = (dir: string) => {
    try {
      for (const line of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n'))
        if (line.trim()) pids.add(Number(line));
      for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(join(dir, e.name));
    } catch (err) {
      // Gone while walked: the kubelet removes a Pod's cgroup as its containers end, and a
      // removed cgroup holds no process. (A CI run's teardown failed on exactly this race.)
      // ENODEV: a cgroup v1 directory still listed but already being removed, whose files
      // answer a read with it (a teardown here failed on that one too).
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENODEV') throw err;
    }
  };
  for (const h of existsSync(CGROUP_FS) ? cgroupHierarchies() : []) walk(join(CGROUP_FS, h, name));
  return [...pids];
}

/** Cgroup directories of the node that still exist (empty after a clean teardown). */
export function remainingCgroups(name: string): string[] {
  if (!existsSync(CGROUP_FS)) return [];
  return cgroupHierarchies()
    .map((h) => join(CGROUP_FS, h, name))
    .filter((d) => existsSync(d));
}

/** Mount points at or under `prefixes`, deepest first, plus the node's network namespaces. */
export function nodeMounts(record: HostRecord): string[] {
  const targets = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => unescapeMount(l.split(' ')[4]!));
  const before = new Set(record.netnsBefore.map((n) => join(NETNS_DIR, n)));
  const inUse = netnsInUse();
  const ours = targets.filter(
    (t) =>
      record.mountPrefixes.some((p) => t === p || t.startsWith(`${p}/`)) ||
      (t.startsWith(`${NETNS_DIR}/`) && !before.has(t) && !inUse(t)),
  );
  return [...new Set(ours)].sort((a, b) => b.length - a.length);
}

/**
 * Whether a live process is in the network namespace bound at a path: then it
 * is another node's (a Pod's sandbox on the first node, while the second one
 * stops), since the caller killed every process of its own node first.
 */
function netnsInUse(): (path: string) => boolean {
  const live = new Set<number>();
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      live.add(statSync(`/proc/${pid}/ns/net`).ino);
    } catch {
      // exited, or a kernel thread
    }
  }
  return (path) => {
    try {
      return live.has(statSync(path).ino);
    } catch {
      return false;
    }
  };
}

/** Paths of the Unix sockets something listens on (in this network namespace's view). */
function listeningSockets(): Set<string> {
  const paths = new Set<string>();
  try {
    for (const line of readFileSync('/proc/net/unix', 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // Num RefCount Protocol Flags Type St Inode Path; flag 00010000 is __SO_ACCEPTCON (listening).
      if (cols.length >= 8 && cols[3] === '00010000' && cols[7]!.startsWith('/')) paths.add(cols[7]!);
    }
  } catch {
    // no procfs view: keep nothing
  }
  return paths;
}

function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** iptables rules and chains present now that were not in `before`, for one family. */
export function addedIptables(before: string, now: string): { rules: string[]; chains: string[] } {
  const parse = (dump: string) => {
    const rules = new Set<string>();
    const chains = new Set<string>();
    let table = '';
    for (const line of dump.split('\n')) {
      if (line.startsWith('*')) table = line.slice(1);
      // A built-in chain has a policy; only user chains (policy `-`) can be created or deleted.
      else if (line.startsWith(':') && line.split(' ')[1] === '-')
        chains.add(`${table} ${line.slice(1).split(' ')[0]}`);
      else if (line.startsWith('-A ')) rules.add(`${table} ${line}`);
    }
    return { rules, chains };
  };
  const b = parse(before);
  const n = parse(now);
  return {
    rules: [...n.rules].filter((r) => !b.rules.has(r)),
    chains: [...n.chains].filter((c) => !b.chains.has(c)),
  };
}

/** An iptables-restore --noflush script that removes exactly what {@link addedIptables} found. */
export function iptablesUndoScript(added: { rules: string[]; chains: string[] }): string {
  const tables = new Map<string, string[]>();
  const add = (table: string, line: string) => tables.set(table, [...(tables.get(table) ?? []), line]);
  // Rules first (they may jump to the new chains), then the emptied chains.
  for (const r of added.rules) {
    const [table, ...rest] = r.split(' ');
    add(table!, rest.join(' ').replace(/^-A /, '-D '));
  }
  for (const c of added.chains) {
    const [table, chain] = c.split(' ');
    add(table!, `-F ${chain}`);
  }
  for (const c of added.chains) {
    const [table, chain] = c.split(' ');
    add(table!, `-X ${chain}`);
  }
  return [...tables].map(([t, lines]) => `*${t}\n${lines.join('\n')}\nCOMMIT\n`).join('');
}

/**
 * Undoes everything in `record`. The node's processes must be gone first
 * (the caller kills them): busy mounts and cgroups can't be removed.
 * Returns what could not be undone, empty when the machine is as it was.
 */
export function restoreHost(record: HostRecord): string[] {
  const problems: string[] = [];
  for (const target of nodeMounts(record)) {
    if (trySh('umount', [target]) === undefined && trySh('umount', ['-l', target]) === undefined)
      problems.push(`mount ${target}`);
  }
  const inUse = netnsInUse();
  for (const n of existsSync(NETNS_DIR) ? readdirSync(NETNS_DIR) : []) {
    if (!record.netnsBefore.includes(n) && !inUse(join(NETNS_DIR, n)))
      trySh('rm', ['-f', join(NETNS_DIR, n)]);
  }
  // Veths of Pods whose namespace is gone are gone with it; any left are deleted with the bridge's ports.
  for (const port of bridgePorts(record.bridge)) trySh('ip', ['link', 'del', port]);
  if (linkExists(record.bridge)) trySh('ip', ['link', 'del', record.bridge]);
  if (linkExists(record.bridge)) problems.push(`bridge ${record.bridge}`);
  for (const [family, save, restore] of [
    ['v4', 'iptables-save', 'iptables-restore'],
    ['v6', 'ip6tables-save', 'ip6tables-restore'],
  ] as const) {
    const now = trySh(save, []);
    if (now === undefined) continue;
    const added = scoped(addedIptables(record.iptablesBefore[family], now), record.iptablesChainPrefix);
    if (added.rules.length + added.chains.length === 0) continue;
    if (trySh(restore, ['--noflush'], iptablesUndoScript(added)) === undefined) {
      // One stale line fails the whole batch; fall back to one command per line.
      for (const line of iptablesUndoScript(added).split('\n')) {
        if (line.startsWith('*') || line === 'COMMIT' || !line) continue;
        trySh(restore, ['--noflush'], `*${tableOf(added, line)}\n${line}\nCOMMIT\n`);
      }
    }
    const left = scoped(
      addedIptables(record.iptablesBefore[family], trySh(save, []) ?? ''),
      record.iptablesChainPrefix,
    );
    for (const r of [...left.rules, ...left.chains]) problems.push(`${save}: ${r}`);
  }
  // Kept: what was there before, and every socket a live shim (another node's) still listens on.
  const kept = new Set([...record.containerdRunBefore, ...listeningSockets()]);
  for (const p of containerdRunEntries().reverse()) {
    if (kept.has(p) || [...kept].some((k) => k.startsWith(`${p}/`))) continue;
    rmSync(p, { recursive: true, force: true });
    if (existsSync(p)) problems.push(`file ${p}`);
  }
  for (const dir of remainingCgroups(record.cgroupRoot)) {
    removeCgroupTree(dir);
    if (existsSync(dir)) problems.push(`cgroup ${dir}`);
  }
  for (const [key, value] of Object.entries(record.sysctls)) {
    try {
      writeFileSync(join('/proc/sys', key.replaceAll('.', '/')), value);
    } catch {
      // The bridge's own sysctls vanish with the bridge.
      if (!key.includes(`.${record.bridge}.`)) problems.push(`sysctl ${key}`);
    }
  }
  return problems;
}

/** Only the chains named with `prefix` and the rules in or jumping to them; everything when no prefix. */
export function scoped(
  added: { rules: string[]; chains: string[] },
  prefix: string | undefined,
): { rules: string[]; chains: string[] } {
  if (!prefix) return added;
  return {
    rules: added.rules.filter((r) => {
      const words = r.split(' ');
      return (
        words[2]?.startsWith(prefix) || words.some((w, i) => w === '-j' && words[i + 1]?.startsWith(prefix))
      );
    }),
    chains: added.chains.filter((c) => c.split(' ')[1]?.startsWith(prefix)),
  };
}

function tableOf(added: { rules: string[]; chains: string[] }, line: string): string {
  const chain = line.split(' ')[1];
  const hit = [...added.rules, ...added.chains].find((x) => x.split(' ').includes(chain ?? ''));
  return hit?.split(' ')[0] ?? 'filter';
}

function removeCgroupTree(dir: string): void {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    // Already removed (the kubelet's own clean-up may still be finishing): nothing to do.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  for (const e of entries) if (e.isDirectory()) removeCgroupTree(join(dir, e.name));
  try {
    rmdirSync(dir);
  } catch {
    // reported by the caller
  }
}

export function linkExists(name: string): boolean {
  return existsSync(join('/sys/class/net', name));
}

function bridgePorts(bridge: string): string[] {
  const dir = join('/sys/class/net', bridge, 'brif');
  return existsSync(dir) ? readdirSync(dir) : [];
}
