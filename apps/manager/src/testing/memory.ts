// A real-node container's memory, read from its cgroup (v1) on this host: the
// kubelet (cgroupfs driver, cgroupRoot /regulon-node) puts each container at
// /sys/fs/cgroup/memory/regulon-node/kubepods/<qos>/pod<uid>/<container id>.
// No cAdvisor scrape is needed, and the peak comes from the kernel itself.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Pod } from './installation.ts';

const KUBEPODS = '/sys/fs/cgroup/memory/regulon-node/kubepods';

export interface MemoryReading {
  /** usage minus inactive file pages: what the kubelet calls the working set, and evicts on. */
  workingSetBytes: number;
  /** memory.max_usage_in_bytes: the highest usage since the container started, page cache included. */
  maxUsageBytes: number;
  /** memory.limit_in_bytes: the limit the kernel enforces (the OOM killer acts at it). */
  limitBytes: number;
}

/** The cgroup directory of a Pod's first container; throws when the kubelet has not made it. */
export function containerCgroup(pod: Pod): string {
  const id = pod.status.containerStatuses?.[0]?.containerID?.replace(/^\w+:\/\//, '');
  if (!id) throw new Error(`${pod.metadata.name} has no running container`);
  for (const qos of ['burstable', 'besteffort', '']) {
    const dir = join(KUBEPODS, qos, `pod${pod.metadata.uid}`, id);
    if (existsSync(dir)) return dir;
  }
  throw new Error(`no memory cgroup for ${pod.metadata.name} (container ${id}) under ${KUBEPODS}`);
}

export function containerMemory(pod: Pod): MemoryReading {
  const dir = containerCgroup(pod);
  const read = (file: string) => Number(readFileSync(join(dir, file), 'utf8').trim());
  const inactiveFile = Number(
    /^total_inactive_file (\d+)$/m.exec(readFileSync(join(dir, 'memory.stat'), 'utf8'))?.[1] ?? 0,
  );
  const usage = read('memory.usage_in_bytes');
  return {
    workingSetBytes: Math.max(0, usage - inactiveFile),
    maxUsageBytes: read('memory.max_usage_in_bytes'),
    limitBytes: read('memory.limit_in_bytes'),
  };
}
