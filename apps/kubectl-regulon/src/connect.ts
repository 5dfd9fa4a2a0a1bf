// The client and namespace a command works with, found as kubectl finds them:
// --kubeconfig, else KUBECONFIG, else ~/.kube/config; --context, else the
// current-context; -n, else the context's namespace, else "default".
import { KubeClient, loadKubeConfig, type KubeConfigSource } from '@regulon/client';
import type { GlobalOptions } from './args.ts';

export interface Connection {
  client: KubeClient;
  namespace: string;
}

/**
 * A kubectl plugin is one person's command: client-go's defaults for a tool
 * (5 QPS, 10 burst) would slow `status` (about five reads); the client's own
 * 50/100 are fine. Two retries, not five: a person waits at the terminal.
 */
const MAX_RETRIES = 2;

export function connect(global: GlobalOptions): Connection {
  const kc = loadKubeConfig({
    ...(global.kubeconfig ? { kubeconfigPath: global.kubeconfig } : {}),
    ...(global.context ? { context: global.context } : {}),
  });
  const client = KubeClient.fromKubeConfig(kc, { maxRetries: MAX_RETRIES, userAgent: 'kubectl-regulon' });
  return { client, namespace: global.namespace ?? contextNamespace(kc) ?? 'default' };
}

/**
 * The current context's namespace. KubeConfigSource does not promise a
 * getCurrentContext (it names only what the client needs); both kubeconfig
 * implementations it takes, @regulon/client's and client-node's, have one.
 */
function contextNamespace(kc: KubeConfigSource): string | undefined {
  const current = (kc as { getCurrentContext?: () => string | undefined }).getCurrentContext?.();
  return current ? (kc.getContextObject(current)?.namespace ?? undefined) : undefined;
}
