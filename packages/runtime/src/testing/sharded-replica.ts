// Starts sharded-replica-process.ts as a child process and collects the JSON lines it prints,
// for the sharded-manager tests.
import type { ChildProcess } from 'node:child_process';
import { spawnJsonLines } from './json-lines-process.ts';

/** One line of sharded-replica-process.ts. */
export interface ReplicaLine {
  event: 'owned' | 'reconcile-start' | 'reconcile' | 'exit';
  identity: string;
  at: number;
  /** owned: the buckets owned from now on. */
  buckets?: number[];
  key?: string;
  /** The object's data.v the reconcile saw. */
  v?: string;
  /** reconcile-start: a slow one, and one that will write. */
  slow?: boolean;
  pending?: boolean;
  start?: number;
  end?: number;
  /** reconcile: when the write was attempted, if it was. */
  attemptAt?: number;
  wrote?: boolean;
  /** reconcile: the write guard refused the write (BucketNotOwnedError). */
  refused?: boolean;
}

export interface Replica {
  identity: string;
  child: ChildProcess;
  lines: ReplicaLine[];
  exited: Promise<number | null>;
  /** The buckets the replica last said it owns. */
  owned(): number[];
}

export interface ReplicaOptions {
  kubeconfigPath: string;
  identity: string;
  /** The namespaces whose obj-* ConfigMaps the replica reconciles. */
  namespaces: readonly string[];
  leaseNamespace: string;
  buckets: number;
  timings: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  reconcileMs: number;
  /**
   * A reconcile of an object whose data.slow is "true" waits until this file exists: a test
   * freezes the process in the middle of one, whatever the machine's load, then lets it go on.
   */
  releaseSlowFile: string;
  /** sharding.shardCaches: cache the owned buckets' objects only. */
  shardCaches?: boolean | undefined;
}

export function spawnReplica(o: ReplicaOptions): Replica {
  const { child, lines, exited } = spawnJsonLines<ReplicaLine>('sharded-replica-process.ts', {
    KUBECONFIG: o.kubeconfigPath,
    IDENTITY: o.identity,
    NAMESPACES: o.namespaces.join(','),
    LEASE_NAMESPACE: o.leaseNamespace,
    BUCKETS: String(o.buckets),
    LEASE_MS: String(o.timings.leaseDurationMs),
    RENEW_MS: String(o.timings.renewDeadlineMs),
    RETRY_MS: String(o.timings.retryPeriodMs),
    RECONCILE_MS: String(o.reconcileMs),
    RELEASE_SLOW_FILE: o.releaseSlowFile,
    SHARD_CACHES: String(o.shardCaches ?? false),
  });
  const owned = () => lines.findLast((l) => l.event === 'owned')?.buckets ?? [];
  return { identity: o.identity, child, lines, exited, owned };
}
