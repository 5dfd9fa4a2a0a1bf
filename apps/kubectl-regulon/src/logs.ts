// `logs KIND NAME`: every instance Pod's log, one Pod after another, each line
// prefixed with the Pod (and its container where it has several) and its role.
import type { V1Pod } from '@kubernetes/client-node';
import { Kinds } from '@regulon/client';
import type { CommandEnv } from './env.ts';
import { UserError } from './errors.ts';
import type { AnyObject, KindInfo } from './kinds.ts';
import { getObject } from './objects.ts';

/** The label the Database and Cache controllers put on the instance that serves a role (primary, replica). */
export const ROLE_LABEL = 'regulon.dev/role';

export interface LogsRequest {
  kind: KindInfo;
  object: string;
  tail?: number | undefined;
  sinceMs?: number | undefined;
}

export async function logs(env: CommandEnv, req: LogsRequest): Promise<void> {
  const object = await getObject<AnyObject>(env, req.kind, req.object);
  const { items } = await env.client.resource<V1Pod>(Kinds.Pod).listAll({
    namespace: env.namespace,
    labelSelector: req.kind.podSelector(object),
    signal: env.signal,
  });
  if (items.length === 0) throw new UserError(`${req.kind.kind} "${req.object}" has no instance Pods`);
  const pods = items.sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
  const unreadable: string[] = [];
  for (const pod of pods) {
    const containers = pod.spec?.containers.map((c) => c.name) ?? [];
    for (const container of containers) {
      const prefix = linePrefix(pod, containers.length > 1 ? container : undefined, roleOf(object, pod));
      try {
        env.out(prefixLines(prefix, await readLog(env, pod.metadata!.name!, container, req)));
      } catch (err) {
        // One Pod without logs (not scheduled yet, its node gone) does not hide the others'.
        unreadable.push(pod.metadata!.name!);
        env.err(`${prefix} logs unavailable: ${(err as Error).message.split('\n')[0]}\n`);
      }
    }
  }
  if (unreadable.length)
    throw new UserError(`could not read the logs of ${[...new Set(unreadable)].join(', ')}`);
}

async function readLog(env: CommandEnv, pod: string, container: string, req: LogsRequest): Promise<string> {
  const text = await env.client.request<string | undefined>({
    method: 'GET',
    path: `/api/v1/namespaces/${encodeURIComponent(env.namespace)}/pods/${encodeURIComponent(pod)}/log`,
    query: {
      container,
      tailLines: req.tail,
      sinceSeconds: req.sinceMs === undefined ? undefined : Math.ceil(req.sinceMs / 1000),
    },
    accept: 'text/plain, */*',
    signal: env.signal,
  });
  return text ?? '';
}

/** The instance's role as the object's status says, else its role label, else "-". */
export function roleOf(object: AnyObject, pod: V1Pod): string {
  const instances = (object.status as { instances?: { name: string; role: string }[] } | undefined)
    ?.instances;
  const fromStatus = instances?.find((i) => i.name === pod.metadata?.name)?.role;
  return fromStatus ?? pod.metadata?.labels?.[ROLE_LABEL] ?? '-';
}

export function linePrefix(pod: V1Pod, container: string | undefined, role: string): string {
  return `${pod.metadata!.name}${container ? `/${container}` : ''} (${role})`;
}

/** Each line of `text` behind `prefix`; a last line without its newline gets one. */
export function prefixLines(prefix: string, text: string): string {
  if (text === '') return '';
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  return lines.map((l) => `${prefix} ${l}\n`).join('');
}
