import { hash } from 'node:crypto';
import { canonicalQuantity } from './quantity.ts';

/**
 * Deciding, from the cache alone, that a server-side apply would change
 * nothing — so a converged child costs no request at all. client-go and
 * controller-runtime have no such helper (an apply is always sent), and
 * sending it is what makes a restarted operator rewrite every child it owns.
 *
 * Two checks, both needed:
 *  - every field the apply sets already has that value on the live object
 *    (drift by someone else is caught, server defaults and other managers'
 *    fields are ignored);
 *  - the live object carries the hash of the last applied configuration
 *    (a field the controller stopped setting is caught: the live object
 *    still has it, so the first check alone would pass).
 */
export const APPLIED_HASH_ANNOTATION = 'regulon.dev/applied-hash';

/**
 * JSON with object keys sorted (by UTF-16 code unit, as Array.sort does),
 * no whitespace: the same value always gives the same text, whatever order
 * its keys were built in. Undefined members are dropped as JSON.stringify does.
 * Every reconcile hashes every child it applies, so this is written as one
 * pass of string appends: no entry arrays, no comparator calls.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      out += (i === 0 ? '' : ',') + (v === undefined ? 'null' : canonicalJson(v));
    }
    return `${out}]`;
  }
  const object = value as Record<string, unknown>;
  let out = '{';
  for (const key of Object.keys(object).sort()) {
    const v = object[key];
    if (v === undefined) continue;
    out += `${out.length === 1 ? '' : ','}${JSON.stringify(key)}:${canonicalJson(v)}`;
  }
  return `${out}}`;
}

/** The first 16 hex digits of the SHA-256 of the canonical JSON. */
export function appliedHash(body: unknown): string {
  // crypto.hash: the one-shot form, without a Hash object per call.
  return hash('sha256', canonicalJson(body), 'hex').slice(0, 16);
}

/**
 * Whether `live` has every value `desired` sets, compared in the API server's
 * normal form: objects key by key, arrays element by element with the same
 * length, scalars by strict equality, except for what the server rewrites
 * when it stores an object:
 *  - a value Go's `omitempty` drops (an empty list or map, `""`, `0`,
 *    `false`, or an object holding only such values) matches an absent one:
 *    a Pod template's `env: []` is not there when read back. An absent live
 *    value can also mean someone removed an empty pointer struct (or a zero
 *    a pointer field held) that the apply would restore; that drift is let
 *    be, where the alternative is an apply on every reconcile, forever;
 *  - a quantity matches its canonical form (see sameQuantity).
 * Extra fields on `live` (defaults, status, other managers) don't matter.
 */
export function isSubset(desired: unknown, live: unknown): boolean {
  if (desired === undefined) return true;
  if (live === undefined && isOmittedWhenEmpty(desired)) return true;
  if (desired === null || typeof desired !== 'object') return desired === live || sameQuantity(desired, live);
  if (Array.isArray(desired)) {
    return (
      Array.isArray(live) && live.length === desired.length && desired.every((d, i) => isSubset(d, live[i]))
    );
  }
  if (live === null || typeof live !== 'object' || Array.isArray(live)) return false;
  const l = live as Record<string, unknown>;
  for (const key in desired) {
    if (!isSubset((desired as Record<string, unknown>)[key], l[key])) return false;
  }
  return true;
}

/** What Go's encoding/json leaves out of a field tagged `omitempty`, counting an object of such values as one. */
function isOmittedWhenEmpty(value: unknown): boolean {
  if (value === '' || value === 0 || value === false || value === undefined) return true;
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.length === 0;
  for (const key in value) if (!isOmittedWhenEmpty((value as Record<string, unknown>)[key])) return false;
  return true;
}

/**
 * Whether `live` is how the API server stores the quantity `desired` (`1Gi`
 * for `1024Mi`, `1` for `1000m`, `1073741824` for the number 1073741824; see
 * canonicalQuantity), with or without the milli rounding it gives
 * ResourceList values (requests, limits, storage).
 *
 * Decided by the values, not by a list of paths: quantities sit at many
 * paths in many kinds, and a list would silently miss one. That is safe for
 * fields that are not quantities: a plain string field keeps exactly what was
 * applied, so for it `live` differs from `desired` only after someone else
 * changed it, and that someone would have to have written the very same
 * amount in the API server's spelling of it. Only that spelling matches, not
 * any equal amount: the server never stores `1024Mi`, so a live `1024Mi`
 * against a desired `1Gi` is such an edit, and is reverted.
 */
function sameQuantity(desired: unknown, live: unknown): boolean {
  if (typeof live !== 'string' || (typeof desired !== 'string' && typeof desired !== 'number')) return false;
  return canonicalQuantity(desired) === live || canonicalQuantity(desired, { milli: true }) === live;
}

interface Annotated {
  metadata?: { annotations?: Record<string, string> | undefined } | undefined;
}

/** `body` with its applied-hash annotation set (the hash covers everything but that annotation). */
export function withAppliedHash<T extends Annotated>(body: T): T {
  const hash = appliedHash(body);
  return {
    ...body,
    metadata: {
      ...body.metadata,
      annotations: { ...body.metadata?.annotations, [APPLIED_HASH_ANNOTATION]: hash },
    },
  };
}

/**
 * Whether applying `body` (from withAppliedHash) to `live` would change
 * nothing. apiVersion and kind are not compared: the cache the live object
 * came from already fixes the type, and list items may omit them.
 */
export function isConverged(
  body: Annotated & { apiVersion?: string; kind?: string },
  live: unknown,
): boolean {
  const want = body.metadata?.annotations?.[APPLIED_HASH_ANNOTATION];
  const have = (live as Annotated | undefined)?.metadata?.annotations?.[APPLIED_HASH_ANNOTATION];
  if (want === undefined || want !== have) return false;
  const { apiVersion: _v, kind: _k, ...fields } = body;
  return isSubset(fields, live);
}
