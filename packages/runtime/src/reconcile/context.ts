import type { V1Secret } from '@kubernetes/client-node';
import { type KubeClient, type KubeObject, type ResourceType } from '@regulon/client';
import type { CacheSource } from './cache-source.ts';
import { applyOwned, deleteChildIfControlled, type ApplyOutcome } from '../apply/apply.ts';
import type { EventRecorder, EventType } from '../events/events.ts';
import type { Owner } from '../apply/ownership.ts';
import type { Problem } from '../status/problems.ts';
import type { ReconcileContext } from './reconcile.ts';
import { createSecretOnce, type SecretOnceOutcome } from '../apply/secrets.ts';

/** A list read from the cache: one namespace (default: the object's), a label match, or an index value. */
export interface ListOptions {
  /** Default: the reconciled object's namespace; `'*'` for every namespace. */
  namespace?: string | undefined;
  /** Only objects carrying every one of these labels. */
  labels?: Record<string, string> | undefined;
  /** Objects filed under `value` by the index named `name` (declared with the builder's `index`). */
  index?: { name: string; value: string } | undefined;
}

/**
 * Cached reads of the kinds a controller declared (`for`, `owns`, `watches`,
 * `reads`): what a reconcile reads through its context, and what a
 * `watches()` map function gets to find the objects an event concerns
 * (`cache.list(Database, { namespace, index })`). Asking for a kind not
 * declared, or for a metadata-only one in full, throws: its informer would
 * be unsynced and answer "absent".
 */
export interface CacheReader {
  get<T extends KubeObject>(kind: ResourceType<T>, name: string, namespace?: string): T | undefined;
  /** Without a namespace (or with `'*'`), every namespace. */
  list<T extends KubeObject>(kind: ResourceType<T>, options?: ListOptions): T[];
}

export class DeclaredCache implements CacheReader {
  readonly #controller: string;
  readonly #kinds: DeclaredKinds;

  constructor(controller: string, kinds: DeclaredKinds) {
    this.#controller = controller;
    this.#kinds = kinds;
  }

  #informer<T extends KubeObject>(kind: ResourceType<T>): CacheSource<T> {
    const informer = this.#kinds.informer(kind);
    if (!informer)
      throw new TypeError(
        `controller ${this.#controller} reads ${kindKey(kind)}, which it does not declare: add it with owns(), watches() or reads() (declared: ${this.#kinds.names().join(', ')})`,
      );
    return informer as unknown as CacheSource<T>;
  }

  get<T extends KubeObject>(kind: ResourceType<T>, name: string, namespace?: string): T | undefined {
    return this.#informer(kind).get(name, kind.namespaced ? namespace : undefined);
  }

  list<T extends KubeObject>(kind: ResourceType<T>, options: ListOptions = {}): T[] {
    const informer = this.#informer(kind);
    const ns = options.namespace === '*' || !kind.namespaced ? undefined : options.namespace;
    let items = options.index ? informer.byIndex(options.index.name, options.index.value) : informer.list(ns);
    if (options.index && ns) items = items.filter((o) => o.metadata?.namespace === ns);
    const labels = options.labels;
    if (labels)
      items = items.filter((o) => Object.entries(labels).every(([k, v]) => o.metadata?.labels?.[k] === v));
    return items;
  }
}

/**
 * What a reconcile of one object works with: cached reads of the kinds its
 * controller declared, and writes bound to the object as owner, to the
 * controller's field manager and to the reconcile's signal.
 */
export interface Context extends ReconcileContext, CacheReader {
  readonly client: KubeClient;
  readonly fieldManager: string;
  /**
   * The cached object of `kind` named `name`, in the reconciled object's
   * namespace unless another is given. Only kinds the controller declared
   * (`for`, `owns`, `watches`, `reads`) can be read: asking for another
   * throws, since its informer would be unsynced and answer "absent".
   */
  get<T extends KubeObject>(kind: ResourceType<T>, name: string, namespace?: string): T | undefined;
  /** Cached objects of a declared kind. */
  list<T extends KubeObject>(kind: ResourceType<T>, options?: ListOptions): T[];
  /**
   * Server-side applies each child, owned by the reconciled object (see
   * applyChild): a child that already matches costs no request; a same-named
   * object the reconciled object does not control is never touched
   * (ChildConflictError); a refused write throws ChildRejectedError. The
   * kind of each child is found from its apiVersion and kind among those the
   * controller `owns`.
   */
  apply<C extends KubeObject>(children: readonly C[]): Promise<ApplyOutcome[]>;
  /** Deletes a child the spec no longer asks for, only if the reconciled object controls it. */
  delete(kind: ResourceType, name: string): Promise<boolean>;
  /**
   * Creates the Secret `name` of generated values once and never touches it
   * again (see createSecretOnce); `build` runs only when it is created, so no
   * password is generated for a Secret that exists.
   */
  createOnce(
    name: string,
    build: () => V1Secret,
    options?: { inUse?: () => boolean | Promise<boolean> },
  ): Promise<SecretOnceOutcome>;
  /** A Warning Event about the reconciled object. */
  warn(reason: string, message: string): void;
  /** An Event of either type about the reconciled object. */
  event(type: EventType, reason: string, message: string): void;
  /**
   * Records a problem without stopping the reconcile (throw a ProblemError
   * to stop): it is reported in the status and, once, as a Warning Event.
   */
  report(problem: Problem): void;
}

/** A declared kind's informer, keyed by group/kind and whether it holds metadata only. */
export interface DeclaredKinds {
  informer(kind: ResourceType): CacheSource<KubeObject> | undefined;
  /** The handle apply() uses for a child of this apiVersion and kind (preferring a full, not metadata-only, one). */
  childKind(apiVersion: string, kind: string): ResourceType | undefined;
  /** Every declared kind, for the error message of a read of an undeclared one. */
  names(): string[];
}

export function kindKey(kind: ResourceType): string {
  return `${kind.group}/${kind.kind}${kind.metadataOnly ? ' (metadata only)' : ''}`;
}

export class BoundContext implements Context {
  readonly signal: AbortSignal;
  readonly log: ReconcileContext['log'];
  readonly span: ReconcileContext['span'];
  readonly reconcileID: string;
  readonly controller: string;
  readonly client: KubeClient;
  readonly fieldManager: string;
  readonly problems: Problem[] = [];
  readonly #base: ReconcileContext;
  readonly #owner: Owner;
  readonly #kinds: DeclaredKinds;
  readonly #cache: CacheReader;
  readonly #events: EventRecorder;

  constructor(
    base: ReconcileContext,
    owner: Owner,
    deps: { client: KubeClient; fieldManager: string; kinds: DeclaredKinds; events: EventRecorder },
  ) {
    this.#base = base;
    this.signal = base.signal;
    this.log = base.log;
    this.span = base.span;
    this.reconcileID = base.reconcileID;
    this.controller = base.controller;
    this.client = deps.client;
    this.fieldManager = deps.fieldManager;
    this.#owner = owner;
    this.#kinds = deps.kinds;
    this.#cache = new DeclaredCache(base.controller, deps.kinds);
    this.#events = deps.events;
  }

  waitFor(type: ResourceType, namespace: string | undefined, name: string): void {
    this.#base.waitFor(type, namespace, name);
  }

  get<T extends KubeObject>(kind: ResourceType<T>, name: string, namespace?: string): T | undefined {
    return this.#cache.get(kind, name, namespace ?? this.#owner.metadata.namespace);
  }

  list<T extends KubeObject>(kind: ResourceType<T>, options: ListOptions = {}): T[] {
    return this.#cache.list(kind, {
      ...options,
      namespace: options.namespace ?? this.#owner.metadata.namespace,
    });
  }

  async apply<C extends KubeObject>(children: readonly C[]): Promise<ApplyOutcome[]> {
    const outcomes: ApplyOutcome[] = [];
    for (const child of children) {
      const kind = this.#kinds.childKind(child.apiVersion ?? '', child.kind ?? '');
      if (!kind)
        throw new TypeError(
          `controller ${this.controller} applies ${child.apiVersion} ${child.kind}, which it does not own: add it with owns()`,
        );
      const name = child.metadata?.name;
      if (!name)
        throw new TypeError(`controller ${this.controller}: a ${child.kind} child has no metadata.name`);
      const existing = this.get(kind, name, child.metadata?.namespace);
      const { outcome } = await applyOwned(this.client, kind, child, {
        fieldManager: this.fieldManager,
        owner: this.#owner,
        existing,
        signal: this.signal,
      });
      outcomes.push(outcome);
    }
    return outcomes;
  }

  async delete(kind: ResourceType, name: string): Promise<boolean> {
    const existing = this.get(kind, name);
    const deleted = await deleteChildIfControlled(this.client, kind, existing, this.#owner, {
      signal: this.signal,
    });
    if (deleted) this.log.info({ kind: kind.kind, name }, 'deleted child no longer wanted');
    return deleted;
  }

  async createOnce(
    name: string,
    build: () => V1Secret,
    options: { inUse?: () => boolean | Promise<boolean> } = {},
  ): Promise<SecretOnceOutcome> {
    const secretKind = this.#kinds.childKind('v1', 'Secret');
    const existing = secretKind ? this.get(secretKind, name) : undefined;
    const named = () => {
      const secret = build();
      if (secret.metadata?.name !== name)
        throw new TypeError(`createOnce(${name}): build() made a Secret named ${secret.metadata?.name}`);
      return secret;
    };
    const outcome = await createSecretOnce(this.client, named, {
      owner: this.#owner,
      existing,
      fieldManager: this.fieldManager,
      ...(options.inUse ? { inUse: options.inUse } : {}),
      signal: this.signal,
    });
    if (outcome === 'created') this.log.info({ secret: name }, 'created generated Secret');
    return outcome;
  }

  warn(reason: string, message: string): void {
    this.event('Warning', reason, message);
  }

  event(type: EventType, reason: string, message: string): void {
    this.#events.event(this.#owner, type, reason, 'Reconcile', message);
  }

  report(problem: Problem): void {
    this.problems.push(problem);
  }
}
