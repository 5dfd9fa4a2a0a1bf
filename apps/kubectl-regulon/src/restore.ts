// `restore DATABASE NEW_NAME`: a new Database filled from DATABASE's backups
// through the controller's own spec.bootstrap.recovery (the database-controller's
// api.ts): from one DatabaseBackup (--backup), or from DATABASE's repository in
// its object store, replayed to the end of the archive or to a moment (--time).
// The plugin writes the object; the controller does the restore.
import { AlreadyExistsError, isNotFound } from '@regulon/client';
import {
  Database,
  DatabaseBackup,
  type DatabaseBackupObject,
  type DatabaseObject,
} from '@regulon/database-controller';
import { stringify } from 'yaml';
import type { Command } from './args.ts';
import type { CommandEnv } from './env.ts';
import { UserError } from './errors.ts';
import { DATABASE_KIND } from './kinds.ts';
import { getObject } from './objects.ts';
import { waitFor } from './wait.ts';

/** The parsed command line (args.ts), less its name. */
export type RestoreRequest = Omit<Extract<Command, { name: 'restore' }>, 'name'>;

type Spec = DatabaseObject['spec'];
type Recovery = NonNullable<NonNullable<Spec['bootstrap']>['recovery']>;

/**
 * The Database `restore` creates: the source's engine, version, replicas,
 * storage, replication, parameters and resources (a postgres standby replaying
 * WAL refuses to start with max_connections and the like below the source's,
 * so the settings go along), and its backups, into the same object store under
 * the new Database's own repository path: `path` is left out so that it
 * defaults to <namespace>/<NEW_NAME>, since two Databases must never share a
 * repository. Generated credentials of its own (spec.credentials is not
 * copied: the restore sets the managed roles' passwords to the new ones).
 * Pure; throws UserError where the controller's CRD would refuse, saying why.
 */
export function restoreManifest(
  source: DatabaseObject,
  req: Pick<RestoreRequest, 'database' | 'newName' | 'backup' | 'targetTime'>,
  backup?: DatabaseBackupObject,
): DatabaseObject {
  const engine = source.spec.engine;
  const namespace = source.metadata.namespace!;
  if (engine === 'mysql')
    throw new UserError(
      `Database "${req.database}" is mysql, which has no backups to restore from yet (bootstrap.recovery is postgres and mariadb only)`,
    );
  if (req.targetTime !== undefined && engine !== 'postgres')
    throw new UserError(
      `--time is postgres only: a ${engine} Database is restored to the end of a backup; use --backup or neither`,
    );
  const store = source.spec.backup?.objectStore;
  let recovery: Recovery;
  if (req.backup !== undefined) {
    if (backup && backup.spec.database !== req.database)
      throw new UserError(
        `DatabaseBackup "${req.backup}" is a backup of Database "${backup.spec.database}", not of "${req.database}"`,
      );
    if (backup?.status?.phase === 'Failed')
      throw new UserError(`DatabaseBackup "${req.backup}" failed: there is nothing to restore from it`);
    recovery = { backup: req.backup };
  } else {
    if (!store)
      throw new UserError(
        `Database "${req.database}" has no spec.backup.objectStore to recover from: name a DatabaseBackup with --backup`,
      );
    // recovery.source is the source's repository, path included (the CRD requires it).
    recovery = {
      source: { ...store, path: store.path ?? `${namespace}/${req.database}` },
      ...(req.targetTime !== undefined ? { targetTime: req.targetTime } : {}),
    };
  }
  const { path: _ownPath, ...newStore } = store ?? {};
  const spec: Spec = {
    engine,
    version: source.spec.version,
    replicas: source.spec.replicas,
    storage: source.spec.storage,
    ...(source.spec.replication ? { replication: source.spec.replication } : {}),
    ...(source.spec.parameters ? { parameters: source.spec.parameters } : {}),
    ...(source.spec.resources ? { resources: source.spec.resources } : {}),
    ...(source.spec.backup
      ? { backup: { ...source.spec.backup, ...(store ? { objectStore: newStore as typeof store } : {}) } }
      : {}),
    bootstrap: { recovery },
  };
  return Database.object({
    metadata: {
      name: req.newName,
      namespace,
      // Where it came from, for whoever reads it later (the controller reads only the spec).
      annotations: { 'regulon.dev/restored-from': `${namespace}/${req.database}` },
    },
    spec,
  });
}

/** One line on where the data comes from. */
export function describeRecovery(req: Pick<RestoreRequest, 'database' | 'backup' | 'targetTime'>): string {
  if (req.backup !== undefined) return `from databasebackup/${req.backup}`;
  return `from the object store of database/${req.database}, ${req.targetTime ? `to ${req.targetTime}` : 'to the end of its archived WAL'}`;
}

export async function restore(env: CommandEnv, req: RestoreRequest): Promise<void> {
  const source = await getObject<DatabaseObject>(env, DATABASE_KIND, req.database);
  if (req.targetTime !== undefined && Date.parse(req.targetTime) > env.date().getTime())
    throw new UserError(`--time ${req.targetTime} is in the future: the archive cannot reach it yet`);
  const backup = req.backup === undefined ? undefined : await readBackup(env, req.backup);
  const manifest = restoreManifest(source, req, backup);
  if (req.dryRun) {
    env.out(req.output === 'json' ? `${JSON.stringify(manifest, null, 2)}\n` : stringify(manifest));
    return;
  }
  const dbs = env.client.resource<DatabaseObject>(Database.type);
  let created: DatabaseObject;
  try {
    created = await dbs.create(manifest, { signal: env.signal });
  } catch (err) {
    if (err instanceof AlreadyExistsError)
      throw new UserError(`Database "${req.newName}" already exists in namespace "${env.namespace}"`);
    throw err;
  }
  if (req.output === 'json') env.out(`${JSON.stringify(created, null, 2)}\n`);
  else if (req.output === 'yaml') env.out(stringify(created));
  else env.out(`database/${req.newName} created, restoring ${describeRecovery(req)}\n`);
  if (backup && backup.status?.phase !== 'Succeeded')
    env.err(`databasebackup/${req.backup} has not succeeded yet: the restore starts once it has\n`);
  if (!req.wait) {
    env.err(
      `follow it with: kubectl regulon status database ${req.newName} -n ${env.namespace} (or add --wait)\n`,
    );
    return;
  }
  // What the Database last said was wrong (a restore that fails says so in Degraded), for a timeout's message.
  let problem: string | undefined;
  const ready = await waitFor(env, `Database ${req.newName} to be Ready`, req.timeoutMs, async () => {
    const db = await getObject<DatabaseObject>(env, DATABASE_KIND, req.newName);
    const conditions = db.status?.conditions ?? [];
    const current = (c: { observedGeneration?: number | undefined }) =>
      c.observedGeneration === undefined || c.observedGeneration >= (db.metadata.generation ?? 0);
    const stalled = conditions.find((c) => c.type === 'Stalled' && c.status === 'True' && current(c));
    if (stalled) return { ok: false, message: `Database ${req.newName} is stalled: ${stalled.message}` };
    problem = conditions.find((c) => c.type === 'Degraded' && c.status === 'True')?.message;
    const ok = conditions.some((c) => c.type === 'Ready' && c.status === 'True' && current(c));
    return ok ? { ok: true, message: `database/${req.newName} is Ready` } : undefined;
  }).catch((err: unknown) => {
    throw err instanceof UserError && problem ? new UserError(`${err.message} (Degraded: ${problem})`) : err;
  });
  if (!ready.ok) throw new UserError(ready.message);
  env.out(`${ready.message}\n`);
}

async function readBackup(env: CommandEnv, name: string): Promise<DatabaseBackupObject> {
  try {
    return await env.client
      .resource<DatabaseBackupObject>(DatabaseBackup.type)
      .get(name, { namespace: env.namespace, signal: env.signal });
  } catch (err) {
    if (isNotFound(err))
      throw new UserError(`DatabaseBackup "${name}" not found in namespace "${env.namespace}"`);
    throw err;
  }
}
