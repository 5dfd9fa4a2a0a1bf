import type { V1PersistentVolumeClaim, V1StatefulSet } from '@kubernetes/client-node';
import { Kinds, isNotFound, metadataOnly } from '@regulon/client';
import type { ImageCatalog } from '@regulon/image-catalog';
import {
  CHILD_CONFLICT,
  ChildConflictError,
  generatePassword,
  ProblemError,
  quantityValue,
  type Context,
  type ReconcileFunc,
} from '@regulon/runtime';
import type { DatabaseObject } from './api.ts';
import {
  createdClaimSize,
  desiredChildren,
  generatedCredentials,
  image,
  type DesiredChild,
} from './children.ts';
import { InvalidParametersError } from './config.ts';
import { childNames, ROLE_LABEL, selector } from './names.ts';

export const FIELD_MANAGER = 'regulon-database';
/** Pods are read as metadata only (their role is a label), Secrets too: credentials are never held in memory. */
export const PodMetadata = metadataOnly(Kinds.Pod);
export const SecretMetadata = metadataOnly(Kinds.Secret);
const POD_INDEX_LABEL = 'apps.kubernetes.io/pod-index';

/**
 * Reconciles one Database: credentials first (a referenced Secret must exist,
 * a generated one is created once and never rewritten), then the children by
 * server-side apply, the Pods' roles and the volumes' size. Whatever stops it
 * is a ProblemError, reported by the runtime in the status.
 */
export function reconcileDatabase(catalog: ImageCatalog): ReconcileFunc<DatabaseObject> {
  return async (db, ctx) => {
    await ensureCredentials(db, ctx);
    // A version the catalog lacks runs nothing new: the StatefulSet keeps the image it has.
    const imageRef = image(db, catalog);
    if (!imageRef)
      throw new ProblemError({
        reason: 'VersionNotInCatalog',
        message: `${catalog.unsupported(db.spec.engine, db.spec.version)}. Set spec.version to one of those, or add the version to the image catalog.`,
      });
    // Read once: the claim size it was created with, and how many Pods it runs.
    const sts = ctx.get(Kinds.StatefulSet, childNames(db).statefulSet);
    const children = renderChildren(db, createdClaimSize(sts), imageRef);
    await ctx.apply(children.flatMap((c) => (c.object ? [c.object] : [])));
    for (const c of children) if (!c.object) await ctx.delete(c.type, c.name);
    await labelRoles(db, sts, ctx);
    await growVolumes(db, createdClaimSize(sts), ctx);
  };
}

/** desiredChildren, with parameters the engine can't take reported as a problem: nothing is applied. */
function renderChildren(
  db: DatabaseObject,
  createdSize: string | undefined,
  imageRef: string,
): DesiredChild[] {
  try {
    return desiredChildren(db, createdSize, imageRef);
  } catch (err) {
    if (err instanceof InvalidParametersError)
      throw new ProblemError({ reason: err.reason, message: err.message });
    throw err;
  }
}

async function ensureCredentials(db: DatabaseObject, ctx: Context): Promise<void> {
  const name = childNames(db).credentials;
  if (db.spec.credentials?.secretName) {
    if (ctx.get(SecretMetadata, name)) return;
    throw new ProblemError({
      reason: 'CredentialsSecretMissing',
      message: `Secret ${name} named in spec.credentials.secretName does not exist in ${db.metadata.namespace}`,
    });
  }
  const outcome = await ctx
    .createOnce(childNames(db).credentials, () => generatedCredentials(db, generatePassword()), {
      inUse: () => hasDataVolume(db, ctx),
    })
    .catch((err: unknown) => {
      if (!(err instanceof ChildConflictError)) throw err;
      // Deleting the foreign Secret is what lets the Database proceed; no owner reference leads back here.
      ctx.waitFor(err.type, err.namespace, err.childName);
      // A Secret a person made for this Database is used once it is named as theirs.
      throw new ProblemError({
        reason: CHILD_CONFLICT,
        message: `${err.message} To use it as this Database's credentials, set spec.credentials.secretName: ${name}.`,
      });
    });
  if (outcome === 'lost')
    throw new ProblemError({
      reason: 'CredentialsSecretLost',
      message: `Secret ${name} with the generated credentials is gone, but the data volume still uses its password: restore the Secret ${name} from a backup. A new password would not open the existing data, so none is generated.`,
    });
}

/**
 * Ordinal 0 is the primary: the client Service selects role=primary, the
 * read-only one role=replica. Pods are looked up by their StatefulSet names
 * (`<name>-<ordinal>`), not by scanning the namespace's Pods: a scan made
 * every reconcile cost grow with the square of the Databases in a namespace.
 */
async function labelRoles(db: DatabaseObject, sts: V1StatefulSet | undefined, ctx: Context): Promise<void> {
  const sel = selector(db);
  const stsName = childNames(db).statefulSet;
  // Ordinals above spec.replicas may still run while scaling down.
  const count = Math.max(db.spec.replicas, sts?.status?.replicas ?? 0);
  for (let i = 0; i < count; i++) {
    const pod = ctx.get(PodMetadata, `${stsName}-${i}`);
    if (!pod || !Object.entries(sel).every(([k, v]) => pod.metadata?.labels?.[k] === v)) continue;
    const index = pod.metadata?.labels?.[POD_INDEX_LABEL];
    if (index === undefined) continue;
    const role = index === '0' ? 'primary' : 'replica';
    if (pod.metadata?.labels?.[ROLE_LABEL] === role) continue;
    await ctx.client
      .resource(Kinds.Pod)
      .patch(
        `${stsName}-${i}`,
        { metadata: { labels: { [ROLE_LABEL]: role } } },
        { type: 'merge', namespace: db.metadata.namespace!, signal: ctx.signal },
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
async function hasDataVolume(db: DatabaseObject, ctx: Context): Promise<boolean> {
  for (let i = 0; i < db.spec.replicas; i++) if (await claim(db, i, ctx)) return true;
  return false;
}

/** The data volume claim of ordinal `i`, from the API server; undefined when it does not exist. */
function claim(db: DatabaseObject, i: number, ctx: Context): Promise<V1PersistentVolumeClaim | undefined> {
  return ctx.client
    .resource(Kinds.PersistentVolumeClaim)
    .get(`data-${childNames(db).statefulSet}-${i}`, { namespace: db.metadata.namespace!, signal: ctx.signal })
    .catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
}

/** Storage grows on the PVCs themselves; the StatefulSet template can't change. */
async function growVolumes(db: DatabaseObject, created: string | undefined, ctx: Context): Promise<void> {
  const want = String(db.spec.storage.size);
  // Volumes start at the template's size: until the spec asks for more, there is nothing to read.
  if (!created || quantityValue(want) <= quantityValue(created)) return;
  for (let i = 0; i < db.spec.replicas; i++) {
    const pvc = await claim(db, i, ctx);
    const name = pvc?.metadata?.name;
    const have = pvc?.spec?.resources?.requests?.['storage'];
    if (!name || !have || have === want || quantityValue(want) <= quantityValue(have)) continue;
    await ctx.client
      .resource(Kinds.PersistentVolumeClaim)
      .patch(
        name,
        { spec: { resources: { requests: { storage: want } } } },
        { type: 'merge', namespace: db.metadata.namespace!, signal: ctx.signal },
      );
    ctx.log.info({ pvc: name, from: have, to: want }, 'growing volume');
  }
}
