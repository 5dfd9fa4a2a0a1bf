import { createHash } from 'node:crypto';

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
