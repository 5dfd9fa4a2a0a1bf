// The manager's RBAC, generated from what each controller declares it does to
// the API (ControllerRegistration.rbac) plus what the manager itself does
// (leader election). Written to deploy/rbac/generated.yaml by generate.ts.
import type { ControllerRegistration } from '@regulon/manager';
import { Document, type YAMLMap, type YAMLSeq } from 'yaml';

export type PolicyRule = ControllerRegistration['rbac'][number];

export const NAMESPACE = 'regulon-system';
export const MANAGER = 'regulon-manager';
export const LEADER_ELECTION_ROLE = `${MANAGER}-leader-election`;

/**
 * The verbs a generated role may grant. Wildcards, `deletecollection` and the
 * privilege verbs (escalate, bind, impersonate, approve, sign) are refused at
 * generation time: a controller that thinks it needs one should say why in review.
 */
export const ALLOWED_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] as const;

/**
 * What the manager does itself, in its own namespace: the LeaderElector
 * (@regulon/runtime) reads its Lease, creates it when missing and renews or
 * takes it over with a compare-and-swap update (PUT with resourceVersion).
 * It records no Events of its own, so the Role grants none: Events about
 * managed objects are the controllers' (cluster-wide, events.k8s.io).
 * Not narrowed by resourceNames: `create` can't be, and the namespace holds
 * only the manager's Lease; --leader-election-id can then change freely.
 */
export const LEADER_ELECTION_RULES: readonly PolicyRule[] = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
];

interface MergedRule {
  rule: PolicyRule;
  /** Which controllers asked for it: written as a comment above the rule. */
  from: string[];
}

/** Throws when a declaration asks for a wildcard, an unknown verb or a non-resource URL. */
export function validateRules(owner: string, rules: readonly PolicyRule[]): void {
  for (const r of rules) {
    const where = `${owner}: rule ${JSON.stringify(r)}`;
    if (!r.apiGroups?.length || !r.resources?.length || !r.verbs.length)
      throw new Error(`${where}: apiGroups, resources and verbs must all be listed`);
    for (const x of [...r.apiGroups, ...r.resources, ...r.verbs, ...(r.resourceNames ?? [])])
      if (x.includes('*')) throw new Error(`${where}: wildcards are not allowed`);
    for (const v of r.verbs)
      if (!(ALLOWED_VERBS as readonly string[]).includes(v))
        throw new Error(`${where}: verb ${v} is not one of ${ALLOWED_VERBS.join(', ')}`);
  }
}

/**
 * One rule per (API group, resource, resourceNames), with the union of the
 * verbs every controller asked for, in a stable order: the generated file
 * changes only where a declaration did.
 */
export function mergeRules(
  sources: ReadonlyArray<{ name: string; rules: readonly PolicyRule[] }>,
): MergedRule[] {
  const merged = new Map<
    string,
    { group: string; resource: string; names?: string[]; verbs: Set<string>; from: Set<string> }
  >();
  for (const { name, rules } of sources) {
    validateRules(name, rules);
    for (const r of rules)
      for (const group of r.apiGroups!)
        for (const resource of r.resources!) {
          const names = r.resourceNames?.length ? [...r.resourceNames].sort() : undefined;
          const key = JSON.stringify([group, resource, names ?? []]);
          const m = merged.get(key) ?? {
            group,
            resource,
            ...(names ? { names } : {}),
            verbs: new Set(),
            from: new Set(),
          };
          for (const v of r.verbs) m.verbs.add(v);
          m.from.add(name);
          merged.set(key, m);
        }
  }
  return [...merged.values()]
    .sort((a, b) => a.group.localeCompare(b.group) || a.resource.localeCompare(b.resource))
    .map((m) => ({
      rule: {
        apiGroups: [m.group],
        resources: [m.resource],
        ...(m.names ? { resourceNames: m.names } : {}),
        verbs: ALLOWED_VERBS.filter((v) => m.verbs.has(v)),
      },
      from: [...m.from].sort(),
    }));
}

function roleDocument(kind: 'ClusterRole' | 'Role', name: string, rules: MergedRule[]): Document {
  const doc = new Document({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind,
    metadata: {
      name,
      ...(kind === 'Role' ? { namespace: NAMESPACE } : {}),
      labels: { 'app.kubernetes.io/name': MANAGER, 'app.kubernetes.io/part-of': 'regulon' },
    },
    rules: rules.map((r) => r.rule),
  });
  const seq = doc.get('rules') as YAMLSeq<YAMLMap<string, YAMLSeq>>;
  rules.forEach((r, i) => {
    const item = seq.items[i]!;
    item.commentBefore = ` ${r.from.join(', ')}`;
    // One line per list: a rule reads as a sentence, and a diff shows the verb that changed.
    for (const pair of item.items) pair.value!.flow = true;
  });
  return doc;
}

/** The ClusterRole (every controller's rules) and the leader-election Role, as one YAML file. */
export function rbacYaml(controllers: readonly ControllerRegistration[]): string {
  const cluster = mergeRules(controllers.map((c) => ({ name: c.name, rules: c.rbac })));
  const leader = mergeRules([{ name: 'leader election', rules: LEADER_ELECTION_RULES }]);
  const docs = [
    roleDocument('ClusterRole', MANAGER, cluster),
    roleDocument('Role', LEADER_ELECTION_ROLE, leader),
  ];
  const body = docs
    .map(
      (d) => `---\n${d.toString({ lineWidth: 0, indent: 2, indentSeq: true, flowCollectionPadding: false })}`,
    )
    .join('');
  return `# Code generated by tools/scripts/rbac.ts from each controller's rbac declaration and the manager's leader election. DO NOT EDIT.\n${body}`;
}
