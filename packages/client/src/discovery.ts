import type { V1APIResourceList } from '@kubernetes/client-node';
import { abortReason } from '@regulon/util';
import { NotFoundError } from './errors.ts';
import { groupVersionPath, type ResourceType } from './kinds.ts';
import type { RequestOptions } from './request.ts';

type Fetch = (opts: RequestOptions) => Promise<unknown>;

/**
 * Kind -> resource lookups through the group-version's APIResourceList.
 * Lists are cached; a kind missing from a cached list triggers one refresh,
 * because a CRD may have been installed since the list was read.
 */
export class Discovery {
  readonly #fetch: Fetch;
  readonly #lists = new Map<string, Promise<V1APIResourceList>>();

  constructor(fetch: Fetch) {
    this.#fetch = fetch;
  }

  async resolve(group: string, version: string, kind: string, signal?: AbortSignal): Promise<ResourceType> {
    const key = `${group}/${version}`;
    const cached = this.#lists.has(key);
    let found = findKind(await this.#list(group, version, signal), group, version, kind);
    if (!found && cached) {
      this.#lists.delete(key);
      found = findKind(await this.#list(group, version, signal), group, version, kind);
    }
    if (!found) {
      const message = `the server has no resource for kind ${kind} in ${group ? `${group}/` : ''}${version}`;
      throw new NotFoundError(404, {
        kind: 'Status',
        status: 'Failure',
        code: 404,
        reason: 'NotFound',
        message,
      });
    }
    return found;
  }

  /** Forgets every cached list (e.g. after CRDs changed). */
  invalidate(): void {
    this.#lists.clear();
  }

  #list(group: string, version: string, signal: AbortSignal | undefined): Promise<V1APIResourceList> {
    const key = `${group}/${version}`;
    let list = this.#lists.get(key);
    if (!list) {
      // Shared by concurrent callers, so not tied to any one caller's signal.
      list = this.#fetch({ method: 'GET', path: groupVersionPath(group, version) }).then(
        (r) => r as V1APIResourceList,
      );
      // Failures are not cached: the next call asks again.
      void list.catch(() => this.#lists.delete(key));
      this.#lists.set(key, list);
    }
    return untilAborted(list, signal);
  }
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function findKind(
  list: V1APIResourceList,
  group: string,
  version: string,
  kind: string,
): ResourceType | undefined {
  // Subresources (`deployments/scale`) are listed too, some with the parent's kind.
  const r = list.resources.find((res) => res.kind === kind && !res.name.includes('/'));
  return r ? { group, version, kind, plural: r.name, namespaced: r.namespaced } : undefined;
}
