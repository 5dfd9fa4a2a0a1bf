// Keeps package-lock.json valid for `npm ci` on every platform.
//
// The registry this project installs from mirrors only the Linux builds of
// Nx's native binary. npm leaves the other platforms' optional packages out of
// the lock when it can't fetch them, and `npm ci` then refuses the lock as out
// of sync. This adds lock entries for them, marked optional and limited to
// their os/cpu, so npm ci skips them on Linux exactly as it would with a
// complete lock. Run after `npm install` changes the lock:
//   node tools/scripts/lock-platforms.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

interface LockEntry {
  version?: string;
  optionalDependencies?: Record<string, string>;
  [key: string]: unknown;
}

const platform = (name: string): { os: string[]; cpu: string[]; libc?: string[] } | undefined => {
  const m = /-(darwin|linux|win32|freebsd)-(arm64|x64|arm)(?:-(gnu|musl|gnueabihf|msvc))?$/.exec(name);
  if (!m) return undefined;
  const [, os, cpu, abi] = m;
  return {
    os: [os!],
    cpu: [cpu!],
    ...(abi === 'gnu' || abi === 'gnueabihf'
      ? { libc: ['glibc'] }
      : abi === 'musl'
        ? { libc: ['musl'] }
        : {}),
  };
};

const path = join(import.meta.dirname, '..', '..', 'package-lock.json');
const lock = JSON.parse(readFileSync(path, 'utf8')) as { packages: Record<string, LockEntry> };
let added = 0;
for (const [key, entry] of Object.entries(lock.packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const depKey = `${key ? `${key}/` : ''}node_modules/${dep}`.replace(/^\//, '');
    const hoisted = `node_modules/${dep}`;
    if (lock.packages[depKey] || lock.packages[hoisted]) continue;
    const target = platform(dep);
    if (!target) continue;
    const base = dep.split('/').pop()!;
    lock.packages[hoisted] = {
      version,
      resolved: `https://registry.npmjs.org/${dep}/-/${base}-${version}.tgz`,
      ...target,
      dev: Boolean(entry['dev']),
      optional: true,
    };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`lock-platforms: added ${added} optional platform entries`);
