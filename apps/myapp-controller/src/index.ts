import { Cache } from '@regulon/cache-controller';
import { Kinds, type KubeObject } from '@regulon/client';
import { Database } from '@regulon/database-controller';
import type { Manager } from '@regulon/runtime';
import { MyApp } from './api.ts';
import { MyAppReconciler } from './reconciler.ts';

export { MyApp, MyAppSpec, MyAppStatus, type MyAppObject } from './api.ts';
export { MyAppReconciler, FIELD_MANAGER } from './reconciler.ts';
export { childNames, MAX_NAME_LENGTH } from './children.ts';

export const CONTROLLER_NAME = 'myapp';

/** Registers the MyApp controller; the Database and Cache controllers run the child custom resources. */
export function setupMyAppController(mgr: Manager, options: { maxConcurrentReconciles?: number } = {}): void {
  mgr
    .controller(CONTROLLER_NAME)
    .for(MyApp.type)
    .owns(Database.type)
    .owns(Cache.type)
    .owns(Kinds.Deployment)
    .owns(Kinds.Service)
    // A binding Secret belongs to a Database or Cache that belongs to a MyApp.
    .watches(Kinds.Secret, (s) => grandOwner(mgr, s), { metadataOnly: true })
    .withOptions({ maxConcurrentReconciles: options.maxConcurrentReconciles ?? 1 })
    .complete(new MyAppReconciler(mgr, mgr.eventRecorder(CONTROLLER_NAME)));
}

function grandOwner(mgr: Manager, secret: KubeObject) {
  const ns = secret.metadata?.namespace;
  const parent = secret.metadata?.ownerReferences?.find((r) => r.controller === true);
  if (!ns || !parent) return [];
  const type = parent.kind === 'Database' ? Database.type : parent.kind === 'Cache' ? Cache.type : undefined;
  if (!type) return [];
  const child = mgr.informerFor(type).get(parent.name, ns);
  const app = child?.metadata?.ownerReferences?.find((r) => r.controller === true && r.kind === 'MyApp');
  return app ? [{ namespace: ns, name: app.name }] : [];
}
export { MYAPP_RBAC } from './rbac.ts';
