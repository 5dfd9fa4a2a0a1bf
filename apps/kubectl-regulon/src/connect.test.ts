import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError } from '@regulon/client';
import { connect } from './connect.ts';

const dir = mkdtempSync(join(tmpdir(), 'kubectl-regulon-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const kubeconfig = join(dir, 'config');
writeFileSync(
  kubeconfig,
  `apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: c
  cluster: { server: https://127.0.0.1:6443 }
users:
- name: u
  user: { token: not-used }
contexts:
- name: prod
  context: { cluster: c, user: u, namespace: shop }
- name: bare
  context: { cluster: c, user: u }
`,
);

const namespaceOf = (global: Parameters<typeof connect>[0]) => {
  const { client, namespace } = connect(global);
  client.close();
  return namespace;
};

describe('connect', () => {
  test("the namespace: -n, else the context's, else default", () => {
    assert.equal(namespaceOf({ kubeconfig }), 'shop');
    assert.equal(namespaceOf({ kubeconfig, namespace: 'other' }), 'other');
    assert.equal(namespaceOf({ kubeconfig, context: 'bare' }), 'default');
  });

  test('an unknown --context is a ConfigError naming it', () => {
    assert.throws(
      () => connect({ kubeconfig, context: 'nope' }),
      (err: unknown) => {
        return err instanceof ConfigError && /no context "nope"/.test(err.message);
      },
    );
  });
});
