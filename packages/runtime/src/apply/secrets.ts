import { randomBytes } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { Kinds, isAlreadyExists, type KubeClient, type KubeObject } from '@regulon/client';
import { liveMetadata } from './apply.ts';
import { assertCanControl, controllerReference, type Owner } from './ownership.ts';
import { ChildRejectedError, isRejection } from '../status/problems.ts';

/** A random password of URL-safe characters (24 random bytes: 192 bits). */
export function generatePassword(bytes = 24): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * What createSecretOnce found:
 * - `created`: this call created the Secret;
 * - `exists`: it exists (in the cache, or the API server says so);
 * - `lost`: it does not exist, but data that depends on it does (`inUse`),
 *   so nothing was created: a new password would lock the data out.
 */
export type SecretOnceOutcome = 'created' | 'exists' | 'lost';

/**
 * Creates a Secret of generated credentials if it does not exist, and never
 * touches it again: no apply, no replace, no regeneration. `existing` is the
 * cache's (metadata-only) view; when it is present nothing is written. A
 * create that races with another returns AlreadyExists, which is success too.
 *
 * A Secret of that name that `owner` does not control (a person's, another
 * controller's) is never used: its password was not generated here, so
 * ChildConflictError is thrown, as applyChild does. A create the API server
 * refuses for good (a quota on Secrets, an admission policy) throws
 * ChildRejectedError.
 *
 * `inUse` says whether data that was set up with the Secret's password still
 * exists (a database volume initialised with it, Pods started with it). When
 * it does, a missing Secret is lost, not new: nothing is created, and the
 * caller reports `lost` so that a person restores the Secret. Before saying
 * so, a dry-run create asks the API server itself, as the cache may simply
 * not have seen a Secret created a moment ago (dry run: nothing is stored,
 * and it needs no verb beyond `create`, which the caller already has).
 */
export async function createSecretOnce(
  client: KubeClient,
  build: () => V1Secret,
  opts: {
    owner: Owner;
    existing: KubeObject | undefined;
    fieldManager: string;
    inUse?: () => boolean | Promise<boolean>;
    signal?: AbortSignal | undefined;
  },
): Promise<SecretOnceOutcome> {
  assertCanControl(Kinds.Secret, opts.existing, opts.owner);
  if (opts.existing) return 'exists';
  const signal = opts.signal ? { signal: opts.signal } : {};
  const secrets = client.resource<V1Secret>(Kinds.Secret);
  if (opts.inUse && (await opts.inUse())) {
    // Only a name: the probe never carries a password, not even one that would be discarded.
    const name = build().metadata?.name;
    const namespace = opts.owner.metadata.namespace;
    try {
      await secrets.create(
        { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace } },
        { fieldManager: opts.fieldManager, dryRun: true, ...signal },
      );
      return 'lost';
    } catch (err) {
      if (isAlreadyExists(err)) return existsIfControlled(client, name, opts);
      if (isRejection(err)) throw new ChildRejectedError(Kinds.Secret, name, err);
      throw err;
    }
  }
  const secret = build();
  secret.metadata = {
    ...secret.metadata,
    namespace: secret.metadata?.namespace ?? opts.owner.metadata.namespace,
    ownerReferences: [controllerReference(opts.owner)],
  };
  try {
    await secrets.create(
      { apiVersion: 'v1', kind: 'Secret', ...secret },
      { fieldManager: opts.fieldManager, ...signal },
    );
    return 'created';
  } catch (err) {
    if (isAlreadyExists(err)) return existsIfControlled(client, secret.metadata.name, opts);
    if (isRejection(err)) throw new ChildRejectedError(Kinds.Secret, secret.metadata.name, err);
    throw err;
  }
}

/**
 * A Secret the cache had not shown exists after all: it is this owner's only
 * if the owner controls it (its metadata only: no credentials are read).
 * Someone else's Secret of that name is a conflict, never a password to use.
 */
async function existsIfControlled(
  client: KubeClient,
  name: string | undefined,
  opts: { owner: Owner; signal?: AbortSignal },
): Promise<'exists'> {
  const live = await liveMetadata(client, Kinds.Secret, name, opts.owner.metadata.namespace, opts.signal);
  assertCanControl(Kinds.Secret, live, opts.owner);
  return 'exists';
}
