import { ImageCatalog } from '@regulon/image-catalog';

/**
 * The versions this operator can run, oldest first per engine: the order is
 * what "no downgrade of persisted data" compares, so keep it sorted. Each is
 * a tag of the official image (`redis:<version>`, `memcached:<version>`).
 */
export const ENGINE_VERSIONS = {
  redis: ['7.2.15', '7.2.16', '7.4.10', '7.4.11', '8.0.5', '8.0.6'],
  memcached: ['1.6.43', '1.6.44', '1.6.45'],
} as const;

export type Engine = keyof typeof ENGINE_VERSIONS;

/** The catalog when the manager is given none: every version above, as its official image. */
export const OFFICIAL_IMAGES = ImageCatalog.official({
  redis: { repository: 'redis', versions: ENGINE_VERSIONS.redis },
  memcached: { repository: 'memcached', versions: ENGINE_VERSIONS.memcached },
});

export const ENGINE_DEFAULTS = {
  // UIDs are the ones the official images create for their server (redis 999, memcache 11211):
  // running as them keeps file ownership on a persistent volume what the image expects.
  redis: { image: 'redis', port: 6379, uid: 999, scheme: 'redis' },
  memcached: { image: 'memcached', port: 11211, uid: 11211, scheme: 'memcached' },
} as const;

/** Redis's maxmemory-policy values (redis 7.2 to 8.0 all know these). */
export const EVICTION_POLICIES = [
  'noeviction',
  'allkeys-lru',
  'allkeys-lfu',
  'allkeys-random',
  'volatile-lru',
  'volatile-lfu',
  'volatile-random',
  'volatile-ttl',
] as const;

export type EvictionPolicy = (typeof EVICTION_POLICIES)[number];

/**
 * What a redis Cache evicts with when spec.evictionPolicy is left out. Redis's
 * own default is noeviction, which turns a full cache into write errors; a
 * Cache is a cache, so it drops the least recently used keys instead.
 */
export const DEFAULT_EVICTION_POLICY: EvictionPolicy = 'allkeys-lru';

/** The user memcached's ASCII auth file names when a referenced Secret has no `username`. */
export const DEFAULT_MEMCACHED_USER = 'memcached';
