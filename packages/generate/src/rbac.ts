// RBAC from declared rules: each controller says what it does to the API, and
// the roles are the union of that, merged per resource, with no wildcard.
import { Document, type YAMLMap, type YAMLSeq } from 'yaml';
import { yamlDocuments } from './yaml.ts';

/**
 * One RBAC rule (rbac.authorization.k8s.io/v1 PolicyRule), structurally: a
 * `V1PolicyRule` of @kubernetes/client-node fits, as does a plain object.
 */
export interface PolicyRule {
  apiGroups?: readonly string[] | undefined;
  resources?: readonly string[] | undefined;
  resourceNames?: readonly string[] | undefined;
  verbs: readonly string[];
}

/** Rules and who declared them (a controller's name): the name is written as a comment above each rule. */
export interface RuleSource {
  name: string;
  rules: readonly PolicyRule[];
}

/**
 * The verbs a generated role may grant. Wildcards, `deletecollection` and the
 * privilege verbs (escalate, bind, impersonate, approve, sign) are refused at
 * generation time: a controller that thinks it needs one should say why in review.
 */
export const ALLOWED_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] as const;

/**
 * What a @regulon/runtime manager does itself with leader election, in its own
 * namespace: the LeaderElector reads its Lease, creates it when missing and
 * renews or takes it over with a compare-and-swap update. In sharded mode
 * (`--sharding`) its BucketOwnership does the same with its bucket and member
 * Leases, lists the namespace's Leases to see who else is a member, and
 * deletes its own member Lease on a graceful stop (and a member's whose Lease
 * expired long ago). Not narrowed by resourceNames: `create` and `list` can't
 * be, and the Leases' names may change freely.
 */
export const LEADER_ELECTION_RULES: readonly PolicyRule[] = [
  {
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    verbs: ['get', 'list', 'create', 'update', 'delete'],
  },
];

/** A declared rule that would grant more than it names; the message says which rule and why. */
export class RbacRuleError extends Error {
  override name = 'RbacRuleError';
}

/**
 * The verb a request cannot name an object for (the object does not exist
 * yet): a rule restricted by resourceNames never grants it.
 */
const UNNAMEABLE_VERBS = ['create'];

/**
 * Throws a {@link RbacRuleError} when a declaration asks for a wildcard, a
 * verb outside {@link ALLOWED_VERBS}, a non-resource URL, or leaves out the
 * groups or resources it means.
 */
export function validateRules(owner: string, rules: readonly PolicyRule[]): void {
  for (const r of rules) {
    const where = `${owner}: rule ${JSON.stringify(r)}`;
    if ('nonResourceURLs' in r && (r as { nonResourceURLs?: unknown[] }).nonResourceURLs?.length)
      throw new RbacRuleError(`${where}: nonResourceURLs are not allowed in a controller's role`);
    if (!r.apiGroups?.length || !r.resources?.length || !r.verbs.length)
      throw new RbacRuleError(`${where}: apiGroups, resources and verbs must all be listed`);
    for (const x of [...r.apiGroups, ...r.resources, ...r.verbs, ...(r.resourceNames ?? [])])
      if (x.includes('*'))
        throw new RbacRuleError(`${where}: wildcards are not allowed, list the groups, resources and verbs`);
    for (const v of r.verbs)
      if (!(ALLOWED_VERBS as readonly string[]).includes(v))
        throw new RbacRuleError(`${where}: verb ${v} is not one of ${ALLOWED_VERBS.join(', ')}`);
    if (r.resourceNames?.length) {
      const unnamed = r.verbs.filter((v) => UNNAMEABLE_VERBS.includes(v));
      if (unnamed.length)
        throw new RbacRuleError(
          `${where}: ${unnamed.join(', ')} cannot be restricted by resourceNames; declare them in a rule without names`,
        );
    }
  }
}

/** A merged rule, and which sources asked for it. */
export interface MergedRule {
  rule: { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] };
  from: string[];
}

/**
 * One rule per (API group, resource, resourceNames), with the union of the
 * verbs every source asked for, in a stable order: the generated file changes
 * only where a declaration did. Validates every source first.
 */
export function mergeRules(sources: readonly RuleSource[]): MergedRule[] {
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

export interface RolesOptions {
  /** The controllers' role (ClusterRole, or Role in `namespace` with scope `namespace`). */
  name: string;
  /** The manager's namespace: its leader-election Role, and with scope `namespace` every role. */
  namespace: string;
  /** Every source's rules, merged into one role. */
  sources: readonly RuleSource[];
  /**
   * `cluster` (default): the controllers' rules in a ClusterRole, for a
   * manager that watches every namespace. `namespace`: in a Role in the
   * manager's namespace, for one that watches only its own.
   */
  scope?: 'cluster' | 'namespace' | undefined;
  /** The leader-election Role ({@link LEADER_ELECTION_RULES}); none when false. Default `${name}-leader-election`. */
  leaderElection?: false | { role?: string | undefined } | undefined;
  labels?: Readonly<Record<string, string>> | undefined;
  /** Comment lines above the first document, each starting with `#`, ending in a newline. */
  header: string;
}

/** The name of the leader-election Role that {@link rolesYaml} generates, or undefined when it makes none. */
export function leaderElectionRole(
  options: Pick<RolesOptions, 'name' | 'leaderElection'>,
): string | undefined {
  if (options.leaderElection === false) return undefined;
  return options.leaderElection?.role ?? `${options.name}-leader-election`;
}

function roleDocument(
  kind: 'ClusterRole' | 'Role',
  name: string,
  namespace: string | undefined,
  labels: Readonly<Record<string, string>> | undefined,
  rules: MergedRule[],
): Document {
  const doc = new Document({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind,
    metadata: {
      name,
      ...(namespace ? { namespace } : {}),
      ...(labels && Object.keys(labels).length ? { labels } : {}),
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

/**
 * The controllers' role and the leader-election Role as one YAML file, each
 * rule under a comment naming the sources that asked for it. Throws a
 * {@link RbacRuleError} for a wildcard or any other refused rule.
 */
export function rolesYaml(options: RolesOptions): string {
  const namespaced = options.scope === 'namespace';
  const docs = [
    roleDocument(
      namespaced ? 'Role' : 'ClusterRole',
      options.name,
      namespaced ? options.namespace : undefined,
      options.labels,
      mergeRules(options.sources),
    ),
  ];
  const leader = leaderElectionRole(options);
  if (leader)
    docs.push(
      roleDocument(
        'Role',
        leader,
        options.namespace,
        options.labels,
        mergeRules([{ name: 'leader election', rules: LEADER_ELECTION_RULES }]),
      ),
    );
  const body = docs
    .map(
      (d) => `---\n${d.toString({ lineWidth: 0, indent: 2, indentSeq: true, flowCollectionPadding: false })}`,
    )
    .join('');
  return `${options.header}${body}`;
}

export interface BindingsOptions {
  /** The controllers' role, as given to {@link rolesYaml}. */
  name: string;
  namespace: string;
  serviceAccount: string;
  scope?: 'cluster' | 'namespace' | undefined;
  leaderElection?: false | { role?: string | undefined } | undefined;
  labels?: Readonly<Record<string, string>> | undefined;
  header: string;
}

/** The bindings of {@link rolesYaml}'s roles to the manager's ServiceAccount. */
export function bindingsYaml(options: BindingsOptions): string {
  const subjects = [{ kind: 'ServiceAccount', name: options.serviceAccount, namespace: options.namespace }];
  const metadata = (name: string, namespaced: boolean) => ({
    name,
    ...(namespaced ? { namespace: options.namespace } : {}),
    ...(options.labels && Object.keys(options.labels).length ? { labels: options.labels } : {}),
  });
  const binding = (kind: 'ClusterRoleBinding' | 'RoleBinding', name: string) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind,
    metadata: metadata(name, kind === 'RoleBinding'),
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: kind === 'RoleBinding' ? 'Role' : 'ClusterRole',
      name,
    },
    subjects,
  });
  const docs = [binding(options.scope === 'namespace' ? 'RoleBinding' : 'ClusterRoleBinding', options.name)];
  const leader = leaderElectionRole(options);
  if (leader) docs.push(binding('RoleBinding', leader));
  return `${options.header}${yamlDocuments(docs)}`;
}
