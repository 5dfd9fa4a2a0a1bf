import { Cache } from '@regulon/cache-controller';
import type { KubeObject, ResourceType } from '@regulon/client';
import { Database } from '@regulon/database-controller';
import {
  controllerOf,
  fieldErrors,
  type AdmissionContext,
  type FieldError,
  type WebhookPolicy,
  type WebhookServer,
} from '@regulon/runtime';
import { MyApp, type MyAppObject } from './api.ts';
import { childNames } from './children.ts';

/**
 * Ignore: while the manager is down, MyApps are admitted unchecked. The
 * webhook only says early what the reconcile enforces anyway: a MyApp never
 * adopts or overwrites a Database or Cache it does not control (it reports
 * ChildConflict in its status and waits), so a MyApp let through is safe,
 * and refusing every MyApp during a manager upgrade would break GitOps
 * syncs for nothing.
 */
export const MYAPP_WEBHOOK_POLICY: WebhookPolicy = { failurePolicy: 'Ignore', timeoutSeconds: 5 };

/**
 * A new MyApp whose Database or Cache name is taken by an object it would
 * not control is refused, naming that object and its owner. One controlled
 * by a MyApp of the same name (a deleted one whose children the garbage
 * collector has not removed yet) is not a collision.
 */
export function validateChildNames(app: MyAppObject, ctx: AdmissionContext): FieldError[] {
  const namespace = app.metadata.namespace ?? ctx.request.namespace;
  if (!app.metadata.name || !namespace) return [];
  const names = childNames(app);
  const children: Array<[ResourceType, string]> = [
    [Database, names.database],
    [Cache, names.cache],
  ];
  return children.flatMap(([kind, name]) => {
    const existing: KubeObject | undefined = ctx.get(kind, namespace, name);
    if (!existing) return [];
    const owner = controllerOf(existing);
    if (owner?.kind === MyApp.kind && owner.name === app.metadata.name) return [];
    const held = owner ? `is controlled by ${owner.kind} ${owner.name}` : 'belongs to no MyApp';
    return [
      fieldErrors.invalid(
        'metadata.name',
        app.metadata.name,
        `its ${kind.kind} would be named ${name}, but ${kind.kind} ${name} already exists and ${held}; choose another name for the MyApp, or delete or rename that ${kind.kind}`,
      ),
    ];
  });
}

/** Registers the MyApp's admission webhooks; its Databases and Caches are read from the manager's shared cache. */
export function setupMyAppWebhooks(webhooks: WebhookServer): void {
  webhooks
    .for(MyApp)
    .reads(Database)
    .reads(Cache)
    // Names never change after creation, so create is the only operation to check.
    .withValidator({ validateCreate: validateChildNames }, MYAPP_WEBHOOK_POLICY);
}
