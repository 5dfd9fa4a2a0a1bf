import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Registry } from 'prom-client';
import type { Clock } from '@regulon/util';
import { ConfigError } from './errors.ts';
import {
  LeanKubeConfig,
  SERVICE_ACCOUNT_DIR,
  inClusterModel,
  kubeconfigEnvPaths,
  readKubeConfigFiles,
  type KubeConfigModel,
  type KubeConfigSource,
} from './kubeconfig.ts';

export interface ClientOptions {
  /**
   * Credentials and server; see KubeClient.load for discovery rules. Anything
   * with KubeConfig's shape, e.g. client-node's `KubeConfig`.
   */
  kubeConfig?: KubeConfigSource | undefined;
  /** Sustained requests per second; default 50. `Infinity` disables the limiter. */
  qps?: number | undefined;
  /** Requests allowed at once above the sustained rate; default 100. */
  burst?: number | undefined;
  /** Where to register request metrics; none are recorded without one. */
  registry?: Registry | undefined;
  /** Retries after the first attempt; default 5, 0 disables retries. */
  maxRetries?: number | undefined;
  userAgent?: string | undefined;
  /** Per-attempt deadline in ms; default 60000, 0 disables it. */
  requestTimeoutMs?: number | undefined;
  /** Injected time source, for tests. */
  clock?: Clock | undefined;
}

export interface LoadOptions extends ClientOptions {
  /** Explicit kubeconfig file; wins over KUBECONFIG and ~/.kube/config. */
  kubeconfigPath?: string | undefined;
  /** Context to use instead of the kubeconfig's current-context. */
  context?: string | undefined;
}

export const CLIENT_VERSION = '0.1.0';

/**
 * client-go's 5 QPS / 10 burst is sized for one small tool; a manager running
 * many controllers through one client starves at that rate during a resync.
 * controller-runtime raised its defaults to 20/30. Priority and fairness on
 * the server is the real protection now, so the client limit only guards
 * against a runaway loop: 50/100.
 */
export const DEFAULT_QPS = 50;
export const DEFAULT_BURST = 100;
/** The API server's own default --request-timeout, so the client never gives up first. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

export function defaultUserAgent(): string {
  return `regulon-client/${CLIENT_VERSION} (${process.platform}/${process.arch}) node/${process.versions.node}`;
}

/**
 * Finds credentials: an explicit path, then KUBECONFIG (a list of files,
 * merged by kubectl's rules), then ~/.kube/config, then the in-cluster service
 * account. Unlike client-node's KubeConfig.loadFromDefault it never falls back
 * to an unauthenticated localhost:8080, which would only hide a missing
 * configuration. Reads the files itself (see kubeconfig.ts for why);
 * `exec` and `auth-provider` users and `proxy-url` clusters are handed to
 * client-node on the first request.
 *
 * `serviceAccountDir` is for tests.
 */
export function loadKubeConfig(
  opts: { kubeconfigPath?: string; context?: string } = {},
  serviceAccountDir: string = SERVICE_ACCOUNT_DIR,
): KubeConfigSource {
  const env = process.env;
  const home = join(env.HOME || homedir(), '.kube', 'config');
  let model: KubeConfigModel;
  try {
    if (opts.kubeconfigPath) {
      model = readKubeConfigFiles([opts.kubeconfigPath]);
    } else if (env.KUBECONFIG) {
      model = readKubeConfigFiles(kubeconfigEnvPaths(env.KUBECONFIG), true);
    } else if (existsSync(home)) {
      model = readKubeConfigFiles([home]);
    } else if (env.KUBERNETES_SERVICE_HOST && existsSync(join(serviceAccountDir, 'token'))) {
      model = inClusterModel(env, serviceAccountDir);
    } else {
      throw new ConfigError(
        'no Kubernetes configuration found: pass kubeconfigPath, set KUBECONFIG, create ~/.kube/config, or run in a cluster',
      );
    }
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    // Only the first line, and no cause: a parser's message may quote the file.
    const firstLine = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    throw new ConfigError(`could not load kubeconfig: ${firstLine}`);
  }
  const kc = new LeanKubeConfig(model);
  if (opts.context) {
    if (!kc.getContextObject(opts.context))
      throw new ConfigError(`kubeconfig has no context "${opts.context}"`);
    kc.setCurrentContext(opts.context);
  }
  return kc;
}
