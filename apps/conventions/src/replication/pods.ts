import { ignoreNotFound, isConflict, Kinds } from '@regulon/client';
import type { Context } from '@regulon/runtime';
import { roleLabelChanges, type InstancePod } from './members.ts';
import type { Role } from './plan.ts';

type PodWriter = Pick<Context, 'client' | 'signal'>;

/**
 * Deletes the Pod a reconcile observed (its uid), not one the StatefulSet has
 * made since under the same name: that successor is not what the plan was
 * made for. Gone already, or replaced, is not an error.
 */
export async function deleteObservedPod(
  ctx: PodWriter,
  namespace: string,
  pod: string,
  uid: string,
  gracePeriodSeconds?: number,
): Promise<void> {
  try {
    await ignoreNotFound(
      ctx.client.resource(Kinds.Pod).delete(pod, {
        namespace,
        preconditions: { uid },
        ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}),
        signal: ctx.signal,
      }),
    );
  } catch (err) {
    // The uid precondition failed: that Pod is gone, and its successor is not the one planned for.
    if (!isConflict(err)) throw err;
  }
}

/** Sets or removes each Pod's role label as `roles` says; the Services selecting on it follow at once. */
export async function applyRoleLabels(
  ctx: PodWriter,
  namespace: string,
  pods: ReadonlyMap<string, InstancePod>,
  roles: ReadonlyMap<string, Role | undefined>,
  label: string,
): Promise<void> {
  for (const { pod, role } of roleLabelChanges(pods, roles, label))
    await ignoreNotFound(
      ctx.client
        .resource(Kinds.Pod)
        .patch(
          pod,
          { metadata: { labels: { [label]: role } } },
          { type: 'merge', namespace, signal: ctx.signal },
        ),
    );
}
