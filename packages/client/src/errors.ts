import type { V1Status, V1StatusCause } from '@kubernetes/client-node';

/** The Kubernetes `Status` object as the API server sends it (meta/v1). */
export type Status = V1Status;
export type StatusCause = V1StatusCause;

/**
 * An error answered by the API server (or, for `TimeoutError`, by the client's
 * own deadline). `message` is the server's Status.message verbatim so callers
 * can show it; nothing from the request (bodies, headers, tokens) is included.
 */
export class ApiError extends Error {
  /** HTTP status code; 0 when no response arrived (client-side timeout). */
  readonly code: number;
  /** Status.reason, e.g. `NotFound`, `AlreadyExists`, `Conflict`, `Invalid`. */
  readonly reason: string;
  readonly status: Status;
  /** From the Retry-After header or Status.details.retryAfterSeconds. */
  readonly retryAfterSeconds?: number | undefined;

  constructor(code: number, status: Status, retryAfterSeconds?: number) {
    super(status.message || `request failed with HTTP ${code}${status.reason ? ` (${status.reason})` : ''}`);
    this.name = new.target.name;
    this.code = code;
    this.reason = status.reason ?? '';
    this.status = status;
    if (retryAfterSeconds !== undefined) this.retryAfterSeconds = retryAfterSeconds;
  }
}

export class NotFoundError extends ApiError {}
export class AlreadyExistsError extends ApiError {}
export class ConflictError extends ApiError {}
export class ForbiddenError extends ApiError {}
export class UnauthorizedError extends ApiError {}
export class TooManyRequestsError extends ApiError {}
export class GoneError extends ApiError {}
export class ServerError extends ApiError {}
export class TimeoutError extends ApiError {}

export class InvalidError extends ApiError {
  /** Field-level causes from Status.details.causes. */
  readonly causes: StatusCause[];
  constructor(code: number, status: Status, retryAfterSeconds?: number) {
    super(code, status, retryAfterSeconds);
    this.causes = status.details?.causes ?? [];
  }
}

/** Raised before any request is sent, for a problem in kubeconfig or arguments. */
export class ConfigError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ConfigError';
  }
}

/**
 * Maps an HTTP status code plus the server's Status object to a typed error.
 * Only the code and Status.reason are consulted: messages are for humans and
 * change between Kubernetes versions.
 */
export function errorFromStatus(code: number, status: Status, retryAfterSeconds?: number): ApiError {
  const retryAfter = retryAfterSeconds ?? positiveOrUndefined(status.details?.retryAfterSeconds);
  const reason = status.reason ?? '';
  if (reason === 'Expired' || reason === 'Gone' || code === 410)
    return new GoneError(code, status, retryAfter);
  if (reason === 'Timeout' || code === 504) return new TimeoutError(code, status, retryAfter);
  switch (code) {
    case 401:
      return new UnauthorizedError(code, status, retryAfter);
    case 403:
      return new ForbiddenError(code, status, retryAfter);
    case 404:
      return new NotFoundError(code, status, retryAfter);
    case 409:
      return reason === 'AlreadyExists'
        ? new AlreadyExistsError(code, status, retryAfter)
        : new ConflictError(code, status, retryAfter);
    case 422:
      return new InvalidError(code, status, retryAfter);
    case 429:
      return new TooManyRequestsError(code, status, retryAfter);
  }
  if (code >= 500 && code <= 599) return new ServerError(code, status, retryAfter);
  return new ApiError(code, status, retryAfter);
}

/**
 * Builds the Status for a response whose body is not a Status (a proxy's HTML
 * page, an empty body). The body is only used when short plain text, so that
 * an unexpected payload is never copied into an error wholesale.
 */
export function syntheticStatus(code: number, bodyText: string): Status {
  const text = bodyText.trim();
  const message = text && text.length <= 256 && !text.startsWith('<') ? text : `HTTP ${code}`;
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason: reasonForCode(code), message };
}

function reasonForCode(code: number): string {
  const reasons: Record<number, string> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    405: 'MethodNotAllowed',
    406: 'NotAcceptable',
    409: 'Conflict',
    410: 'Gone',
    415: 'UnsupportedMediaType',
    422: 'Invalid',
    429: 'TooManyRequests',
    500: 'InternalError',
    503: 'ServiceUnavailable',
    504: 'Timeout',
  };
  return reasons[code] ?? (code >= 500 ? 'InternalError' : 'Unknown');
}

function positiveOrUndefined(n: number | undefined): number | undefined {
  return n !== undefined && n > 0 ? n : undefined;
}

/** Narrows an unknown value to a Status-shaped object. */
export function isStatus(value: unknown): value is Status {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'Status';
}

export const isNotFound = (e: unknown): e is NotFoundError => e instanceof NotFoundError;

/**
 * The request's result, or undefined when the object does not exist
 * (controller-runtime's client.IgnoreNotFound, for a read or a delete):
 * every other error still rejects.
 */
export async function ignoreNotFound<T>(request: Promise<T>): Promise<T | undefined> {
  try {
    return await request;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
export const isConflict = (e: unknown): e is ConflictError => e instanceof ConflictError;
export const isAlreadyExists = (e: unknown): e is AlreadyExistsError => e instanceof AlreadyExistsError;
export const isGone = (e: unknown): e is GoneError => e instanceof GoneError;
export const isInvalid = (e: unknown): e is InvalidError => e instanceof InvalidError;
export const isForbidden = (e: unknown): e is ForbiddenError => e instanceof ForbiddenError;
export const isUnauthorized = (e: unknown): e is UnauthorizedError => e instanceof UnauthorizedError;
export const isTooManyRequests = (e: unknown): e is TooManyRequestsError => e instanceof TooManyRequestsError;
export const isTimeout = (e: unknown): e is TimeoutError => e instanceof TimeoutError;
export const isServerError = (e: unknown): e is ServerError => e instanceof ServerError;
