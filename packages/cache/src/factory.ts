import { apiVersionOf, type KubeClient, type KubeObject, type ResourceType } from '@regulon/client';
import { Informer } from './informer.ts';
import { listerWatcher, type Scope } from './lister-watcher.ts';
import { silentLogger, type Logger, type MetricsRegistry } from '@regulon/util';
import type { BackoffOptions, ReflectorHealth, Transform } from './reflector.ts';
import { describeShard, type Shard } from './shard.ts';
import type { IndexFunc } from './store.ts';

export interface InformerRequest<T> extends Scope {
  indexers?: Record<string, IndexFunc<T>> | undefined;
  /** Only the first request for an informer sets its transform. */
  transform?: Transform<T> | null | undefined;
  /**
   * Only this shard of the kind's key space (KEP-5866; see shard.ts). Part of the informer's
   * identity: another shard is another informer, with its own list and watch.
   */
  shard?: Shard | undefined;
}

export interface FactoryOptions {
  logger?: Logger | undefined;
  backoff?: BackoffOptions | undefined;
  inactivityTimeoutMs?: number | undefined;
  streamingList?: boolean | undefined;
  /** Server-side watch timeouts are drawn from [min, 2*min) seconds (default 300). */
  minWatchTimeoutSeconds?: number | undefined;
  /** Where sharded informers report `regulon_cache_shard_mode`; none when absent. */
  registry?: MetricsRegistry | undefined;
}

export interface InformerStatus {
  name: string;
  synced: boolean;
  health: ReflectorHealth;
}

/**
 * One informer, so one list and one watch, per (kind, scope) per process,
 * shared by every controller that asks for it.
 */
export class SharedInformerFactory {
  readonly #client: KubeClient;
  readonly #o: FactoryOptions;
  readonly #informers = new Map<string, Informer<KubeObject>>();
  /** Each informer's own stop, so that one can go while the rest run (see stop()). */
  readonly #stops = new Map<Informer<KubeObject>, AbortController>();
  #signal: AbortSignal | undefined;

  constructor(client: KubeClient, options: FactoryOptions = {}) {
    this.#client = client;
    this.#o = options;
  }

  /** The shared informer for a kind and scope; created on first request, started at once if the factory runs. */
  informerFor<T extends KubeObject>(type: ResourceType<T>, request: InformerRequest<T> = {}): Informer<T> {
    // A metadata-only handle (metadataOnly(Kinds.Secret)) asks for the metadata-only informer.
    if (type.metadataOnly && !request.metadataOnly) request = { ...request, metadataOnly: true };
    const key = informerKey(type, request);
    let informer = this.#informers.get(key) as Informer<T> | undefined;
    if (!informer) {
      const scope: Scope = {
        ...(request.namespace ? { namespace: request.namespace } : {}),
        ...(request.labelSelector ? { labelSelector: request.labelSelector } : {}),
        ...(request.fieldSelector ? { fieldSelector: request.fieldSelector } : {}),
        ...(request.metadataOnly ? { metadataOnly: true } : {}),
      };
      informer = new Informer<T>({
        name: key,
        listerWatcher: listerWatcher<T>(this.#client, type, scope),
        logger: this.#o.logger ?? silentLogger,
        ...(request.indexers ? { indexers: request.indexers } : {}),
        ...(request.transform !== undefined ? { transform: request.transform } : {}),
        ...(this.#o.backoff ? { backoff: this.#o.backoff } : {}),
        ...(this.#o.inactivityTimeoutMs !== undefined
          ? { inactivityTimeoutMs: this.#o.inactivityTimeoutMs }
          : {}),
        ...(this.#o.streamingList !== undefined ? { streamingList: this.#o.streamingList } : {}),
        ...(this.#o.minWatchTimeoutSeconds !== undefined
          ? { minWatchTimeoutSeconds: this.#o.minWatchTimeoutSeconds }
          : {}),
        ...(request.shard ? { shard: request.shard } : {}),
        ...(this.#o.registry ? { registry: this.#o.registry } : {}),
      });
      const shared = informer as unknown as Informer<KubeObject>;
      this.#informers.set(key, shared);
      this.#stops.set(shared, new AbortController());
      if (this.#signal) this.#start(shared, this.#signal);
    } else if (request.indexers) {
      for (const [name, fn] of Object.entries(request.indexers)) {
        try {
          informer.store.addIndexer(name, fn);
        } catch {
          // Another controller registered an indexer of this name on the shared informer already.
        }
      }
    }
    return informer;
  }

  /** Starts every informer, and any requested later, until the signal aborts. */
  start(signal: AbortSignal): void {
    this.#signal = signal;
    for (const informer of this.#informers.values()) this.#start(informer, signal);
  }

  /**
   * Stops one informer and forgets it, while the others run on: its watch ends, its
   * handlers hear nothing more, and the next request for its kind and scope makes a new
   * informer that lists afresh. For a replica that hands a shard over and takes another.
   * Resolves once its reflector has returned.
   */
  async stop<T extends KubeObject>(informer: Informer<T>): Promise<void> {
    const shared = informer as unknown as Informer<KubeObject>;
    const stop = this.#stops.get(shared);
    if (!stop) return;
    this.#stops.delete(shared);
    this.#informers.delete(informer.name);
    stop.abort();
    await informer.finished;
  }

  /** Resolves when every informer has synced; rejects on abort or after timeoutMs. */
  async waitForSync(signal?: AbortSignal, timeoutMs?: number): Promise<void> {
    const signals = [signal, timeoutMs !== undefined ? AbortSignal.timeout(timeoutMs) : undefined].filter(
      (s): s is AbortSignal => s !== undefined,
    );
    const combined = signals.length ? AbortSignal.any(signals) : undefined;
    try {
      await Promise.all([...this.#informers.values()].map((i) => i.waitForSync(combined)));
    } catch (err) {
      const pending = this.status()
        .filter((s) => !s.synced)
        .map((s) => `${s.name}${s.health.lastError ? ` (${s.health.lastError})` : ''}`);
      throw new Error(`caches did not sync: ${pending.join(', ')}`, { cause: err });
    }
  }

  #start(informer: Informer<KubeObject>, signal: AbortSignal): void {
    void informer.start(AbortSignal.any([signal, this.#stops.get(informer)!.signal]));
  }

  status(): InformerStatus[] {
    return [...this.#informers.values()].map((i) => ({
      name: i.name,
      synced: i.hasSynced(),
      health: i.health(),
    }));
  }
}

function informerKey(type: ResourceType, scope: Scope & { shard?: Shard | undefined }): string {
  const parts = [`${apiVersionOf(type)} ${type.kind}`];
  if (scope.namespace) parts.push(`ns=${scope.namespace}`);
  if (scope.labelSelector) parts.push(`labels=${scope.labelSelector}`);
  if (scope.fieldSelector) parts.push(`fields=${scope.fieldSelector}`);
  if (scope.metadataOnly) parts.push('metadata-only');
  if (scope.shard) parts.push(`shard=${describeShard(scope.shard)}`);
  return parts.join(' ');
}
