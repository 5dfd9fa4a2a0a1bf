import type { KubeObject } from '@regulon/client';

/**
 * Filters events before they reach the queue. A method that is absent lets
 * the event through. Predicates only save work: because reconcile is
 * level-based, dropping an event can delay convergence but never break it.
 */
export interface Predicate<T extends KubeObject = KubeObject> {
  create?(obj: T): boolean;
  update?(old: T, obj: T): boolean;
  delete?(obj: T): boolean;
}

function sameRecord(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const ka = Object.keys(a ?? {});
  if (ka.length !== Object.keys(b ?? {}).length) return false;
  return ka.every((k) => a?.[k] === b?.[k]);
}

/** Updates only when metadata.generation moved: spec changes, not status writes. */
export const generationChanged: Predicate = {
  update: (old, obj) => old.metadata?.generation !== obj.metadata?.generation,
};

export const labelsChanged: Predicate = {
  update: (old, obj) => !sameRecord(old.metadata?.labels, obj.metadata?.labels),
};

export const annotationsChanged: Predicate = {
  update: (old, obj) => !sameRecord(old.metadata?.annotations, obj.metadata?.annotations),
};

/** Passes an event if any predicate passes it. */
export function or<T extends KubeObject>(...ps: Predicate<T>[]): Predicate<T> {
  return {
    create: (o) => ps.some((p) => p.create?.(o) ?? true),
    update: (a, b) => ps.some((p) => p.update?.(a, b) ?? true),
    delete: (o) => ps.some((p) => p.delete?.(o) ?? true),
  };
}

/** Passes an event only if every predicate passes it. */
export function and<T extends KubeObject>(...ps: Predicate<T>[]): Predicate<T> {
  return {
    create: (o) => ps.every((p) => p.create?.(o) ?? true),
    update: (a, b) => ps.every((p) => p.update?.(a, b) ?? true),
    delete: (o) => ps.every((p) => p.delete?.(o) ?? true),
  };
}

/** A predicate from one function applied to every event's (new) object. */
export function predicate<T extends KubeObject>(fn: (obj: T) => boolean): Predicate<T> {
  return { create: fn, update: (_old, obj) => fn(obj), delete: fn };
}
