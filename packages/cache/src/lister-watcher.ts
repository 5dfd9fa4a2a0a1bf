import type { KubeClient, KubeObject, ListResult, ResourceType, WatchEvent } from '@regulon/client';

/** Which objects of a kind an informer holds. */
export interface Scope {
  /** Only this namespace; all namespaces when absent. */
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  /** Hold PartialObjectMetadata instead of whole objects (less memory, and no Secret data). */
  metadataOnly?: boolean | undefined;
}

/** What a reflector asks of one list. */
export interface ListRequest {
  /** KEP-5866's shardSelector (see shard.ts); servers without the feature gate ignore it. */
  shardSelector?: string | undefined;
  /** One page of at most this many items instead of every page: a probe, not a list to store. */
  limit?: number | undefined;
}

export interface WatchRequest {
  resourceVersion?: string | undefined;
  timeoutSeconds: number;
  sendInitialEvents?: boolean | undefined;
  shardSelector?: string | undefined;
  signal: AbortSignal;
  /** Called once the server has accepted the watch, before any event. */
  onOpen?: () => void;
}

/** The two calls a reflector makes; a seam so that its loop doesn't depend on HTTP. */
export interface ListerWatcher<T> {
  /** Every page (one with `limit`); `shardInfo` says whether the server applied `shardSelector`. */
  list(signal: AbortSignal, request?: ListRequest): Promise<ListResult<T>>;
  watch(request: WatchRequest): AsyncIterable<WatchEvent<T>>;
}

/** Page size of the initial list: big enough to be few requests, small enough to bound the server's work. */
export const LIST_PAGE_SIZE = 500;

export function listerWatcher<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType<T>,
  scope: Scope = {},
): ListerWatcher<T> {
  const base = {
    ...(scope.namespace ? { namespace: scope.namespace } : {}),
    ...(scope.labelSelector ? { labelSelector: scope.labelSelector } : {}),
    ...(scope.fieldSelector ? { fieldSelector: scope.fieldSelector } : {}),
    ...(scope.metadataOnly ? { metadataOnly: true } : {}),
  };
  return {
    list: (signal, req = {}) => {
      const resource = client.resource<T>(type);
      const sharded = req.shardSelector ? { shardSelector: req.shardSelector } : {};
      return req.limit !== undefined
        ? resource.list({ ...base, ...sharded, limit: req.limit, signal })
        : resource.listAll({ ...base, ...sharded, pageSize: LIST_PAGE_SIZE, signal });
    },
    watch: (req) =>
      client.watch<T>(type, {
        ...base,
        ...(req.shardSelector ? { shardSelector: req.shardSelector } : {}),
        allowWatchBookmarks: true,
        timeoutSeconds: req.timeoutSeconds,
        signal: req.signal,
        ...(req.onOpen ? { onOpen: req.onOpen } : {}),
        ...(req.resourceVersion !== undefined ? { resourceVersion: req.resourceVersion } : {}),
        ...(req.sendInitialEvents ? { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' } : {}),
      }),
  };
}
