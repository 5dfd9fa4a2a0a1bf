import type { V1Deployment, V1StatefulSet } from '@kubernetes/client-node';
import { Kinds, type KubeObject, type ResourceType } from '@regulon/client';
import {
  announceProblems,
  applyChild,
  childProblem,
  deleteChildIfControlled,
  applyStatusIfChanged,
  createSecretOnce,
  deploymentProblem,
  problemResult,
  generatePassword,
  isControlledBy,
  type EventRecorder,
  type Manager,
  type Owner,
  type Problem,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
  WrittenStatus,
} from '@regulon/runtime';
import { Cache, type CacheObject } from './api.ts';
import {
  bindingSecret,
  desiredConfigMap,
  desiredDeployment,
  desiredDisruptionBudget,
  desiredServices,
  desiredStatefulSet,
  generatedCredentials,
  image,
} from './children.ts';
import {
  authEnabled,
  authSecretName,
  bindingSecretName,
  childNames,
  MAX_NAME_LENGTH,
  persistent,
} from './names.ts';
import { computeStatus, type Observed } from './status.ts';
import { OFFICIAL_IMAGES } from './versions.ts';
import type { ImageCatalog } from '@regulon/image-catalog';

export const FIELD_MANAGER = 'regulon-cache';

/** Kinds the controller reads whole from the cache (it needs their spec and status); the rest as metadata. */
/** Children cached in full, so applyChild can skip an apply that would change nothing; Secrets stay metadata-only. */
const FULL = new Set<ResourceType>([
  Kinds.Deployment,
  Kinds.StatefulSet,
  Kinds.Service,
  Kinds.ConfigMap,
  Kinds.PodDisruptionBudget,
]);

/** Reconciles one Cache: children by server-side apply, Secrets once, status from what it observes. */
export class CacheReconciler implements Reconciler {
  readonly #mgr: Manager;
  readonly #events: EventRecorder;
  readonly #written = new WrittenStatus<NonNullable<CacheObject['status']>>();

  readonly #catalog: ImageCatalog;

  constructor(mgr: Manager, events: EventRecorder, catalog: ImageCatalog = OFFICIAL_IMAGES) {
    this.#mgr = mgr;
    this.#events = events;
    this.#catalog = catalog;
  }

  #cached<T extends KubeObject>(type: ResourceType, namespace: string, name: string): T | undefined {
    return this.#mgr.informerFor<T>(type, { metadataOnly: !FULL.has(type) }).get(name, namespace);
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | void> {
    const cached = this.#mgr.informerFor<CacheObject>(Cache.type).get(req.name, req.namespace);
    if (!cached || cached.metadata.deletionTimestamp) return; // garbage collection removes the children
    // The status this controller last wrote, even if the cache hasn't caught up with it yet.
    const cache = this.#written.current(cached);
    const ns = req.namespace!;
    const owner = cache as Owner & CacheObject;
    const names = childNames(cache);
    const binding = bindingSecretName(cache);

    if (cache.metadata.name!.length > MAX_NAME_LENGTH) {
      const problem = {
        reason: 'NameTooLong',
        message: `name is ${cache.metadata.name!.length} characters; at most ${MAX_NAME_LENGTH} fit the names derived from it (Pod labels, the headless Service). Recreate the Cache with a shorter name.`,
      };
      return this.#finish(cache, { problem, workload: undefined, bindingSecret: binding }, ctx);
    }

    let problem = await this.#secrets(cache, owner, ctx).catch((err: unknown) => childProblem(err, ctx));
    // A version the catalog lacks runs nothing new: the workload keeps the image it has.
    const imageRef = image(cache, this.#catalog);
    if (!problem && !imageRef)
      problem = {
        reason: 'VersionNotInCatalog',
        message: `${this.#catalog.unsupported(cache.spec.engine, cache.spec.version)}. Set spec.version to one of those, or add the version to the image catalog.`,
      };
    if (!problem && imageRef) {
      try {
        await this.#applyChildren(cache, owner, imageRef, ctx);
      } catch (err) {
        problem = childProblem(err, ctx);
      }
    }

    const type = persistent(cache) ? Kinds.StatefulSet : Kinds.Deployment;
    const live = this.#cached<V1Deployment | V1StatefulSet>(type, ns, names.workload);
    const workload = live && isControlledBy(live, owner) ? live : undefined;
    // What the Deployment's own controller reports (its Pods can't be created, no progress): a StatefulSet says nothing alike.
    problem ??= persistent(cache) ? undefined : deploymentProblem(workload);
    return this.#finish(cache, { problem, workload, bindingSecret: binding }, ctx);
  }

  /**
   * The Secrets, before any Pod refers to them: a referenced one must exist;
   * a generated one (credentials with auth on, the password-less binding with
   * auth off) is created once and never rewritten. The controller only ever
   * sees Secrets' metadata.
   */
  async #secrets(cache: CacheObject, owner: Owner, ctx: ReconcileContext): Promise<Problem | undefined> {
    const ns = cache.metadata.namespace!;
    const names = childNames(cache);
    const secretName = authSecretName(cache);
    if (cache.spec.auth?.secretName && secretName) {
      if (this.#cached(Kinds.Secret, ns, secretName)) return undefined;
      return {
        reason: 'AuthSecretMissing',
        message: `Secret ${secretName} named in spec.auth.secretName does not exist in ${ns}`,
      };
    }
    const [name, build] = authEnabled(cache)
      ? [names.credentials, () => generatedCredentials(cache, generatePassword())]
      : [names.binding, () => bindingSecret(cache)];
    // A Secret someone else wrote is never used (createSecretOnce throws ChildConflictError): it would
    // hand its password, or none, to every client.
    const existing = this.#cached(Kinds.Secret, ns, name);
    const outcome = await createSecretOnce(this.#mgr.client, build, {
      owner,
      existing,
      fieldManager: FIELD_MANAGER,
      // The binding holds no password: recreating it is always safe.
      ...(authEnabled(cache) ? { inUse: () => this.#runsWithSecret(cache, name) } : {}),
      signal: ctx.signal,
    });
    if (outcome === 'created')
      ctx.log.info({ secret: name }, authEnabled(cache) ? 'generated credentials' : 'created binding');
    if (outcome === 'lost') {
      return {
        reason: 'CredentialsSecretLost',
        message: `Secret ${name} with the generated credentials is gone, but the running ${persistent(cache) ? 'StatefulSet' : 'Deployment'} ${names.workload} still uses its password: restore the Secret ${name} from a backup. No new password is generated behind the clients' and the Pods' backs.`,
      };
    }
    return undefined;
  }

  /**
   * Whether the live workload was started with this Secret's password: its Pod
   * template reads the Secret. Redis and memcached keep no password in their
   * data (a persistent redis volume holds none), so here the running Pods, not
   * the volumes, are what a new password would silently diverge from. A
   * workload that does not read it yet (auth just turned on) gets one generated.
   */
  #runsWithSecret(cache: CacheObject, secret: string): boolean {
    const type = persistent(cache) ? Kinds.StatefulSet : Kinds.Deployment;
    const workload = this.#cached<V1Deployment | V1StatefulSet>(
      type,
      cache.metadata.namespace!,
      childNames(cache).workload,
    );
    return (workload?.spec?.template.spec?.containers ?? []).some((c) =>
      (c.env ?? []).some((e) => e.valueFrom?.secretKeyRef?.name === secret),
    );
  }

  async #finish(cache: CacheObject, observed: Observed, ctx: ReconcileContext): Promise<Result | void> {
    const problem = observed.problem;
    announceProblems(this.#events, cache, problem ? [problem] : []);
    const status = computeStatus(cache, { ...observed, image: image(cache, this.#catalog) });
    const wrote = await applyStatusIfChanged(this.#mgr.client, Cache.type, cache, status, {
      fieldManager: FIELD_MANAGER,
      signal: ctx.signal,
      written: this.#written,
    });
    if (wrote) ctx.log.debug({ phase: status.phase }, 'status updated');
    // A missing referenced Secret heals when it appears (the Secret watch wakes us), a conflict when the
    // object is gone (ctx.waitFor); only a rejected child is retried, with backoff.
    return problemResult(problem);
  }

  async #applyChildren(
    cache: CacheObject,
    owner: Owner,
    imageRef: string,
    ctx: ReconcileContext,
  ): Promise<void> {
    const ns = cache.metadata.namespace!;
    const n = childNames(cache);
    const client = this.#mgr.client;
    const apply = <T extends KubeObject>(type: ResourceType, desired: T, name: string) =>
      applyChild(client, type, desired, {
        fieldManager: FIELD_MANAGER,
        owner,
        existing: this.#cached(type, ns, name),
        signal: ctx.signal,
      });
    const remove = async (type: ResourceType, name: string) => {
      if (
        await deleteChildIfControlled(client, type, this.#cached(type, ns, name), owner, {
          signal: ctx.signal,
        })
      ) {
        ctx.log.info({ kind: type.kind, name }, 'deleted child no longer wanted');
      }
    };

    await apply(Kinds.ConfigMap, desiredConfigMap(cache), n.config);
    const services = desiredServices(cache);
    await apply(Kinds.Service, services.client, n.clientService);
    await apply(Kinds.Service, services.headless, n.headlessService);
    // spec.persistence can't change (CEL), so the other kind only exists if that rule was bypassed.
    if (persistent(cache)) {
      await apply(Kinds.StatefulSet, desiredStatefulSet(cache, imageRef), n.workload);
      await remove(Kinds.Deployment, n.workload);
    } else {
      await apply(Kinds.Deployment, desiredDeployment(cache, imageRef), n.workload);
      await remove(Kinds.StatefulSet, n.workload);
    }
    const pdb = desiredDisruptionBudget(cache);
    if (pdb) await apply(Kinds.PodDisruptionBudget, pdb, n.disruptionBudget);
    else await remove(Kinds.PodDisruptionBudget, n.disruptionBudget);
    // The password-less binding is stale once auth is on. Generated credentials are kept when auth is
    // turned off, so turning it back on reuses the password instead of regenerating it.
    if (authEnabled(cache)) await remove(Kinds.Secret, n.binding);
  }
}
