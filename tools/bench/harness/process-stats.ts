import { readFileSync } from 'node:fs';

/** Linux's USER_HZ: /proc reports CPU time in these ticks. 100 on every mainstream build. */
const TICKS_PER_SECOND = 100;

export interface ProcessStats {
  /** User + system CPU time since the process started. */
  cpuSeconds: number;
  /** Resident memory now, and its peak (the kernel's high-water mark, VmHWM). */
  rssBytes: number;
  peakRssBytes: number;
}

/** The same instrument for every subject, whatever its runtime: the kernel's own accounting. */
export function processStats(pid: number): ProcessStats {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may contain spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string) =>
    Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return {
    cpuSeconds: (utime + stime) / TICKS_PER_SECOND,
    rssBytes: kib('VmRSS'),
    peakRssBytes: kib('VmHWM'),
  };
}
