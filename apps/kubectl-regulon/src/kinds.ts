// The kinds the plugin knows, by the names a user types for them (kubectl's
// plural, singular and short names), and where their instance Pods are.
import { Cache, type CacheObject } from '@regulon/cache-controller';
import type { ResourceType } from '@regulon/client';
import { Database, type DatabaseObject } from '@regulon/database-controller';
import { MyApp, type MyAppObject } from '@regulon/myapp-controller';
import { UsageError } from './errors.ts';

export type KindName = 'Database' | 'Cache' | 'MyApp';

export type AnyObject = DatabaseObject | CacheObject | MyAppObject;

export interface KindInfo {
  kind: KindName;
  type: ResourceType;
  /**
   * The label selector of the object's instance Pods: the selector each
   * controller gives its workload (names.ts / children.ts), less the Pods of
   * Jobs (a Database's legacy dump CronJob labels its Pods the same way; the
   * Job controller adds batch.kubernetes.io/job-name to every Pod it makes).
   */
  podSelector(obj: AnyObject): string;
}

const instanceSelector = (name: string, instance: string) =>
  `app.kubernetes.io/name=${name},app.kubernetes.io/instance=${instance},!batch.kubernetes.io/job-name`;

const DATABASE: KindInfo = {
  kind: 'Database',
  type: Database.type,
  podSelector: (o) => instanceSelector((o as DatabaseObject).spec.engine, o.metadata.name!),
};
const CACHE: KindInfo = {
  kind: 'Cache',
  type: Cache.type,
  podSelector: (o) => instanceSelector((o as CacheObject).spec.engine, o.metadata.name!),
};
const MYAPP: KindInfo = {
  kind: 'MyApp',
  type: MyApp.type,
  podSelector: (o) => instanceSelector('myapp', o.metadata.name!),
};

/** What a user may type for each kind: the CRDs' plural, singular, short name and kind. */
const ALIASES: Record<string, KindInfo> = {
  database: DATABASE,
  databases: DATABASE,
  db: DATABASE,
  cache: CACHE,
  caches: CACHE,
  kc: CACHE,
  myapp: MYAPP,
  myapps: MYAPP,
  ma: MYAPP,
};

export const KIND_WORDS = 'database|db, cache|kc, myapp|ma';

export function kindOf(word: string): KindInfo {
  const info = ALIASES[word.toLowerCase()];
  if (!info) throw new UsageError(`unknown kind "${word}": one of ${KIND_WORDS}`);
  return info;
}

export const DATABASE_KIND = DATABASE;
