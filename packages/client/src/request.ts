// client-go's metadata client sends the same: the plain JSON fallback keeps
// servers that cannot convert (some aggregated APIs) answering at all.
export const METADATA_LIST_ACCEPT =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
export const METADATA_ACCEPT =
  'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

export type QueryValue = string | number | boolean | null | undefined | readonly string[];
export type Query = Record<string, QueryValue>;

export interface RequestOptions {
  method: string;
  /** Absolute API path, e.g. `/api/v1/namespaces/default/configmaps`. */
  path: string;
  query?: Query | undefined;
  /** A Buffer or string is sent as is; anything else as JSON. */
  body?: unknown;
  /** Defaults to `application/json` when there is a body. */
  contentType?: string | undefined;
  /** Defaults to `application/json`. */
  accept?: string | undefined;
  signal?: AbortSignal | undefined;
  /** Overrides the method-based default used to decide on retries after 5xx. */
  idempotent?: boolean | undefined;
  /** Overrides the client's requestTimeoutMs for this request; 0 disables it. */
  timeoutMs?: number | undefined;
}

export function buildPath(path: string, query: Query | undefined): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) for (const v of value as readonly string[]) params.append(key, v);
    else params.append(key, String(value));
  }
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

export function encodeBody(body: unknown): Buffer | undefined {
  if (body === undefined) return undefined;
  if (Buffer.isBuffer(body)) return body;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  return Buffer.from(JSON.stringify(body), 'utf8');
}
