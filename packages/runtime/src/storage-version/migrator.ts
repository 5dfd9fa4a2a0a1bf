import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient } from '@regulon/client';
import type { Logger } from '@regulon/util';
import type { Runnable } from '../reconcile/controller.ts';
import { migrateStorageVersion } from './migrate.ts';

export interface StorageVersionMigratorOptions {
  client: KubeClient;
  /** The CRDs to migrate: those whose conversions the manager serves. */
  crdNames: readonly string[];
  logger: Logger;
  /** First wait after a failed attempt, doubled each time up to `maxRetryDelayMs`. */
  retryDelayMs?: number | undefined;
  maxRetryDelayMs?: number | undefined;
}

/**
 * Migrates the objects of the manager's converted CRDs to their storage
 * version once it leads, so that an upgrade which stores a new version leaves
 * no object in the old one and the old version can later be dropped: what a
 * cluster's storage-version-migrator would do, done by the operator that owns
 * the CRDs. Leader-only, so there is one writer. A CRD already stored in its
 * storage version alone costs one read. A failed attempt (the conversion
 * webhook not reachable yet, a CRD changed meanwhile) is retried with backoff
 * until it succeeds or the manager stops; then the runnable is done.
 */
export class StorageVersionMigrator implements Runnable {
  readonly name = 'storage-version-migrator';
  readonly needLeaderElection = true;
  readonly #o: StorageVersionMigratorOptions;

  constructor(options: StorageVersionMigratorOptions) {
    this.#o = options;
  }

  async start(signal: AbortSignal): Promise<void> {
    const log = this.#o.logger;
    for (const crd of this.#o.crdNames) {
      let delay = this.#o.retryDelayMs ?? 1000;
      for (let attempt = 1; !signal.aborted; attempt++) {
        try {
          const r = await migrateStorageVersion(this.#o.client, crd, { signal });
          if (r.storedVersionsBefore.join() !== r.storedVersions.join())
            log.info(
              {
                crd,
                storageVersion: r.storageVersion,
                rewritten: r.rewritten,
                gone: r.gone,
                storedVersionsBefore: r.storedVersionsBefore,
                durationMs: Math.round(r.durationMs),
              },
              'stored objects migrated to the storage version',
            );
          break;
        } catch (err) {
          if (signal.aborted) return;
          log.warn({ err, crd, attempt }, 'storage version migration failed; retrying');
          await sleep(delay, undefined, { signal }).catch(() => undefined);
          delay = Math.min(delay * 2, this.#o.maxRetryDelayMs ?? 60_000);
        }
      }
    }
  }
}
