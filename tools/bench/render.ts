// The Database reconcile's pure part, as JSON: what the controller would send
// for a given Database and what it observed. The reference operator in
// reference-go renders the same input, and reference.test.ts checks that the
// two agree byte for byte — so the benchmark compares the same work.
//
//   node tools/bench/render.ts < case.json
//   case: { database, password, statefulSet?, backupJobs?, now,
//           replicationPassword?, topology?, pods? }
import type { V1Job, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import { Kinds, type KubeObject, type ResourceType } from '@regulon/client';
import {
  childNames,
  computeStatus,
  createdClaimSize,
  desiredChildren,
  generatedCredentials,
  type DatabaseObject,
} from '@regulon/database-controller';
import { childApplyBody, controllerReference, type Context, type Owner } from '@regulon/runtime';
// Not exported from the package: the replication step and the children it adds are rendered with the controller's own code.
import {
  topologyCarriesSpec,
  replicationCredentials,
  topologyConfigMap,
  topologyOf,
} from '../../apps/database-controller/src/children.ts';
import {
  firstTopology,
  instanceCount,
  reconcileReplication,
  ReplicationMemory,
  type ReplicationView,
} from '../../apps/database-controller/src/replication/replication.ts';
import { engineOf } from '../../apps/database-controller/src/engines/index.ts';

export interface RenderCase {
  database: DatabaseObject;
  password: string;
  statefulSet?: V1StatefulSet;
  backupJobs?: V1Job[];
  now: string;
  /** The replication Secret's password (postgres); `password` when absent. */
  replicationPassword?: string;
  /** The data of the recorded topology ConfigMap; absent: none is recorded yet (a new Database). */
  topology?: Record<string, string>;
  /** The Database's Pods as the reconcile lists them; absent: it stopped before observing them. */
  pods?: V1Pod[];
}

/** One API call of the replication step, as reference-go prints it. */
export type ReplicationCall = Record<string, unknown> & { verb: string };

export interface Rendered {
  /** Apply bodies in order; `delete` for a child the Database must not have. */
  children: Array<{ kind: string; name: string; apply?: unknown; delete?: true }>;
  /** The create body of generated credentials (absent when spec.credentials names a Secret). */
  credentials?: unknown;
  /** The create body of the replication Secret (postgres). */
  replicationCredentials?: unknown;
  /** The apply body of the topology ConfigMap, applied before the children when none is recorded (or its divergedData or members is not the spec's). */
  topology?: unknown;
  /** The replication step's API calls in order, and its requeue (when `pods` are given). */
  replication?: { calls: ReplicationCall[]; requeueAfterMs?: number };
  status: unknown;
}

/** A create body as createOnce sends it: the Secret with the owner's namespace and controller reference. */
function createBody(secret: ReturnType<typeof generatedCredentials>, owner: Owner & DatabaseObject) {
  return {
    apiVersion: 'v1',
    kind: Kinds.Secret.kind,
    ...secret,
    metadata: {
      ...secret.metadata,
      namespace: owner.metadata.namespace,
      ownerReferences: [controllerReference(owner)],
    },
  };
}

/**
 * A Context that serves the listed Pods and records every call the
 * replication step makes. A call it does not model fails the render, so a
 * new call in the controller shows up here rather than going unseen.
 */
function recordingContext(owner: Owner & DatabaseObject, pods: V1Pod[], calls: ReplicationCall[]): Context {
  const unmodelled = (what: string) => {
    throw new Error(`render.ts: the replication step called ${what}, which the render does not model`);
  };
  const resource = (kind: ResourceType) =>
    new Proxy(
      {
        list: (opts: { namespace?: string; labelSelector?: string }) => {
          calls.push({
            verb: 'list',
            kind: kind.kind,
            namespace: opts.namespace,
            labelSelector: opts.labelSelector,
          });
          return Promise.resolve({ items: kind.kind === 'Pod' ? structuredClone(pods) : [] });
        },
        patch: (name: string, body: unknown, opts: { type?: string; namespace?: string }) => {
          calls.push({
            verb: 'patch',
            kind: kind.kind,
            name,
            namespace: opts.namespace,
            type: opts.type,
            body,
          });
          // The controller chains .catch() on these calls: they answer as promises.
          return Promise.resolve({});
        },
        delete: (
          name: string,
          opts: { namespace?: string; preconditions?: unknown; gracePeriodSeconds?: number },
        ) => {
          calls.push({
            verb: 'delete',
            kind: kind.kind,
            name,
            namespace: opts.namespace,
            preconditions: opts.preconditions,
            ...(opts.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: opts.gracePeriodSeconds } : {}),
          });
          return Promise.resolve({});
        },
      },
      {
        get: (t, p) =>
          p in t ? t[p as keyof typeof t] : unmodelled(`client.resource(${kind.kind}).${String(p)}`),
      },
    );
  const event = (eventType: string, reason: string, message: string) =>
    calls.push({ verb: 'event', eventType, reason, message });
  const ctx = {
    signal: new AbortController().signal,
    log: { info() {}, debug() {}, warn() {}, error() {} },
    client: { resource },
    apply: (children: KubeObject[]) => {
      for (const child of children) {
        const type = Kinds[child.kind as keyof typeof Kinds] as ResourceType | undefined;
        if (!type) unmodelled(`apply of a ${child.kind}`);
        calls.push({
          verb: 'apply',
          kind: child.kind!,
          name: child.metadata!.name!,
          apply: childApplyBody(type!, child, owner),
        });
      }
      return Promise.resolve(children.map(() => 'applied'));
    },
    event,
    warn: (reason: string, message: string) => event('Warning', reason, message),
  };
  return new Proxy(ctx, {
    get: (t, p) => (p in t ? t[p as keyof typeof t] : unmodelled(`ctx.${String(p)}`)),
  }) as unknown as Context;
}

/** The children's apply bodies (and deletions) for a case: the StatefulSet runs as many Pods as the topology needs. */
export function renderChildren(c: RenderCase): Rendered['children'] {
  const db = c.database;
  const owner = db as Owner & DatabaseObject;
  const topology = topologyOf(c.topology ? { data: c.topology } : undefined) ?? firstTopology(db);
  return desiredChildren(db, createdClaimSize(c.statefulSet), undefined, instanceCount(db, topology)).map(
    (child) =>
      child.object
        ? { kind: child.type.kind, name: child.name, apply: childApplyBody(child.type, child.object, owner) }
        : { kind: child.type.kind, name: child.name, delete: true as const },
  );
}

export async function render(c: RenderCase): Promise<Rendered> {
  const db = c.database;
  const owner = db as Owner & DatabaseObject;
  const recorded = topologyOf(c.topology ? { data: c.topology } : undefined);
  const topology = recorded ?? firstTopology(db);
  const children = renderChildren(c);
  const credentials = db.spec.credentials?.secretName
    ? undefined
    : createBody(generatedCredentials(db, c.password), owner);
  const replicationSecret =
    db.spec.engine === 'postgres'
      ? createBody(replicationCredentials(db, c.replicationPassword ?? c.password), owner)
      : undefined;
  // As the reconciler: applied when none is recorded, or to carry a new spec.replication.divergedData
  // or instance count.
  const firstTopologyBody =
    recorded && topologyCarriesSpec(db, c.topology)
      ? undefined
      : childApplyBody(Kinds.ConfigMap, topologyConfigMap(db, topology), owner);

  let replication: Rendered['replication'];
  let view: ReplicationView | undefined;
  if (c.pods) {
    const calls: ReplicationCall[] = [];
    const out = await reconcileReplication(
      db,
      recordingContext(owner, c.pods, calls),
      topology,
      new ReplicationMemory(),
      engineOf(db).replication?.driver,
      Date.parse(c.now),
    );
    view = out.view;
    replication = { calls, ...(out.requeueAfter !== undefined ? { requeueAfterMs: out.requeueAfter } : {}) };
  }
  const status = computeStatus(
    db,
    {
      statefulSet: c.statefulSet,
      backupJobs: c.backupJobs ?? [],
      problem: undefined,
      credentialsSecret: childNames(db).credentials,
      replication: view,
    },
    new Date(c.now),
  );
  return {
    children,
    ...(credentials ? { credentials } : {}),
    ...(replicationSecret ? { replicationCredentials: replicationSecret } : {}),
    ...(firstTopologyBody ? { topology: firstTopologyBody } : {}),
    ...(replication ? { replication } : {}),
    status,
  };
}

if (import.meta.main) {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const input = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RenderCase | RenderCase[];
  const out = Array.isArray(input) ? await Promise.all(input.map(render)) : await render(input);
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}
