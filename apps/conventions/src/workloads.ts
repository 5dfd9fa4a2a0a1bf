import { createHash } from 'node:crypto';
import type { Problem } from '@regulon/runtime';

/**
 * What every workload a Regulon controller creates shares: the restricted Pod
 * Security Standard, the recommended labels, and the content hash that rolls
 * Pods when their configuration changes.
 */

/** The restricted profile for a container. A writable root only where the image needs one (e.g. a database's init). */
export function restrictedContainerSecurityContext(opts: { readOnlyRootFilesystem?: boolean } = {}) {
  return {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: opts.readOnlyRootFilesystem ?? true,
    runAsNonRoot: true,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/** The restricted profile for a Pod whose image runs as `uid` (its files owned by that group too). */
export function restrictedPodSecurityContext(uid: number) {
  return {
    runAsNonRoot: true,
    runAsUser: uid,
    runAsGroup: uid,
    fsGroup: uid,
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

export const MANAGED_BY = 'regulon';

/** The recommended app.kubernetes.io labels of an object a Regulon controller manages. */
export function recommendedLabels(o: {
  name: string;
  instance: string;
  component: string;
  version?: string;
  partOf?: string;
}): Record<string, string> {
  return {
    'app.kubernetes.io/name': o.name,
    'app.kubernetes.io/instance': o.instance,
    ...(o.version ? { 'app.kubernetes.io/version': o.version } : {}),
    'app.kubernetes.io/component': o.component,
    'app.kubernetes.io/part-of': o.partOf ?? 'regulon',
    'app.kubernetes.io/managed-by': MANAGED_BY,
  };
}

/** A short stable hash of some content, for a pod-template annotation that rolls the Pods when the content changes. */
export function contentHash(content: string): string {
  return createHash('sha256').update(content).digest('hex').slice(0, 16);
}

/** The parts of a Deployment's status that deploymentProblem reads. */
interface DeploymentLike {
  metadata?: { name?: string; generation?: number };
  status?: {
    observedGeneration?: number;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
  };
}

/**
 * What a Deployment's own controller reports as going wrong, as a Problem:
 * - `ReplicaFailure=True`: its ReplicaSet cannot create Pods (a quota, an
 *   admission policy, a missing ServiceAccount). Not stalled: the Deployment
 *   retries by itself, and kstatus calls it InProgress too.
 * - `Progressing=False/ProgressDeadlineExceeded`: no progress within
 *   `progressDeadlineSeconds` (on a real kubelet: images that can't be pulled,
 *   Pods that never get ready). Stalled, as kstatus calls it Failed.
 * Only a status that describes the current spec counts.
 */
export function deploymentProblem(d: DeploymentLike | undefined): Problem | undefined {
  if (!d?.status || (d.status.observedGeneration ?? 0) < (d.metadata?.generation ?? 0)) return undefined;
  const name = d.metadata?.name ?? '';
  const cond = (type: string) => d.status?.conditions?.find((c) => c.type === type);
  const progressing = cond('Progressing');
  if (progressing?.status === 'False' && progressing.reason === 'ProgressDeadlineExceeded')
    return {
      reason: 'ProgressDeadlineExceeded',
      message: `Deployment ${name} made no progress: ${progressing.message ?? ''}`.trim(),
    };
  const failure = cond('ReplicaFailure');
  if (failure?.status === 'True')
    return {
      reason: 'ReplicaFailure',
      message: `Deployment ${name} cannot create its Pods (${failure.reason ?? 'ReplicaFailure'}): ${failure.message ?? ''}`,
      stalled: false,
    };
  return undefined;
}
