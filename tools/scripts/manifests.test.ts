// The generated deploy/ files keep their promises without a cluster: roles
// grant exactly what the controllers declare (no wildcards, no privilege
// verbs), every controller has its flags in the Deployment, every CRD is in
// the kustomization, and the image recipe ships what the manager imports.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CONTROLLERS, OPTIONS } from '@regulon/manager';
import { parse, parseAllDocuments } from 'yaml';
import { ALERTS, INSTANCE_ALERTS } from './alerts.ts';
import { DASHBOARD_ROWS } from './dashboards.ts';
import { controllerEnv, FLAGS_PATCH, RBAC_FILE } from './manifests.ts';
import { ALLOWED_VERBS, LEADER_ELECTION_RULES, mergeRules, validateRules, type PolicyRule } from './rbac.ts';
import { MANAGER_NODE_FLAGS } from '../bench/harness/manager-build.ts';

const root = join(import.meta.dirname, '..', '..');
const deploy = (p: string) => join(root, 'deploy', p);

interface Role {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules: PolicyRule[];
}

const roles = parseAllDocuments(readFileSync(deploy(RBAC_FILE), 'utf8')).map((d) => d.toJS() as Role);
const triples = (rules: readonly PolicyRule[]) =>
  new Set(
    rules.flatMap((r) =>
      r.apiGroups!.flatMap((g) => r.resources!.flatMap((res) => r.verbs.map((v) => `${g}/${res}:${v}`))),
    ),
  );

test('the ClusterRole grants exactly the union of what the controllers declare', () => {
  const clusterRole = roles.find((r) => r.kind === 'ClusterRole');
  assert.ok(clusterRole, 'a ClusterRole is generated');
  const granted = triples(clusterRole.rules);
  const declared = triples(CONTROLLERS.flatMap((c) => c.rbac));
  assert.deepEqual([...granted].sort(), [...declared].sort());
});

test('no generated role has a wildcard, a privilege verb or a non-resource URL', () => {
  for (const role of roles) {
    const text = JSON.stringify(role.rules);
    assert.ok(!text.includes('*'), `${role.kind} ${role.metadata.name} has no wildcard`);
    for (const r of role.rules) {
      assert.ok(!('nonResourceURLs' in r), `${role.metadata.name}: no nonResourceURLs`);
      for (const v of r.verbs) assert.ok((ALLOWED_VERBS as readonly string[]).includes(v), `verb ${v}`);
    }
  }
});

test('leader election (and --sharding) gets a namespaced Role for Leases only: get, list, create, update, delete', () => {
  const role = roles.find((r) => r.kind === 'Role');
  assert.ok(role);
  assert.equal(role.metadata.namespace, 'regulon-system');
  assert.deepEqual([...triples(role.rules)].sort(), [...triples(LEADER_ELECTION_RULES)].sort());
  assert.deepEqual([...triples(role.rules)].sort(), [
    'coordination.k8s.io/leases:create',
    'coordination.k8s.io/leases:delete',
    'coordination.k8s.io/leases:get',
    'coordination.k8s.io/leases:list',
    'coordination.k8s.io/leases:update',
  ]);
});

test('a declaration with a wildcard or a privilege verb is refused at generation time', () => {
  const bad: PolicyRule[][] = [
    [{ apiGroups: ['*'], resources: ['pods'], verbs: ['get'] }],
    [{ apiGroups: [''], resources: ['pods'], verbs: ['*'] }],
    [{ apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['escalate'] }],
    [{ apiGroups: [''], resources: ['users'], verbs: ['impersonate'] }],
    [{ apiGroups: [''], resources: ['secrets'], verbs: ['deletecollection'] }],
    [{ apiGroups: [''], verbs: ['get'] }],
  ];
  for (const rules of bad)
    assert.throws(() => validateRules('test', rules), /not allowed|not one of|must all be listed/);
});

test('rules from several controllers merge per resource with the union of verbs, in a stable order', () => {
  const merged = mergeRules([
    {
      name: 'b',
      rules: [{ apiGroups: ['apps'], resources: ['deployments', 'statefulsets'], verbs: ['watch', 'list'] }],
    },
    { name: 'a', rules: [{ apiGroups: ['apps'], resources: ['statefulsets'], verbs: ['patch', 'list'] }] },
  ]);
  assert.deepEqual(merged, [
    { rule: { apiGroups: ['apps'], resources: ['deployments'], verbs: ['list', 'watch'] }, from: ['b'] },
    {
      rule: { apiGroups: ['apps'], resources: ['statefulsets'], verbs: ['list', 'watch', 'patch'] },
      from: ['a', 'b'],
    },
  ]);
});

test('the Deployment carries every controller feature flag, and the kustomization every CRD', () => {
  const patch = parse(readFileSync(deploy(FLAGS_PATCH), 'utf8')) as {
    spec: { template: { spec: { containers: Array<{ env: Array<{ name: string; value: string }> }> } } };
  };
  const env = patch.spec.template.spec.containers[0]!.env;
  for (const c of CONTROLLERS)
    for (const e of controllerEnv(c.name))
      assert.deepEqual(
        env.find((x) => x.name === e.name),
        e,
      );
  assert.ok(env.some((e) => e.name === 'REGULON_DATABASE_ENABLED' && e.value === 'true'));

  const k = parse(readFileSync(deploy('kustomization.yaml'), 'utf8')) as {
    resources: string[];
    namespace: string;
  };
  assert.equal(k.namespace, 'regulon-system');
  for (const crd of readdirSync(deploy('crds')).filter((f) => f.endsWith('.yaml')))
    assert.ok(k.resources.includes(`crds/${crd}`), `kustomization lists crds/${crd}`);
  assert.ok(!k.resources.some((r) => r.startsWith('monitoring')), 'monitoring stays out of the base');
});

test('the image: multi-stage, production dependencies only, non-root, tini, every package the manager imports compiled, and the manager bundled', () => {
  const dockerfile = readFileSync(join(root, 'apps', 'manager', 'Dockerfile'), 'utf8');
  const froms = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]!);
  assert.ok(froms.length >= 2, 'multi-stage');
  for (const f of froms) assert.match(f, /^node:\$\{NODE_VERSION\}-\w+-slim$/);
  assert.match(dockerfile, /^ARG NODE_VERSION=24\./m);
  assert.match(dockerfile, /npm ci --omit=dev/);
  const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  assert.match(
    finalStage,
    /^USER [1-9]\d*:[1-9]\d*$/m,
    'numeric non-root user, so runAsNonRoot can verify it',
  );
  // Bundled: the manager's build bundles its compiled entry point (apps/manager/bundle.ts), and the image runs that.
  assert.match(
    finalStage,
    /^ENTRYPOINT \["\/usr\/bin\/tini", "--", "node", (?:"--[\w-]+=\w+", )*"apps\/manager\/dist\/bundle\/main.js"\]$/m,
  );
  // The benchmark runs the manager with the image's Node flags, so it measures what ships.
  const entrypointFlags = [
    ...(/^ENTRYPOINT \[.*"node", ((?:"--[\w-]+=\w+", )*)"apps/m.exec(finalStage)?.[1] ?? '').matchAll(
      /"([^"]+)"/g,
    ),
  ].map((m) => m[1]!);
  assert.deepEqual(entrypointFlags, [...MANAGER_NODE_FLAGS]);
  const managerScripts = (
    JSON.parse(readFileSync(join(root, 'apps', 'manager', 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    }
  ).scripts;
  assert.match(managerScripts['build']!, /^tsc -p tsconfig\.build\.json && node bundle\.ts$/);
  assert.doesNotMatch(finalStage, /src/, 'no TypeScript sources in the image');

  // Every workspace package the manager depends on, transitively, is built and is in a directory the image copies.
  const buildCommand = /npm run build((?:[ \\\n]+--workspace=\S+)+)/.exec(dockerfile)?.[1] ?? '';
  const built = new Set([...buildCommand.matchAll(/--workspace=(\S+)/g)].map((m) => m[1]!));
  const copied = [...finalStage.matchAll(/^COPY --from=\w+ \/(?:app|out)\/(\S+) /gm)].map((m) => m[1]!);
  const workspaces = new Map<string, string>();
  for (const dir of ['packages', 'apps'])
    for (const name of readdirSync(join(root, dir))) {
      try {
        const pkg = JSON.parse(readFileSync(join(root, dir, name, 'package.json'), 'utf8')) as {
          name: string;
        };
        workspaces.set(pkg.name, `${dir}/${name}`);
      } catch {
        // a directory without package.json is no workspace
      }
    }
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    const dir = workspaces.get(name)!;
    assert.ok(
      copied.some((c) => dir.startsWith(c)),
      `${name} (${dir}) is copied into the image`,
    );
    assert.ok(built.has(name), `${name} is built in the image (npm run build --workspace=${name})`);
    const pkg = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      exports: Record<string, string | Record<string, string>>;
    };
    assert.equal(
      (pkg.exports['.'] as Record<string, string>)['regulon-dist'],
      './dist/index.js',
      `${name} exports its dist/ under the regulon-dist condition`,
    );
    for (const dep of Object.keys(pkg.dependencies ?? {})) if (workspaces.has(dep)) visit(dep);
  };
  visit('@regulon/manager');
  assert.ok(seen.has('@regulon/runtime') && seen.has('@regulon/database-controller'));

  const ignore = readFileSync(join(root, 'apps', 'manager', 'Dockerfile.dockerignore'), 'utf8');
  for (const line of ['**/node_modules', '.cluster', '**/*.test.ts'])
    assert.ok(ignore.split('\n').includes(line));
});

test('deploy/README.md documents every flag, panel and alert', () => {
  const readme = readFileSync(deploy('README.md'), 'utf8');
  const options = OPTIONS as unknown as Record<string, { flag: string; env: string }>;
  const controllerFlags = new Set(CONTROLLERS.flatMap((c) => [`${c.name}-enabled`, `${c.name}-concurrency`]));
  for (const o of Object.values(options)) {
    if (controllerFlags.has(o.flag)) continue; // documented as --<controller>-enabled / -concurrency
    assert.ok(readme.includes(`\`--${o.flag}\``), `--${o.flag}`);
    assert.ok(readme.includes(`\`${o.env}\``), o.env);
  }
  for (const a of [...ALERTS, ...INSTANCE_ALERTS]) assert.ok(readme.includes(`\`${a.alert}\``), a.alert);
  for (const row of DASHBOARD_ROWS)
    for (const p of row.panels)
      assert.ok(
        readme.includes(p.title) || p.title.split(/,? and |, /).every((part) => readme.includes(part)),
        `panel ${p.title}`,
      );
});
