import { randomBytes } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { Kinds, isAlreadyExists, type KubeClient, type KubeObject } from '@regulon/client';
import { controllerReference, type Owner } from './ownership.ts';

/** A random password of URL-safe characters (24 random bytes: 192 bits). */
export function generatePassword(bytes = 24): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * Creates a Secret of generated credentials if it does not exist, and never
 * touches it again: no apply, no replace, no regeneration. `existing` is the
 * cache's (metadata-only) view; when it is present nothing is written. A
 * create that races with another returns AlreadyExists, which is success too.
 * Returns whether this call created it.
 */
export async function createSecretOnce(
  client: KubeClient,
  build: () => V1Secret,
  opts: { owner: Owner; existing: KubeObject | undefined; fieldManager: string; signal?: AbortSignal },
): Promise<boolean> {
  if (opts.existing) return false;
  const secret = build();
  secret.metadata = {
    ...secret.metadata,
    namespace: secret.metadata?.namespace ?? opts.owner.metadata.namespace,
    ownerReferences: [controllerReference(opts.owner)],
  };
  try {
    await client
      .resource<V1Secret>(Kinds.Secret)
      .create(
        { apiVersion: 'v1', kind: 'Secret', ...secret },
        { fieldManager: opts.fieldManager, ...(opts.signal ? { signal: opts.signal } : {}) },
      );
    return true;
  } catch (err) {
    if (isAlreadyExists(err)) return false;
    throw err;
  }
}
