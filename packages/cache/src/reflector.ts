import { setTimeout as sleep } from 'node:timers/promises';
import { errorFromStatus, isGone, type KubeObject, type WatchEvent } from '@regulon/client';
import { backoffDelay, silentLogger, type Backoff, type Logger } from '@regulon/util';
import { objectKey } from './keys.ts';
import type { ListerWatcher } from './lister-watcher.ts';
import { contains, selectorFor, type Shard } from './shard.ts';
import { deepFreeze, type Store, type StoreChange } from './store.ts';

/** How long a reflector waits between failed list/watch attempts. */
export type BackoffOptions = Backoff;

/**
 * client-go's reflector defaults: 800 ms, doubling, 30 s cap, with equal jitter (half
 * fixed, half random) so that many informers that lose the API server at once don't
 * come back in lockstep. Options given without `jitter` get the same half.
 */
export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 800, maxMs: 30_000, factor: 2, jitter: 0.5 };

/** Server-side watch timeout is drawn from [MIN, 2*MIN) seconds, as client-go does, to spread reconnects. */
export const MIN_WATCH_TIMEOUT_SECONDS = 300;
/**
 * A watch must deliver an event, a bookmark or its end within its own timeout
 * plus this grace; past that the connection is presumed dead (a half-open TCP
 * connection, a stuck proxy) and the reflector reconnects.
 */
export const STALL_GRACE_MS = 30_000;
/**
 * A watch that ends sooner than this without any event counts as a failure, so
 * a flapping server can't cause a hot loop; one that the server accepted and
 * kept open this long counts as a recovery, even with no event to show for it.
 */
const SHORT_WATCH_MS = 1_000;
const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

export type Transform<T> = (obj: T) => T;

export interface ReflectorOptions<T extends KubeObject> {
  /** For logs: the kind and scope. */
  name: string;
  listerWatcher: ListerWatcher<T>;
  store: Store<T>;
  /** Called for every change, in order, after the store holds it. */
  onChange: (change: StoreChange<T>) => void;
  transform?: Transform<T> | undefined;
  logger?: Logger | undefined;
  backoff?: BackoffOptions | undefined;
  /** Override the stall detection (default: the watch timeout + STALL_GRACE_MS). */
  inactivityTimeoutMs?: number | undefined;
  /** Use a streaming list (watch with sendInitialEvents) instead of paginated lists; falls back to lists if the server refuses. */
  streamingList?: boolean | undefined;
  minWatchTimeoutSeconds?: number | undefined;
  /**
   * Hold only this shard of the key space (KEP-5866). Every list asks the server for it
   * (`shardSelector`); whether the server applied it (`shardInfo` on the list) decides the
   * {@link ShardMode}. Objects outside the shard are dropped on this side in either mode.
   */
  shard?: Shard | undefined;
}

/**
 * Where a sharded informer's shard is cut: `server` when the API server applied the
 * shardSelector (ShardedListAndWatch on), `client` when it ignored it (gate off, older
 * server) and the reflector drops the other shards' objects itself after receiving them.
 */
export type ShardMode = 'server' | 'client';

export interface ReflectorHealth {
  /** The first list has been delivered. */
  synced: boolean;
  /** A watch is open now. */
  watching: boolean;
  /** Failed list/watch attempts since the last success; 0 when healthy. */
  consecutiveFailures: number;
  /**
   * When the first of the current failures happened (ms since epoch); absent
   * when healthy. A list, or a watch that the server accepted and kept open,
   * ends the failure; how long ago this was is how stale the cache may be.
   */
  failingSince?: number | undefined;
  lastError?: string | undefined;
  lastErrorAt?: number | undefined;
  /** When the last event or bookmark arrived (ms since epoch). */
  lastEventAt?: number | undefined;
  resourceVersion?: string | undefined;
  relists: number;
  /** Whether initial state comes from a streaming list (sendInitialEvents) rather than paginated lists. */
  streamingList: boolean;
  /** For a sharded reflector, where the shard is cut, as the last list found; absent before it. */
  shardMode?: ShardMode | undefined;
}

class WatchStalledError extends Error {}

/**
 * List, then watch from the list's resourceVersion; on 410 Gone relist and
 * emit the differences; on any other failure or a silent stall, reconnect
 * with backoff. `run()` returns only when its signal is aborted: a reflector
 * never stops silently, and `health()` says how it is doing.
 */
export class Reflector<T extends KubeObject> {
  readonly #o: ReflectorOptions<T>;
  readonly #log: Logger;
  readonly #shard: { shard: Shard; selector: string } | undefined;
  readonly #health: Omit<ReflectorHealth, 'streamingList'> = {
    synced: false,
    watching: false,
    consecutiveFailures: 0,
    relists: 0,
  };
  #streaming: boolean;
  #syncWaiters: Array<() => void> = [];

  constructor(options: ReflectorOptions<T>) {
    this.#o = options;
    this.#log = options.logger ?? silentLogger;
    this.#streaming = options.streamingList ?? false;
    if (options.shard) this.#shard = { shard: options.shard, selector: selectorFor(options.shard) };
  }

  health(): ReflectorHealth {
    return { ...this.#health, streamingList: this.#streaming };
  }

  hasSynced(): boolean {
    return this.#health.synced;
  }

  /** Resolves once the first list has been delivered; rejects if the signal aborts first. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.#health.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = () =>
        reject(
          signal?.reason instanceof Error ? signal.reason : new Error('aborted while waiting for cache sync'),
        );
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#syncWaiters.push(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    let resourceVersion: string | undefined;
    let needList = true;
    while (!signal.aborted) {
      try {
        if (needList) {
          // A streaming list is a watch, which echoes no shardInfo: a one-item list asks first.
          if (this.#streaming && this.#shard) await this.#probeShard(signal);
          resourceVersion = this.#streaming ? undefined : await this.#list(signal);
          needList = false;
        }
        resourceVersion = await this.#watch(resourceVersion, signal);
        this.#succeeded();
      } catch (err) {
        this.#health.watching = false;
        if (signal.aborted) break;
        if (isGone(err)) {
          // The resourceVersion we hold is older than the server keeps history for:
          // only a relist can tell us what changed (including what was deleted).
          this.#log.info(
            { informer: this.#o.name, resourceVersion },
            'resourceVersion expired (410 Gone), relisting',
          );
          needList = true;
          this.#health.relists++;
          if (this.#health.consecutiveFailures === 0) continue;
        } else if (this.#streaming && !this.#health.synced && isRefusal(err)) {
          this.#log.info(
            { informer: this.#o.name, err: message(err) },
            'streaming list not supported, using paginated lists',
          );
          this.#streaming = false;
          needList = true;
          continue;
        }
        const failures = ++this.#health.consecutiveFailures;
        this.#health.lastError = message(err);
        this.#health.lastErrorAt = Date.now();
        this.#health.failingSince ??= this.#health.lastErrorAt;
        const backoff = this.#o.backoff ?? DEFAULT_BACKOFF;
        const wait = backoffDelay(failures - 1, { jitter: DEFAULT_BACKOFF.jitter, ...backoff });
        this.#log.warn(
          { informer: this.#o.name, err: message(err), failures, retryInMs: Math.round(wait) },
          err instanceof WatchStalledError ? 'watch stalled, reconnecting' : 'list/watch failed, retrying',
        );
        if (!this.#health.synced) needList = true;
        try {
          await sleep(wait, undefined, { signal });
        } catch {
          break;
        }
      }
    }
    this.#health.watching = false;
  }

  async #list(signal: AbortSignal): Promise<string> {
    const sharded = this.#shard;
    const result = await this.#o.listerWatcher.list(
      signal,
      sharded ? { shardSelector: sharded.selector } : undefined,
    );
    let items = result.items;
    if (sharded) {
      this.#setShardMode(result.shardInfo !== undefined);
      items = items.filter((obj) => contains(sharded.shard, obj));
      if (items.length < result.items.length && this.#health.shardMode === 'server')
        // Only a hash that differs from the server's can get here; the objects are dropped all the same.
        this.#log.warn(
          { informer: this.#o.name, outside: result.items.length - items.length },
          'the API server sent objects outside the shard it applied',
        );
    }
    this.#replace(items);
    return result.resourceVersion;
  }

  async #probeShard(signal: AbortSignal): Promise<void> {
    const probe = await this.#o.listerWatcher.list(signal, {
      shardSelector: this.#shard!.selector,
      limit: 1,
    });
    this.#setShardMode(probe.shardInfo !== undefined);
  }

  /** Records where the shard is cut, logging the first decision and any change (a relist after a server upgrade). */
  #setShardMode(applied: boolean): void {
    const mode: ShardMode = applied ? 'server' : 'client';
    if (this.#health.shardMode === mode) return;
    this.#health.shardMode = mode;
    this.#log.info(
      { informer: this.#o.name, shardMode: mode, shardSelector: this.#shard!.selector },
      mode === 'server'
        ? 'shard served by the API server (shardSelector applied)'
        : 'API server ignored shardSelector: filtering the shard on the client',
    );
  }

  #replace(items: T[]): void {
    const transform = this.#o.transform;
    const changes = this.#o.store.replace(transform ? items.map(transform) : items);
    for (const change of changes) this.#emit(change);
    this.#succeeded();
    if (!this.#health.synced) {
      this.#health.synced = true;
      for (const w of this.#syncWaiters.splice(0)) w();
    }
  }

  /** Watches until the server ends the stream; returns the last resourceVersion seen. */
  async #watch(fromVersion: string | undefined, outer: AbortSignal): Promise<string | undefined> {
    const min = this.#o.minWatchTimeoutSeconds ?? MIN_WATCH_TIMEOUT_SECONDS;
    const timeoutSeconds = Math.floor(min + Math.random() * min);
    const inactivityMs = this.#o.inactivityTimeoutMs ?? timeoutSeconds * 1000 + STALL_GRACE_MS;
    // An abort that landed while the list was being delivered fires no listener: check first.
    if (outer.aborted) return fromVersion;
    const controller = new AbortController();
    const onOuterAbort = () => controller.abort(outer.reason);
    outer.addEventListener('abort', onOuterAbort, { once: true });
    let stalled = false;
    let timer: NodeJS.Timeout | undefined;
    let recovered: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        stalled = true;
        controller.abort(new WatchStalledError(`no event for ${inactivityMs} ms`));
      }, inactivityMs);
    };
    const streamingInitial = fromVersion === undefined && this.#streaming;
    const initial: T[] = [];
    let resourceVersion = fromVersion;
    let events = 0;
    const started = Date.now();
    try {
      arm();
      const stream = this.#o.listerWatcher.watch({
        timeoutSeconds,
        signal: controller.signal,
        onOpen: () => {
          recovered = setTimeout(() => this.#succeeded(), SHORT_WATCH_MS);
        },
        ...(resourceVersion !== undefined ? { resourceVersion } : {}),
        ...(streamingInitial ? { sendInitialEvents: true } : {}),
        // A server that ignored the selector on the list ignores it on the watch too.
        ...(this.#health.shardMode === 'server' ? { shardSelector: this.#shard!.selector } : {}),
      });
      this.#health.watching = true;
      for await (const event of stream) {
        arm();
        events++;
        this.#health.lastEventAt = Date.now();
        // Events flowing again is the recovery, whatever the event says.
        if (this.#health.consecutiveFailures > 0) this.#succeeded();
        resourceVersion =
          this.#handle(event, streamingInitial && !this.#health.synced ? initial : undefined) ??
          resourceVersion;
        this.#health.resourceVersion = resourceVersion;
      }
    } catch (err) {
      if (stalled)
        throw new WatchStalledError(`watch of ${this.#o.name} stalled: no event for ${inactivityMs} ms`);
      throw err;
    } finally {
      clearTimeout(timer);
      clearTimeout(recovered);
      outer.removeEventListener('abort', onOuterAbort);
      this.#health.watching = false;
    }
    if (stalled)
      throw new WatchStalledError(`watch of ${this.#o.name} stalled: no event for ${inactivityMs} ms`);
    if (events === 0 && Date.now() - started < SHORT_WATCH_MS && !outer.aborted) {
      throw new Error('watch closed immediately without events');
    }
    if (streamingInitial && !this.#health.synced)
      throw new Error('watch ended before the initial events were complete');
    return resourceVersion;
  }

  /** Applies one watch event; returns its resourceVersion. */
  #handle(event: WatchEvent<T>, initial: T[] | undefined): string | undefined {
    if (event.type === 'ERROR') {
      const code = event.status.code ?? 500;
      throw errorFromStatus(code, event.status);
    }
    const rv = event.object.metadata?.resourceVersion;
    if (event.type === 'BOOKMARK') {
      if (initial && event.object.metadata?.annotations?.[INITIAL_EVENTS_END] === 'true')
        this.#replace(initial.splice(0));
      return rv;
    }
    // Out of the shard: another replica's object. Dropping its events is all it takes,
    // because shard membership never changes during an object's life: its hash is of its
    // uid or its namespace, and neither can be changed by an update. A name deleted and
    // created again is a new object with a new uid; the old one's DELETED (in the shard
    // or not, as it was) and the new one's ADDED are each judged on their own uid, and a
    // relist after 410 compares the store with a list filtered the same way.
    // In server mode this only catches what the server let through (see #list).
    if (this.#shard && !contains(this.#shard.shard, event.object)) return rv;
    const obj = this.#o.transform ? this.#o.transform(event.object) : event.object;
    if (initial) {
      initial.push(obj);
      return rv;
    }
    if (event.type === 'DELETED') {
      this.#o.store.delete(objectKey(obj));
      this.#emit({ type: 'delete', obj: deepFreeze(obj) });
    } else {
      this.#emit(this.#o.store.upsert(obj));
    }
    return rv;
  }

  #emit(change: StoreChange<T>): void {
    try {
      this.#o.onChange(change);
    } catch (err) {
      // A broken handler must not kill the watch that every other handler relies on.
      this.#log.error({ informer: this.#o.name, err: message(err) }, 'event handler threw');
    }
  }

  #succeeded(): void {
    this.#health.consecutiveFailures = 0;
    delete this.#health.failingSince;
    delete this.#health.lastError;
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** 4xx other than 410/429: the server understood and said no (e.g. sendInitialEvents unsupported). */
function isRefusal(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' && code >= 400 && code < 500 && code !== 410 && code !== 429;
}
