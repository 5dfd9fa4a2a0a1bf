// `fence` and `unfence`: the Database's fenced-instances annotation, which the Database
// controller reads (apps/database-controller/src/fencing.ts), edited so that other entries stay;
// with --wait, until the status says the instances are fenced, or serve again.
import { isConflict } from '@regulon/client';
import {
  FENCED_INSTANCES_ANNOTATION,
  formatFencedInstances,
  parseFencedInstances,
  type DatabaseObject,
  type FenceRequest,
} from '@regulon/database-controller';
import { parseDuration } from './duration.ts';
import type { CommandEnv } from './env.ts';
import { UsageError, UserError } from './errors.ts';
import { DATABASE_KIND } from './kinds.ts';
import { getObject } from './objects.ts';
import { waitFor } from './wait.ts';

/** How long --wait waits by default: an engine's clean stop, or a replica catching up after it starts again. */
export const DEFAULT_FENCE_TIMEOUT_MS = 5 * 60_000;

export interface FenceCommand {
  name: 'fence' | 'unfence';
  database: string;
  /** The instance (Pod); undefined with --all. */
  pod?: string | undefined;
  all: boolean;
  wait: boolean;
  timeoutMs: number;
}

/** fence's and unfence's own options (beside the plugin's global ones). */
export const FENCE_OPTIONS = {
  all: { type: 'boolean' },
  wait: { type: 'boolean' },
  timeout: { type: 'string' },
} as const;

/** `fence|unfence DATABASE POD|--all [--wait [--timeout D]]` from the positionals and options parsed. */
export function fenceCommand(
  name: 'fence' | 'unfence',
  args: readonly string[],
  values: Record<string, string | boolean | undefined>,
): FenceCommand {
  const all = values.all === true;
  const [database, pod, extra] = args;
  if (database === undefined) throw new UsageError(`${name}: missing DATABASE`);
  if (extra !== undefined) throw new UsageError(`${name}: unexpected argument "${extra}"`);
  if (all && pod !== undefined) throw new UsageError(`${name}: give POD or --all, not both`);
  if (!all && pod === undefined) throw new UsageError(`${name}: missing POD (or --all)`);
  const timeout = typeof values.timeout === 'string' ? values.timeout : undefined;
  if (timeout !== undefined && values.wait !== true) throw new UsageError('--timeout goes with --wait');
  return {
    name,
    database,
    pod,
    all,
    wait: values.wait === true,
    timeoutMs: timeout ? parseDuration('--timeout', timeout) : DEFAULT_FENCE_TIMEOUT_MS,
  };
}

/** The Database's instances (Pod names): as its status lists them, else one per spec.replicas. */
export function instancesOf(db: DatabaseObject): string[] {
  const listed = (db.status?.instances ?? []).map((i) => i.name);
  if (listed.length) return listed;
  return Array.from({ length: db.spec.replicas }, (_, i) => `${db.metadata.name}-${i}`);
}

/**
 * The annotation's new value (null: remove it) after the command, from its value now: other
 * entries stay. Unfencing one instance of `["*"]` names every other instance. Throws a UserError
 * for a value the controller cannot read either, unless the command replaces it whole (--all).
 */
export function editFencedInstances(
  current: string | undefined,
  cmd: Pick<FenceCommand, 'name' | 'pod' | 'all'>,
  instances: readonly string[],
): string | null {
  if (cmd.all) return cmd.name === 'fence' ? formatFencedInstances({ all: true }) : null;
  let now: FenceRequest | undefined;
  try {
    now = parseFencedInstances(current);
  } catch (err) {
    throw new UserError(
      `${(err as Error).message} (now ${JSON.stringify(current)}): fix it, or replace it with --all`,
    );
  }
  const pod = cmd.pod!;
  const names = new Set(now?.all ? instances : (now?.names ?? []));
  if (cmd.name === 'fence') {
    if (now?.all) return current!;
    names.add(pod);
  } else names.delete(pod);
  return names.size ? formatFencedInstances({ all: false, names: [...names] }) : null;
}

export async function fence(env: CommandEnv, cmd: FenceCommand): Promise<void> {
  const db = await editAnnotation(env, cmd);
  const targets = cmd.all ? instancesOf(db) : [cmd.pod!];
  const what = cmd.all ? 'every instance' : cmd.pod!;
  env.out(
    `${cmd.name === 'fence' ? 'fence' : 'unfence'} of ${what} of Database ${env.namespace}/${cmd.database} requested\n`,
  );
  if (!cmd.wait) {
    env.err(
      `follow it with: kubectl regulon status database ${cmd.database} -n ${env.namespace} (or add --wait)\n`,
    );
    return;
  }
  const goal = cmd.name === 'fence' ? 'fenced (engine stopped)' : 'serving again';
  const reached = await waitFor(env, `${targets.join(', ')} to be ${goal}`, cmd.timeoutMs, async () => {
    const now = await getObject<DatabaseObject>(env, DATABASE_KIND, cmd.database);
    const states = new Map((now.status?.instances ?? []).map((i) => [i.name, i.state]));
    const done = targets.every((pod) =>
      cmd.name === 'fence'
        ? states.get(pod) === 'Fenced'
        : ['Primary', 'Streaming', 'Lagging'].includes(states.get(pod) ?? ''),
    );
    return done ? true : undefined;
  });
  if (reached) env.out(`${targets.join(', ')} ${targets.length > 1 ? 'are' : 'is'} ${goal}\n`);
}

/**
 * A read-modify-write of the annotation, the write a merge patch that carries the resourceVersion
 * read: an edit by anyone else meanwhile makes it conflict (409), and it is done again on what
 * that edit left. Returns the Database as written.
 */
async function editAnnotation(env: CommandEnv, cmd: FenceCommand): Promise<DatabaseObject> {
  for (let attempt = 1; ; attempt++) {
    const db = await getObject<DatabaseObject>(env, DATABASE_KIND, cmd.database);
    const instances = instancesOf(db);
    if (cmd.pod !== undefined && !instances.includes(cmd.pod))
      throw new UserError(
        `${cmd.pod} is not an instance of Database "${cmd.database}" (${instances.join(', ')})`,
      );
    const current = db.metadata.annotations?.[FENCED_INSTANCES_ANNOTATION];
    const next = editFencedInstances(current, cmd, instances);
    if (next === (current ?? null)) return db;
    try {
      return (await env.client.resource(DATABASE_KIND.type).patch(
        cmd.database,
        {
          metadata: {
            resourceVersion: db.metadata.resourceVersion,
            annotations: { [FENCED_INSTANCES_ANNOTATION]: next },
          },
        },
        { type: 'merge', namespace: env.namespace, signal: env.signal },
      )) as DatabaseObject;
    } catch (err) {
      if (!isConflict(err) || attempt >= 5) throw err;
    }
  }
}
