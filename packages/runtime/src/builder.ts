import type { KubeObject, ResourceType } from '@regulon/client';
import type { RateLimiter } from '@regulon/queue';
import { Controller } from './controller.ts';
import { enqueueControllerOwner, enqueueObject, type MapFunc } from './handlers.ts';
import type { Manager } from './manager.ts';
import type { Predicate } from './predicates.ts';
import type { Reconciler } from './reconcile.ts';

interface Source {
  type: ResourceType;
  map: MapFunc;
  predicates: Predicate[];
  metadataOnly: boolean;
}

export interface BuilderOptions {
  maxConcurrentReconciles?: number;
  reconcileTimeoutMs?: number;
  /** Run on every replica instead of only on the leader. */
  needLeaderElection?: boolean;
  rateLimiter?: RateLimiter<string>;
}

/**
 * Wires a controller to its sources and hides the plumbing:
 *
 *   mgr.controller('database').for(DatabaseKind).owns(Kinds.StatefulSet).complete(reconciler)
 *
 * Every source reads through the manager's shared informers, so two
 * controllers that watch one kind share one watch.
 */
export class ControllerBuilder {
  readonly #mgr: Manager;
  readonly #name: string;
  readonly #sources: Source[] = [];
  #forType: ResourceType | undefined;
  #global: Predicate[] = [];
  #options: BuilderOptions = {};

  constructor(mgr: Manager, name: string) {
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name))
      throw new Error(`controller name ${JSON.stringify(name)} must be a DNS label`);
    this.#mgr = mgr;
    this.#name = name;
  }

  /** The kind this controller reconciles: each event enqueues the object's own key. */
  for<T extends KubeObject>(type: ResourceType, opts: { predicates?: Predicate<T>[] } = {}): this {
    if (this.#forType) throw new Error(`controller ${this.#name}: for() can be called once`);
    this.#forType = type;
    this.#sources.push({
      type,
      map: enqueueObject,
      predicates: opts.predicates ?? [],
      metadataOnly: false,
    });
    return this;
  }

  /**
   * A kind this controller creates: each event enqueues the child's controller
   * owner (ownerReference with controller: true) if it is of the for() kind.
   * `metadataOnly` watches only metadata (less memory; enough to find the owner).
   */
  owns<T extends KubeObject>(
    type: ResourceType,
    opts: { metadataOnly?: boolean; predicates?: Predicate<T>[] } = {},
  ): this {
    if (!this.#forType) throw new Error(`controller ${this.#name}: call for() before owns()`);
    this.#sources.push({
      type,
      map: enqueueControllerOwner(this.#forType),
      predicates: opts.predicates ?? [],
      metadataOnly: opts.metadataOnly ?? false,
    });
    return this;
  }

  /** Any kind, mapped to requests by `map`. */
  watches<T extends KubeObject>(
    type: ResourceType,
    map: MapFunc<T>,
    opts: { metadataOnly?: boolean; predicates?: Predicate<T>[] } = {},
  ): this {
    this.#sources.push({
      type,
      map: map as MapFunc,
      predicates: opts.predicates ?? [],
      metadataOnly: opts.metadataOnly ?? false,
    });
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

  complete(reconciler: Reconciler): Controller {
    if (!this.#forType) throw new Error(`controller ${this.#name}: for() is required`);
    const controller = new Controller({
      name: this.#name,
      reconciler,
      logger: this.#mgr.logger,
      registry: this.#mgr.registry,
      tracer: this.#mgr.tracer,
      ...this.#options,
    });
    for (const source of this.#sources) {
      const informer = this.#mgr.informerFor(source.type, { metadataOnly: source.metadataOnly });
      controller.watch(informer, source.map, [...this.#global, ...source.predicates], source.type);
    }
    this.#mgr.registerKind(this.#forType);
    this.#mgr.add(controller);
    return controller;
  }
}
