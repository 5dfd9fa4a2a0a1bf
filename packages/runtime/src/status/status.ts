import { isDeepStrictEqual } from 'node:util';
import type { KubeClient, KubeObject, ResourceType } from '@regulon/client';
import { apiVersionOf } from '@regulon/client';

/**
 * Writes `status` with server-side apply on the status subresource, only if
 * it differs from what the object already reports: a reconcile that changes
 * nothing makes no write, so it wakes no watcher and can't feed a hot loop.
 * Returns whether it wrote.
 */
export async function applyStatusIfChanged<S>(
  client: KubeClient,
  type: ResourceType,
  obj: KubeObject & { status?: S },
  status: S,
  opts: { fieldManager: string; signal?: AbortSignal; written?: WrittenStatus<S> },
): Promise<boolean> {
  const current = opts.written ? opts.written.current(obj) : obj;
  if (isDeepStrictEqual(normalize(current.status), normalize(status))) return false;
  const updated = await client.resource(type).apply(
    {
      apiVersion: apiVersionOf(type),
      kind: type.kind,
      metadata: {
        name: obj.metadata?.name,
        ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}),
      },
      status,
    } as KubeObject,
    {
      fieldManager: opts.fieldManager,
      force: true,
      subresource: 'status',
      ...(opts.signal ? { signal: opts.signal } : {}),
    },
  );
  opts.written?.remember(updated, status);
  return true;
}

/**
 * How long a write is trusted over the cache. A watch event normally lands in
 * milliseconds; past this the cache is believed again, whatever it says, so a
 * status someone else wrote is never hidden for long.
 */
export const WRITTEN_STATUS_TTL_MS = 30_000;

/**
 * The status a controller last wrote for each object, until its cache shows it.
 * A cache learns of the controller's own write one watch event later; a
 * reconcile in between would compute from the older status, find it differs,
 * and write again what was just written (often with a new transition time).
 * controller-runtime has no such memory; reading through it makes each status
 * change cost one write. Keyed by uid; an entry ends when the cache shows the
 * written resourceVersion or the same status, or after WRITTEN_STATUS_TTL_MS.
 */
export class WrittenStatus<S> {
  readonly #entries = new Map<string, { resourceVersion: string; status: S; at: number }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** `cached`, or a copy with the status this controller wrote since, if the cache doesn't show it yet. */
  current<T extends KubeObject & { status?: S }>(cached: T): T {
    const uid = cached.metadata?.uid;
    const entry = uid ? this.#entries.get(uid) : undefined;
    if (!uid || !entry) return cached;
    if (
      cached.metadata?.resourceVersion === entry.resourceVersion ||
      this.#now() - entry.at > WRITTEN_STATUS_TTL_MS ||
      isDeepStrictEqual(normalize(cached.status), normalize(entry.status))
    ) {
      this.#entries.delete(uid);
      return cached;
    }
    return { ...cached, status: entry.status };
  }

  /** Records a successful write; `updated` is the server's response. */
  remember(updated: KubeObject, status: S): void {
    const uid = updated.metadata?.uid;
    const rv = updated.metadata?.resourceVersion;
    if (!uid || !rv) return;
    const now = this.#now();
    // Entries of objects that were deleted (or never reconciled again) expire here.
    if (this.#entries.size >= 1024)
      for (const [k, e] of this.#entries) if (now - e.at > WRITTEN_STATUS_TTL_MS) this.#entries.delete(k);
    this.#entries.set(uid, { resourceVersion: rv, status, at: now });
  }

  get size(): number {
    return this.#entries.size;
  }
}

/** Drops undefined members, which JSON (and so the API server) never keeps. */
function normalize(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}
