import type { CacheObject } from './api.ts';
import { authEnabled, DEFAULT_FAILOVER_DELAY_S, persistent, replicated } from './names.ts';
import { REPLICATED_DATA_DIR } from './replication/start-script.ts';
import { quantityValue } from '@regulon/runtime';
import { DEFAULT_EVICTION_POLICY, ENGINE_DEFAULTS } from './versions.ts';

/** Where the start script writes the auth include (a memory-backed emptyDir, never a ConfigMap). */
export const RUN_DIR = { redis: '/run/redis', memcached: '/run/memcached' } as const;
export const CONFIG_DIR = { redis: '/etc/redis', memcached: '/etc/memcached' } as const;
export const CONFIG_FILE = { redis: 'redis.conf', memcached: 'memcached.args' } as const;
export const DATA_DIR = '/data';

/** The engine's memory budget in bytes: the container limit × maxMemoryPercent / 100, rounded down. */
export function maxMemoryBytes(cache: CacheObject): number {
  return Math.floor((quantityValue(cache.spec.memory) * cache.spec.maxMemoryPercent) / 100);
}

/** memcached's -m is in megabytes (2^20 bytes); at least 1. */
export function memcachedMegabytes(cache: CacheObject): number {
  return Math.max(1, Math.floor(maxMemoryBytes(cache) / 2 ** 20));
}

/**
 * The engine configuration, with no secret in it: when auth is on, redis.conf
 * only includes a file the container writes from its Secret-backed env at
 * start, and memcached's arguments only name such a file.
 */
export function renderConfig(cache: CacheObject): { file: string; content: string } {
  const engine = cache.spec.engine;
  const port = ENGINE_DEFAULTS[engine].port;
  if (engine === 'memcached') {
    const args = [
      `--port=${port}`,
      '--listen=0.0.0.0',
      `--memory-limit=${memcachedMegabytes(cache)}`,
      '--conn-limit=1024',
      '--threads=4',
      ...(authEnabled(cache) ? [`--auth-file=${RUN_DIR.memcached}/auth`] : []),
    ];
    return { file: CONFIG_FILE.memcached, content: `${args.join('\n')}\n` };
  }
  const lines = [
    `# Written by regulon for Cache ${cache.metadata.name}; edits are reverted.`,
    'bind * -::*',
    // Reached only through its Services; protected mode would refuse every client without a password.
    'protected-mode no',
    `port ${port}`,
    `dir ${replicated(cache) ? REPLICATED_DATA_DIR : DATA_DIR}`,
    `maxmemory ${maxMemoryBytes(cache)}`,
    `maxmemory-policy ${cache.spec.evictionPolicy ?? DEFAULT_EVICTION_POLICY}`,
    ...(persistent(cache)
      ? ['appendonly yes', 'appendfsync everysec', 'save 3600 1 300 100 60 10000']
      : ['appendonly no', 'save ""']),
    ...(authEnabled(cache) ? [`include ${RUN_DIR.redis}/auth.conf`] : []),
    ...(replicated(cache)
      ? [
          // The start script decides the role: empty for the primary, `replicaof <client Service>` otherwise.
          `include ${RUN_DIR.redis}/role.conf`,
          'replica-read-only yes',
          // A replica whose link is down still answers (stale) reads; the -ro Service drops it meanwhile.
          'replica-serve-stale-data yes',
          // The primary streams its snapshot to a replica without writing it to its own disk.
          'repl-diskless-sync yes',
          // A replica takes a silent primary (hung, or on a lost node) for gone after 5 s, as
          // postgres's wal_receiver_timeout, not redis's default minute: the plan promotes once the
          // replicas are out of touch with the old primary, and would wait that minute. The primary
          // pings every second so that an idle link is never taken for a silent one.
          'repl-ping-replica-period 1',
          'repl-timeout 5',
          // A primary cut off from its replicas stops acknowledging writes that a replica promoted
          // meanwhile would not have: within half the failover delay, before the manager promotes one.
          `min-replicas-to-write ${minReplicasToWrite(cache)}`,
          `min-replicas-max-lag ${replicaMaxLagSeconds(cache)}`,
        ]
      : []),
  ];
  return { file: CONFIG_FILE.redis, content: `${lines.join('\n')}\n` };
}

/** Replicas that must be linked for a replicated redis primary to accept a write (min-replicas-to-write). */
export function minReplicasToWrite(cache: CacheObject): number {
  return cache.spec.replication?.minReplicasToWrite ?? Math.min(1, cache.spec.replicas - 1);
}

/** How recently a replica must have answered to count as linked: half the failover delay, at least 1 s. */
export function replicaMaxLagSeconds(cache: CacheObject): number {
  return Math.max(
    1,
    Math.floor((cache.spec.replication?.failoverDelaySeconds ?? DEFAULT_FAILOVER_DELAY_S) / 2),
  );
}
