import type { V1Secret } from '@kubernetes/client-node';
import { Kinds, isNotFound } from '@regulon/client';
import {
  fieldErrors,
  type AdmissionContext,
  type Validation,
  type WebhookPolicy,
  type WebhookServer,
} from '@regulon/runtime';
import { Database, type DatabaseObject } from './api.ts';
import { setupDatabaseConversion } from './conversion.ts';

/** What the engines read from a credentials Secret (children.ts: the containers' secretKeyRefs). */
export const CREDENTIAL_KEYS = ['username', 'password'] as const;

/**
 * Fail: while the manager is down, Databases cannot be created or updated
 * (`kubectl` says the webhook could not be called); deletes and status writes
 * never go through this webhook and keep working. Refusing is cheap here,
 * since nothing reconciles a Database while the manager is down anyway, and
 * letting one through unchecked is not: a Database whose Secret lacks a key
 * gets Pods stuck in CreateContainerConfigError that only a person can fix,
 * which no CEL rule can see coming (it cannot read the Secret).
 */
export const DATABASE_WEBHOOK_POLICY: WebhookPolicy = { failurePolicy: 'Fail', timeoutSeconds: 5 };

const FIELD = 'spec.credentials.secretName';

/**
 * A Database naming a credentials Secret that exists without `username` or
 * `password` is refused. One that does not exist yet is admitted with a
 * warning: the Database waits for it (the reconcile reports it), so the two
 * can be applied in either order. The Secret is read with a GET, never
 * cached: the manager holds no Secret data.
 */
export async function validateCredentials(db: DatabaseObject, ctx: AdmissionContext): Promise<Validation> {
  const name = db.spec.credentials?.secretName;
  const namespace = db.metadata.namespace ?? ctx.request.namespace;
  if (!name || !namespace) return {};
  let secret: V1Secret;
  try {
    secret = await ctx.client.resource<V1Secret>(Kinds.Secret).get(name, { namespace, signal: ctx.signal });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    return { warnings: [`Secret ${name} does not exist yet: the Database waits for it`] };
  }
  const missing = CREDENTIAL_KEYS.filter((key) => !secret.data?.[key]);
  if (!missing.length) return {};
  return {
    errors: [
      fieldErrors.invalid(
        FIELD,
        name,
        `Secret ${name} has no ${missing.join(' or ')} (a credentials Secret needs the keys ${CREDENTIAL_KEYS.join(' and ')}, non-empty)`,
      ),
    ],
  };
}

/**
 * Registers the Database's webhooks: its conversion between versions, and its
 * admission (which the webhook configurations in deploy/webhook turn on).
 */
export function setupDatabaseWebhooks(webhooks: WebhookServer): void {
  setupDatabaseConversion(webhooks);
  webhooks.for(Database).withValidator(
    {
      validateCreate: validateCredentials,
      // Only a changed reference is checked again: an update that leaves it alone (a finalizer
      // removed, a label) is never refused because of what happened to the Secret since.
      validateUpdate: (db, old, ctx) =>
        db.spec.credentials?.secretName !== old.spec.credentials?.secretName
          ? validateCredentials(db, ctx)
          : undefined,
    },
    DATABASE_WEBHOOK_POLICY,
  );
}
