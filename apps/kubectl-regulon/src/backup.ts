// `backup DATABASE`: a DatabaseBackup of it, and with --wait its outcome.
import { DatabaseBackup, type DatabaseBackupObject, type DatabaseObject } from '@regulon/database-controller';
import type { CommandEnv } from './env.ts';
import { UserError } from './errors.ts';
import { DATABASE_KIND } from './kinds.ts';
import { getObject } from './objects.ts';
import { waitFor } from './wait.ts';

export interface BackupRequest {
  database: string;
  backupName?: string | undefined;
  wait: boolean;
  timeoutMs: number;
}

/** `orders-20261201t140512z`: the Database's name and the UTC second, sortable, as a name must be lower case. */
export function defaultBackupName(database: string, at: Date): string {
  return `${database}-${at
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '')
    .toLowerCase()}`;
}

export async function backup(env: CommandEnv, req: BackupRequest): Promise<void> {
  const db = await getObject<DatabaseObject>(env, DATABASE_KIND, req.database);
  // The backup controller would fail it with the same reason; saying so now leaves no Failed object behind.
  if (!db.spec.backup?.objectStore)
    throw new UserError(
      `Database "${req.database}" has no spec.backup.objectStore: a DatabaseBackup needs one to write into`,
    );
  const name = req.backupName ?? defaultBackupName(req.database, env.date());
  const backups = env.client.resource<DatabaseBackupObject>(DatabaseBackup.type);
  await backups.create(
    DatabaseBackup.object({ metadata: { name, namespace: env.namespace }, spec: { database: req.database } }),
    { signal: env.signal },
  );
  env.out(`databasebackup/${name} created\n`);
  if (!req.wait) {
    env.err(`follow it with: kubectl get databasebackup ${name} -n ${env.namespace} (or add --wait)\n`);
    return;
  }
  const done = await waitFor(env, `DatabaseBackup ${name} to finish`, req.timeoutMs, async () => {
    const b = await backups.get(name, { namespace: env.namespace, signal: env.signal });
    return b.status?.phase === 'Succeeded' || b.status?.phase === 'Failed' ? b : undefined;
  });
  const message = done.status?.conditions?.find((c) => c.type === 'Succeeded')?.message ?? '';
  if (done.status?.phase === 'Failed') throw new UserError(`DatabaseBackup ${name} failed: ${message}`);
  env.out(`databasebackup/${name} succeeded${done.status?.label ? `: ${done.status.label}` : ''}\n`);
}
