import { Gauge } from 'prom-client';
import { oncePerRegistry, type MetricsRegistry } from '@regulon/util';
import type { ShardMode } from './reflector.ts';

export type { MetricsRegistry } from '@regulon/util';

/** The gauge of where each sharded informer's shard is cut: 1 on its mode's series, 0 on the other. */
export const SHARD_MODE_METRIC = 'regulon_cache_shard_mode';

const MODES: readonly ShardMode[] = ['server', 'client'];

/** A running sharded informer, asked for its mode when the registry is scraped. */
export interface ShardModeSource {
  readonly name: string;
  shardMode(): ShardMode | undefined;
}

// Every informer of a process reports under one metric name, so they share one gauge per
// registry. It is filled when scraped from the informers running then: a stopped informer
// (its shard handed to another replica) leaves no stale series behind.
const shardModeGauge = oncePerRegistry((registry) => {
  const live = new Set<ShardModeSource>();
  new Gauge({
    name: SHARD_MODE_METRIC,
    help: 'Where a sharded informer cuts its shard: 1 for mode="server" when the API server applies the shardSelector (ShardedListAndWatch), 1 for mode="client" when it ignores it and the informer filters',
    labelNames: ['informer', 'mode'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const source of live) {
        const mode = source.shardMode();
        if (mode) for (const m of MODES) this.set({ informer: source.name, mode: m }, m === mode ? 1 : 0);
      }
    },
  });
  return live;
});

/** Reports `source` on `registry` until the returned function is called. */
export function reportShardMode(registry: MetricsRegistry, source: ShardModeSource): () => void {
  const live = shardModeGauge(registry);
  live.add(source);
  return () => live.delete(source);
}
