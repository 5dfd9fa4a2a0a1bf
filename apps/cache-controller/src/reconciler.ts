import { Kinds, metadataOnly, type ResourceType } from '@regulon/client';
import {
  deploymentProblem,
  ensurePrimaryLease,
  MEMBERS_KEY,
  podTrouble,
  type PodTrouble,
} from '@regulon/conventions';
import type { ImageCatalog } from '@regulon/image-catalog';
import {
  generatePassword,
  ProblemError,
  type Context,
  type Live,
  type ReconcileFunc,
} from '@regulon/runtime';
import { ReplicationMemory } from '@regulon/conventions';
import {
  bindingSecret,
  desiredChildren,
  desiredDisruptionBudget,
  desiredTopology,
  generatedCredentials,
  image,
  runsAgent,
} from './children.ts';
import { authEnabled, childNames, labels, replicated, selector, stateful } from './names.ts';
import { GROUP, type CacheObject } from './api.ts';
import {
  firstTopology,
  instanceCount,
  recordedTopology,
  reconcileReplication,
  type ReplicationView,
} from './replication/replication.ts';
import { controlledWorkload, liveWorkload } from './status.ts';

export const FIELD_MANAGER = 'regulon-cache';

/** Secrets are watched as metadata: only a replicated redis's reconcile reads a password (GET), to reach its instances. */
export const SECRETS = metadataOnly(Kinds.Secret);

/**
 * Reconciles one Cache: its Secrets first (the Pods refer to them), then
 * every other child by server-side apply, then what the Deployment's own
 * controller reports; a replicated redis then has its instances observed and
 * its primary kept (replication/replication.ts), what it saw kept in `views`
 * for the status. The runtime turns what this throws or reports into the
 * status (see status.ts) and Events.
 */
export function reconcileCache(
  catalog: ImageCatalog,
  views: WeakMap<Context, ReplicationView> = new WeakMap(),
  memory: ReplicationMemory = new ReplicationMemory(),
  agentImage?: string,
): ReconcileFunc<CacheObject> {
  return async (cache, ctx) => {
    await ensureSecrets(cache, ctx);
    // A version the catalog lacks runs nothing new: the workload keeps the image it has.
    const imageRef = image(cache, catalog);
    if (!imageRef)
      throw new ProblemError({
        reason: 'VersionNotInCatalog',
        message: `${catalog.unsupported(cache.spec.engine, cache.spec.version)}. Set spec.version to one of those, or add the version to the image catalog.`,
      });
    if (!replicated(cache)) {
      await ctx.apply(desiredChildren(cache, imageRef, cache.spec.replicas, agentImage));
      for (const [kind, name] of unwantedChildren(cache)) await ctx.delete(kind, name);
      // What the Deployment's own controller reports (its Pods can't be created, no progress): a StatefulSet says nothing alike.
      const workload = controlledWorkload(cache, ctx);
      const problem = stateful(cache) ? undefined : deploymentProblem(workload);
      if (problem) ctx.report(problem);
      // Pods are read only while some are not ready: a healthy Cache costs no list.
      else if (workload && (workload.status?.readyReplicas ?? 0) < cache.spec.replicas)
        reportFailing(ctx, await failingInstances(cache, ctx));
      return undefined;
    }
    const recorded = await recordedTopology(cache, ctx);
    const topology = recorded?.topology ?? firstTopology(cache);
    // The Pods read the topology when they start: it exists before they do. Only ever created
    // here; changes are the replication plan's, never a re-render. The recorded one is written
    // again only to carry a new instance count (the agents' quorum answer reads it).
    if (!recorded || recorded.data[MEMBERS_KEY] !== String(cache.spec.replicas))
      await ctx.apply([desiredTopology(cache, topology)]);
    // The primary Lease too, before the Pods: their agents may only read and renew it.
    const lease = runsAgent(cache, agentImage)
      ? await ensurePrimaryLease(
          ctx.client,
          { apiVersion: cache.apiVersion ?? `${GROUP}/v1alpha1`, kind: 'Cache', metadata: cache.metadata },
          { name: childNames(cache).primaryLease, labels: labels(cache), signal: ctx.signal },
        )
      : undefined;
    await ctx.apply(desiredChildren(cache, imageRef, instanceCount(cache, topology), agentImage));
    for (const [kind, name] of unwantedChildren(cache)) await ctx.delete(kind, name);
    const { view, requeueAfter } = await reconcileReplication(cache, ctx, topology, memory, lease);
    views.set(ctx, view);
    reportFailing(ctx, view.troubles);
    return { requeueAfter };
  };
}

/**
 * What only the kubelet and the server's log know (a server that exits at
 * start, an image that can't be pulled): Degraded, not stalled, as a fixed
 * spec or image heals it.
 */
function reportFailing(ctx: Context, troubles: readonly PodTrouble[]): void {
  for (const t of troubles)
    ctx.report({ reason: 'InstanceFailing', message: `Instance ${t.pod}: ${t.message}`, stalled: false });
}

/** Its Pods that fail, read from the API server: the controller watches Pods as metadata only. */
async function failingInstances(cache: CacheObject, ctx: Context): Promise<PodTrouble[]> {
  const pods = await ctx.client.resource(Kinds.Pod).list({
    namespace: cache.metadata.namespace!,
    labelSelector: Object.entries(selector(cache))
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
    signal: ctx.signal,
  });
  return pods.items.flatMap((p) => podTrouble(p) ?? []);
}

/** Children this Cache may have had that its spec no longer asks for; deleted only if the Cache controls them. */
function unwantedChildren(cache: CacheObject): Array<[ResourceType, string]> {
  const n = childNames(cache);
  // spec.persistence and spec.mode can't change (CEL), so the other kind only exists if those rules were bypassed.
  const unwanted: Array<[ResourceType, string]> = [
    [stateful(cache) ? Kinds.Deployment : Kinds.StatefulSet, n.workload],
  ];
  if (!desiredDisruptionBudget(cache)) unwanted.push([Kinds.PodDisruptionBudget, n.disruptionBudget]);
  // The password-less binding is stale once auth is on. Generated credentials are kept when auth is
  // turned off, so turning it back on reuses the password instead of regenerating it.
  if (authEnabled(cache)) unwanted.push([SECRETS, n.binding]);
  return unwanted;
}

/**
 * The Secrets, before any Pod refers to them: a referenced one must exist;
 * a generated one (credentials with auth on, the password-less binding with
 * auth off) is created once and never rewritten. A Secret of that name that
 * someone else wrote is never used (ChildConflict): it would hand its
 * password, or none, to every client.
 */
async function ensureSecrets(cache: Live<CacheObject>, ctx: Context): Promise<void> {
  const referenced = authEnabled(cache) ? cache.spec.auth?.secretName : undefined;
  if (referenced) {
    if (ctx.get(SECRETS, referenced)) return;
    throw new ProblemError({
      reason: 'AuthSecretMissing',
      message: `Secret ${referenced} named in spec.auth.secretName does not exist in ${cache.metadata.namespace}`,
    });
  }
  if (!authEnabled(cache)) {
    // The binding holds no password: recreating it is always safe.
    await ctx.createOnce(childNames(cache).binding, () => bindingSecret(cache));
    return;
  }
  const name = childNames(cache).credentials;
  const outcome = await ctx.createOnce(name, () => generatedCredentials(cache, generatePassword()), {
    inUse: () => runsWithSecret(cache, name, ctx),
  });
  if (outcome === 'lost')
    throw new ProblemError({
      reason: 'CredentialsSecretLost',
      message: `Secret ${name} with the generated credentials is gone, but the running ${stateful(cache) ? 'StatefulSet' : 'Deployment'} ${childNames(cache).workload} still uses its password: restore the Secret ${name} from a backup. No new password is generated behind the clients' and the Pods' backs.`,
    });
}

/**
 * Whether the live workload was started with this Secret's password: its Pod
 * template reads the Secret. Redis and memcached keep no password in their
 * data (a persistent redis volume holds none), so here the running Pods, not
 * the volumes, are what a new password would silently diverge from. A
 * workload that does not read it yet (auth just turned on) gets one generated.
 */
function runsWithSecret(cache: CacheObject, secret: string, ctx: Context): boolean {
  const containers = liveWorkload(cache, ctx)?.spec?.template.spec?.containers ?? [];
  return containers.some((c) => (c.env ?? []).some((e) => e.valueFrom?.secretKeyRef?.name === secret));
}
