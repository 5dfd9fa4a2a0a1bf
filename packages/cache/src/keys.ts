import type { KubeObject } from '@regulon/client';

/** The cache key of an object: `namespace/name`, or `name` for cluster-scoped objects (client-go's MetaNamespaceKeyFunc). */
export function objectKey(obj: KubeObject): string {
  const meta = obj.metadata;
  if (!meta?.name) throw new Error('object has no metadata.name');
  return meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name;
}

export function splitKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
