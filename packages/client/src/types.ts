import type { V1ObjectMeta } from '@kubernetes/client-node';
import type { Status } from './errors.ts';

export type ObjectMeta = V1ObjectMeta;

/** Any Kubernetes object; built-in types such as V1ConfigMap satisfy it. */
export interface KubeObject {
  apiVersion?: string | undefined;
  kind?: string | undefined;
  metadata?: V1ObjectMeta | undefined;
}

/** What a metadata-only list or watch returns (meta.k8s.io/v1). */
export interface PartialObjectMetadata extends KubeObject {
  metadata: V1ObjectMeta;
}

export interface ListResult<T> {
  items: T[];
  /** The collection's resourceVersion: where a following watch should start. */
  resourceVersion: string;
  /** Token for the next page; absent on the last page. */
  continue?: string | undefined;
  /**
   * Present when the server applied a `shardSelector` (KEP-5866): the selector it
   * applied, echoed. Absent when none was asked for or the server ignored it.
   */
  shardInfo?: { selector: string } | undefined;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

export type WatchEvent<T> = { type: WatchEventType; object: T } | { type: 'ERROR'; status: Status };
