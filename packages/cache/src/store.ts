import type { KubeObject } from '@regulon/client';
import { objectKey } from './keys.ts';

/** Maps an object to the index values it is filed under (none, one or many). */
export type IndexFunc<T> = (obj: T) => string[];

/** Files objects by namespace. */
export const NAMESPACE_INDEX = 'namespace';
/** Files objects by the UID of their controller owner (the ownerReference with controller: true). */
export const CONTROLLER_OWNER_INDEX = 'controllerOwner';

export function namespaceIndex(obj: KubeObject): string[] {
  return obj.metadata?.namespace ? [obj.metadata.namespace] : [];
}

export function controllerOwnerIndex(obj: KubeObject): string[] {
  const owner = obj.metadata?.ownerReferences?.find((r) => r.controller === true);
  return owner ? [owner.uid] : [];
}

export type StoreChange<T> =
  { type: 'add'; obj: T } | { type: 'update'; obj: T; old: T } | { type: 'delete'; obj: T };

/**
 * A keyed object store with secondary indexes, like client-go's thread-safe
 * store. Objects in it are deep-frozen: a caller that mutates one gets a
 * TypeError instead of silently corrupting every other reader's view
 * (structuredClone an object to change it).
 */
export class Store<T extends KubeObject> {
  readonly #items = new Map<string, T>();
  readonly #indexers = new Map<string, IndexFunc<T>>();
  readonly #indices = new Map<string, Map<string, Set<string>>>();

  constructor(indexers: Record<string, IndexFunc<T>> = {}) {
    const all: Record<string, IndexFunc<T>> = {
      [NAMESPACE_INDEX]: namespaceIndex,
      [CONTROLLER_OWNER_INDEX]: controllerOwnerIndex,
      ...indexers,
    };
    for (const [name, fn] of Object.entries(all)) this.addIndexer(name, fn);
  }

  /** Adds an index; existing objects are filed under it at once. */
  addIndexer(name: string, fn: IndexFunc<T>): void {
    if (this.#indexers.has(name)) throw new Error(`indexer ${name} already exists`);
    this.#indexers.set(name, fn);
    const index = new Map<string, Set<string>>();
    this.#indices.set(name, index);
    for (const [key, obj] of this.#items) this.#file(index, fn(obj), key);
  }

  get size(): number {
    return this.#items.size;
  }

  get(key: string): T | undefined {
    return this.#items.get(key);
  }

  list(): T[] {
    return [...this.#items.values()];
  }

  keys(): string[] {
    return [...this.#items.keys()];
  }

  /** Objects filed under `value` in index `name`. */
  byIndex(name: string, value: string): T[] {
    const index = this.#indices.get(name);
    if (!index) throw new Error(`no indexer named ${name}`);
    const keys = index.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const key of keys) {
      const obj = this.#items.get(key);
      if (obj) out.push(obj);
    }
    return out;
  }

  /** Adds or replaces an object; returns the change it made. */
  upsert(obj: T): StoreChange<T> {
    const frozen = deepFreeze(obj);
    const key = objectKey(frozen);
    const old = this.#items.get(key);
    if (old) this.#unindex(key, old);
    this.#items.set(key, frozen);
    this.#index(key, frozen);
    return old ? { type: 'update', obj: frozen, old } : { type: 'add', obj: frozen };
  }

  /** Removes an object by key; returns the removed object (the last state known), if any. */
  delete(key: string): T | undefined {
    const old = this.#items.get(key);
    if (!old) return undefined;
    this.#unindex(key, old);
    this.#items.delete(key);
    return old;
  }

  /**
   * Replaces the whole content (after a relist) and returns the differences:
   * adds for new keys, updates for keys whose resourceVersion moved, deletes
   * for keys that vanished while no watch was there to say so.
   */
  replace(objects: T[]): StoreChange<T>[] {
    const changes: StoreChange<T>[] = [];
    const seen = new Set<string>();
    for (const obj of objects) {
      const key = objectKey(obj);
      seen.add(key);
      const old = this.#items.get(key);
      if (old && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) continue;
      changes.push(this.upsert(obj));
    }
    for (const key of [...this.#items.keys()]) {
      if (seen.has(key)) continue;
      const old = this.delete(key);
      if (old) changes.push({ type: 'delete', obj: old });
    }
    return changes;
  }

  #index(key: string, obj: T): void {
    for (const [name, fn] of this.#indexers) this.#file(this.#indices.get(name)!, fn(obj), key);
  }

  #unindex(key: string, obj: T): void {
    for (const [name, fn] of this.#indexers) {
      const index = this.#indices.get(name)!;
      for (const value of fn(obj)) {
        const keys = index.get(value);
        if (!keys) continue;
        keys.delete(key);
        if (keys.size === 0) index.delete(value);
      }
    }
  }

  #file(index: Map<string, Set<string>>, values: string[], key: string): void {
    for (const value of values) {
      let keys = index.get(value);
      if (!keys) index.set(value, (keys = new Set()));
      keys.add(key);
    }
  }
}

/** Freezes an object graph in place (objects from JSON.parse have no cycles). */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  for (const child of Object.values(value as object)) deepFreeze(child);
  return Object.freeze(value);
}
