/** One RFC 6902 operation: what an admission webhook returns as its `patch`. */
export type JsonPatchOperation =
  { op: 'add' | 'replace'; path: string; value: unknown } | { op: 'remove'; path: string };

/** A JSON Pointer (RFC 6901) segment: `~` and `/` escaped. */
export function pointerSegment(key: string | number): string {
  return String(key).replaceAll('~', '~0').replaceAll('/', '~1');
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]))
    );
  }
  return false;
}

/**
 * The JSON patch that turns `from` into `to`, as the API server applies it
 * to the object it sent: maps are walked key by key (so a defaulter that sets
 * one field sends one `add`, and fields it did not touch, including ones this
 * webhook's schema does not know, are never rewritten); a changed array is
 * replaced whole, since positions are no stable identity for list items that
 * someone else may reorder. `undefined` values count as absent, as in JSON.
 */
export function jsonPatch(from: unknown, to: unknown, path = ''): JsonPatchOperation[] {
  if (deepEqual(from, to)) return [];
  if (!isObject(from) || !isObject(to)) {
    // The root itself changed type: replace it whole (a defaulter never does this for an object).
    return to === undefined ? [{ op: 'remove', path }] : [{ op: 'replace', path, value: to }];
  }
  const ops: JsonPatchOperation[] = [];
  for (const key of Object.keys(from)) {
    if (from[key] !== undefined && (!Object.hasOwn(to, key) || to[key] === undefined))
      ops.push({ op: 'remove', path: `${path}/${pointerSegment(key)}` });
  }
  for (const [key, value] of Object.entries(to)) {
    if (value === undefined) continue;
    const child = `${path}/${pointerSegment(key)}`;
    if (!Object.hasOwn(from, key) || from[key] === undefined) ops.push({ op: 'add', path: child, value });
    else if (isObject(from[key]) && isObject(value)) ops.push(...jsonPatch(from[key], value, child));
    else if (!deepEqual(from[key], value)) ops.push({ op: 'replace', path: child, value });
  }
  return ops;
}

/** Applies a patch made by {@link jsonPatch} (add, replace, remove on maps; whole values elsewhere). For tests and for checking a patch round-trips. */
export function applyJsonPatch(doc: unknown, ops: readonly JsonPatchOperation[]): unknown {
  let root = structuredClone(doc);
  for (const op of ops) {
    if (op.path === '') {
      root = op.op === 'remove' ? undefined : structuredClone(op.value);
      continue;
    }
    const segments = op.path
      .slice(1)
      .split('/')
      .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = segments.pop()!;
    let parent: unknown = root;
    for (const s of segments) parent = (parent as Record<string, unknown>)[s];
    if (!isObject(parent) && !Array.isArray(parent)) throw new Error(`patch path ${op.path} has no parent`);
    const container = parent as Record<string, unknown>;
    if (op.op === 'remove') delete container[last];
    else container[last] = structuredClone(op.value);
  }
  return root;
}
