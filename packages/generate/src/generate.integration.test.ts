// The generated base against a real API server: it applies server-side as a
// kustomization (the Deployment without a Pod Security warning in its
// restricted namespace), and SubjectAccessReviews show that the generated
// ServiceAccount may do exactly what the rules declare: every declared verb on
// every declared resource, no other of the grantable verbs on them, nothing
// on anything else, Leases only in its own namespace.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { defineKind, Type } from '@regulon/crd';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import { generate, syncGenerated } from './generate.ts';
import { ALLOWED_VERBS, type PolicyRule } from './rbac.ts';

const suffix = randomBytes(3).toString('hex');
const GROUP = `gen${suffix}.example.com`;
const NAME = `widget-operator-${suffix}`;
const NAMESPACE = `widget-system-${suffix}`;
const OTHER_NAMESPACE = 'default';

const Widget = defineKind({
  group: GROUP,
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  singular: 'widget',
  scope: 'Namespaced',
  spec: Type.Object({ size: Type.Integer({ minimum: 1 }) }),
  status: Type.Object({ ready: Type.Optional(Type.Boolean()) }),
});

const RULES: PolicyRule[] = [
  { apiGroups: [GROUP], resources: ['widgets'], verbs: ['list', 'watch'] },
  { apiGroups: [GROUP], resources: ['widgets/status'], verbs: ['patch'] },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['list', 'watch', 'create', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['secrets'], resourceNames: ['widget-credentials'], verbs: ['get'] },
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
];

let env: TestEnv;
const out = mkdtempSync(join(tmpdir(), 'regulon-generate-apply-'));

before(async () => {
  env = await start();
  syncGenerated(
    out,
    generate({
      kinds: [Widget],
      rbac: { rules: RULES },
      manager: { name: NAME, namespace: NAMESPACE, image: 'widget-operator:dev' },
    }),
  );
});

after(async () => {
  await env?.kubectl(['delete', '-k', out, '--ignore-not-found', '--wait=false']);
  rmSync(out, { recursive: true, force: true });
  await env?.stop();
});

interface Access {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  name?: string;
  namespace?: string;
}

async function allowed(access: Access): Promise<boolean> {
  const review = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user: `system:serviceaccount:${NAMESPACE}:${NAME}`,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${NAMESPACE}`, 'system:authenticated'],
      resourceAttributes: access,
    },
  };
  const r = await env.kubectl(['create', '-f', '-', '-o', 'json'], JSON.stringify(review));
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { status: { allowed: boolean } }).status.allowed;
}

test('the base applies server-side, and its Deployment passes the restricted Pod Security Standard', async () => {
  const applied = await env.kubectl(['apply', '--server-side', '-k', out]);
  assert.equal(applied.code, 0, applied.stderr);
  assert.doesNotMatch(applied.stderr, /PodSecurity|violate/i);
  for (const object of [
    `customresourcedefinition.apiextensions.k8s.io/widgets.${GROUP}`,
    `clusterrole.rbac.authorization.k8s.io/${NAME}`,
    `clusterrolebinding.rbac.authorization.k8s.io/${NAME}`,
    `role.rbac.authorization.k8s.io/${NAME}-leader-election`,
    `rolebinding.rbac.authorization.k8s.io/${NAME}-leader-election`,
    `serviceaccount/${NAME}`,
    `deployment.apps/${NAME}`,
    `service/${NAME}-metrics`,
  ])
    assert.match(applied.stdout, new RegExp(`^${object.replaceAll('.', '\\.')} serverside-applied$`, 'm'));
  // The CRD serves its kind.
  const established = await env.kubectl([
    'wait',
    '--for=condition=Established',
    `crd/widgets.${GROUP}`,
    '--timeout=30s',
  ]);
  assert.equal(established.code, 0, established.stderr);
});

test('SubjectAccessReviews: the ServiceAccount may do exactly what the rules declare', async () => {
  const [first] = RULES;
  // The authorizer sees new roles through its informers: wait for the first grant, then ask everything.
  await eventually(
    'the generated roles in the authorizer',
    () => allowed({ verb: 'list', group: first!.apiGroups![0]!, resource: 'widgets' }),
    30_000,
  );
  const wrong: string[] = [];
  const expect = async (access: Access, want: boolean) => {
    if ((await allowed(access)) !== want)
      wrong.push(`${want ? 'denied' : 'allowed'}: ${JSON.stringify(access)}`);
  };
  for (const rule of RULES)
    for (const group of rule.apiGroups!)
      for (const full of rule.resources!) {
        const [resource, subresource] = full.split('/') as [string, string | undefined];
        for (const verb of ALLOWED_VERBS) {
          const declared = rule.verbs.includes(verb);
          const access = {
            verb,
            group,
            resource,
            namespace: OTHER_NAMESPACE,
            ...(subresource ? { subresource } : {}),
          };
          if (rule.resourceNames) {
            // Only the named object, and only with the declared verbs.
            for (const name of rule.resourceNames) await expect({ ...access, name }, declared);
            await expect({ ...access, name: 'another' }, false);
          } else await expect(access, declared);
        }
      }
  // Nothing undeclared: other resources, other subresources, the privilege verbs.
  for (const access of [
    { verb: 'get', group: '', resource: 'pods', namespace: OTHER_NAMESPACE },
    { verb: 'list', group: '', resource: 'secrets', namespace: OTHER_NAMESPACE },
    { verb: 'update', group: GROUP, resource: 'widgets', subresource: 'status', namespace: OTHER_NAMESPACE },
    {
      verb: 'patch',
      group: 'apps',
      resource: 'deployments',
      subresource: 'scale',
      namespace: OTHER_NAMESPACE,
    },
    { verb: 'create', group: '', resource: 'events', namespace: OTHER_NAMESPACE },
    { verb: 'deletecollection', group: 'apps', resource: 'deployments', namespace: OTHER_NAMESPACE },
    { verb: 'escalate', group: 'rbac.authorization.k8s.io', resource: 'clusterroles' },
    { verb: 'bind', group: 'rbac.authorization.k8s.io', resource: 'clusterroles' },
    { verb: 'impersonate', group: '', resource: 'serviceaccounts', namespace: NAMESPACE },
    { verb: 'create', group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' },
  ])
    await expect(access, false);
  // Leader election (and sharding): its Leases, in its own namespace only.
  for (const verb of ALLOWED_VERBS) {
    await expect(
      { verb, group: 'coordination.k8s.io', resource: 'leases', namespace: NAMESPACE },
      ['get', 'list', 'create', 'update', 'delete'].includes(verb),
    );
    await expect(
      { verb, group: 'coordination.k8s.io', resource: 'leases', namespace: OTHER_NAMESPACE },
      false,
    );
  }
  assert.deepEqual(wrong, []);
});
