import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { OutgoingHttpHeaders } from 'node:http';
import type { RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ConfigError } from './errors.ts';
import { CREDENTIAL_FILE_REFRESH_MS, LeanKubeConfig, readKubeConfigFiles } from './kubeconfig.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** TLS material is read as bytes, never as text. */
function text(v: unknown): string {
  assert.ok(Buffer.isBuffer(v), 'a Buffer');
  return v.toString();
}

/** One cluster, one user, one context named `main`. */
function config(cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'main',
    clusters: [{ name: 'c', cluster: { server: 'https://k.example:6443', ...cluster } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'main', context: { cluster: 'c', user: 'u' } }],
  });
}

async function apply(kc: LeanKubeConfig): Promise<RequestOptions & { headers: OutgoingHttpHeaders }> {
  const opts: RequestOptions = { headers: {} };
  await kc.applyToHTTPSOptions(opts);
  return opts as RequestOptions & { headers: OutgoingHttpHeaders };
}

describe('LeanKubeConfig', () => {
  let dir: string;
  const load = (text: string, name = 'config'): LeanKubeConfig => {
    writeFileSync(join(dir, name), text);
    return new LeanKubeConfig(readKubeConfigFiles([join(dir, name)]));
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'client-kubeconfig-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('resolves relative certificate paths against the kubeconfig file', async () => {
    mkdirSync(join(dir, 'kube'));
    mkdirSync(join(dir, 'pki'));
    writeFileSync(join(dir, 'kube', 'ca.crt'), 'CA');
    writeFileSync(join(dir, 'pki', 'admin.crt'), 'CERT');
    writeFileSync(join(dir, 'pki', 'admin.key'), 'KEY');
    const kc = load(
      config(
        { 'certificate-authority': 'ca.crt' },
        { 'client-certificate': '../pki/admin.crt', 'client-key': join(dir, 'pki', 'admin.key') },
      ),
      'kube/config',
    );
    const opts = await apply(kc);
    assert.equal(text(opts.ca), 'CA');
    assert.equal(text(opts.cert), 'CERT');
    assert.equal(text(opts.key), 'KEY');
    assert.equal(opts.rejectUnauthorized, undefined);
    assert.equal(opts.headers.Authorization, undefined);
  });

  it('decodes the -data fields', async () => {
    const kc = load(
      config(
        { 'certificate-authority-data': b64('CA') },
        { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') },
      ),
    );
    const opts = await apply(kc);
    assert.deepEqual([text(opts.ca), text(opts.cert), text(opts.key)], ['CA', 'CERT', 'KEY']);
  });

  it('maps insecure-skip-tls-verify and tls-server-name to the https options', async () => {
    const kc = load(config({ 'insecure-skip-tls-verify': true, 'tls-server-name': 'api.internal' }, {}));
    const opts = await apply(kc);
    assert.equal(opts.rejectUnauthorized, false);
    assert.equal(opts.servername, 'api.internal');
    assert.deepEqual(kc.getCurrentCluster(), {
      name: 'c',
      server: 'https://k.example:6443',
      skipTLSVerify: true,
      tlsServerName: 'api.internal',
      proxyUrl: undefined,
      caFile: undefined,
      caData: undefined,
    });
  });

  it('sends a bearer token', async () => {
    const opts = await apply(load(config({}, { token: 'abc' })));
    assert.equal(opts.headers.Authorization, 'Bearer abc');
    assert.equal(opts.auth, undefined);
  });

  it('re-reads tokenFile and certificates once a minute, and the token file wins over token', async () => {
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'first\n');
    writeFileSync(join(dir, 'client.crt'), 'CERT-1');
    let now = 1_000_000;
    writeFileSync(
      join(dir, 'config'),
      config({}, { token: 'inline', tokenFile: 'token', 'client-certificate': 'client.crt' }),
    );
    const kc = new LeanKubeConfig(readKubeConfigFiles([join(dir, 'config')]), () => now);
    const first = await apply(kc);
    assert.equal(first.headers.Authorization, 'Bearer first');
    assert.equal(text(first.cert), 'CERT-1');

    writeFileSync(tokenFile, 'second');
    writeFileSync(join(dir, 'client.crt'), 'CERT-2');
    now += CREDENTIAL_FILE_REFRESH_MS - 1;
    const cached = await apply(kc);
    assert.equal(cached.headers.Authorization, 'Bearer first', 'read again before a minute passed');
    assert.equal(cached.cert, first.cert, 'the same Buffer, so the transport keeps its agent');

    now += 1;
    const rotated = await apply(kc);
    assert.equal(rotated.headers.Authorization, 'Bearer second');
    assert.equal(text(rotated.cert), 'CERT-2');
  });

  it('does not remember a failed read: the next request reads the file again', async () => {
    const kc = load(config({}, { tokenFile: 'later' }));
    await assert.rejects(apply(kc), /cannot read tokenFile .*later: ENOENT/);
    writeFileSync(join(dir, 'later'), 'now-there');
    assert.equal((await apply(kc)).headers.Authorization, 'Bearer now-there');
  });

  it('uses basic auth for username and password', async () => {
    const opts = await apply(load(config({}, { username: 'admin', password: 's3cret' })));
    assert.equal(opts.auth, 'admin:s3cret');
    assert.equal(opts.headers.Authorization, undefined);
  });

  it('sends impersonation headers', async () => {
    const opts = await apply(load(config({}, { token: 't', as: 'jane', 'as-groups': ['a', 'b'] })));
    assert.equal(opts.headers['Impersonate-User'], 'jane');
    assert.deepEqual(opts.headers['Impersonate-Group'], ['a', 'b']);
  });

  it('reports an unreadable credential file by path, as a ConfigError', async () => {
    const kc = load(config({}, { 'client-certificate': 'missing.crt', 'client-key': 'missing.key' }));
    await assert.rejects(
      apply(kc),
      (e: unknown) =>
        e instanceof ConfigError && /client-(certificate|key) .*missing\.(crt|key): ENOENT/.test(e.message),
    );
  });

  it('names a missing user', async () => {
    const kc = load(
      JSON.stringify({
        'current-context': 'x',
        clusters: [{ name: 'c', cluster: { server: 'https://k.example' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'ghost' } }],
      }),
    );
    await assert.rejects(
      apply(kc),
      (e: unknown) => e instanceof ConfigError && /no user "ghost"/.test(e.message),
    );
  });

  it('never quotes the file in an error', () => {
    for (const text of [
      'users:\n  - name: u\n    user: { token: do-not-leak-me\n',
      'do-not-leak-me',
      'users: [{ name: u, user: { token: [do-not-leak-me] } }]',
    ]) {
      assert.throws(
        () => load(text),
        (e: unknown) =>
          e instanceof ConfigError && !e.message.includes('do-not-leak-me') && e.cause === undefined,
      );
    }
  });

  it('hands exec users to client-node, which runs the plugin', async () => {
    const plugin = join(dir, 'plugin.mjs');
    writeFileSync(
      plugin,
      `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'from-exec-' + process.argv[2] } }));`,
    );
    const kc = load(
      config(
        { 'certificate-authority-data': b64('CA') },
        {
          exec: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: process.execPath,
            args: [plugin, '42'],
            interactiveMode: 'Never',
          },
        },
      ),
    );
    const opts = await apply(kc);
    assert.equal(opts.headers.Authorization, 'Bearer from-exec-42');
    assert.equal(text(opts.ca), 'CA');
  });

  it('resolves a relative exec command against the kubeconfig file', async () => {
    mkdirSync(join(dir, 'bin'));
    writeFileSync(
      join(dir, 'bin', 'plugin'),
      `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"relative"}}'\n`,
    );
    chmodSync(join(dir, 'bin', 'plugin'), 0o755);
    const kc = load(
      config({}, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: './bin/plugin' } }),
    );
    assert.equal((await apply(kc)).headers.Authorization, 'Bearer relative');
  });
});
