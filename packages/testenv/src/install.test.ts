// `--check`, what an installed package's start() runs instead of a build:
// it answers from the versioned cache alone, and the "not built" answer is an
// exit code of its own, which ensureBinaries turns into the command to run.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { runBuildScript, type ScriptError } from './binaries.ts';

const SCRIPTS = {
  'control plane': {
    script: ['tools', 'control-plane', 'build.sh'],
    files: ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl', 'etcd', 'kwok'],
    data: ['kwok-stages.yaml', 'kwok-storageclass.yaml'],
  },
  'real node': {
    script: ['tools', 'control-plane', 'build-node.sh'],
    files: ['kubelet', 'kube-proxy', 'coredns'],
    data: [],
  },
};

let cache: string;
let savedCacheDir: string | undefined;

beforeEach(() => {
  cache = mkdtempSync(join(tmpdir(), 'regulon-install-test-'));
  savedCacheDir = process.env['REGULON_CACHE_DIR'];
  process.env['REGULON_CACHE_DIR'] = cache;
});

afterEach(() => {
  if (savedCacheDir === undefined) delete process.env['REGULON_CACHE_DIR'];
  else process.env['REGULON_CACHE_DIR'] = savedCacheDir;
  rmSync(cache, { recursive: true, force: true });
});

for (const [name, { script, files, data }] of Object.entries(SCRIPTS)) {
  test(`${name}: --check on an empty cache exits 3 and builds nothing`, async () => {
    const failed = await runBuildScript(script, () => {}, ['--check']).then(
      () => undefined,
      (err: ScriptError) => err,
    );
    assert.equal(failed?.exitCode, 3);
    assert.deepEqual(readdirSync(cache), []);
  });

  test(`${name}: --check prints the bin dir --print names once every output is there, and not before`, async () => {
    const bin = await runBuildScript(script, () => {}, ['--print']);
    assert.ok(bin.startsWith(join(cache, 'control-plane') + '/'), bin);
    mkdirSync(bin, { recursive: true });
    const [last, ...others] = [...files, ...data].reverse();
    for (const file of others) writeFileSync(join(bin, file), '');
    for (const file of files.filter((f) => others.includes(f))) chmodSync(join(bin, file), 0o755);
    const partial = await runBuildScript(script, () => {}, ['--check']).then(
      () => undefined,
      (err: ScriptError) => err,
    );
    assert.equal(partial?.exitCode, 3, `${last} is missing`);

    writeFileSync(join(bin, last!), '', { mode: 0o755 });
    assert.equal(await runBuildScript(script, () => {}, ['--check']), bin);
  });
}
