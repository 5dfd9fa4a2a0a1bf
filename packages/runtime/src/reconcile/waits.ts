import type { KubeObject, ResourceType } from '@regulon/client';

/**
 * Which requests wait for which objects, by kind, namespace and name: for an
 * object that no owner reference maps back to the request, such as a child's
 * name taken by someone else's object. Its deletion (or any other change)
 * then wakes the requests that wait for it.
 *
 * Level-based like the reconcile itself: each reconcile of a request declares
 * its waits anew, and `settle` drops the ones it did not declare again, so a
 * resolved wait never lingers.
 */
export class NameWaits {
  /** Object key → request keys waiting for it. */
  readonly #waiters = new Map<string, Set<string>>();
  /** Request key → object keys it waits for. */
  readonly #waiting = new Map<string, Set<string>>();

  /** Request `request` waits for the object; effective at once, for events that arrive while it reconciles. */
  add(request: string, type: ResourceType, namespace: string | undefined, name: string): string {
    const key = objectKey(type, namespace, name);
    setOf(this.#waiters, key).add(request);
    setOf(this.#waiting, request).add(key);
    return key;
  }

  /** Keeps only the waits of `request` that are in `declared` (the keys `add` returned during its last reconcile). */
  settle(request: string, declared: ReadonlySet<string>): void {
    const keys = this.#waiting.get(request);
    if (!keys) return;
    for (const key of keys) {
      if (declared.has(key)) continue;
      keys.delete(key);
      const waiters = this.#waiters.get(key);
      waiters?.delete(request);
      if (waiters?.size === 0) this.#waiters.delete(key);
    }
    if (keys.size === 0) this.#waiting.delete(request);
  }

  /** The request keys waiting for `obj` of kind `type`. */
  waiters(type: ResourceType, obj: KubeObject): string[] {
    const name = obj.metadata?.name;
    if (!name || this.#waiters.size === 0) return [];
    return [...(this.#waiters.get(objectKey(type, obj.metadata?.namespace, name)) ?? [])];
  }

  /** How many objects are waited for (for tests and metrics). */
  get size(): number {
    return this.#waiters.size;
  }
}

function objectKey(type: ResourceType, namespace: string | undefined, name: string): string {
  return `${type.group}/${type.kind}/${namespace ?? ''}/${name}`;
}

function setOf(map: Map<string, Set<string>>, key: string): Set<string> {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  return set;
}
