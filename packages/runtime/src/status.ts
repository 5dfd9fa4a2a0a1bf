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
  opts: { fieldManager: string; signal?: AbortSignal },
): Promise<boolean> {
  if (isDeepStrictEqual(normalize(obj.status), normalize(status))) return false;
  await client.resource(type).apply(
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
  return true;
}

/** Drops undefined members, which JSON (and so the API server) never keeps. */
function normalize(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}
