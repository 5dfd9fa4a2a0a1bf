// Runs beside the real node's kubelet: makes every volume directory that
// appears in the given folder writable by any user (mode 0777).
//
// Why: the control plane's PersistentVolumes are hostPath directories, which
// the kubelet creates root-owned 0755 and never chowns for fsGroup (hostPath
// has no ownership management). Engines run as their own uid (postgres 999)
// under the restricted profile, so they could not write their data directory.
// Rancher's local-path-provisioner, the usual provisioner of development
// clusters, creates its directories 0777 for the same reason; this does the
// same the moment the kubelet creates one (inotify), before any container
// starts in it. By hand because no package does this for hostPath volumes.
import { chmodSync, mkdirSync, readdirSync, statSync, watch } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2];
if (!dir) throw new Error('usage: volume-permissions.ts <volumes dir>');
mkdirSync(dir, { recursive: true });

function open(name: string): void {
  const path = join(dir!, name);
  try {
    if (statSync(path).isDirectory() && (statSync(path).mode & 0o777) !== 0o777) chmodSync(path, 0o777);
  } catch {
    // Gone again (a volume deleted as soon as made): nothing to open.
  }
}

watch(dir, (_event, name) => {
  if (name) open(name);
});
for (const name of readdirSync(dir)) open(name);
process.stdout.write(`volume-permissions: watching ${dir}\n`);
