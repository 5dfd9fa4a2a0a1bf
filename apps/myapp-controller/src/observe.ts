import type { V1Deployment } from '@kubernetes/client-node';
import { Cache, type CacheObject } from '@regulon/cache-controller';
import { Kinds, metadataOnly, type KubeObject, type ResourceType } from '@regulon/client';
import { deploymentProblem } from '@regulon/conventions';
import { Database, type DatabaseObject } from '@regulon/database-controller';
import { isControlledBy, type Context, type Live, type Problem } from '@regulon/runtime';
import type { MyAppObject } from './api.ts';
import { childNames, type Binding, type Bindings } from './children.ts';

/** Secrets are read as metadata only: this controller never holds a Secret's values. */
export const SecretMetadata = metadataOnly(Kinds.Secret);

type Child = DatabaseObject | CacheObject;

/** One child custom resource the spec asks for, as the cache shows it. */
export interface ChildView {
  type: ResourceType<Child>;
  name: string;
  /** A same-named object this MyApp does not control: never its child. */
  foreign: KubeObject | undefined;
  /** The child, once its status describes its current spec (a status for an older spec is not trusted). */
  current: Child | undefined;
  exists: boolean;
  /** Its binding Secret, once the child names it and the Secret exists. */
  binding: Binding | undefined;
}

/** What a MyApp's reconcile and status are computed from: the cached children and the Secrets they name. */
export interface Observed {
  /** Undefined when the spec asks for no Database. */
  database: ChildView | undefined;
  cache: ChildView | undefined;
  /** The Deployment, only if this MyApp controls it. */
  deployment: V1Deployment | undefined;
  /** Secrets spec.env names that don't exist, with the variables naming each. */
  missingEnvSecrets: ReadonlyMap<string, string[]>;
  /** Every Secret looked up, present or not: a change to one must wake the MyApp. */
  secretsRead: string[];
}

export function observedFrom(app: Live<MyAppObject>, ctx: Context): Observed {
  const names = childNames(app);
  const secretsRead: string[] = [];
  const secret = (name: string) => {
    secretsRead.push(name);
    return ctx.get(SecretMetadata, name);
  };
  const child = (type: ResourceType<Child>, name: string, wanted: boolean): ChildView | undefined => {
    if (!wanted) return undefined;
    const existing = ctx.get(type, name);
    if (existing && !isControlledBy(existing, app))
      return { type, name, foreign: existing, current: undefined, exists: true, binding: undefined };
    const current =
      existing && existing.status?.observedGeneration === existing.metadata.generation ? existing : undefined;
    const bindingName = current?.status?.binding?.name;
    const rv = bindingName ? secret(bindingName)?.metadata.resourceVersion : undefined;
    return {
      type,
      name,
      foreign: undefined,
      current,
      exists: existing !== undefined,
      binding: bindingName && rv ? { secret: bindingName, resourceVersion: rv } : undefined,
    };
  };
  const deployment = ctx.get(Kinds.Deployment, names.deployment);

  const missingEnvSecrets = new Map<string, string[]>();
  for (const e of app.spec.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    if (!ref || ref.optional || secret(ref.name)) continue;
    missingEnvSecrets.set(ref.name, [...(missingEnvSecrets.get(ref.name) ?? []), e.name]);
  }
  return {
    database: child(Database, names.database, app.spec.database !== undefined),
    cache: child(Cache, names.cache, app.spec.cache !== undefined),
    deployment: deployment && isControlledBy(deployment, app) ? deployment : undefined,
    missingEnvSecrets,
    secretsRead,
  };
}

/** A wanted child has no binding Secret yet: the Deployment would start without its configuration. */
function waitingForBindings(o: Observed): boolean {
  return [o.database, o.cache].some((c) => c !== undefined && c.binding === undefined);
}

/**
 * The bindings the Deployment is rendered with, or undefined while it waits:
 * for a binding Secret, or for a Secret spec.env names (its Pods could only
 * fail with CreateContainerConfigError). A child that is stalled but has its
 * binding (its backups refused, say) holds nothing back.
 */
export function deploymentBindings(o: Observed): Bindings | undefined {
  if (waitingForBindings(o) || o.missingEnvSecrets.size > 0) return undefined;
  return { database: o.database?.binding, cache: o.cache?.binding };
}

/** The problems the cache shows: a stalled child, a missing env Secret, a failing Deployment. */
export function observedProblems(app: MyAppObject, o: Observed): Problem[] {
  const problems: Problem[] = [];
  for (const c of [o.database, o.cache]) {
    const stalled = c?.current?.status?.conditions?.find((x) => x.type === 'Stalled' && x.status === 'True');
    // A stalled child stalls the MyApp: GitOps tools watching the MyApp should stop waiting too.
    if (c && stalled)
      problems.push({
        reason: 'ChildStalled',
        message: `${c.type.kind} ${c.name} is stalled: ${stalled.message}`,
      });
  }
  const ns = app.metadata.namespace;
  for (const [secret, vars] of o.missingEnvSecrets)
    problems.push({
      reason: 'EnvSecretMissing',
      message: `Secret ${secret} named in spec.env (${vars.join(', ')}) does not exist in ${ns}: the application's Pods could not start (CreateContainerConfigError). Create the Secret or mark the reference optional.`,
    });
  const failing = deploymentProblem(o.deployment);
  if (failing) problems.push(failing);
  return problems;
}
