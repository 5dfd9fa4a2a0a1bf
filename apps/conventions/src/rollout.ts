import { isSubset } from '@regulon/runtime';

/** The parts of a Deployment or StatefulSet a rollout is read from. */
export interface Workload {
  metadata?: { generation?: number };
  spec?: { replicas?: number; template?: unknown; updateStrategy?: { type?: string } };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    /**
     * StatefulSets only: the roll is over when the current revision catches up with the update
     * revision; with OnDelete it never does, and every Pod at the update revision is the end.
     */
    currentRevision?: string;
    updateRevision?: string;
  };
}

/**
 * The live workload runs the desired template on every replica, and they are
 * ready. The template is compared with what this controller wants now (as
 * applyChild compares children), not only with the workload's own revisions:
 * a template not yet applied, or changed behind the controller's back, is
 * not rolled out however settled the workload's status looks.
 */
export function rolledOut(live: Workload | undefined, desired: Workload): boolean {
  const s = live?.status;
  if (!live || !s) return false;
  const want = desired.spec?.replicas ?? 1;
  return (
    live.spec?.replicas === want &&
    isSubset(desired.spec?.template, live.spec?.template) &&
    (s.observedGeneration ?? 0) >= (live.metadata?.generation ?? 0) &&
    (s.currentRevision === s.updateRevision || live.spec?.updateStrategy?.type === 'OnDelete') &&
    (s.updatedReplicas ?? 0) === want &&
    (s.readyReplicas ?? 0) === want &&
    s.replicas === want
  );
}
