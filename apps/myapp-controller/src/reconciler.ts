import type { V1Deployment } from '@kubernetes/client-node';
import { Cache, type CacheObject } from '@regulon/cache-controller';
import { Kinds, type KubeObject, type ResourceType } from '@regulon/client';
import { Database, type DatabaseObject } from '@regulon/database-controller';
import {
  announceProblems,
  applyChild,
  applyStatusIfChanged,
  childProblem,
  combineProblems,
  deleteChildIfControlled,
  deploymentProblem,
  derivePhase,
  isControlledBy,
  problemResult,
  setCondition,
  setProblemConditions,
  type Condition,
  type EventRecorder,
  type Manager,
  type Owner,
  type Problem,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
  WrittenStatus,
} from '@regulon/runtime';
import { MyApp, type MyAppObject } from './api.ts';
import { childNames, desiredDeployment, desiredService, MAX_NAME_LENGTH, type Binding } from './children.ts';

export const FIELD_MANAGER = 'regulon-myapp';

type Status = NonNullable<MyAppObject['status']>;
type Component = NonNullable<Status['components']>[number];
type Child = DatabaseObject | CacheObject;

/** What one child contributes: its readiness, its binding Secret once it exists, and what stops it. */
interface ChildState {
  component: Component | undefined;
  binding: Binding | undefined;
  /** True when the child is wanted but its binding Secret doesn't exist yet. */
  waitingForBinding: boolean;
  problem?: Problem | undefined;
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

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | void> {
    const cached = this.#mgr.informerFor<MyAppObject>(MyApp.type).get(req.name, req.namespace);
    if (!cached || cached.metadata.deletionTimestamp) return;
    // The status this controller last wrote, even if the cache hasn't caught up with it yet.
    const app = this.#written.current(cached);
    const owner = app as Owner & MyAppObject;
    const names = childNames(app);

    if (app.metadata.name!.length > MAX_NAME_LENGTH) {
      const problem = {
        reason: 'NameTooLong',
        message: `name is ${app.metadata.name!.length} characters; at most ${MAX_NAME_LENGTH} fit the names of its Database and Cache. Recreate the MyApp with a shorter name.`,
      };
      return this.#finish(app, [problem], [], undefined, false, ctx);
    }

    const db = await this.#child(app, owner, Database.type, names.database, app.spec.database, ctx);
    const cache = await this.#child(app, owner, Cache.type, names.cache, app.spec.cache, ctx);
    const envProblems = this.#envProblems(app, ctx);
    const problems = [db.problem, cache.problem, ...envProblems].filter((p): p is Problem => p !== undefined);

    // The Deployment waits for the Secrets it reads, so the app never starts without its config. A
    // child that is stalled but has its binding (its backups refused, say) holds nothing back.
    let deploymentBlocked = db.waitingForBinding || cache.waitingForBinding || envProblems.length > 0;
    const existing = this.#mgr
      .informerFor<V1Deployment>(Kinds.Deployment)
      .get(names.deployment, app.metadata.namespace);
    if (!deploymentBlocked) {
      try {
        await applyChild(
          this.#mgr.client,
          Kinds.Deployment,
          desiredDeployment(app, db.binding, cache.binding),
          { fieldManager: FIELD_MANAGER, owner, existing, signal: ctx.signal },
        );
      } catch (err) {
        // Only a taken name or a rejection is the user's to fix; anything else is retried with backoff.
        problems.push(childProblem(err, ctx));
        deploymentBlocked = true;
      }
    }
    try {
      await applyChild(this.#mgr.client, Kinds.Service, desiredService(app), {
        fieldManager: FIELD_MANAGER,
        owner,
        existing: this.#mgr.informerFor(Kinds.Service).get(names.service, app.metadata.namespace),
        signal: ctx.signal,
      });
    } catch (err) {
      problems.push(childProblem(err, ctx));
    }

    const deployment = existing && isControlledBy(existing, owner) ? existing : undefined;
    const reported = deploymentProblem(deployment);
    if (reported) problems.push(reported);
    const components = [db.component, cache.component].filter((c): c is Component => c !== undefined);
    return this.#finish(app, problems, components, deployment, deploymentBlocked, ctx);
  }

  /**
   * A Secret named in spec.env that doesn't exist would stop the application's
   * Pods from starting (CreateContainerConfigError, a state only the kubelet
   * reports): found here, before a Deployment is rolled out with it. The
   * request waits for the Secret to be created.
   */
  #envProblems(app: MyAppObject, ctx: ReconcileContext): Problem[] {
    const problems: Problem[] = [];
    const ns = app.metadata.namespace!;
    const secrets = this.#mgr.informerFor(Kinds.Secret, { metadataOnly: true });
    const missing = new Map<string, string[]>();
    for (const e of app.spec.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef;
      if (!ref || ref.optional || secrets.get(ref.name, ns)) continue;
      ctx.waitFor(Kinds.Secret, ns, ref.name);
      missing.set(ref.name, [...(missing.get(ref.name) ?? []), e.name]);
    }
    for (const [secret, vars] of missing)
      problems.push({
        reason: 'EnvSecretMissing',
        message: `Secret ${secret} named in spec.env (${vars.join(', ')}) does not exist in ${ns}: the application's Pods could not start (CreateContainerConfigError). Create the Secret or mark the reference optional.`,
      });
    return problems;
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
    if (spec === undefined) {
      // A same-named object this MyApp doesn't control is not its child: it is left alone.
      try {
        if (await deleteChildIfControlled(this.#mgr.client, type, existing, owner, { signal: ctx.signal }))
          ctx.log.info({ kind: type.kind, name }, 'removed child no longer in the spec');
      } catch (err) {
        return {
          component: undefined,
          binding: undefined,
          waitingForBinding: false,
          problem: childProblem(err, ctx),
        };
      }
      return { component: undefined, binding: undefined, waitingForBinding: false };
    }
    try {
      await applyChild(
        this.#mgr.client,
        type,
        {
          metadata: { name, labels: { 'app.kubernetes.io/part-of': app.metadata.name! } },
          spec,
        } as KubeObject,
        { fieldManager: FIELD_MANAGER, owner, existing, signal: ctx.signal },
      );
    } catch (err) {
      const problem = childProblem(err, ctx);
      return {
        component: { kind: type.kind, name, ready: false, reason: problem.reason, message: problem.message },
        binding: undefined,
        waitingForBinding: true,
        problem,
      };
    }
    // A child's status is trusted only once it describes the spec it has now.
    const current =
      existing && existing.status?.observedGeneration === existing.metadata.generation ? existing : undefined;
    const ready = current?.status?.conditions?.find((c) => c.type === 'Ready');
    const stalled = current?.status?.conditions?.find((c) => c.type === 'Stalled' && c.status === 'True');
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
      // A stalled child stalls the MyApp: GitOps tools watching the MyApp should stop waiting too.
      ...(stalled
        ? {
            problem: {
              reason: 'ChildStalled',
              message: `${type.kind} ${name} is stalled: ${stalled.message}`,
            },
          }
        : {}),
    };
  }

  async #finish(
    app: MyAppObject,
    problems: Problem[],
    components: Component[],
    deployment: V1Deployment | undefined,
    blocked: boolean,
    ctx: ReconcileContext,
  ): Promise<Result | void> {
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
    const problem = combineProblems(problems);
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
          ...(problem
            ? { reason: 'Blocked', message: `not created: ${problem.reason}` }
            : blocked
              ? {
                  reason: 'WaitingForBindings',
                  message: 'waiting for the binding Secrets of its Database and Cache',
                }
              : { reason: 'Creating', message: 'creating' }),
        };
    set(
      'DeploymentAvailable',
      deploymentComponent.ready,
      deploymentComponent.reason,
      deploymentComponent.message,
    );
    const all = [...components, deploymentComponent];

    announceProblems(this.#events, app, problems);
    // Degraded and Stalled; a problem is also what Ready names (`kubectl wait` and kstatus read Ready).
    c = setProblemConditions(c, problem, { observedGeneration: gen });
    const unready = all.filter((x) => !x.ready);
    if (!problem) {
      if (unready.length === 0)
        set('Ready', true, 'AllComponentsReady', 'Database, Cache and Deployment are ready');
      else
        set(
          'Ready',
          false,
          'WaitingForDependencies',
          `waiting for: ${unready.map((x) => `${x.kind} ${x.name} (${x.reason})`).join(', ')}`,
        );
    }

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
    // A missing Secret or a freed name wakes this request (watches, ctx.waitFor); a rejected child is retried.
    return problemResult(problem);
  }
}
