import type { DatabaseObject } from '../api.ts';
import { engineOf } from '../engines/index.ts';
import { storeRepository, type Repository } from './pgbackrest.ts';

/**
 * The Database's own repository (spec.backup.objectStore); undefined when it
 * backs up nowhere: it names no store, or its engine has no backup tool to
 * put anything there (mysql; the CRD refuses the field for it, and a Database
 * stored before that rule is ignored here rather than half backed up).
 */
export function ownRepository(db: DatabaseObject): Repository | undefined {
  return engineOf(db).backupTool ? storeRepository(db) : undefined;
}
