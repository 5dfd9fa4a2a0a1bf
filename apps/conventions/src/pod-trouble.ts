/**
 * Why a workload's Pod does not run, in the words its kubelet and its own
 * log give: a container that keeps crashing (its last lines, which the
 * kubelet keeps as the termination message under FallbackToLogsOnError), or
 * one that cannot start (an image that can't be pulled, a Secret key missing).
 * A Pod's events and log say this too, but few users read a Pod's log before
 * their custom resource's status.
 */

/** The parts of a Pod this reads (a V1Pod has them). */
export interface TroubledPod {
  metadata?: { name?: string | undefined; deletionTimestamp?: Date | string | undefined } | undefined;
  status?:
    | {
        initContainerStatuses?: ContainerState[] | undefined;
        containerStatuses?: ContainerState[] | undefined;
      }
    | undefined;
}

interface ContainerState {
  name: string;
  ready?: boolean | undefined;
  restartCount?: number | undefined;
  state?: { waiting?: { reason?: string | undefined; message?: string | undefined } | undefined } | undefined;
  lastState?:
    | {
        terminated?:
          | { exitCode?: number | undefined; reason?: string | undefined; message?: string | undefined }
          | undefined;
      }
    | undefined;
}

/** Waiting reasons that mean the container cannot start at all, however long it waits. */
const CANNOT_START = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

/**
 * Restarts before a crash counts as a loop: one crash is what a killed server
 * or a fenced former primary does once, and the kubelet's restart heals it.
 */
export const CRASHES_BEFORE_REPORTED = 2;

/** Longest excerpt of a log kept in a message: a condition is read by people, not parsed. */
const MAX_EXCERPT = 400;

export interface PodTrouble {
  pod: string;
  container: string;
  /** One sentence: what fails, and the line of its log or the kubelet's message that says why. */
  message: string;
}

/** What keeps a Pod from running, or undefined when nothing does (or it is being deleted). */
export function podTrouble(pod: TroubledPod): PodTrouble | undefined {
  if (pod.metadata?.deletionTimestamp) return undefined;
  const name = pod.metadata?.name ?? '';
  const all = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  for (const c of all) {
    const waiting = c.state?.waiting;
    if (waiting?.reason && CANNOT_START.has(waiting.reason))
      return {
        pod: name,
        container: c.name,
        message: `container ${c.name} cannot start (${waiting.reason}): ${excerpt(waiting.message ?? '')}`,
      };
    if (waiting?.reason === 'CrashLoopBackOff' && (c.restartCount ?? 0) >= CRASHES_BEFORE_REPORTED) {
      const last = c.lastState?.terminated;
      const why = excerpt(last?.message ?? '');
      const exit = last?.exitCode !== undefined ? `exits with code ${last.exitCode}` : 'keeps exiting';
      return { pod: name, container: c.name, message: `container ${c.name} ${exit}${why ? `: ${why}` : ''}` };
    }
  }
  return undefined;
}

/**
 * The line of a log tail that says why: the last one naming an error, else
 * the last one. A start script's own last words ("restore failed") say less
 * than the tool's error just above them.
 */
export function excerpt(log: string): string {
  const lines = log
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const line = lines.findLast((l) => /\b(error|fatal|panic)\b/i.test(l)) ?? lines.at(-1) ?? '';
  return line.length > MAX_EXCERPT ? `${line.slice(0, MAX_EXCERPT - 1)}…` : line;
}
