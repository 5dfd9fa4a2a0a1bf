import { backoffDelay } from '@regulon/util';

export interface RetryPolicy {
  /** Retries after the first attempt; 0 disables retrying. */
  maxRetries: number;
  /** Delay before the first retry, doubled for each later one. */
  baseDelayMs: number;
  /** Upper bound for any single delay, Retry-After included. */
  maxDelayMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { maxRetries: 5, baseDelayMs: 200, maxDelayMs: 30_000 };

/**
 * Delay before retry number `retry` (0-based): exponential with "equal
 * jitter" (half fixed, half random) so that many clients failing together do
 * not come back in lockstep, yet none retries almost immediately. A server's
 * Retry-After replaces the computed delay: it knows its own load best.
 */
export function backoffDelayMs(
  retry: number,
  policy: RetryPolicy,
  retryAfterSeconds?: number,
  random: () => number = Math.random,
): number {
  if (retryAfterSeconds !== undefined && retryAfterSeconds >= 0) {
    return Math.min(retryAfterSeconds * 1000, policy.maxDelayMs);
  }
  return backoffDelay(
    retry,
    { initialMs: policy.baseDelayMs, maxMs: policy.maxDelayMs, jitter: 0.5 },
    random,
  );
}

/** Parses a Retry-After header: delta-seconds or an HTTP-date. */
export function parseRetryAfter(
  value: string | string[] | undefined,
  now: number = Date.now(),
): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (/^\d+$/.test(text)) return Number(text);
  // An HTTP-date always names a weekday and a month; Date.parse alone would
  // read "-1" as a year.
  if (!/[a-z]{3}/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

export const APPLY_PATCH_CONTENT_TYPE = 'application/apply-patch+yaml';

/**
 * Whether repeating a request after an unknown outcome is harmless. Reads
 * and deletes are; a server-side apply converges to the same result; a POST
 * or an ordinary PATCH could be applied twice. Callers that know better
 * (a PUT guarded by resourceVersion) pass `idempotent` explicitly.
 */
export function isIdempotent(method: string, contentType?: string): boolean {
  switch (method.toUpperCase()) {
    case 'GET':
    case 'HEAD':
    case 'OPTIONS':
    case 'DELETE':
      return true;
    case 'PATCH':
      return contentType?.split(';')[0]?.trim() === APPLY_PATCH_CONTENT_TYPE;
    default:
      return false;
  }
}

/** What an attempt ended with, as far as retrying cares. */
export type AttemptOutcome =
  { kind: 'response'; code: number } | { kind: 'network'; errorCode: string | undefined };

/** Connection failures that prove the request never reached the server. */
const NOT_SENT = new Set(['ECONNREFUSED', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/** Connection failures after which the server may or may not have acted. */
const MAYBE_SENT = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED', 'UND_ERR_SOCKET']);

/**
 * 429 is always retried: the server (priority and fairness) refused the
 * request before processing it. So is a connection that was never made.
 * 5xx and dropped connections only for idempotent requests.
 */
export function isRetryable(outcome: AttemptOutcome, idempotent: boolean): boolean {
  if (outcome.kind === 'response') {
    if (outcome.code === 429) return true;
    return idempotent && outcome.code >= 500 && outcome.code <= 599 && outcome.code !== 501;
  }
  const code = outcome.errorCode;
  if (code === undefined) return false;
  if (NOT_SENT.has(code)) return true;
  return idempotent && MAYBE_SENT.has(code);
}
