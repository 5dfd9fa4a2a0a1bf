import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import type { Clock } from './clock.ts';
import { ConfigError } from './errors.ts';

export interface ClientOptions {
  /** Credentials and server; see KubeClient.load for discovery rules. */
  kubeConfig?: KubeConfig;
  /** Sustained requests per second; default 50. `Infinity` disables the limiter. */
  qps?: number;
  /** Requests allowed at once above the sustained rate; default 100. */
  burst?: number;
  /** Where to register request metrics; none are recorded without one. */
  registry?: Registry;
  /** Retries after the first attempt; default 5, 0 disables retries. */
  maxRetries?: number;
  userAgent?: string;
  /** Per-attempt deadline in ms; default 60000, 0 disables it. */
  requestTimeoutMs?: number;
  /** Injected time source, for tests. */
  clock?: Clock;
}

export interface LoadOptions extends ClientOptions {
  /** Explicit kubeconfig file; wins over KUBECONFIG and ~/.kube/config. */
  kubeconfigPath?: string;
  /** Context to use instead of the kubeconfig's current-context. */
  context?: string;
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

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * Finds credentials: an explicit path, then KUBECONFIG (a list of files,
 * merged), then ~/.kube/config, then the in-cluster service account. Unlike
 * KubeConfig.loadFromDefault it never falls back to an unauthenticated
 * localhost:8080, which would only hide a missing configuration.
 */
export function loadKubeConfig(opts: { kubeconfigPath?: string; context?: string } = {}): KubeConfig {
  const kc = new KubeConfig();
  const env = process.env;
  try {
    if (opts.kubeconfigPath) {
      kc.loadFromFile(opts.kubeconfigPath);
    } else if (env.KUBECONFIG) {
      kc.loadFromDefault();
    } else if (existsSync(join(env.HOME || homedir(), '.kube', 'config'))) {
      kc.loadFromFile(join(env.HOME || homedir(), '.kube', 'config'));
    } else if (env.KUBERNETES_SERVICE_HOST && existsSync(SERVICE_ACCOUNT_TOKEN)) {
      kc.loadFromCluster();
    } else {
      throw new ConfigError(
        'no Kubernetes configuration found: pass kubeconfigPath, set KUBECONFIG, create ~/.kube/config, or run in a cluster',
      );
    }
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    // Only the first line: YAML parsers append a snippet of the file, which
    // may be a token or a key. The cause is dropped for the same reason.
    const firstLine = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    throw new ConfigError(`could not load kubeconfig: ${firstLine}`);
  }
  if (opts.context) {
    if (!kc.getContextObject(opts.context))
      throw new ConfigError(`kubeconfig has no context "${opts.context}"`);
    kc.setCurrentContext(opts.context);
  }
  return kc;
}
