import { derivePhase, rolledOut } from '@regulon/conventions';
import {
  CHILD_CONFLICT,
  ChildConflictError,
  setCondition,
  setProblemConditions,
  type Condition,
  type Live,
  type Problem,
} from '@regulon/runtime';
import type { MyAppObject } from './api.ts';
import { childNames, DEFAULT_READINESS_PATH, desiredDeployment, serviceSpec } from './children.ts';
import { deploymentBindings, type ChildView, type Observed } from './observe.ts';

export type MyAppStatus = NonNullable<MyAppObject['status']>;
type Component = NonNullable<MyAppStatus['components']>[number];

/**
 * Everything the status says, from what the cache shows and the problem that
 * stopped the reconcile, if any: per-child conditions, Degraded/Stalled, a
 * cumulative Ready, the phase and the components.
 */
export function computeStatus(
  app: Live<MyAppObject>,
  o: Observed,
  problem: Problem | undefined,
  now: Date = new Date(),
): MyAppStatus {
  const gen = app.metadata.generation ?? 0;
  let c: Condition[] = app.status?.conditions ?? [];
  const set = (type: string, ok: boolean, reason: string, message: string) => {
    c = setCondition(
      c,
      { type, status: ok ? 'True' : 'False', reason, message, observedGeneration: gen },
      now,
    );
  };
  const children = [o.database, o.cache].filter((v) => v !== undefined).map((v) => childComponent(app, v));
  const childCondition = (type: string, kind: string) => {
    const comp = children.find((x) => x.kind === kind);
    if (!comp) set(type, true, 'NotRequested', `No ${kind.toLowerCase()} in the spec`);
    else set(type, comp.ready, comp.ready ? 'Ready' : comp.reason, comp.message);
  };
  childCondition('DatabaseReady', 'Database');
  childCondition('CacheReady', 'Cache');
  const deployment = deploymentComponent(app, o, problem);
  set('DeploymentAvailable', deployment.ready, deployment.reason, deployment.message);
  const all = [...children, deployment];

  // Degraded and Stalled; a problem is also what Ready names (`kubectl wait` and kstatus read Ready).
  c = setProblemConditions(c, problem, { observedGeneration: gen, now });
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

  return {
    observedGeneration: gen,
    conditions: c,
    phase: derivePhase(c, app.status?.phase === 'Ready' || app.status?.phase === 'Updating'),
    components: all,
    available: `${o.deployment?.status?.availableReplicas ?? 0}/${app.spec.replicas}`,
    url: `http://${childNames(app).service}.${app.metadata.namespace}.svc:${serviceSpec(app).port}`,
  };
}

function childComponent(app: Live<MyAppObject>, v: ChildView): Component {
  const kind = v.type.kind;
  const base = { kind, name: v.name, ready: false };
  if (v.foreign)
    return {
      ...base,
      reason: CHILD_CONFLICT,
      message: new ChildConflictError(v.type, v.foreign, app).message,
    };
  if (!v.exists) return { ...base, reason: 'Missing', message: `${kind} ${v.name} does not exist yet` };
  const ready = v.current?.status?.conditions?.find((x) => x.type === 'Ready');
  if (!ready)
    return {
      ...base,
      reason: 'WaitingForStatus',
      message: `${kind} ${v.name} has not reported status for its current spec yet`,
    };
  return { ...base, ready: ready.status === 'True', reason: ready.reason, message: ready.message };
}

/** Available once every replica runs the template the MyApp wants now, not merely the one it last applied. */
function deploymentComponent(app: MyAppObject, o: Observed, problem: Problem | undefined): Component {
  const base = { kind: 'Deployment', name: childNames(app).deployment, ready: false };
  const live = o.deployment;
  const bindings = deploymentBindings(o);
  if (live && bindings) {
    const ready = rolledOut(live, desiredDeployment(app, bindings));
    const available = `${live.status?.availableReplicas ?? 0}/${app.spec.replicas} replicas available`;
    // A replica that runs but is not ready is one whose application cannot use its
    // dependencies (or has not yet said so): name the probe, where the answer is.
    const unready = (live.status?.replicas ?? 0) - (live.status?.readyReplicas ?? 0);
    const path = app.spec.readinessPath ?? DEFAULT_READINESS_PATH;
    return {
      ...base,
      ready,
      reason: ready ? 'Available' : 'RollingOut',
      message:
        ready || unready <= 0
          ? available
          : `${available}; ${unready} not ready (readiness probe GET ${path} on port ${app.spec.port})`,
    };
  }
  // Held back, or not there: say why, never that it is being created when it is not.
  const not = live ? 'not updated' : 'not created';
  if (problem) return { ...base, reason: 'Blocked', message: `${not}: ${problem.reason}` };
  if (!bindings)
    return {
      ...base,
      reason: 'WaitingForBindings',
      message: 'waiting for the binding Secrets of its Database and Cache',
    };
  return { ...base, reason: 'Creating', message: 'creating' };
}
