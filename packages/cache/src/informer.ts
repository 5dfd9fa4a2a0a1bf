import type { KubeObject } from '@regulon/client';
import type { ListerWatcher } from './lister-watcher.ts';
import { silentLogger, type Logger, type MetricsRegistry } from '@regulon/util';
import { reportShardMode } from './metrics.ts';
import type { Shard } from './shard.ts';
import { Reflector, type BackoffOptions, type ReflectorHealth, type Transform } from './reflector.ts';
import { Store, type IndexFunc, type StoreChange } from './store.ts';

export interface EventHandler<T> {
  /**
   * `initialList` is true for objects delivered by the first list or by a replay to a late
   * handler; false for watch events and for the adds a relist after 410 Gone finds, which are
   * changes the watch missed. (There is no periodic resync to flag.)
   */
  onAdd?(obj: T, initialList: boolean): void;
  onUpdate?(old: T, obj: T): void;
  /** The object's last known state. */
  onDelete?(obj: T): void;
}

/**
 * The default transform: drops metadata.managedFields, which is often larger
 * than the rest of the object and that no controller reads from a cache.
 * A transform receives a freshly decoded object and may change it in place.
 *
 * metadata is rebuilt without the field rather than `delete`d from: a delete
 * turns the object into a hash table (V8's dictionary mode), which made each
 * cached Widget of the framework benchmark take 1,055 bytes of heap instead
 * of 679.
 */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  if (obj.metadata?.managedFields) {
    const { managedFields: _, ...metadata } = obj.metadata;
    obj.metadata = metadata;
  }
  return obj;
}

export interface InformerOptions<T extends KubeObject> {
  name: string;
  listerWatcher: ListerWatcher<T>;
  indexers?: Record<string, IndexFunc<T>> | undefined;
  /** Applied to every object before it is stored; default strips managedFields. `null` keeps objects whole. */
  transform?: Transform<T> | null | undefined;
  logger?: Logger | undefined;
  backoff?: BackoffOptions | undefined;
  inactivityTimeoutMs?: number | undefined;
  streamingList?: boolean | undefined;
  minWatchTimeoutSeconds?: number | undefined;
  /** Hold only this shard of the kind's key space: cut by the API server when it can, here when not (see ReflectorOptions.shard). */
  shard?: Shard | undefined;
  /** Where a sharded informer reports its mode (`regulon_cache_shard_mode`) while it runs. */
  registry?: MetricsRegistry | undefined;
}

/**
 * A store kept up to date by a reflector, with event handlers. Reads are
 * local and return frozen objects.
 */
export class Informer<T extends KubeObject> {
  readonly name: string;
  readonly store: Store<T>;
  readonly #reflector: Reflector<T>;
  readonly #handlers = new Set<EventHandler<T>>();
  readonly #log: Logger;
  readonly #registry: MetricsRegistry | undefined;
  readonly #sharded: boolean;
  #running: Promise<void> | undefined;

  constructor(options: InformerOptions<T>) {
    this.name = options.name;
    this.#log = options.logger ?? silentLogger;
    this.#registry = options.registry;
    this.#sharded = options.shard !== undefined;
    this.store = new Store<T>(options.indexers);
    const transform = options.transform === undefined ? stripManagedFields : (options.transform ?? undefined);
    this.#reflector = new Reflector<T>({
      name: options.name,
      listerWatcher: options.listerWatcher,
      store: this.store,
      onChange: (change) => this.#dispatch(change),
      logger: this.#log,
      ...(transform ? { transform } : {}),
      ...(options.backoff ? { backoff: options.backoff } : {}),
      ...(options.inactivityTimeoutMs !== undefined
        ? { inactivityTimeoutMs: options.inactivityTimeoutMs }
        : {}),
      ...(options.streamingList !== undefined ? { streamingList: options.streamingList } : {}),
      ...(options.minWatchTimeoutSeconds !== undefined
        ? { minWatchTimeoutSeconds: options.minWatchTimeoutSeconds }
        : {}),
      ...(options.shard ? { shard: options.shard } : {}),
    });
  }

  /**
   * Registers a handler. A handler added after objects are cached is first
   * given every cached object as an add, so it never misses the initial state.
   * Returns a function that removes the handler.
   */
  addEventHandler(handler: EventHandler<T>): () => void {
    this.#handlers.add(handler);
    if (this.store.size > 0 && handler.onAdd)
      for (const obj of this.store.list()) this.#call(() => handler.onAdd?.(obj, true));
    return () => this.#handlers.delete(handler);
  }

  /**
   * Starts the reflector (once); it runs until the signal aborts. A stopped informer
   * does not start again: make a new one (for another shard, say).
   */
  start(signal: AbortSignal): Promise<void> {
    if (this.#running) return this.#running;
    const unreport =
      this.#sharded && this.#registry
        ? reportShardMode(this.#registry, { name: this.name, shardMode: () => this.health().shardMode })
        : undefined;
    this.#running = this.#reflector.run(signal).finally(() => unreport?.());
    return this.#running;
  }

  get started(): boolean {
    return this.#running !== undefined;
  }

  /** Resolves once the reflector has returned (its signal aborted); at once if never started. */
  get finished(): Promise<void> {
    return this.#running ?? Promise.resolve();
  }

  hasSynced(): boolean {
    return this.#reflector.hasSynced();
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    return this.#reflector.waitForSync(signal);
  }

  health(): ReflectorHealth {
    return this.#reflector.health();
  }

  /** The cached object `namespace/name` (or `name` when cluster-scoped). */
  get(name: string, namespace?: string): T | undefined {
    return this.store.get(namespace ? `${namespace}/${name}` : name);
  }

  /** Cached objects, optionally of one namespace. */
  list(namespace?: string): T[] {
    return namespace ? this.store.byIndex('namespace', namespace) : this.store.list();
  }

  /** Cached objects whose indexer `name` maps to `value`; throws for an unknown indexer. */
  byIndex(name: string, value: string): T[] {
    return this.store.byIndex(name, value);
  }

  #dispatch(change: StoreChange<T>): void {
    const initial = !this.#reflector.hasSynced();
    for (const h of this.#handlers) {
      switch (change.type) {
        case 'add':
          this.#call(() => h.onAdd?.(change.obj, initial));
          break;
        case 'update':
          this.#call(() => h.onUpdate?.(change.old, change.obj));
          break;
        case 'delete':
          this.#call(() => h.onDelete?.(change.obj));
          break;
      }
    }
  }

  #call(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#log.error(
        { informer: this.name, err: err instanceof Error ? err.message : String(err) },
        'event handler threw',
      );
    }
  }
}
