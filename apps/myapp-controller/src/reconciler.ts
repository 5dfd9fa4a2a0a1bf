import { Cache } from '@regulon/cache-controller';
import { Database } from '@regulon/database-controller';
import { problemOf, type Context, type Live } from '@regulon/runtime';
import type { MyAppObject } from './api.ts';
import { childNames, desiredChildren } from './children.ts';
import { deploymentBindings, observedFrom, observedProblems, SecretMetadata } from './observe.ts';

export const FIELD_MANAGER = 'regulon-myapp';

/**
 * Reconciles a MyApp: its Database and Cache as child custom resources (their
 * own controllers run them), its Deployment once the Secrets it reads exist,
 * and its Service. A child that fails does not hold back the others: each
 * problem is reported and the rest still converge.
 */
export async function reconcileMyApp(app: Live<MyAppObject>, ctx: Context): Promise<void> {
  const seen = observedFrom(app, ctx);
  // No owner reference leads from a binding Secret (its Database's) or an env Secret (the user's) to the MyApp.
  for (const name of seen.secretsRead) ctx.waitFor(SecretMetadata, app.metadata.namespace, name);

  const names = childNames(app);
  if (!app.spec.database) await reporting(ctx, () => ctx.delete(Database, names.database));
  if (!app.spec.cache) await reporting(ctx, () => ctx.delete(Cache, names.cache));
  for (const child of desiredChildren(app, deploymentBindings(seen)))
    await reporting(ctx, () => ctx.apply([child]));
  for (const problem of observedProblems(app, seen)) ctx.report(problem);
}

/** A taken name or a refused write is reported and the reconcile goes on; anything else is retried with backoff. */
async function reporting(ctx: Context, write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (err) {
    ctx.report(problemOf(err, ctx));
  }
}
