// Helm and the OLM bundle validator, built from the Go module proxy by
// tools/helm/build.sh and tools/olm/build.sh into the versioned cache the first
// time (`npm test` builds both as steps of their own, before the tests), like
// Prometheus and the control plane. REGULON_HELM_BIN and REGULON_OLM_BIN point
// at prebuilt directories instead.
import { join } from 'node:path';
import { runScript } from '@regulon/testenv';

const root = join(import.meta.dirname, '..', '..');

async function binDir(variable: string, tool: string, log: (line: string) => void): Promise<string> {
  const set = process.env[variable];
  if (set) return set;
  const lines = await runScript(join(root, 'tools', tool, 'build.sh'), [], log);
  const dir = lines.pop();
  if (!dir) throw new Error(`tools/${tool}/build.sh printed no bin dir`);
  return dir;
}

/** The pinned helm (tools/helm/versions.env). */
export async function ensureHelm(log: (line: string) => void = () => {}): Promise<string> {
  return join(await binDir('REGULON_HELM_BIN', 'helm', log), 'helm');
}

/** bundle-validate: `operator-sdk bundle validate`'s checks (tools/olm/main.go says why not operator-sdk itself). */
export async function ensureBundleValidate(log: (line: string) => void = () => {}): Promise<string> {
  return join(await binDir('REGULON_OLM_BIN', 'olm', log), 'bundle-validate');
}
