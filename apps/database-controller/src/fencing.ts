// Fencing on a person's order: the Database's FENCED_INSTANCES_ANNOTATION names instances whose
// engine is to stop while their Pods stay, for inspection. The manager marks each such Pod
// (FENCED_POD_ANNOTATION), its instance agent stops the engine and starts it again once the mark
// is gone, and the replication plan gives a fenced instance no role label and never promotes it
// (PlanInput.fenced); a fenced primary is not failed over.
import type { V1Pod } from '@kubernetes/client-node';
import { Kinds } from '@regulon/client';
import type { Member } from '@regulon/conventions';
import { FENCED_POD_ANNOTATION } from '@regulon/instance-agent/pod';
import type { Context } from '@regulon/runtime';

export { FENCED_POD_ANNOTATION };

/** On a Database: a JSON list of its instances' Pod names to fence, or `["*"]` for all of them. */
export const FENCED_INSTANCES_ANNOTATION = 'regulon.dev/fenced-instances';
/** The condition that says which instances are fenced (True), none (False), or that the annotation is invalid. */
export const FENCED_CONDITION = 'Fenced';
/** The condition's reason, and the Warning Event's, for an annotation that cannot be read. */
export const INVALID_FENCING = 'InvalidFencedInstances';

/** What the annotation asks for: `all` (`["*"]`) or the named instances; an empty list fences none. */
export type FenceRequest = { all: true } | { all: false; names: string[] };

const POD_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Reads the annotation's value: undefined when it is absent. Throws a TypeError saying what is
 * wrong with one that is not a JSON list of Pod names, or `["*"]` (alone).
 */
export function parseFencedInstances(value: string | undefined): FenceRequest | undefined {
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new TypeError(
      `${FENCED_INSTANCES_ANNOTATION} is not JSON: expected a list such as ["name-1"] or ["*"]`,
    );
  }
  if (!Array.isArray(parsed) || parsed.some((x) => typeof x !== 'string'))
    throw new TypeError(`${FENCED_INSTANCES_ANNOTATION} must be a JSON list of instance names, or ["*"]`);
  const names = [...new Set(parsed as string[])];
  if (names.includes('*')) {
    if (names.length > 1)
      throw new TypeError(`${FENCED_INSTANCES_ANNOTATION}: "*" fences every instance and stands alone`);
    return { all: true };
  }
  const bad = names.find((n) => !POD_NAME.test(n) || n.length > 253);
  if (bad !== undefined)
    throw new TypeError(`${FENCED_INSTANCES_ANNOTATION}: ${JSON.stringify(bad)} is not an instance name`);
  return { all: false, names: names.sort() };
}

/** The annotation's value for a request (what the plugin writes): `["*"]`, or the sorted names. */
export function formatFencedInstances(request: FenceRequest): string {
  return JSON.stringify(request.all ? ['*'] : [...new Set(request.names)].sort());
}

/** What the reconcile makes of the annotation, for the plan and the status. */
export interface Fencing {
  /** The instances fenced now, among `instances`. */
  fenced: Set<string>;
  /** Names the annotation gives that are not instances of this Database (ignored). */
  unknown: string[];
  /** The annotation cannot be read: why. The fence then stays as the Pods' marks last put it. */
  invalid?: string | undefined;
}

/**
 * The instances to fence: what the annotation names among `instances` (each instance's Pod name);
 * with an annotation that cannot be read, those whose Pod carries the mark now, so that a typo
 * neither fences nor unfences anything.
 */
export function fencingOf(
  annotation: string | undefined,
  instances: readonly string[],
  pods: ReadonlyMap<string, V1Pod>,
): Fencing {
  let request: FenceRequest | undefined;
  try {
    request = parseFencedInstances(annotation);
  } catch (err) {
    const kept = instances.filter((n) => marked(pods.get(n)));
    return { fenced: new Set(kept), unknown: [], invalid: (err as Error).message };
  }
  if (!request) return { fenced: new Set(), unknown: [] };
  if (request.all) return { fenced: new Set(instances), unknown: [] };
  const known = new Set(instances);
  return {
    fenced: new Set(request.names.filter((n) => known.has(n))),
    unknown: request.names.filter((n) => !known.has(n)),
  };
}

function marked(pod: V1Pod | undefined): boolean {
  return pod?.metadata?.annotations?.[FENCED_POD_ANNOTATION] === 'true';
}

/**
 * Marks each fenced instance's Pod for its agent, and clears the mark from the others (a merge
 * patch of that one annotation). A Pod made again while its instance is fenced gets the mark at
 * the next reconcile; its agent stops the engine it just started.
 */
export async function markFencedPods(
  ctx: Context,
  namespace: string,
  pods: ReadonlyMap<string, V1Pod>,
  fenced: ReadonlySet<string>,
): Promise<void> {
  for (const [name, pod] of pods) {
    const want = fenced.has(name);
    if (want === marked(pod) || pod.metadata?.deletionTimestamp) continue;
    await ctx.client
      .resource(Kinds.Pod)
      .patch(
        name,
        { metadata: { annotations: { [FENCED_POD_ANNOTATION]: want ? 'true' : null } } },
        { type: 'merge', namespace, signal: ctx.signal },
      )
      .then(
        () => ctx.log.info({ pod: name, fenced: want }, want ? 'instance fenced' : 'instance unfenced'),
        (err: unknown) => ctx.log.info({ err: (err as Error).message, pod: name }, 'fence mark not written'),
      );
  }
}

/** The Fenced condition: True naming the fenced instances (and which have stopped), else False. */
export function fencedCondition(
  f: Fencing | undefined,
  stopped: (pod: string) => boolean,
): { status: 'True' | 'False'; reason: string; message: string } {
  if (f?.invalid)
    return {
      status: f.fenced.size ? 'True' : 'False',
      reason: INVALID_FENCING,
      message: `${f.invalid}; the fence stays as it was${f.fenced.size ? ` (${[...f.fenced].join(', ')})` : ' (none)'}`,
    };
  const unknown = f?.unknown.length ? `; not instances of this Database: ${f.unknown.join(', ')}` : '';
  if (!f?.fenced.size)
    return { status: 'False', reason: 'NotFenced', message: `No instance is fenced${unknown}` };
  const names = [...f.fenced];
  const waiting = names.filter((n) => !stopped(n));
  return {
    status: 'True',
    reason: waiting.length ? 'Stopping' : 'EnginesStopped',
    message: `Fenced: ${names.join(', ')}${waiting.length ? `; still stopping: ${waiting.join(', ')}` : '; their engines are stopped'}${unknown}`,
  };
}

/**
 * How long after a fence was lifted an instance that does not serve yet is still taken for
 * starting, not lost: its agent reads its Pod every 5 s, then runs the start script.
 */
export const UNFENCE_GRACE_MS = 10_000;

/** When each instance (`<Database uid>/<Pod>`) was last seen fenced, by this manager. */
const lastFenced = new Map<string, number>();

/**
 * The members as the plan should judge them: one whose fence was lifted less than UNFENCE_GRACE_MS
 * ago is in trouble only from then on, so that a primary whose fence is lifted is not failed over
 * (the failover delay having run out while it was stopped on purpose) before it could start again.
 * A manager that restarted meanwhile does not know, and counts from when its Pod stopped serving.
 */
export function troubleAfterFence(
  uid: string,
  members: readonly Member[],
  fenced: ReadonlySet<string>,
  now: number,
): Member[] {
  return members.map((m) => {
    const key = `${uid}/${m.pod}`;
    if (fenced.has(m.pod)) {
      lastFenced.set(key, now);
      return m;
    }
    const at = lastFenced.get(key);
    if (at === undefined) return m;
    if (m.troubleSince === undefined || now - at > UNFENCE_GRACE_MS + 3_600_000) {
      lastFenced.delete(key);
      return m;
    }
    return { ...m, troubleSince: Math.max(m.troubleSince, at + UNFENCE_GRACE_MS) };
  });
}
