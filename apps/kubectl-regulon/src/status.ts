// `status KIND NAME`: reads the object, its recent Events and (a Database) its
// DatabaseBackups, and prints them as one screen or one document.
import { isNotFound, Kinds, retyped, type KubeObject } from '@regulon/client';
import { DatabaseBackup, type DatabaseBackupObject } from '@regulon/database-controller';
import { stringify } from 'yaml';
import type { OutputFormat } from './args.ts';
import type { CommandEnv } from './env.ts';
import { getObject } from './objects.ts';
import type { AnyObject, KindInfo } from './kinds.ts';
import { renderStatus } from './render.ts';
import { statusReport, type EventObject } from './report.ts';

export async function status(
  env: CommandEnv,
  kind: KindInfo,
  name: string,
  output: OutputFormat,
): Promise<void> {
  const object = await getObject<AnyObject>(env, kind, name);
  const [events, backups] = await Promise.all([
    eventsAbout(env, kind, object),
    kind.kind === 'Database' ? backupsOf(env) : undefined,
  ]);
  const report = statusReport({ kind: kind.kind, object, events, backups });
  if (output === 'json') env.out(`${JSON.stringify(report, null, 2)}\n`);
  else if (output === 'yaml') env.out(stringify(report));
  else env.out(renderStatus(report, env.date()));
}

/**
 * The Events `regarding` the object: selected by name on the server (the field
 * selector the events API is known to take, runtime's events test uses it),
 * and by kind and uid here, so that another kind's object of the same name, or
 * a deleted one's Events (they outlive it by the API server's --event-ttl, an
 * hour), are left out.
 */
export async function eventsAbout(
  env: CommandEnv,
  kind: KindInfo,
  object: AnyObject,
): Promise<EventObject[]> {
  type Regarding = { regarding?: { kind?: string; uid?: string } };
  const { items } = await env.client
    .resource(retyped<KubeObject & EventObject & Regarding>(Kinds.Event))
    .listAll({
      namespace: env.namespace,
      fieldSelector: `regarding.name=${object.metadata.name}`,
      signal: env.signal,
    });
  return items.filter(
    (e) => e.regarding?.kind === kind.kind && (!e.regarding.uid || e.regarding.uid === object.metadata.uid),
  );
}

/** The namespace's DatabaseBackups; undefined where their CRD is not installed (a manager without backups). */
export async function backupsOf(env: CommandEnv): Promise<DatabaseBackupObject[] | undefined> {
  try {
    const { items } = await env.client
      .resource<DatabaseBackupObject>(DatabaseBackup.type)
      .listAll({ namespace: env.namespace, signal: env.signal });
    return items;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
