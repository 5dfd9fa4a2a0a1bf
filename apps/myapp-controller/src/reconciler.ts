import type { V1Deployment } from '@kubernetes/client-node';
import { Cache, type CacheObject } from '@regulon/cache-controller';
import { Kinds, type KubeObject, type ResourceType } from '@regulon/client';
import { Database, type DatabaseObject } from '@regulon/database-controller';
import {
  applyChild,
  deleteChildIfControlled,
  applyStatusIfChanged,
  conditionMatches,
  derivePhase,
  isControlledBy,
  setCondition,
  type Condition,
  type EventRecorder,
  type Manager,
  type Owner,
  type ReconcileContext,
  type Reconciler,
  type Request,
  WrittenStatus,
} from '@regulon/runtime';
import { MyApp, type MyAppObject } from './api.ts';
import { childNames, desiredDeployment, desiredService, MAX_NAME_LENGTH, type Binding } from './children.ts';

export const FIELD_MANAGER = 'regulon-myapp';

type Status = NonNullable<MyAppObject['status']>;
type Component = NonNullable<Status['components']>[number];
type Child = DatabaseObject | CacheObject;

/** What one child contributes: its readiness, and its binding Secret once it exists. */
interface ChildState {
  component: Component | undefined;
  binding: Binding | undefined;
  /** True when the child is wanted but its binding Secret doesn't exist yet. */
  waitingForBinding: boolean;
  conflict?: string;
}

/**
 * Reconciles a MyApp: its Database and Cache as child custom resources (their
 * own controllers run them), then its Deployment once the children's binding
 * Secrets exist, then a cumulative status.
 */
export class MyAppReconciler implements Reconciler {
  readonly #mgr: Manager;
  readonly #events: EventRecorder;
  readonly #written = new WrittenStatus<Status>();

  constructor(mgr: Manager, events: EventRecorder) {
    this.#mgr = mgr;
    this.#events = events;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<void> {
    const cached = this.#mgr.informerFor<MyAppObject>(MyApp.type).get(req.name, req.namespace);
    if (!cached || cached.metadata.deletionTimestamp) return;
    // The status this controller last wrote, even if the cache hasn't caught up with it yet.
    const app = this.#written.current(cached);
    const owner = app as Owner & MyAppObject;
    const names = childNames(app);
    const problems: Array<{ reason: string; message: string }> = [];

    if (app.metadata.name!.length > MAX_NAME_LENGTH) {
      problems.push({
        reason: 'NameTooLong',
        message: `name is ${app.metadata.name!.length} characters; at most ${MAX_NAME_LENGTH} fit the names of its Database and Cache. Recreate the MyApp with a shorter name.`,
      });
      return this.#finish(app, problems, [], undefined, false, ctx);
    }

    const db = await this.#child(app, owner, Database.type, names.database, app.spec.database, ctx);
    const cache = await this.#child(app, owner, Cache.type, names.cache, app.spec.cache, ctx);
    for (const c of [db, cache])
      if (c.conflict) problems.push({ reason: 'ChildConflict', message: c.conflict });

    // The Deployment waits for the Secrets it reads, so the app never starts without its config.
    let deploymentBlocked = db.waitingForBinding || cache.waitingForBinding || problems.length > 0;
    const existing = this.#mgr
      .informerFor<V1Deployment>(Kinds.Deployment)
      .get(names.deployment, app.metadata.namespace);
    if (!deploymentBlocked) {
      await applyChild(
        this.#mgr.client,
        Kinds.Deployment,
        desiredDeployment(app, db.binding, cache.binding),
        {
          fieldManager: FIELD_MANAGER,
          owner,
          existing,
          signal: ctx.signal,
        },
      ).catch((err: unknown) => {
        problems.push({ reason: 'ChildConflict', message: (err as Error).message });
        deploymentBlocked = true;
      });
    }
    await applyChild(this.#mgr.client, Kinds.Service, desiredService(app), {
      fieldManager: FIELD_MANAGER,
      owner,
      existing: this.#mgr.informerFor(Kinds.Service).get(names.service, app.metadata.namespace),
      signal: ctx.signal,
    }).catch((err: unknown) => problems.push({ reason: 'ChildConflict', message: (err as Error).message }));

    const components = [db.component, cache.component].filter((c): c is Component => c !== undefined);
    return this.#finish(
      app,
      problems,
      components,
      existing && isControlledBy(existing, owner) ? existing : undefined,
      deploymentBlocked,
      ctx,
    );
  }

  /** Applies (or removes) one child custom resource and reads back its state. */
  async #child(
    app: MyAppObject,
    owner: Owner,
    type: ResourceType,
    name: string,
    spec: unknown,
    ctx: ReconcileContext,
  ): Promise<ChildState> {
    const ns = app.metadata.namespace!;
    const existing = this.#mgr.informerFor<Child>(type).get(name, ns);
    if (existing && !isControlledBy(existing, owner)) {
      const message = `${type.kind} ${name} already exists and is not controlled by this MyApp; leaving it untouched`;
      return {
        component: { kind: type.kind, name, ready: false, reason: 'OwnedByOther', message },
        binding: undefined,
        waitingForBinding: spec !== undefined,
        conflict: message,
      };
    }
    if (spec === undefined) {
      if (await deleteChildIfControlled(this.#mgr.client, type, existing, owner, { signal: ctx.signal })) {
        ctx.log.info({ kind: type.kind, name }, 'removed child no longer in the spec');
      }
      return { component: undefined, binding: undefined, waitingForBinding: false };
    }
    await applyChild(
      this.#mgr.client,
      type,
      { metadata: { name, labels: { 'app.kubernetes.io/part-of': app.metadata.name! } }, spec } as KubeObject,
      {
        fieldManager: FIELD_MANAGER,
        owner,
        existing,
        signal: ctx.signal,
      },
    );
    // A child's status is trusted only once it describes the spec it has now.
    const current =
      existing && existing.status?.observedGeneration === existing.metadata.generation ? existing : undefined;
    const ready = current?.status?.conditions?.find((c) => c.type === 'Ready');
    const secretName = current?.status?.binding?.name;
    const secret = secretName
      ? this.#mgr.informerFor(Kinds.Secret, { metadataOnly: true }).get(secretName, ns)
      : undefined;
    const binding =
      secret && secretName
        ? { secret: secretName, resourceVersion: secret.metadata!.resourceVersion! }
        : undefined;
    return {
      component: {
        kind: type.kind,
        name,
        ready: ready?.status === 'True',
        reason: ready ? ready.reason : 'WaitingForStatus',
        message: ready?.message ?? `${type.kind} ${name} has not reported status for its current spec yet`,
      },
      binding,
      waitingForBinding: binding === undefined,
    };
  }

  async #finish(
    app: MyAppObject,
    problems: Array<{ reason: string; message: string }>,
    components: Component[],
    deployment: V1Deployment | undefined,
    blocked: boolean,
    ctx: ReconcileContext,
  ): Promise<void> {
    const gen = app.metadata.generation ?? 0;
    let c: Condition[] = app.status?.conditions ?? [];
    const set = (type: string, ok: boolean, reason: string, message: string) => {
      c = setCondition(c, { type, status: ok ? 'True' : 'False', reason, message, observedGeneration: gen });
    };
    const childCondition = (type: string, kind: string, wanted: boolean) => {
      const comp = components.find((x) => x.kind === kind);
      if (!wanted) set(type, true, 'NotRequested', `No ${kind.toLowerCase()} in the spec`);
      else if (comp) set(type, comp.ready, comp.ready ? 'Ready' : comp.reason, comp.message);
    };
    childCondition('DatabaseReady', 'Database', app.spec.database !== undefined);
    childCondition('CacheReady', 'Cache', app.spec.cache !== undefined);

    const desired = app.spec.replicas;
    const s = deployment?.status;
    const available =
      !!deployment &&
      (s?.observedGeneration ?? 0) >= (deployment.metadata?.generation ?? 0) &&
      (s?.updatedReplicas ?? 0) === desired &&
      (s?.availableReplicas ?? 0) === desired &&
      (s?.replicas ?? 0) === desired;
    const deploymentComponent: Component = deployment
      ? {
          kind: 'Deployment',
          name: childNames(app).deployment,
          ready: available,
          reason: available ? 'Available' : 'RollingOut',
          message: `${s?.availableReplicas ?? 0}/${desired} replicas available`,
        }
      : {
          kind: 'Deployment',
          name: childNames(app).deployment,
          ready: false,
          reason: blocked ? 'WaitingForBindings' : 'Creating',
          message: blocked ? 'waiting for the binding Secrets of its Database and Cache' : 'creating',
        };
    set(
      'DeploymentAvailable',
      deploymentComponent.ready,
      deploymentComponent.reason,
      deploymentComponent.message,
    );
    const all = [...components, deploymentComponent];

    if (problems.length) {
      const reason = problems[0]!.reason;
      const message = problems.map((p) => p.message).join('; ');
      // On the change only: the Degraded condition already reports problems it has seen.
      if (!conditionMatches(c, { type: 'Degraded', status: 'True', reason, message }))
        for (const p of problems) this.#events.event(app, 'Warning', p.reason, 'Reconcile', p.message);
      set('Degraded', true, reason, message);
    } else set('Degraded', false, 'AsExpected', 'No problems found');
    const unready = all.filter((x) => !x.ready);
    if (unready.length === 0 && !problems.length)
      set('Ready', true, 'AllComponentsReady', 'Database, Cache and Deployment are ready');
    else
      set(
        'Ready',
        false,
        'WaitingForDependencies',
        `waiting for: ${unready.map((x) => `${x.kind} ${x.name} (${x.reason})`).join(', ') || problems.map((p) => p.reason).join(', ')}`,
      );

    const svc = app.spec.service ?? { type: 'ClusterIP', port: 80 };
    const status: Status = {
      observedGeneration: gen,
      conditions: c,
      phase: derivePhase(c, app.status?.phase === 'Ready' || app.status?.phase === 'Updating'),
      components: all,
      available: `${s?.availableReplicas ?? 0}/${desired}`,
      url: `http://${childNames(app).service}.${app.metadata.namespace}.svc:${svc.port}`,
    };
    await applyStatusIfChanged(this.#mgr.client, MyApp.type, app, status, {
      fieldManager: FIELD_MANAGER,
      signal: ctx.signal,
      written: this.#written,
    });
  }
}
