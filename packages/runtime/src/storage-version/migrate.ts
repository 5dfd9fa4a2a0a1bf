import {
  isConflict,
  isNotFound,
  Kinds,
  type KubeClient,
  type KubeObject,
  type ResourceType,
} from '@regulon/client';

/**
 * Moving a custom resource's stored objects to its CRD's storage version, as
 * Kubernetes' storage-version-migrator does for built-in types: the API
 * server writes each object in the storage version only when it is written
 * again, so objects nobody touches stay in the old encoding, and the old
 * version can never be dropped from the CRD. This rewrites every object (an
 * update that changes nothing: the API server re-encodes it), then trims
 * `status.storedVersions` to the storage version, which is what lets the old
 * version be removed later.
 */

export interface StorageMigrationOptions {
  signal?: AbortSignal | undefined;
  /** Objects per list page: memory stays bounded whatever the count. Default 500. */
  pageSize?: number | undefined;
  /** Rewrites in flight at once (the client's rate limit still applies). Default 8. */
  concurrency?: number | undefined;
  /** After each page: how far it has got. */
  onProgress?: ((progress: { rewritten: number; gone: number }) => void) | undefined;
}

export interface StorageMigrationResult {
  crd: string;
  storageVersion: string;
  /** Objects written again, by this migration or (a conflict) by someone else meanwhile. */
  rewritten: number;
  /** Objects deleted between the list and their rewrite. */
  gone: number;
  /** `status.storedVersions` before, and after the migration. */
  storedVersionsBefore: string[];
  storedVersions: string[];
  durationMs: number;
}

const DEFAULT_PAGE_SIZE = 500;
const DEFAULT_CONCURRENCY = 8;

/**
 * Rewrites every object of the custom resource `crdName` in its storage
 * version and records that only that version is stored. Nothing to do when
 * `status.storedVersions` lists the storage version alone. Needs list and
 * patch on the resource, get on the CRD and patch on its status.
 */
export async function migrateStorageVersion(
  client: KubeClient,
  crdName: string,
  options: StorageMigrationOptions = {},
): Promise<StorageMigrationResult> {
  const started = performance.now();
  const crds = client.resource(Kinds.CustomResourceDefinition);
  const signal = options.signal;
  const crd = await crds.get(crdName, { signal });
  const storageVersion = storageVersionOf(crd);
  const storedVersionsBefore = crd.status?.storedVersions ?? [];
  const result: StorageMigrationResult = {
    crd: crdName,
    storageVersion,
    rewritten: 0,
    gone: 0,
    storedVersionsBefore,
    storedVersions: storedVersionsBefore,
    durationMs: 0,
  };
  if (storedVersionsBefore.length === 1 && storedVersionsBefore[0] === storageVersion) {
    result.durationMs = performance.now() - started;
    return result;
  }

  const type: ResourceType = {
    group: crd.spec.group,
    version: storageVersion,
    kind: crd.spec.names.kind,
    plural: crd.spec.names.plural,
    namespaced: crd.spec.scope === 'Namespaced',
  };
  const objects = client.resource<KubeObject>(type);
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  let next: string | undefined;
  do {
    // Page by page, so that a kind of a hundred thousand objects is never held at once.
    const page = await objects.list({ limit: options.pageSize ?? DEFAULT_PAGE_SIZE, continue: next, signal });
    for (let i = 0; i < page.items.length; i += concurrency)
      await Promise.all(
        page.items.slice(i, i + concurrency).map(async (obj) => {
          try {
            // A merge patch that changes nothing but is still a write: the API server re-encodes
            // the object in the storage version, so the bytes differ and reach etcd. A patch,
            // not an update, because a controller that never writes its kind's spec holds
            // `patch` on it already (it removes annotations, finalizers), rarely `update`.
            // Guarded by its resourceVersion: a conflict means someone wrote it since, which
            // stored it in the storage version as well.
            await objects.patch(
              obj.metadata!.name!,
              { metadata: { resourceVersion: obj.metadata!.resourceVersion } },
              {
                type: 'merge',
                signal,
                ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}),
              },
            );
            result.rewritten++;
          } catch (err) {
            if (isConflict(err)) result.rewritten++;
            else if (isNotFound(err)) result.gone++;
            else throw err;
          }
        }),
      );
    options.onProgress?.({ rewritten: result.rewritten, gone: result.gone });
    next = page.continue;
  } while (next);

  // Only if the storage version is still the one every object was written in: a CRD changed
  // meanwhile would have its new storage version recorded as the only one, wrongly.
  const now = await crds.get(crdName, { signal });
  if (storageVersionOf(now) !== storageVersion)
    throw new Error(
      `${crdName}: the storage version changed from ${storageVersion} to ${storageVersionOf(now)} during the migration; run it again`,
    );
  try {
    const trimmed = await crds.patchStatus(
      crdName,
      {
        metadata: { resourceVersion: now.metadata?.resourceVersion },
        status: { storedVersions: [storageVersion] },
      },
      { signal },
    );
    result.storedVersions = trimmed.status?.storedVersions ?? [];
  } catch (err) {
    if (isConflict(err))
      throw new Error(
        `${crdName} changed while its stored versions were being trimmed; run the migration again`,
      );
    throw err;
  }
  result.durationMs = performance.now() - started;
  return result;
}

function storageVersionOf(crd: {
  metadata?: { name?: string };
  spec: { versions: Array<{ name: string; storage: boolean }> };
}): string {
  const v = crd.spec.versions.find((x) => x.storage);
  if (!v) throw new Error(`${crd.metadata?.name}: no version is the storage version`);
  return v.name;
}
