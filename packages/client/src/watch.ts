import type { KubeObject, WatchEvent } from './types.ts';

export interface WatchOptions {
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  /** KEP-5866's shard selector (see ListOptions.shardSelector); servers without the feature gate ignore it. */
  shardSelector?: string | undefined;
  /** Start after this version; omit for "now" (which first replays state as ADDED). */
  resourceVersion?: string | undefined;
  allowWatchBookmarks?: boolean | undefined;
  sendInitialEvents?: boolean | undefined;
  resourceVersionMatch?: 'Exact' | 'NotOlderThan' | undefined;
  /** Server-side duration of the watch; the server then ends the stream. */
  timeoutSeconds?: number | undefined;
  /** Objects are meta.k8s.io/v1 PartialObjectMetadata instead of full objects. */
  metadataOnly?: boolean | undefined;
  /** Aborting ends the iteration without an error and destroys the socket. */
  signal?: AbortSignal | undefined;
  /**
   * Called once the server has accepted the watch (status 200), before any
   * event: in a quiet scope that is the only sign that the watch works.
   */
  onOpen?: () => void;
}

/**
 * Splits a byte stream into lines. Chunks may end anywhere, including inside
 * a multi-byte UTF-8 character, so decoding is streaming too. Blank lines are
 * skipped; a final line without a newline is still yielded.
 */
export async function* splitLines(source: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8');
  let pending = '';
  for await (const chunk of source) {
    pending += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let newline = pending.indexOf('\n');
    while (newline !== -1) {
      const line = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (line) yield line;
      newline = pending.indexOf('\n');
    }
  }
  pending += decoder.decode();
  const rest = pending.trim();
  if (rest) yield rest;
}

const EVENT_TYPES = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK']);

/** Thrown for a line that is not a watch event. Carries no payload: it may hold Secret data. */
export class WatchDecodeError extends Error {
  constructor(detail: string) {
    super(`malformed watch event: ${detail}`);
    this.name = 'WatchDecodeError';
  }
}

export function parseWatchLine<T>(line: string): WatchEvent<T> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    throw new WatchDecodeError('not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null) throw new WatchDecodeError('not an object');
  const { type, object } = parsed as { type?: unknown; object?: unknown };
  if (typeof object !== 'object' || object === null) throw new WatchDecodeError('missing object');
  if (type === 'ERROR') return { type: 'ERROR', status: object };
  if (typeof type !== 'string' || !EVENT_TYPES.has(type)) throw new WatchDecodeError('unknown event type');
  return { type: type as 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK', object: object as T };
}

/** Parses a stream of watch lines into events, filling a missing apiVersion/kind. */
export async function* decodeWatch<T extends KubeObject>(
  source: AsyncIterable<Uint8Array | string>,
  typeMeta?: { apiVersion: string; kind: string },
): AsyncGenerator<WatchEvent<T>> {
  for await (const line of splitLines(source)) {
    const event = parseWatchLine<T>(line);
    if (typeMeta && event.type !== 'ERROR') fillTypeMeta(event.object, typeMeta);
    yield event;
  }
}

export function fillTypeMeta(obj: KubeObject, typeMeta: { apiVersion: string; kind: string }): void {
  if (!obj.apiVersion) obj.apiVersion = typeMeta.apiVersion;
  if (!obj.kind) obj.kind = typeMeta.kind;
}
