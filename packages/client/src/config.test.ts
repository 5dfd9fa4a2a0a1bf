import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type { OutgoingHttpHeaders } from 'node:http';
import type { RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { KubeClient } from './client.ts';
import { DEFAULT_BURST, DEFAULT_QPS, loadKubeConfig } from './config.ts';
import { ConfigError } from './errors.ts';
import type { KubeConfigSource } from './kubeconfig.ts';

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

async function headers(kc: KubeConfigSource): Promise<OutgoingHttpHeaders> {
  const opts: RequestOptions = { headers: {} };
  await kc.applyToHTTPSOptions(opts);
  return opts.headers as OutgoingHttpHeaders;
}

describe('loadKubeConfig', () => {
  let dir: string;
  const saved = {
    KUBECONFIG: process.env.KUBECONFIG,
    HOME: process.env.HOME,
    KSH: process.env.KUBERNETES_SERVICE_HOST,
    KSP: process.env.KUBERNETES_SERVICE_PORT,
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'client-config-'));
    delete process.env.KUBECONFIG;
    delete process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_PORT;
    process.env.HOME = join(dir, 'home');
    mkdirSync(process.env.HOME);
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
    for (const [k, v] of Object.entries({
      KUBECONFIG: saved.KUBECONFIG,
      HOME: saved.HOME,
      KUBERNETES_SERVICE_HOST: saved.KSH,
      KUBERNETES_SERVICE_PORT: saved.KSP,
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
    const given = loadKubeConfig({ kubeconfigPath: path });
    assert.equal(KubeClient.load({ kubeConfig: given, context: 'b' }).server, 'https://c.example:1');
    assert.throws(() => KubeClient.load({ kubeConfig: given, context: 'nope' }), /no context "nope"/);
  });

  it('merges the KUBECONFIG list as kubectl does', async () => {
    const first = join(dir, 'first');
    const second = join(dir, 'second');
    // No current-context here; the second file's wins. The first file's "shared"
    // cluster and user win over the second's.
    writeFileSync(
      first,
      JSON.stringify({
        clusters: [{ name: 'shared', cluster: { server: 'https://first.example' } }],
        users: [{ name: 'me', user: { token: 'first-token' } }],
        contexts: [{ name: 'only-first', context: { cluster: 'shared', user: 'me' } }],
      }),
    );
    writeFileSync(
      second,
      JSON.stringify({
        'current-context': 'from-second',
        clusters: [{ name: 'shared', cluster: { server: 'https://second.example' } }],
        users: [{ name: 'me', user: { token: 'second-token' } }],
        contexts: [{ name: 'from-second', context: { cluster: 'shared', user: 'me' } }],
      }),
    );
    process.env.KUBECONFIG = [join(dir, 'absent'), first, '', second].join(delimiter);
    const kc = loadKubeConfig();
    assert.equal(kc.getCurrentCluster()?.server, 'https://first.example');
    assert.equal((await headers(kc)).Authorization, 'Bearer first-token');
    assert.ok(kc.getContextObject('only-first'));
    assert.ok(kc.getContextObject('from-second'));

    process.env.KUBECONFIG = [second, first].join(delimiter);
    assert.equal(loadKubeConfig().getCurrentCluster()?.server, 'https://second.example');
    assert.equal(
      loadKubeConfig({ context: 'only-first' }).getCurrentCluster()?.server,
      'https://second.example',
    );

    process.env.KUBECONFIG = join(dir, 'absent');
    assert.throws(() => loadKubeConfig(), ConfigError);
  });

  it('uses the in-cluster service account last', async () => {
    const sa = join(dir, 'serviceaccount');
    mkdirSync(sa);
    writeFileSync(join(sa, 'token'), 'token-1');
    writeFileSync(join(sa, 'ca.crt'), 'CLUSTER-CA');
    writeFileSync(join(sa, 'namespace'), 'team-a');
    process.env.KUBERNETES_SERVICE_HOST = '10.96.0.1';
    process.env.KUBERNETES_SERVICE_PORT = '443';
    const kc = loadKubeConfig({}, sa);
    assert.equal(kc.getCurrentCluster()?.server, 'https://10.96.0.1:443');
    assert.equal(kc.getContextObject('in-cluster')?.namespace, 'team-a');
    const opts: RequestOptions = { headers: {} };
    await kc.applyToHTTPSOptions(opts);
    assert.equal(String(opts.ca), 'CLUSTER-CA');
    // Rotation (the token file is read again once a minute) is tested in kubeconfig.test.ts.
    assert.equal((opts.headers as OutgoingHttpHeaders).Authorization, 'Bearer token-1');

    process.env.KUBERNETES_SERVICE_HOST = 'fd00::1';
    assert.equal(loadKubeConfig({}, sa).getCurrentCluster()?.server, 'https://[fd00::1]:443');
    // Without a token file it is not a pod: no silent anonymous fallback.
    assert.throws(() => loadKubeConfig({}, join(dir, 'nowhere')), /no Kubernetes configuration/);
  });

  it('does not evaluate @kubernetes/client-node', () => {
    // Its KubeConfig module costs about 80 MiB of RSS; only plugin auth may load it.
    const script = `
      import { registerHooks } from 'node:module';
      let loaded = 0;
      registerHooks({ load(url, ctx, next) { if (url.includes('@kubernetes/client-node')) loaded++; return next(url, ctx); } });
      const { loadKubeConfig } = await import(${JSON.stringify(new URL('./index.ts', import.meta.url).href)});
      const kc = loadKubeConfig({ kubeconfigPath: process.argv[1] });
      await kc.applyToHTTPSOptions({ headers: {} });
      process.stdout.write(String(loaded)); // not console.log: FORCE_COLOR (set in CI) would colour a number
    `;
    const path = join(dir, 'plain');
    writeFileSync(path, kubeconfig('https://plain.example:6443'));
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, path], {
      encoding: 'utf8',
    });
    assert.equal(child.status, 0, child.stderr);
    assert.equal(child.stdout.trim(), '0');
  });

  it('loads yaml only to read a kubeconfig file', () => {
    // An in-cluster client reads no YAML, so it need not load the parser.
    // The second count proves the hook sees yaml when it does load.
    const script = `
      import { registerHooks } from 'node:module';
      let loaded = 0;
      registerHooks({ load(url, ctx, next) { if (url.includes('/node_modules/yaml/')) loaded++; return next(url, ctx); } });
      const { loadKubeConfig } = await import(${JSON.stringify(new URL('./index.ts', import.meta.url).href)});
      await loadKubeConfig({}, process.argv[1]).applyToHTTPSOptions({ headers: {} });
      const inCluster = loaded;
      loadKubeConfig({ kubeconfigPath: process.argv[2] });
      process.stdout.write(JSON.stringify([inCluster, loaded > 0]));
    `;
    const sa = join(dir, 'serviceaccount');
    mkdirSync(sa);
    writeFileSync(join(sa, 'token'), 'token-1');
    writeFileSync(join(sa, 'ca.crt'), 'CLUSTER-CA');
    const path = join(dir, 'plain');
    writeFileSync(path, kubeconfig('https://plain.example:6443'));
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, sa, path], {
      encoding: 'utf8',
      env: { ...process.env, KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' },
    });
    assert.equal(child.status, 0, child.stderr);
    assert.deepEqual(JSON.parse(child.stdout), [0, true]);
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
