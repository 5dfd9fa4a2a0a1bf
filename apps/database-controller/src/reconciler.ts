import type { V1Job, V1StatefulSet } from '@kubernetes/client-node';
import { Kinds, isNotFound, type KubeObject, type ResourceType } from '@regulon/client';
import {
  announceProblems,
  applyChild,
  childProblem,
  ChildConflictError,
  deleteChildIfControlled,
  applyStatusIfChanged,
  createSecretOnce,
  generatePassword,
  isControlledBy,
  problemResult,
  quantityValue,
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
import { Database, type DatabaseObject } from './api.ts';
import { createdClaimSize, desiredChildren, generatedCredentials, image } from './children.ts';
import { InvalidParametersError } from './config.ts';
import { childNames, MAX_NAME_LENGTH, ROLE_LABEL, selector } from './names.ts';
import { computeStatus, type DatabaseStatus } from './status.ts';
import { OFFICIAL_IMAGES } from './versions.ts';
import type { ImageCatalog } from '@regulon/image-catalog';

export const FIELD_MANAGER = 'regulon-database';
const POD_INDEX_LABEL = 'apps.kubernetes.io/pod-index';

/** Reconciles one Database: children by server-side apply, credentials once, status from what it observes. */
export class DatabaseReconciler implements Reconciler {
  readonly #mgr: Manager;
  readonly #events: EventRecorder;
  readonly #written = new WrittenStatus<DatabaseStatus>();

  readonly #catalog: ImageCatalog;

  constructor(mgr: Manager, events: EventRecorder, catalog: ImageCatalog = OFFICIAL_IMAGES) {
    this.#mgr = mgr;
    this.#events = events;
    this.#catalog = catalog;
  }

  #cached<T extends KubeObject>(
    type: ResourceType,
    namespace: string,
    name: string,
    metadataOnly = true,
  ): T | undefined {
    return this.#mgr.informerFor<T>(type, { metadataOnly }).get(name, namespace);
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | void> {
    const cached = this.#mgr.informerFor<DatabaseObject>(Database.type).get(req.name, req.namespace);
    if (!cached || cached.metadata.deletionTimestamp) return; // garbage collection removes the children
    // The status this controller last wrote, even if the cache hasn't caught up with it yet.
    const db = this.#written.current(cached);
    const ns = req.namespace!;
    const owner = db as Owner & DatabaseObject;
    const names = childNames(db);
    const client = this.#mgr.client;
    const signal = ctx.signal;
    let problem: Problem | undefined;

    if (db.metadata.name!.length > MAX_NAME_LENGTH) {
      problem = {
        reason: 'NameTooLong',
        message: `name is ${db.metadata.name!.length} characters; at most ${MAX_NAME_LENGTH} fit the names derived from it (StatefulSet Pods, backup Jobs). Recreate the Database with a shorter name.`,
      };
      return this.#finish(
        db,
        { problem, statefulSet: undefined, backupJobs: [], credentialsSecret: names.credentials },
        ctx,
      );
    }

    // Credentials: a referenced Secret must exist; a generated one is created once and never rewritten.
    const credentials = this.#cached<KubeObject>(Kinds.Secret, ns, names.credentials);
    if (db.spec.credentials?.secretName) {
      if (!credentials) {
        problem = {
          reason: 'CredentialsSecretMissing',
          message: `Secret ${names.credentials} named in spec.credentials.secretName does not exist in ${ns}`,
        };
      }
    } else {
      const outcome = await createSecretOnce(client, () => generatedCredentials(db, generatePassword()), {
        owner,
        existing: credentials,
        fieldManager: FIELD_MANAGER,
        inUse: () => this.#hasDataVolume(db, signal),
        signal,
      }).catch((err: unknown) => {
        problem = childProblem(err, ctx);
        // A Secret a person made for this Database is used once it is named as theirs.
        if (err instanceof ChildConflictError)
          problem.message += ` To use it as this Database's credentials, set spec.credentials.secretName: ${names.credentials}.`;
        return undefined;
      });
      if (outcome === 'created') ctx.log.info({ secret: names.credentials }, 'generated credentials');
      if (outcome === 'lost') {
        problem = {
          reason: 'CredentialsSecretLost',
          message: `Secret ${names.credentials} with the generated credentials is gone, but the data volume still uses its password: restore the Secret ${names.credentials} from a backup. A new password would not open the existing data, so none is generated.`,
        };
      }
    }

    // A version the catalog lacks runs nothing new: the StatefulSet keeps the image it has.
    const imageRef = image(db, this.#catalog);
    if (!problem && !imageRef)
      problem = {
        reason: 'VersionNotInCatalog',
        message: `${this.#catalog.unsupported(db.spec.engine, db.spec.version)}. Set spec.version to one of those, or add the version to the image catalog.`,
      };

    if (!problem && imageRef) {
      try {
        // Read once: the claim size it was created with, and how many Pods it runs.
        const liveSts = this.#mgr.informerFor<V1StatefulSet>(Kinds.StatefulSet).get(names.statefulSet, ns);
        await this.#applyChildren(db, owner, createdClaimSize(liveSts), imageRef, ctx);
        await this.#labelRoles(db, liveSts, ctx);
        await this.#growVolumes(db, createdClaimSize(liveSts), ctx);
      } catch (err) {
        problem =
          err instanceof InvalidParametersError
            ? { reason: err.reason, message: err.message }
            : childProblem(err, ctx);
      }
    }

    const statefulSet = this.#mgr.informerFor<V1StatefulSet>(Kinds.StatefulSet).get(names.statefulSet, ns);
    const backupJobs = this.#mgr
      .informerFor<V1Job>(Kinds.Job)
      .list(ns)
      .filter(
        (j) =>
          j.metadata?.labels?.['app.kubernetes.io/instance'] === db.metadata.name &&
          j.metadata?.labels?.['app.kubernetes.io/component'] === 'database',
      );
    return this.#finish(
      db,
      {
        problem,
        statefulSet: isControlledBy(statefulSet ?? {}, owner) ? statefulSet : undefined,
        backupJobs,
        credentialsSecret: names.credentials,
      },
      ctx,
    );
  }

  async #finish(
    db: DatabaseObject,
    observed: Parameters<typeof computeStatus>[1],
    ctx: ReconcileContext,
  ): Promise<Result | void> {
    const problem = observed.problem;
    announceProblems(this.#events, db, problem ? [problem] : []);
    const status = computeStatus(db, { ...observed, image: image(db, this.#catalog) });
    const wrote = await applyStatusIfChanged(this.#mgr.client, Database.type, db, status, {
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
    db: DatabaseObject,
    owner: Owner,
    createdSize: string | undefined,
    imageRef: string,
    ctx: ReconcileContext,
  ): Promise<void> {
    const ns = db.metadata.namespace!;
    const client = this.#mgr.client;
    for (const child of desiredChildren(db, createdSize, imageRef)) {
      const existing = this.#cached(child.type, ns, child.name, false);
      if (child.object) {
        await applyChild(client, child.type, child.object, {
          fieldManager: FIELD_MANAGER,
          owner,
          existing,
          signal: ctx.signal,
        });
      } else if (await deleteChildIfControlled(client, child.type, existing, owner, { signal: ctx.signal })) {
        ctx.log.info({ kind: child.type.kind, name: child.name }, 'deleted child no longer wanted');
      }
    }
  }

  /**
   * Ordinal 0 is the primary: the client Service selects role=primary, the
   * read-only one role=replica. Pods are looked up by their StatefulSet names
   * (`<name>-<ordinal>`), not by scanning the namespace's Pods: a scan made
   * every reconcile cost grow with the square of the Databases in a namespace.
   */
  async #labelRoles(
    db: DatabaseObject,
    sts: V1StatefulSet | undefined,
    ctx: ReconcileContext,
  ): Promise<void> {
    const sel = selector(db);
    const ns = db.metadata.namespace;
    const stsName = childNames(db).statefulSet;
    const pods = this.#mgr.informerFor<KubeObject>(Kinds.Pod, { metadataOnly: true });
    // Ordinals above spec.replicas may still run while scaling down.
    const count = Math.max(db.spec.replicas, sts?.status?.replicas ?? 0);
    for (let i = 0; i < count; i++) {
      const pod = pods.get(`${stsName}-${i}`, ns);
      if (!pod || !Object.entries(sel).every(([k, v]) => pod.metadata?.labels?.[k] === v)) continue;
      const index = pod.metadata?.labels?.[POD_INDEX_LABEL];
      if (index === undefined) continue;
      const role = index === '0' ? 'primary' : 'replica';
      if (pod.metadata?.labels?.[ROLE_LABEL] === role) continue;
      await this.#mgr.client
        .resource(Kinds.Pod)
        .patch(
          pod.metadata!.name!,
          { metadata: { labels: { [ROLE_LABEL]: role } } },
          { type: 'merge', namespace: ns!, signal: ctx.signal },
        )
        .catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
    }
  }

  /**
   * Whether a data volume of this Database exists: postgres and mysql write the
   * password into the data directory once, when they initialise it, and ignore
   * it afterwards, so a volume outlives any new password. The PVCs are the
   * truth (they outlive the StatefulSet: retention Retain), read by GET rather
   * than from a cache: this runs only while the credentials Secret is absent
   * (at creation, or once it is lost), and a cache that has not yet seen a
   * claim would answer "no data", which is the one answer that must not be
   * wrong. The StatefulSet creates ordinal 0's claim first and removes it
   * last, so any existing claim among 0..replicas-1 is found.
   */
  async #hasDataVolume(db: DatabaseObject, signal: AbortSignal): Promise<boolean> {
    const sts = childNames(db).statefulSet;
    const claims = this.#mgr.client.resource(Kinds.PersistentVolumeClaim);
    for (let i = 0; i < db.spec.replicas; i++) {
      const found = await claims.get(`data-${sts}-${i}`, { namespace: db.metadata.namespace!, signal }).then(
        () => true,
        (err: unknown) => {
          if (isNotFound(err)) return false;
          throw err;
        },
      );
      if (found) return true;
    }
    return false;
  }

  /** Storage grows on the PVCs themselves; the StatefulSet template can't change. */
  async #growVolumes(db: DatabaseObject, created: string | undefined, ctx: ReconcileContext): Promise<void> {
    const want = String(db.spec.storage.size);
    const n = childNames(db);
    // Volumes start at the template's size: until the spec asks for more, there is nothing to read.
    if (!created || quantityValue(want) <= quantityValue(created)) return;
    for (let i = 0; i < db.spec.replicas; i++) {
      const name = `data-${n.statefulSet}-${i}`;
      const pvc = await this.#mgr.client
        .resource<KubeObject & { spec?: { resources?: { requests?: Record<string, string> } } }>(
          Kinds.PersistentVolumeClaim,
        )
        .get(name, { namespace: db.metadata.namespace!, signal: ctx.signal })
        .catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
      const have = pvc?.spec?.resources?.requests?.['storage'];
      if (!pvc || !have || have === want) continue;
      if (quantityValue(want) <= quantityValue(have)) continue;
      await this.#mgr.client
        .resource(Kinds.PersistentVolumeClaim)
        .patch(
          name,
          { spec: { resources: { requests: { storage: want } } } },
          { type: 'merge', namespace: db.metadata.namespace!, signal: ctx.signal },
        );
      ctx.log.info({ pvc: name, from: have, to: want }, 'growing volume');
    }
  }
}
