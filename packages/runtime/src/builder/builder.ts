import type { Tracer } from '@opentelemetry/api';
import { apiVersionOf, type KubeClient, type KubeObject, type ResourceType } from '@regulon/client';
import type { RateLimiter } from '@regulon/queue';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { EventRecorder } from '../events/events.ts';
import type { CacheSource } from '../reconcile/cache-source.ts';
import { DeclaredCache, kindKey, type DeclaredKinds } from '../reconcile/context.ts';
import { Controller, type Runnable } from '../reconcile/controller.ts';
import { enqueueControllerOwner, enqueueObject, type MapFunc } from './handlers.ts';
import {
  ObjectReconciler,
  type Finalizer,
  type NameLimit,
  type ReconcileFunc,
  type StatusFunc,
} from '../reconcile/object-reconciler.ts';
import type { Predicate } from '../reconcile/predicates.ts';
import type { Reconciler } from '../reconcile/reconcile.ts';

interface Source {
  type: ResourceType;
  /** Undefined for a kind that is only read (`reads`): it has an informer but wakes nothing. */
  map: MapFunc | undefined;
  predicates: Predicate[];
  owned: boolean;
}

/**
 * What a builder needs from the process that will run its controller: the
 * shared client, cache, logger, registry and tracer, an Event recorder, and a
 * place to register the finished controller. The Manager is one; declaring it
 * here keeps the builder below the manager, which builds controllers with it.
 */
export interface ControllerHost {
  readonly client: KubeClient;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly tracer: Tracer;
  /**
   * What a controller of this host reads `type` through: the shared informer, or in a
   * sharded manager caching only its buckets, a source that follows them.
   */
  controllerCache<K extends KubeObject>(
    type: ResourceType<K>,
    opts: { indexers?: Record<string, (obj: K) => string[]>; needLeaderElection: boolean },
  ): CacheSource<K>;
  eventRecorder(controller: string): EventRecorder;
  add(runnable: Runnable): void;
}

export interface BuilderOptions {
  maxConcurrentReconciles?: number | undefined;
  reconcileTimeoutMs?: number | undefined;
  /** Run on every replica instead of only on the leader. */
  needLeaderElection?: boolean | undefined;
  rateLimiter?: RateLimiter<string> | undefined;
  /** The server-side apply field manager of the controller's writes (default: the controller's name). */
  fieldManager?: string | undefined;
}

/**
 * Wires a controller to its sources and hides the plumbing:
 *
 *   mgr.controller('web').for(Web).owns(Kinds.ConfigMap).reconcile(async (web, ctx) => { … })
 *
 * Every source reads through the manager's shared informers, so two
 * controllers that watch one kind share one watch. The kinds declared here
 * are the kinds the reconcile's context can read.
 */
export class ControllerBuilder<T extends KubeObject = KubeObject> {
  readonly #mgr: ControllerHost;
  readonly #name: string;
  readonly #sources: Source[] = [];
  readonly #indexers = new Map<ResourceType, Record<string, (obj: KubeObject) => string[]>>();
  #forType: ResourceType<T> | undefined;
  #global: Predicate[] = [];
  #options: BuilderOptions = {};
  #status: StatusFunc<T> | undefined;
  #finalizer: Finalizer<T> | undefined;
  #nameLimit: NameLimit | undefined;

  constructor(mgr: ControllerHost, name: string) {
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name))
      throw new Error(`controller name ${JSON.stringify(name)} must be a DNS label`);
    this.#mgr = mgr;
    this.#name = name;
  }

  /** The kind this controller reconciles: each event enqueues the object's own key. */
  for<U extends KubeObject>(
    type: ResourceType<U>,
    opts: { predicates?: Predicate<U>[]; nameLimit?: NameLimit } = {},
  ): ControllerBuilder<U> {
    if (this.#forType) throw new Error(`controller ${this.#name}: for() can be called once`);
    const self = this as unknown as ControllerBuilder<U>;
    self.#forType = type;
    self.#nameLimit = opts.nameLimit;
    self.#sources.push({
      type,
      map: enqueueObject,
      predicates: opts.predicates ?? [],
      owned: false,
    });
    return self;
  }

  /**
   * A kind this controller creates: each event enqueues the child's controller
   * owner (ownerReference with controller: true) if it is of the for() kind.
   * Pass `metadataOnly(kind)` to watch only metadata (less memory; enough to
   * find the owner; Secrets this way are never held in memory).
   */
  owns<U extends KubeObject>(type: ResourceType<U>, opts: { predicates?: Predicate<U>[] } = {}): this {
    if (!this.#forType) throw new Error(`controller ${this.#name}: call for() before owns()`);
    this.#sources.push({
      type,
      map: enqueueControllerOwner(this.#forType),
      predicates: opts.predicates ?? [],
      owned: true,
    });
    return this;
  }

  /** Any kind, mapped to requests by `map`. */
  watches<U extends KubeObject>(
    type: ResourceType<U>,
    map: MapFunc<U>,
    opts: { predicates?: Predicate<U>[] } = {},
  ): this {
    this.#sources.push({
      type,
      map: map as MapFunc,
      predicates: opts.predicates ?? [],
      owned: false,
    });
    return this;
  }

  /** A kind the reconcile reads from the cache without being woken by it. */
  reads(type: ResourceType): this {
    this.#sources.push({ type, map: undefined, predicates: [], owned: false });
    return this;
  }

  /**
   * Files the cached objects of `type` under the values `fn` returns, so a
   * reconcile finds them with `ctx.list(type, { index: { name, value } })`
   * instead of scanning. The kind must also be declared (for/owns/watches/reads).
   */
  index<U extends KubeObject>(type: ResourceType<U>, name: string, fn: (obj: U) => string[]): this {
    const forKind = this.#indexers.get(type) ?? {};
    forKind[name] = fn as (obj: KubeObject) => string[];
    this.#indexers.set(type, forKind);
    return this;
  }

  /** Predicates applied to every source. */
  withEventFilter(...predicates: Predicate[]): this {
    this.#global = [...this.#global, ...predicates];
    return this;
  }

  withOptions(options: BuilderOptions): this {
    this.#options = { ...this.#options, ...options };
    return this;
  }

  /** How the status is computed (see ObjectReconciler): written by the runtime, only on change. */
  withStatus(status: StatusFunc<T>): this {
    this.#status = status;
    return this;
  }

  /** A finalizer the runtime adds to each object and removes after `finalize` has run. */
  withFinalizer(finalizer: Finalizer<T>): this {
    this.#finalizer = finalizer;
    return this;
  }

  /**
   * Finishes the controller with a reconcile that receives the cached, typed
   * object itself (see ObjectReconciler for what the runtime does around it).
   */
  reconcile(fn: ReconcileFunc<T>): Controller {
    const forType = this.#requireFor();
    const informers = this.#informers();
    const kinds = declaredKinds(this.#sources, informers);
    return this.#build(
      new ObjectReconciler<T>({
        kind: forType,
        informer: informers.get(kindKey(forType)) as unknown as CacheSource<T>,
        client: this.#mgr.client,
        fieldManager: this.#fieldManager(),
        events: this.#mgr.eventRecorder(this.#name),
        kinds,
        reconcile: fn,
        status: this.#status,
        finalizer: this.#finalizer,
        nameLimit: this.#nameLimit,
      }),
      kinds,
    );
  }

  /** Finishes the controller with a request-level reconciler (it reads the object itself). */
  complete(reconciler: Reconciler): Controller {
    this.#requireFor();
    const informers = this.#informers();
    return this.#build(reconciler, declaredKinds(this.#sources, informers));
  }

  #requireFor(): ResourceType<T> {
    if (!this.#forType) throw new Error(`controller ${this.#name}: for() is required`);
    return this.#forType;
  }

  #fieldManager(): string {
    return this.#options.fieldManager ?? this.#name;
  }

  /** One informer per declared kind handle, with the indexes asked for it. */
  #informers(): Map<string, CacheSource<KubeObject>> {
    const informers = new Map<string, CacheSource<KubeObject>>();
    const needLeaderElection = this.#options.needLeaderElection ?? true;
    for (const source of this.#sources) {
      const key = kindKey(source.type);
      if (informers.has(key)) continue;
      const indexers = [...this.#indexers]
        .filter(([type]) => kindKey(type) === key)
        .reduce((all, [, fns]) => ({ ...all, ...fns }), {});
      informers.set(key, this.#mgr.controllerCache(source.type, { indexers, needLeaderElection }));
    }
    for (const type of this.#indexers.keys())
      if (!informers.has(kindKey(type)))
        throw new Error(
          `controller ${this.#name}: index() on ${kindKey(type)}, which is not declared with for/owns/watches/reads`,
        );
    return informers;
  }

  #build(reconciler: Reconciler, kinds: DeclaredKinds): Controller {
    const { fieldManager: _, ...options } = this.#options;
    const controller = new Controller({
      name: this.#name,
      reconciler,
      logger: this.#mgr.logger,
      registry: this.#mgr.registry,
      tracer: this.#mgr.tracer,
      ...options,
    });
    const cache = new DeclaredCache(this.#name, kinds);
    for (const source of this.#sources) {
      const informer = kinds.informer(source.type)!;
      const map = source.map;
      // A kind that is only read wakes nothing by itself, but still wakes the requests that wait for one of its objects by name (ctx.waitFor).
      if (!map) controller.watch(informer, () => [], [], source.type);
      else
        controller.watch(
          informer,
          (obj) => map(obj, cache),
          [...this.#global, ...source.predicates],
          source.type,
        );
    }
    this.#mgr.add(controller);
    return controller;
  }
}

function declaredKinds(sources: Source[], informers: Map<string, CacheSource<KubeObject>>): DeclaredKinds {
  return {
    informer: (kind) => informers.get(kindKey(kind)),
    childKind: (apiVersion, kind) => {
      const owned = sources.filter(
        (s) => s.owned && s.type.kind === kind && apiVersionOf(s.type) === apiVersion,
      );
      return (owned.find((s) => !s.type.metadataOnly) ?? owned[0])?.type;
    },
    names: () => [...informers.keys()],
  };
}
