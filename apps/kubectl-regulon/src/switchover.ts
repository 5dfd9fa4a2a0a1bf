// `switchover` and `promote`: a request to the Database controller through the
// annotations it reads (apps/database-controller/src/replication/replication.ts),
// and, with --wait, what its status says became of it.
import {
  FORCE_PROMOTE_ANNOTATION,
  SWITCHOVER_ANNOTATION,
  type DatabaseObject,
} from '@regulon/database-controller';
import type { CommandEnv } from './env.ts';
import { UserError } from './errors.ts';
import { DATABASE_KIND } from './kinds.ts';
import { getObject } from './objects.ts';
import { waitFor } from './wait.ts';

type Instance = NonNullable<NonNullable<DatabaseObject['status']>['instances']>[number];

/**
 * The instance a switchover without --to moves the primary to: a replica the
 * status says streams (state Streaming: in the read-only Service, within
 * maxLag; or Lagging: streaming but beyond it, which the controller gives
 * switchoverCatchUpSeconds), the least lag first, Streaming before Lagging at
 * equal lag, then by name so the choice is stable. Undefined when none streams:
 * promoting an instance that does not stream would be refused anyway.
 */
export function pickSwitchoverTarget(db: DatabaseObject): string | undefined {
  const primary = db.status?.currentPrimary;
  const lagOf = (i: Instance) => i.lagBytes ?? i.lagTransactions ?? Number.MAX_SAFE_INTEGER;
  const rank = (i: Instance) => (i.state === 'Streaming' ? 0 : 1);
  return (db.status?.instances ?? [])
    .filter((i) => i.name !== primary && (i.state === 'Streaming' || i.state === 'Lagging'))
    .sort((a, b) => lagOf(a) - lagOf(b) || rank(a) - rank(b) || a.name.localeCompare(b.name))[0]?.name;
}

export interface SwitchoverRequest {
  database: string;
  to?: string | undefined;
  wait: boolean;
  timeoutMs: number;
}

export async function switchover(env: CommandEnv, req: SwitchoverRequest): Promise<void> {
  const db = await getObject<DatabaseObject>(env, DATABASE_KIND, req.database);
  const primary = db.status?.currentPrimary;
  const target = req.to ?? pickSwitchoverTarget(db);
  if (!target)
    throw new UserError(
      `Database "${req.database}" has no streaming replica to switch over to (status.instances); name one with --to`,
    );
  checkInstance(db, target);
  if (target === primary)
    throw new UserError(`${target} is already the primary of Database "${req.database}"`);
  await annotate(env, req.database, SWITCHOVER_ANNOTATION, target);
  env.out(
    `switchover of Database ${env.namespace}/${req.database} requested: ${primary ?? 'no primary'} -> ${target}\n`,
  );
  if (!req.wait) {
    env.err(followHint(env, req.database));
    return;
  }
  const outcome = await waitFor(env, `${target} to become the primary`, req.timeoutMs, async () => {
    const now = await getObject<DatabaseObject>(env, DATABASE_KIND, req.database);
    if (now.status?.currentPrimary === target) return { ok: true, message: `${target} is the primary` };
    // The controller removes the annotation once the target serves or the request is refused,
    // and the same reconcile ends by writing the refusal into status.switchover (until then,
    // another poll). A switchover that went through says Started there, written when it started,
    // never Refused: an older refusal of the same target is not taken for this request's end.
    const so = now.status?.switchover;
    if (
      now.metadata.annotations?.[SWITCHOVER_ANNOTATION] === undefined &&
      so?.target === target &&
      so.state === 'Refused'
    )
      return { ok: false, message: `switchover to ${target} refused: ${so.message}` };
    return undefined;
  });
  if (!outcome.ok) throw new UserError(outcome.message);
  env.out(`${outcome.message}\n`);
}

export interface PromoteRequest {
  database: string;
  pod: string;
  wait: boolean;
  timeoutMs: number;
}

export async function promote(env: CommandEnv, req: PromoteRequest): Promise<void> {
  const db = await getObject<DatabaseObject>(env, DATABASE_KIND, req.database);
  checkInstance(db, req.pod);
  // The controller drops the order as soon as any primary serves (replication.ts): with one
  // serving now, it would be removed unheeded. Moving a serving primary is a switchover.
  const primary = db.status?.currentPrimary;
  if (primary)
    throw new UserError(
      `Database "${req.database}" has a serving primary (${primary}): promote only ends a failover that waits; to move the primary use: kubectl regulon switchover ${req.database} --to ${req.pod}`,
    );
  await annotate(env, req.database, FORCE_PROMOTE_ANNOTATION, req.pod);
  env.out(`promotion of ${req.pod} ordered for Database ${env.namespace}/${req.database}\n`);
  env.err(
    `writes the lost primary acknowledged and ${req.pod} lacks are discarded: the ForcedFailover Event says from which position\n`,
  );
  if (!req.wait) {
    env.err(followHint(env, req.database));
    return;
  }
  // The order stands until a primary serves: the one it named, or one that returned first.
  const serving = await waitFor(env, 'a primary to serve', req.timeoutMs, async () => {
    const now = await getObject<DatabaseObject>(env, DATABASE_KIND, req.database);
    return now.metadata.annotations?.[FORCE_PROMOTE_ANNOTATION] === undefined
      ? now.status?.currentPrimary
      : undefined;
  });
  if (serving !== req.pod)
    throw new UserError(`${serving} serves as the primary, not ${req.pod}: it returned first`);
  env.out(`${req.pod} is the primary\n`);
}

/** The controller refuses a target that is not one of the Database's instances; say so before asking. */
function checkInstance(db: DatabaseObject, pod: string): void {
  const names = (db.status?.instances ?? []).map((i) => i.name);
  if (names.length && !names.includes(pod))
    throw new UserError(`${pod} is not an instance of Database "${db.metadata.name}" (${names.join(', ')})`);
}

async function annotate(env: CommandEnv, name: string, key: string, value: string): Promise<void> {
  await env.client
    .resource(DATABASE_KIND.type)
    .patch(
      name,
      { metadata: { annotations: { [key]: value } } },
      { type: 'merge', namespace: env.namespace, signal: env.signal },
    );
}

const followHint = (env: CommandEnv, name: string) =>
  `follow it with: kubectl regulon status database ${name} -n ${env.namespace} (or add --wait)\n`;
