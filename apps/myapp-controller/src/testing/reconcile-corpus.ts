// The reconcile-time half of the bad-input corpus: inputs the schema accepts
// but reconcile finds wrong, across the three kinds. Each row is an object the
// API server admits in a namespace where something is in the way: a referenced
// Secret missing, a child's name taken by an object the controller did not
// create, a quota or an admission policy that refuses a child. Every row must
// end reported (Degraded with its reason, Stalled when a person must act, a
// Warning Event), never Ready, without a hot loop, and must heal once a person
// does what the message says. Run by reconcile-corpus.integration.test.ts; the
// rows print as a table next to the admission corpus (`corpusRows`).
import type { KubeClient, KubeObject, ResourceType } from '@regulon/client';
import { Kinds } from '@regulon/client';
import { eventually } from '@regulon/testenv';

export type CorpusKind = 'Database' | 'Cache' | 'MyApp';

/** Where a case runs: its own namespace, and the name of the object under test. */
export interface Arena {
  client: KubeClient;
  namespace: string;
  name: string;
}

export interface ReconcileCase {
  kind: CorpusKind;
  /** Where the bad input is. */
  field: string;
  /** What it is. */
  input: string;
  /** Its family: missing Secret, unowned child, rejected child, ... */
  form: string;
  /** The spec, merged over the kind's valid one. */
  spec?: Record<string, unknown>;
  /** The Degraded (and Ready) reason, and what its message must say. */
  reason: string;
  message: RegExp;
  /** Progress needs a person: Stalled=True, kstatus Failed. Otherwise Degraded only, kstatus InProgress. */
  stalled: boolean;
  /** No watched object announces the fix, so the controller retries with backoff (rejected children). */
  retried: boolean;
  /** What a person does about it, as the message tells them. */
  fixedBy: string;
  /** Puts the bad input in place before the object is created. */
  arrange(a: Arena): Promise<void>;
  /** Does what `fixedBy` says. */
  fix(a: Arena): Promise<void>;
  /** An object of someone else's that must be left exactly as it was (no ownerReference, same content). */
  untouched?: (a: Arena) => { type: ResourceType; name: string };
}

export const ResourceQuota: ResourceType = {
  group: '',
  version: 'v1',
  kind: 'ResourceQuota',
  plural: 'resourcequotas',
  namespaced: true,
};
export const ValidatingAdmissionPolicy: ResourceType = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  kind: 'ValidatingAdmissionPolicy',
  plural: 'validatingadmissionpolicies',
  namespaced: false,
};
export const ValidatingAdmissionPolicyBinding: ResourceType = {
  ...ValidatingAdmissionPolicy,
  kind: 'ValidatingAdmissionPolicyBinding',
  plural: 'validatingadmissionpolicybindings',
};

const create = (a: Arena, type: ResourceType, obj: Record<string, unknown>, dryRun = false) =>
  a.client.resource(type).create(
    {
      apiVersion: type.group ? `${type.group}/${type.version}` : type.version,
      kind: type.kind,
      ...obj,
      metadata: { namespace: a.namespace, ...(obj['metadata'] as object) },
    },
    { dryRun },
  );
const remove = (a: Arena, type: ResourceType, name: string) =>
  a.client.resource(type).delete(name, { namespace: a.namespace });

const configMap = (name: string) => (a: Arena) =>
  create(a, Kinds.ConfigMap, {
    metadata: { name },
    data: { 'postgresql.conf': 'shared_buffers = 1GB\n' },
  }).then(() => undefined);
const secret = (name: string) => (a: Arena) =>
  create(a, Kinds.Secret, { metadata: { name }, stringData: { username: 'app', password: 'hunter2' } }).then(
    () => undefined,
  );
const labels = { app: 'users-own' };
const podTemplate = { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'busybox:1.37' }] } };

/**
 * A quota of zero on `resource`: every create of that kind in the namespace is
 * refused (403), once the quota controller has filled in its status.
 */
export const quota = (resource: string) => async (a: Arena) => {
  await create(a, ResourceQuota, { metadata: { name: 'corpus' }, spec: { hard: { [resource]: '0' } } });
  await eventually(`quota on ${resource} in effect`, async () => {
    const q = await a.client
      .resource<KubeObject & { status?: { hard?: Record<string, string> } }>(ResourceQuota)
      .get('corpus', { namespace: a.namespace });
    return q.status?.hard?.[resource] !== undefined;
  });
};
const dropQuota = (a: Arena) => remove(a, ResourceQuota, 'corpus');

/** An admission policy (and its binding, for this namespace only) that denies every StatefulSet (422). */
export const policyName = (a: Arena) => `corpus-no-sts-${a.namespace}`;
const denyStatefulSets = async (a: Arena) => {
  const name = policyName(a);
  await a.client.resource(ValidatingAdmissionPolicy).create({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: ['apps'],
            apiVersions: ['v1'],
            operations: ['CREATE', 'UPDATE'],
            resources: ['statefulsets'],
          },
        ],
      },
      validations: [{ expression: 'false', message: 'StatefulSets are not allowed in this namespace' }],
    },
  } as KubeObject);
  await a.client.resource(ValidatingAdmissionPolicyBinding).create({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name },
    spec: {
      policyName: name,
      validationActions: ['Deny'],
      matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': a.namespace } } },
    },
  } as KubeObject);
  // A new policy takes effect a moment after it is stored: until a dry run is refused, it isn't.
  await eventually('the policy denies StatefulSets', () =>
    create(
      a,
      Kinds.StatefulSet,
      {
        metadata: { name: 'probe' },
        spec: { serviceName: 'probe', selector: { matchLabels: labels }, template: podTemplate },
      },
      true,
    ).then(
      () => false,
      (err: unknown) => err instanceof Error && /not allowed in this namespace/.test(err.message),
    ),
  );
};
export const allowStatefulSets = async (a: Arena) => {
  await a.client.resource(ValidatingAdmissionPolicyBinding).delete(policyName(a));
  await a.client.resource(ValidatingAdmissionPolicy).delete(policyName(a));
};

const deleteIt = (type: ResourceType, name: (a: Arena) => string) => (a: Arena) => remove(a, type, name(a));
const createIt =
  (make: (name: string) => (a: Arena) => Promise<void>, name: (a: Arena) => string) => (a: Arena) =>
    make(name(a))(a);

/** The Cache kind as a plain ResourceType: the corpus stays free of the controllers' code. */
const CacheType: ResourceType = {
  group: 'regulon.dev',
  version: 'v1alpha1',
  kind: 'Cache',
  plural: 'caches',
  namespaced: true,
};

const taken = 'a name already taken by an object the controller did not create';
const rejectedChild = 'a child the API server refuses';
const missingSecret = 'a referenced Secret that does not exist';
const conflict = (what: RegExp) =>
  new RegExp(`${what.source} already exists and (was not created by it|is controlled by)`);
const rejected = (what: string, why: RegExp) =>
  new RegExp(`${what} \\S+ was rejected by the API server: .*${why.source}`);
const nothing = () => Promise.resolve();

export const RECONCILE_CORPUS: ReconcileCase[] = [
  // Database
  {
    kind: 'Database',
    field: 'spec.credentials.secretName',
    input: 'names a Secret that does not exist',
    form: missingSecret,
    spec: { credentials: { secretName: 'byo-credentials' } },
    reason: 'CredentialsSecretMissing',
    message: /Secret byo-credentials named in spec.credentials.secretName does not exist/,
    stalled: true,
    retried: false,
    fixedBy: 'creating the Secret',
    arrange: nothing,
    fix: secret('byo-credentials'),
  },
  {
    kind: 'Database',
    field: 'ConfigMap <db>-config',
    input: "a user's ConfigMap of that name",
    form: taken,
    reason: 'ChildConflict',
    message: conflict(/ConfigMap \S+-config/),
    stalled: true,
    retried: false,
    fixedBy: 'deleting or renaming the ConfigMap',
    arrange: createIt(configMap, (a) => `${a.name}-config`),
    fix: deleteIt(Kinds.ConfigMap, (a) => `${a.name}-config`),
    untouched: (a) => ({ type: Kinds.ConfigMap, name: `${a.name}-config` }),
  },
  {
    kind: 'Database',
    field: 'StatefulSet <db>',
    input: "a user's StatefulSet of that name",
    form: taken,
    reason: 'ChildConflict',
    message: conflict(/StatefulSet \S+/),
    stalled: true,
    retried: false,
    fixedBy: 'deleting or renaming the StatefulSet',
    arrange: (a) =>
      create(a, Kinds.StatefulSet, {
        metadata: { name: a.name },
        spec: { serviceName: a.name, replicas: 0, selector: { matchLabels: labels }, template: podTemplate },
      }).then(nothing),
    fix: deleteIt(Kinds.StatefulSet, (a) => a.name),
    untouched: (a) => ({ type: Kinds.StatefulSet, name: a.name }),
  },
  {
    kind: 'Database',
    field: 'Service <db>',
    input: 'a Service of that name another controller owns',
    form: taken,
    reason: 'ChildConflict',
    message: conflict(/Service \S+/),
    stalled: true,
    retried: false,
    fixedBy: 'deleting the other owner’s Service',
    arrange: async (a) => {
      const other = await create(a, Kinds.ConfigMap, { metadata: { name: 'another-owner' } });
      await create(a, Kinds.Service, {
        metadata: {
          name: a.name,
          ownerReferences: [
            {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              name: 'another-owner',
              uid: other.metadata!.uid!,
              controller: true,
            },
          ],
        },
        spec: { selector: labels, ports: [{ port: 5432 }] },
      });
    },
    fix: deleteIt(Kinds.Service, (a) => a.name),
    untouched: (a) => ({ type: Kinds.Service, name: a.name }),
  },
  {
    kind: 'Database',
    field: 'Secret <db>-credentials',
    input: "a user's Secret named like the generated credentials",
    form: taken,
    reason: 'ChildConflict',
    message:
      /Secret \S+-credentials already exists and was not created by it.*set spec\.credentials\.secretName/,
    stalled: true,
    retried: false,
    fixedBy: 'deleting it (or naming it in spec.credentials.secretName)',
    arrange: createIt(secret, (a) => `${a.name}-credentials`),
    fix: deleteIt(Kinds.Secret, (a) => `${a.name}-credentials`),
    untouched: (a) => ({ type: Kinds.Secret, name: `${a.name}-credentials` }),
  },
  {
    kind: 'Database',
    field: 'ResourceQuota services',
    input: 'services: 0',
    form: rejectedChild,
    reason: 'ChildRejected',
    message: rejected('Service', /exceeded quota: corpus/),
    stalled: true,
    retried: true,
    fixedBy: 'raising the quota',
    arrange: quota('services'),
    fix: dropQuota,
  },
  // No row for a quota on CronJobs: the dump CronJob is made only for a Database stored before
  // the CRD refused backups with nowhere to go, which no row can create
  // (the database controller's backup-destination.integration.test.ts makes one, by installing
  // the CRD without the rule first).
  {
    kind: 'Database',
    field: 'ResourceQuota secrets',
    input: 'secrets: 0 (generated credentials)',
    form: rejectedChild,
    reason: 'ChildRejected',
    message: rejected('Secret', /exceeded quota: corpus/),
    stalled: true,
    retried: true,
    fixedBy: 'raising the quota',
    arrange: quota('secrets'),
    fix: dropQuota,
  },
  {
    kind: 'Database',
    field: 'ValidatingAdmissionPolicy',
    input: 'a policy that denies StatefulSets',
    form: rejectedChild,
    reason: 'ChildRejected',
    message: rejected('StatefulSet', /denied request: StatefulSets are not allowed in this namespace/),
    stalled: true,
    retried: true,
    fixedBy: 'changing the policy',
    arrange: denyStatefulSets,
    fix: allowStatefulSets,
  },
  // Cache
  {
    kind: 'Cache',
    field: 'spec.auth.secretName',
    input: 'names a Secret that does not exist',
    form: missingSecret,
    spec: { auth: { enabled: true, secretName: 'byo-auth' } },
    reason: 'AuthSecretMissing',
    message: /Secret byo-auth named in spec.auth.secretName does not exist/,
    stalled: true,
    retried: false,
    fixedBy: 'creating the Secret',
    arrange: nothing,
    fix: secret('byo-auth'),
  },
  {
    kind: 'Cache',
    field: 'Secret <cache>-credentials',
    input: "a user's Secret named like the generated credentials",
    form: taken,
    spec: { auth: { enabled: true } },
    reason: 'ChildConflict',
    message: conflict(/Secret \S+-credentials/),
    stalled: true,
    retried: false,
    fixedBy: 'deleting or renaming the Secret',
    arrange: createIt(secret, (a) => `${a.name}-credentials`),
    fix: deleteIt(Kinds.Secret, (a) => `${a.name}-credentials`),
    untouched: (a) => ({ type: Kinds.Secret, name: `${a.name}-credentials` }),
  },
  {
    kind: 'Cache',
    field: 'ConfigMap <cache>-config',
    input: "a user's ConfigMap of that name",
    form: taken,
    reason: 'ChildConflict',
    message: conflict(/ConfigMap \S+-config/),
    stalled: true,
    retried: false,
    fixedBy: 'deleting or renaming the ConfigMap',
    arrange: createIt(configMap, (a) => `${a.name}-config`),
    fix: deleteIt(Kinds.ConfigMap, (a) => `${a.name}-config`),
    untouched: (a) => ({ type: Kinds.ConfigMap, name: `${a.name}-config` }),
  },
  {
    kind: 'Cache',
    field: 'Deployment <cache>',
    input: "a user's Deployment of that name",
    form: taken,
    reason: 'ChildConflict',
    message: conflict(/Deployment \S+/),
    stalled: true,
    retried: false,
    fixedBy: 'deleting or renaming the Deployment',
    arrange: (a) =>
      create(a, Kinds.Deployment, {
        metadata: { name: a.name },
        spec: { replicas: 0, selector: { matchLabels: labels }, template: podTemplate },
      }).then(nothing),
    fix: deleteIt(Kinds.Deployment, (a) => a.name),
    untouched: (a) => ({ type: Kinds.Deployment, name: a.name }),
  },
  {
    kind: 'Cache',
    field: 'ResourceQuota count/deployments.apps',
    input: 'count/deployments.apps: 0',
    form: rejectedChild,
    reason: 'ChildRejected',
    message: rejected('Deployment', /exceeded quota: corpus/),
    stalled: true,
    retried: true,
    fixedBy: 'raising the quota',
    arrange: quota('count/deployments.apps'),
    fix: dropQuota,
  },
  {
    kind: 'Cache',
    field: 'ResourceQuota configmaps',
    input: 'configmaps: 0',
    form: rejectedChild,
    reason: 'ChildRejected',
    message: rejected('ConfigMap', /exceeded quota: corpus/),
    stalled: true,
    retried: true,
    fixedBy: 'raising the quota',
    arrange: quota('configmaps'),
    fix: dropQuota,
  },
  {
    kind: 'Cache',
    field: 'ResourceQuota pods',
    input: 'pods: 0 (the Deployment cannot create Pods)',
    form: "a workload's controller fails",
    reason: 'ReplicaFailure',
    message: /Deployment \S+ cannot create its Pods \(FailedCreate\): .*exceeded quota: corpus/,
    stalled: false,
    retried: false,
    fixedBy: 'raising the quota',
    arrange: quota('pods'),
    fix: dropQuota,
  },
  // MyApp
  {
    kind: 'MyApp',
    field: 'spec.env[].valueFrom.secretKeyRef',
    input: 'names a Secret that does not exist',
    form: missingSecret,
    spec: { env: [{ name: 'API_KEY', valueFrom: { secretKeyRef: { name: 'api-key', key: 'key' } } }] },
    reason: 'EnvSecretMissing',
    message: /Secret api-key named in spec.env \(API_KEY\) does not exist .*CreateContainerConfigError/,
    stalled: true,
    retried: false,
    fixedBy: 'creating the Secret',
    arrange: nothing,
    fix: secret('api-key'),
  },
  {
    // A Cache, not a Database: a Database of the user's would leave a retained data volume named like
    // the MyApp's own Database's, which then rightly refuses to mint a password for it.
    kind: 'MyApp',
    field: 'Cache <app>-cache',
    input: "a user's Cache of that name",
    form: taken,
    spec: { cache: { engine: 'redis', version: '7.4.10', replicas: 1, memory: '256Mi' } },
    reason: 'ChildConflict',
    message: conflict(/Cache \S+-cache/),
    stalled: true,
    retried: false,
    fixedBy: 'deleting or renaming the Cache',
    arrange: (a) =>
      create(a, CacheType, {
        metadata: { name: `${a.name}-cache` },
        spec: { engine: 'memcached', version: '1.6.45', replicas: 1, memory: '64Mi' },
      }).then(nothing),
    fix: deleteIt(CacheType, (a) => `${a.name}-cache`),
    untouched: (a) => ({ type: CacheType, name: `${a.name}-cache` }),
  },
  {
    kind: 'MyApp',
    field: 'Deployment <app>',
    input: "a user's Deployment of that name",
    form: taken,
    reason: 'ChildConflict',
    message: conflict(/Deployment \S+/),
    stalled: true,
    retried: false,
    fixedBy: 'deleting or renaming the Deployment',
    arrange: (a) =>
      create(a, Kinds.Deployment, {
        metadata: { name: a.name },
        spec: { replicas: 0, selector: { matchLabels: labels }, template: podTemplate },
      }).then(nothing),
    fix: deleteIt(Kinds.Deployment, (a) => a.name),
    untouched: (a) => ({ type: Kinds.Deployment, name: a.name }),
  },
  {
    kind: 'MyApp',
    field: 'Service <app>',
    input: "a user's Service of that name",
    form: taken,
    reason: 'ChildConflict',
    message: conflict(/Service \S+/),
    stalled: true,
    retried: false,
    fixedBy: 'deleting or renaming the Service',
    arrange: (a) =>
      create(a, Kinds.Service, {
        metadata: { name: a.name },
        spec: { selector: labels, ports: [{ port: 80 }] },
      }).then(nothing),
    fix: deleteIt(Kinds.Service, (a) => a.name),
    untouched: (a) => ({ type: Kinds.Service, name: a.name }),
  },
  {
    kind: 'MyApp',
    field: 'ResourceQuota count/databases.regulon.dev',
    input: 'count/databases.regulon.dev: 0',
    form: rejectedChild,
    spec: { database: { engine: 'postgres', version: '16.6', replicas: 1, storage: { size: '1Gi' } } },
    reason: 'ChildRejected',
    message: rejected('Database', /exceeded quota: corpus/),
    stalled: true,
    retried: true,
    fixedBy: 'raising the quota',
    arrange: quota('count/databases.regulon.dev'),
    fix: dropQuota,
  },
  {
    kind: 'MyApp',
    field: 'spec.database.credentials.secretName',
    input: 'its Database names a Secret that does not exist',
    form: 'a stalled child',
    spec: {
      database: {
        engine: 'postgres',
        version: '16.6',
        replicas: 1,
        storage: { size: '1Gi' },
        credentials: { secretName: 'app-db-credentials' },
      },
    },
    reason: 'ChildStalled',
    message:
      /Database \S+-db is stalled: Secret app-db-credentials named in spec.credentials.secretName does not exist/,
    stalled: true,
    retried: false,
    fixedBy: 'creating the Secret',
    arrange: nothing,
    fix: secret('app-db-credentials'),
  },
  {
    kind: 'MyApp',
    field: 'ResourceQuota pods',
    input: 'pods: 0 (the Deployment cannot create Pods)',
    form: "a workload's controller fails",
    reason: 'ReplicaFailure',
    message: /Deployment \S+ cannot create its Pods \(FailedCreate\): .*exceeded quota: corpus/,
    stalled: false,
    retried: false,
    fixedBy: 'raising the quota',
    arrange: quota('pods'),
    fix: dropQuota,
  },
];

/** A row of the corpus table, in the shape of the admission corpus' rows (`@regulon/crd/testing`). */
export interface CorpusRow {
  kind: string;
  field: string;
  input: string;
  form: string;
  outcome: string;
  message: string;
}

/** The outcome each case must have: the table groups rows by it. */
export function outcomeOf(c: ReconcileCase): string {
  return c.stalled
    ? 'accepted; Degraded + Stalled (kstatus Failed) + Warning Event'
    : 'accepted; Degraded + Warning Event, not stalled (kstatus InProgress)';
}

export function corpusRows(cases: ReconcileCase[] = RECONCILE_CORPUS): CorpusRow[] {
  return cases.map((c) => ({
    kind: c.kind,
    field: c.field,
    input: c.input,
    form: c.form,
    outcome: outcomeOf(c),
    message: `${c.reason}${c.retried ? ', retried with backoff' : ''}; heals by ${c.fixedBy}`,
  }));
}
