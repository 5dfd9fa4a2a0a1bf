import { Cache } from '@regulon/cache-controller';
import { Kinds } from '@regulon/client';
import { Database } from '@regulon/database-controller';
import type { Manager } from '@regulon/runtime';
import { MyApp } from './api.ts';
import { MAX_NAME_LENGTH } from './children.ts';
import { observedFrom, SecretMetadata } from './observe.ts';
import { FIELD_MANAGER, reconcileMyApp } from './reconciler.ts';
import { computeStatus } from './status.ts';

export { MyApp, MyAppSpec, MyAppStatus, type MyAppObject } from './api.ts';
export { FIELD_MANAGER, reconcileMyApp } from './reconciler.ts';
export { childNames, MAX_NAME_LENGTH } from './children.ts';
export { MYAPP_RBAC } from './rbac.ts';
export { setupMyAppWebhooks } from './webhook.ts';

export const CONTROLLER_NAME = 'myapp';

/** Registers the MyApp controller; the Database and Cache controllers run the child custom resources. */
export function setupMyAppController(mgr: Manager, options: { maxConcurrentReconciles?: number } = {}): void {
  mgr
    .controller(CONTROLLER_NAME)
    .for(MyApp, {
      nameLimit: { max: MAX_NAME_LENGTH, derived: 'its Database, Cache, Deployment and Service' },
    })
    .owns(Database)
    .owns(Cache)
    .owns(Kinds.Deployment)
    .owns(Kinds.Service)
    // A Secret wakes only the MyApps whose last reconcile read it (ctx.waitFor): the binding Secrets of
    // their children and the Secrets their spec.env names. No owner reference leads back from either.
    .reads(SecretMetadata)
    .withOptions({
      fieldManager: FIELD_MANAGER,
      maxConcurrentReconciles: options.maxConcurrentReconciles ?? 1,
    })
    .withStatus((app, problem, ctx) => computeStatus(app, observedFrom(app, ctx), problem))
    .reconcile(reconcileMyApp);
}
