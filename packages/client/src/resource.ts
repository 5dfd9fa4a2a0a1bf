import type { KubeClient } from './client.ts';
import { isGone } from './errors.ts';
import { apiVersionOf, resourcePath, type ResourceType } from './kinds.ts';
import { METADATA_ACCEPT, METADATA_LIST_ACCEPT, type Query } from './request.ts';
import { APPLY_PATCH_CONTENT_TYPE } from './retry.ts';
import type { KubeObject, ListResult, PartialObjectMetadata, WatchEvent } from './types.ts';
import { fillTypeMeta, type WatchOptions } from './watch.ts';

export interface CallOptions {
  signal?: AbortSignal | undefined;
}

export interface GetOptions extends CallOptions {
  namespace?: string | undefined;
  /** Return meta.k8s.io/v1 PartialObjectMetadata instead of the full object. */
  metadataOnly?: boolean | undefined;
}

export interface ListOptions extends CallOptions {
  /** Omit for all namespaces. */
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  limit?: number | undefined;
  continue?: string | undefined;
  resourceVersion?: string | undefined;
  resourceVersionMatch?: 'Exact' | 'NotOlderThan' | undefined;
  /**
   * KEP-5866's shard selector (`shardRange(object.metadata.uid, '0x…', '0x…') || …`): only
   * objects whose hash falls in the ranges. Applied only by servers with the ShardedListAndWatch
   * feature gate, which say so in the result's `shardInfo`; others ignore it and list everything.
   */
  shardSelector?: string | undefined;
  /** Items are meta.k8s.io/v1 PartialObjectMetadata instead of full objects. */
  metadataOnly?: boolean | undefined;
}

export interface ListAllOptions extends Omit<ListOptions, 'continue' | 'limit'> {
  /** Items per request; default 500. */
  pageSize?: number | undefined;
}

export interface WriteOptions extends CallOptions {
  fieldManager?: string | undefined;
  dryRun?: boolean | undefined;
  fieldValidation?: 'Ignore' | 'Warn' | 'Strict' | undefined;
}

export interface DeleteOptions extends CallOptions {
  namespace?: string | undefined;
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan' | undefined;
  preconditions?: { uid?: string; resourceVersion?: string } | undefined;
  gracePeriodSeconds?: number | undefined;
  dryRun?: boolean | undefined;
}

export type PatchType = 'merge' | 'json' | 'strategic';

export interface PatchOptions extends WriteOptions {
  type: PatchType;
  namespace?: string | undefined;
  subresource?: 'status' | 'scale' | undefined;
}

export interface PatchStatusOptions extends WriteOptions {
  namespace?: string | undefined;
  /** Default `merge`. */
  type?: PatchType | undefined;
}

export interface ApplyOptions extends CallOptions {
  fieldManager: string;
  /** Take ownership of fields other managers own instead of failing with a conflict. */
  force?: boolean | undefined;
  subresource?: 'status' | undefined;
  dryRun?: boolean | undefined;
  fieldValidation?: 'Ignore' | 'Warn' | 'Strict' | undefined;
}

export interface ResourceClient<T extends KubeObject = KubeObject> {
  readonly type: ResourceType;
  get(name: string, opts: GetOptions & { metadataOnly: true }): Promise<PartialObjectMetadata>;
  get(name: string, opts?: GetOptions): Promise<T>;
  /** One page. */
  list(opts: ListOptions & { metadataOnly: true }): Promise<ListResult<PartialObjectMetadata>>;
  list(opts?: ListOptions): Promise<ListResult<T>>;
  /** Every page, following continue tokens; restarts once if a token expires. */
  listAll(opts: ListAllOptions & { metadataOnly: true }): Promise<ListResult<PartialObjectMetadata>>;
  listAll(opts?: ListAllOptions): Promise<ListResult<T>>;
  /** POST; the namespace comes from obj.metadata.namespace. */
  create(obj: T, opts?: WriteOptions): Promise<T>;
  /** PUT; the server rejects a stale metadata.resourceVersion with ConflictError. */
  replace(obj: T, opts?: WriteOptions): Promise<T>;
  delete(name: string, opts?: DeleteOptions): Promise<void>;
  patch(name: string, patch: unknown, opts: PatchOptions): Promise<T>;
  /** Server-side apply of `obj` (name and namespace from its metadata). */
  apply(obj: T, opts: ApplyOptions): Promise<T>;
  /** PUT on the status subresource. */
  updateStatus(obj: T, opts?: WriteOptions): Promise<T>;
  /** Patch (merge by default) on the status subresource. */
  patchStatus(name: string, patch: unknown, opts?: PatchStatusOptions): Promise<T>;
  watch(opts: WatchOptions & { metadataOnly: true }): AsyncIterable<WatchEvent<PartialObjectMetadata>>;
  watch(opts?: WatchOptions): AsyncIterable<WatchEvent<T>>;
}

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
};

const DEFAULT_PAGE_SIZE = 500;

interface RawList {
  items?: unknown[] | null | undefined;
  metadata?: { resourceVersion?: string; continue?: string; shardInfo?: { selector?: string } } | undefined;
}

export class ResourceClientImpl<T extends KubeObject> implements ResourceClient<T> {
  readonly type: ResourceType;
  readonly #client: KubeClient;
  readonly #typeMeta: { apiVersion: string; kind: string };

  constructor(client: KubeClient, type: ResourceType) {
    this.#client = client;
    this.type = type;
    this.#typeMeta = { apiVersion: apiVersionOf(type), kind: type.kind };
  }

  get(name: string, opts: GetOptions & { metadataOnly: true }): Promise<PartialObjectMetadata>;
  get(name: string, opts?: GetOptions): Promise<T>;
  async get(name: string, opts: GetOptions = {}): Promise<T | PartialObjectMetadata> {
    opts = this.#reads(opts);
    const obj = await this.#client.request<T>({
      method: 'GET',
      path: this.#itemPath(name, opts.namespace),
      ...(opts.metadataOnly ? { accept: METADATA_ACCEPT } : {}),
      ...signalOf(opts),
    });
    if (!opts.metadataOnly) fillTypeMeta(obj, this.#typeMeta);
    return obj;
  }

  list(opts: ListOptions & { metadataOnly: true }): Promise<ListResult<PartialObjectMetadata>>;
  list(opts?: ListOptions): Promise<ListResult<T>>;
  async list(opts: ListOptions = {}): Promise<ListResult<T> | ListResult<PartialObjectMetadata>> {
    opts = this.#reads(opts);
    const raw = await this.#client.request<RawList>({
      method: 'GET',
      path: resourcePath(this.type, opts.namespace),
      query: {
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        limit: opts.limit,
        continue: opts.continue,
        resourceVersion: opts.resourceVersion,
        resourceVersionMatch: opts.resourceVersionMatch,
        shardSelector: opts.shardSelector,
      },
      ...(opts.metadataOnly ? { accept: METADATA_LIST_ACCEPT } : {}),
      ...signalOf(opts),
    });
    const items = (raw.items ?? []) as T[];
    if (!opts.metadataOnly) for (const item of items) fillTypeMeta(item, this.#typeMeta);
    const result: ListResult<T> = { items, resourceVersion: raw.metadata?.resourceVersion ?? '' };
    if (raw.metadata?.continue) result.continue = raw.metadata.continue;
    const shardInfo = raw.metadata?.shardInfo;
    if (shardInfo) result.shardInfo = { selector: shardInfo.selector ?? '' };
    return result;
  }

  listAll(opts: ListAllOptions & { metadataOnly: true }): Promise<ListResult<PartialObjectMetadata>>;
  listAll(opts?: ListAllOptions): Promise<ListResult<T>>;
  async listAll(opts: ListAllOptions = {}): Promise<ListResult<T> | ListResult<PartialObjectMetadata>> {
    const { pageSize = DEFAULT_PAGE_SIZE, ...rest } = opts;
    for (let restarted = false; ; restarted = true) {
      const items: T[] = [];
      let page = await this.list({ ...rest, limit: pageSize });
      items.push(...page.items);
      // Sharded only if every page says so (each page is a request of its own).
      let shardInfo = page.shardInfo;
      try {
        while (page.continue) {
          // The token pins the snapshot; resending a resourceVersion is rejected.
          const { resourceVersion: _rv, resourceVersionMatch: _rvm, ...next } = rest;
          page = await this.list({ ...next, limit: pageSize, continue: page.continue });
          items.push(...page.items);
          if (!page.shardInfo) shardInfo = undefined;
        }
      } catch (err) {
        // The token outlived etcd compaction: the snapshot is gone, start over.
        if (isGone(err) && !restarted) continue;
        throw err;
      }
      return { items, resourceVersion: page.resourceVersion, ...(shardInfo ? { shardInfo } : {}) };
    }
  }

  async create(obj: T, opts: WriteOptions = {}): Promise<T> {
    const namespace = this.#namespaceOf(obj);
    return this.#write('POST', resourcePath(this.type, namespace), obj, writeQuery(opts), opts, false);
  }

  async replace(obj: T, opts: WriteOptions = {}): Promise<T> {
    // Guarded by resourceVersion, a repeated PUT can only fail with a
    // conflict, never overwrite someone else's change: safe to retry.
    const guarded = Boolean(obj.metadata?.resourceVersion);
    return this.#write('PUT', this.#objectPath(obj), obj, writeQuery(opts), opts, guarded);
  }

  async updateStatus(obj: T, opts: WriteOptions = {}): Promise<T> {
    const guarded = Boolean(obj.metadata?.resourceVersion);
    return this.#write('PUT', this.#objectPath(obj, 'status'), obj, writeQuery(opts), opts, guarded);
  }

  async delete(name: string, opts: DeleteOptions = {}): Promise<void> {
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (opts.propagationPolicy) body.propagationPolicy = opts.propagationPolicy;
    if (opts.preconditions) body.preconditions = opts.preconditions;
    if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds;
    if (opts.dryRun) body.dryRun = ['All'];
    await this.#client.request({
      method: 'DELETE',
      path: this.#itemPath(name, opts.namespace),
      body,
      ...signalOf(opts),
    });
  }

  async patch(name: string, patch: unknown, opts: PatchOptions): Promise<T> {
    const obj = await this.#client.request<T>({
      method: 'PATCH',
      path: this.#itemPath(name, opts.namespace, opts.subresource),
      query: writeQuery(opts),
      body: patch,
      contentType: PATCH_CONTENT_TYPES[opts.type],
      ...signalOf(opts),
    });
    fillTypeMeta(obj, this.#typeMeta);
    return obj;
  }

  patchStatus(name: string, patch: unknown, opts: PatchStatusOptions = {}): Promise<T> {
    return this.patch(name, patch, { ...opts, type: opts.type ?? 'merge', subresource: 'status' });
  }

  async apply(obj: T, opts: ApplyOptions): Promise<T> {
    if (!opts.fieldManager) throw new TypeError('apply: fieldManager is required');
    const body = {
      ...obj,
      apiVersion: obj.apiVersion || this.#typeMeta.apiVersion,
      kind: obj.kind || this.type.kind,
    };
    const result = await this.#client.request<T>({
      method: 'PATCH',
      path: this.#objectPath(obj, opts.subresource),
      query: { ...writeQuery(opts), force: opts.force ? 'true' : undefined },
      // JSON is a subset of YAML, so no YAML serializer is needed.
      body,
      contentType: APPLY_PATCH_CONTENT_TYPE,
      ...signalOf(opts),
    });
    fillTypeMeta(result, this.#typeMeta);
    return result;
  }

  watch(opts: WatchOptions & { metadataOnly: true }): AsyncIterable<WatchEvent<PartialObjectMetadata>>;
  watch(opts?: WatchOptions): AsyncIterable<WatchEvent<T>>;
  watch(
    opts: WatchOptions = {},
  ): AsyncIterable<WatchEvent<T>> | AsyncIterable<WatchEvent<PartialObjectMetadata>> {
    return this.#client.watch<T>(this.type, this.#reads(opts));
  }

  /** Reads through a metadata-only handle (metadataOnly(kind)) ask for metadata only. */
  #reads<O extends { metadataOnly?: boolean }>(opts: O): O {
    return this.type.metadataOnly && opts.metadataOnly === undefined ? { ...opts, metadataOnly: true } : opts;
  }

  async #write(
    method: 'POST' | 'PUT',
    path: string,
    obj: T,
    query: Query,
    opts: CallOptions,
    idempotent: boolean,
  ): Promise<T> {
    const body = {
      ...obj,
      apiVersion: obj.apiVersion || this.#typeMeta.apiVersion,
      kind: obj.kind || this.type.kind,
    };
    const result = await this.#client.request<T>({
      method,
      path,
      query,
      body,
      idempotent,
      ...signalOf(opts),
    });
    fillTypeMeta(result, this.#typeMeta);
    return result;
  }

  #namespaceOf(obj: T): string | undefined {
    if (!this.type.namespaced) return undefined;
    const ns = obj.metadata?.namespace;
    if (!ns) throw new TypeError(`${this.type.kind} is namespaced: metadata.namespace is required`);
    return ns;
  }

  #objectPath(obj: T, subresource?: string): string {
    const name = obj.metadata?.name;
    if (!name) throw new TypeError(`${this.type.kind}: metadata.name is required`);
    return resourcePath(this.type, this.#namespaceOf(obj), name, subresource);
  }

  #itemPath(name: string, namespace: string | undefined, subresource?: string): string {
    if (this.type.namespaced && !namespace) {
      throw new TypeError(`${this.type.kind} is namespaced: the namespace option is required`);
    }
    return resourcePath(this.type, namespace, name, subresource);
  }
}

function writeQuery(opts: WriteOptions | ApplyOptions): Query {
  return {
    fieldManager: opts.fieldManager,
    dryRun: opts.dryRun ? 'All' : undefined,
    fieldValidation: opts.fieldValidation,
  };
}

function signalOf(opts: CallOptions): { signal?: AbortSignal } {
  return opts.signal ? { signal: opts.signal } : {};
}
