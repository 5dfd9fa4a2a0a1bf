import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { KubeClient } from './client.ts';
import { DEFAULT_BURST, DEFAULT_QPS, loadKubeConfig } from './config.ts';
import { ConfigError } from './errors.ts';

function kubeconfig(server: string, contexts: string[] = ['main'], token = 'do-not-leak-me'): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': contexts[0],
    clusters: contexts.map((c, i) => ({
      name: c,
      cluster: { server: `${server}${i || ''}`, 'insecure-skip-tls-verify': true },
    })),
    users: [{ name: 'u', user: { token } }],
    contexts: contexts.map((c) => ({ name: c, context: { cluster: c, user: 'u' } })),
  });
}

describe('loadKubeConfig', () => {
  let dir: string;
  const saved = {
    KUBECONFIG: process.env.KUBECONFIG,
    HOME: process.env.HOME,
    KSH: process.env.KUBERNETES_SERVICE_HOST,
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'client-config-'));
    delete process.env.KUBECONFIG;
    delete process.env.KUBERNETES_SERVICE_HOST;
    process.env.HOME = join(dir, 'home');
    mkdirSync(process.env.HOME);
  });
  afterEach(() => {
    for (const [k, v] of Object.entries({
      KUBECONFIG: saved.KUBECONFIG,
      HOME: saved.HOME,
      KUBERNETES_SERVICE_HOST: saved.KSH,
    })) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('an explicit path wins over KUBECONFIG', () => {
    const explicit = join(dir, 'explicit');
    const env = join(dir, 'env');
    writeFileSync(explicit, kubeconfig('https://explicit.example:6443'));
    writeFileSync(env, kubeconfig('https://env.example:6443'));
    process.env.KUBECONFIG = env;
    assert.equal(
      loadKubeConfig({ kubeconfigPath: explicit }).getCurrentCluster()?.server,
      'https://explicit.example:6443',
    );
    assert.equal(loadKubeConfig().getCurrentCluster()?.server, 'https://env.example:6443');
  });

  it('falls back to ~/.kube/config', () => {
    mkdirSync(join(process.env.HOME!, '.kube'));
    writeFileSync(join(process.env.HOME!, '.kube', 'config'), kubeconfig('https://home.example:6443'));
    const client = KubeClient.load();
    assert.equal(client.server, 'https://home.example:6443');
  });

  it('selects a context', () => {
    const path = join(dir, 'multi');
    writeFileSync(path, kubeconfig('https://c.example:', ['a', 'b']));
    assert.equal(loadKubeConfig({ kubeconfigPath: path, context: 'b' }).getCurrentCluster()?.name, 'b');
    assert.throws(() => loadKubeConfig({ kubeconfigPath: path, context: 'nope' }), ConfigError);
  });

  it('fails clearly with no configuration at all', () => {
    assert.throws(
      () => loadKubeConfig(),
      (e: unknown) => e instanceof ConfigError && /no Kubernetes configuration/.test(e.message),
    );
  });

  it('does not put file contents in errors', () => {
    const path = join(dir, 'broken');
    writeFileSync(path, 'clusters:\n  - token: do-not-leak-me\n   bad: [indent\n');
    assert.throws(
      () => loadKubeConfig({ kubeconfigPath: path }),
      (e: unknown) =>
        e instanceof ConfigError && !e.message.includes('do-not-leak-me') && e.cause === undefined,
    );
  });

  it('documents its defaults', () => {
    assert.equal(DEFAULT_QPS, 50);
    assert.equal(DEFAULT_BURST, 100);
  });
});
