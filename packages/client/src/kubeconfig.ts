/**
 * Kubeconfig files and in-cluster credentials, read without evaluating
 * @kubernetes/client-node.
 *
 * Why this is written by hand: client-node's KubeConfig module statically
 * imports the library's entire generated API (`gen/index.js`), undici, socks,
 * hpagent and the OIDC client; importing it adds about 80 MiB of resident
 * memory in Node 24 (measured), while KubeClient needs only the config model: which
 * server, which CA, which credentials. That model is small and fixed by
 * kubectl (clientcmd v1), so it is parsed here with `yaml` and mapped to
 * `https` options. Plugin authentication (`exec`, `auth-provider`) and proxies
 * (`proxy-url`) are not re-implemented: for those, client-node's KubeConfig is
 * imported on the first request and does the work, as before.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { OutgoingHttpHeaders } from 'node:http';
import type { RequestOptions } from 'node:https';
import { createRequire } from 'node:module';
import { isIPv6 } from 'node:net';
import { delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import type * as Yaml from 'yaml';
import type { KubeConfig, User as ClientNodeUser } from '@kubernetes/client-node';
import { ConfigError } from './errors.ts';

/** The cluster of the current context, as client-node's `KubeConfig.getCurrentCluster` reports it. */
export interface KubeCluster {
  readonly name: string;
  readonly server: string;
  readonly skipTLSVerify?: boolean | undefined;
  readonly tlsServerName?: string | undefined;
  readonly proxyUrl?: string | undefined;
}

export interface KubeContext {
  readonly name: string;
  readonly cluster: string;
  readonly user: string;
  readonly namespace?: string | undefined;
}

/**
 * What KubeClient needs from a kubeconfig: the server of the current context
 * and, before every request, its credentials. `loadKubeConfig` returns one;
 * client-node's `KubeConfig` satisfies it too and can be passed as it is.
 */
export interface KubeConfigSource {
  getCurrentCluster(): KubeCluster | null;
  /**
   * Sets TLS material (`ca`, `cert`, `key`, `rejectUnauthorized`,
   * `servername`), authentication (`headers.Authorization` or `auth`) and, for
   * a proxy, `agent`. Called before every request, so rotated credentials
   * (token files, exec plugins) are picked up.
   */
  applyToHTTPSOptions(opts: RequestOptions): Promise<void>;
  getContextObject(name: string): KubeContext | null;
  setCurrentContext(name: string): void;
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

interface ClusterEntry extends KubeCluster {
  readonly skipTLSVerify: boolean;
  readonly caFile?: string | undefined;
  readonly caData?: string | undefined;
}

interface UserEntry {
  readonly name: string;
  readonly certFile?: string | undefined;
  readonly certData?: string | undefined;
  readonly keyFile?: string | undefined;
  readonly keyData?: string | undefined;
  readonly token?: string | undefined;
  readonly tokenFile?: string | undefined;
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  readonly as?: string | undefined;
  readonly asGroups?: string[] | undefined;
  readonly asUid?: string | undefined;
  readonly asUserExtra?: Record<string, string[]> | undefined;
  /** Passed to client-node as they are written. */
  readonly exec?: Record<string, unknown> | undefined;
  readonly authProvider?: Record<string, unknown> | undefined;
}

/** A merged kubeconfig: named clusters, users and contexts plus the current context. */
export interface KubeConfigModel {
  clusters: Map<string, ClusterEntry>;
  users: Map<string, UserEntry>;
  contexts: Map<string, KubeContext>;
  currentContext?: string | undefined;
}

/**
 * Reads kubeconfig files and merges them by kubectl's rules: the first file
 * that defines a cluster, user or context name wins, and current-context comes
 * from the first file that sets it. Relative file paths are resolved against
 * the directory of the file that names them. With `skipMissing` (a KUBECONFIG
 * list) absent files are skipped, as kubectl does; an error if none exists.
 */
export function readKubeConfigFiles(paths: readonly string[], skipMissing = false): KubeConfigModel {
  const model: KubeConfigModel = { clusters: new Map(), users: new Map(), contexts: new Map() };
  let found = 0;
  for (const path of paths) {
    if (skipMissing && !existsSync(path)) continue;
    found++;
    mergeFile(model, path);
  }
  if (found === 0) throw new ConfigError('none of the files listed in KUBECONFIG exists');
  return model;
}

/** KUBECONFIG: a list of files separated by the platform's path delimiter. */
export function kubeconfigEnvPaths(value: string): string[] {
  return value.split(delimiter).filter((p) => p !== '');
}

/**
 * The pod's service account, as client-go's InClusterConfig: the API server
 * from KUBERNETES_SERVICE_HOST and _PORT, the CA and the token from
 * `dir`. The token file is read again once a minute, because bound
 * service-account tokens are rotated by the kubelet (hourly by default).
 */
export function inClusterModel(env: NodeJS.ProcessEnv, dir = SERVICE_ACCOUNT_DIR): KubeConfigModel {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new ConfigError(
      'in-cluster configuration needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT',
    );
  const server = `https://${isIPv6(host) ? `[${host}]` : host}:${port}`;
  const namespaceFile = join(dir, 'namespace');
  const namespace = existsSync(namespaceFile) ? readFileSync(namespaceFile, 'utf8').trim() : undefined;
  const name = 'in-cluster';
  return {
    clusters: new Map([[name, { name, server, skipTLSVerify: false, caFile: join(dir, 'ca.crt') }]]),
    users: new Map([[name, { name, tokenFile: join(dir, 'token') }]]),
    contexts: new Map([[name, { name, cluster: name, user: name, ...(namespace ? { namespace } : {}) }]]),
    currentContext: name,
  };
}

/**
 * How long a certificate, key or token file read from disk is used before it
 * is read again: client-go's cached token file source uses the same minute.
 * Reading them before every request instead costs, per file and request,
 * four thread-pool round trips (open, stat, read, close), each waiting for a
 * turn of the event loop, which is busiest exactly when requests are many.
 */
export const CREDENTIAL_FILE_REFRESH_MS = 60_000;

/**
 * A loaded kubeconfig. Certificates, keys and token files are read from disk
 * again once they are a minute old, so rotated files take effect without a
 * restart; the transport replaces its agent when the TLS material changes.
 */
export class LeanKubeConfig implements KubeConfigSource {
  readonly #model: KubeConfigModel;
  #current: string | undefined;
  #delegate: Promise<KubeConfig> | undefined;
  readonly #files = new Map<string, { readAt: number; content: Promise<Buffer> }>();
  readonly #now: () => number;

  /** `now` is for tests. */
  constructor(model: KubeConfigModel, now: () => number = Date.now) {
    this.#model = model;
    this.#current = model.currentContext;
    this.#now = now;
  }

  getCurrentContext(): string | undefined {
    return this.#current;
  }

  setCurrentContext(name: string): void {
    this.#current = name;
    this.#delegate = undefined;
  }

  getContextObject(name: string): KubeContext | null {
    return this.#model.contexts.get(name) ?? null;
  }

  getCurrentCluster(): KubeCluster | null {
    const ctx = this.#current === undefined ? undefined : this.#model.contexts.get(this.#current);
    return (ctx && this.#model.clusters.get(ctx.cluster)) ?? null;
  }

  async applyToHTTPSOptions(opts: RequestOptions): Promise<void> {
    const { context, cluster, user } = this.#selected();
    if (cluster.proxyUrl || user?.exec || user?.authProvider) {
      const kc = await this.#clientNode(context, cluster, user);
      return kc.applyToHTTPSOptions(opts);
    }
    const [ca, cert, key, tokenFromFile] = await Promise.all([
      this.#material('certificate-authority', cluster.caFile, cluster.caData),
      this.#material('client-certificate', user?.certFile, user?.certData),
      this.#material('client-key', user?.keyFile, user?.keyData),
      user?.tokenFile ? this.#read('tokenFile', user.tokenFile).then(String) : undefined,
    ]);
    if (cluster.skipTLSVerify) opts.rejectUnauthorized = false;
    if (cluster.tlsServerName) opts.servername = cluster.tlsServerName;
    if (ca) opts.ca = ca;
    if (cert) opts.cert = cert;
    if (key) opts.key = key;
    if (!user) return;
    const headers = headersOf(opts);
    // As client-go: a token file, once read, wins over an inline token.
    const token = tokenFromFile?.trim() || user.token;
    if (token) headers.Authorization = `Bearer ${token}`;
    else if (user.username !== undefined || user.password !== undefined)
      opts.auth = `${user.username ?? ''}:${user.password ?? ''}`;
    if (user.as) headers['Impersonate-User'] = user.as;
    if (user.asGroups?.length) headers['Impersonate-Group'] = user.asGroups;
    if (user.asUid) headers['Impersonate-Uid'] = user.asUid;
    for (const [k, v] of Object.entries(user.asUserExtra ?? {}))
      headers[`Impersonate-Extra-${encodeURIComponent(k)}`] = v;
  }

  #material(what: string, file?: string, data?: string): Promise<Buffer | undefined> {
    if (file) return this.#read(what, file);
    return Promise.resolve(data ? Buffer.from(data, 'base64') : undefined);
  }

  #read(what: string, file: string): Promise<Buffer> {
    const now = this.#now();
    const cached = this.#files.get(file);
    if (cached && now - cached.readAt < CREDENTIAL_FILE_REFRESH_MS) return cached.content;
    const content = readFile(file).catch((err: unknown) => {
      this.#files.delete(file); // a failed read is retried by the next request, not remembered
      throw unreadable(what, file, err);
    });
    this.#files.set(file, { readAt: now, content });
    return content;
  }

  #selected(): { context: KubeContext; cluster: ClusterEntry; user: UserEntry | undefined } {
    if (this.#current === undefined) throw new ConfigError('kubeconfig has no current-context');
    const context = this.#model.contexts.get(this.#current);
    if (!context) throw new ConfigError(`kubeconfig has no context "${this.#current}"`);
    const cluster = this.#model.clusters.get(context.cluster);
    if (!cluster) throw new ConfigError(`kubeconfig has no cluster "${context.cluster}"`);
    if (!context.user) return { context, cluster, user: undefined };
    const user = this.#model.users.get(context.user);
    if (!user) throw new ConfigError(`kubeconfig has no user "${context.user}"`);
    return { context, cluster, user };
  }

  /**
   * Plugin authentication and proxies stay with client-node, the field's
   * implementation (exec credential caching, OIDC refresh, cloud providers,
   * SOCKS and HTTP proxy agents). It is imported here, on first use, and not
   * at the top of the module: evaluating it costs about 80 MiB of RSS, which
   * every process would pay for a case most never meet.
   */
  #clientNode(context: KubeContext, cluster: ClusterEntry, user: UserEntry | undefined): Promise<KubeConfig> {
    this.#delegate ??= import('@kubernetes/client-node').then(
      ({ KubeConfig }) => {
        const kc = new KubeConfig();
        kc.loadFromOptions({
          clusters: [{ ...cluster }],
          users: user ? [clientNodeUser(user)] : [],
          contexts: [{ ...context }],
          currentContext: context.name,
        });
        return kc;
      },
      (err: unknown) => {
        this.#delegate = undefined;
        throw err;
      },
    );
    return this.#delegate;
  }
}

function clientNodeUser(user: UserEntry): ClientNodeUser {
  return {
    name: user.name,
    certFile: user.certFile,
    certData: user.certData,
    keyFile: user.keyFile,
    keyData: user.keyData,
    token: user.token,
    username: user.username,
    password: user.password,
    impersonateUser: user.as,
    exec: user.exec,
    authProvider: user.authProvider,
  };
}

function headersOf(opts: RequestOptions): OutgoingHttpHeaders {
  if (opts.headers && !Array.isArray(opts.headers)) return opts.headers as OutgoingHttpHeaders;
  const headers: OutgoingHttpHeaders = {};
  opts.headers = headers;
  return headers;
}

function unreadable(what: string, file: string, err: unknown): ConfigError {
  const code = (err as { code?: unknown }).code;
  return new ConfigError(`cannot read ${what} ${file}: ${typeof code === 'string' ? code : 'error'}`);
}

type Obj = Record<string, unknown>;

// `yaml` is required on the first kubeconfig file, not imported, because an
// in-cluster client reads no YAML: that saves 0.6–1.7 MiB of resident memory
// on top of the rest of this package (12 MiB loaded alone, but mostly the
// module loader that every import pays; measured in Node 24).
// require, because reading a kubeconfig is synchronous.
const requireModule = createRequire(import.meta.url);
let parseYaml: typeof Yaml.parse | undefined;

function mergeFile(model: KubeConfigModel, path: string): void {
  let doc: unknown;
  try {
    parseYaml ??= (requireModule('yaml') as typeof Yaml).parse;
    doc = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    // Only the first line: the parser appends a snippet of the file, which may
    // hold a token or a key. The cause is dropped for the same reason.
    const firstLine = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    throw new ConfigError(`could not load kubeconfig ${path}: ${firstLine}`);
  }
  if (doc === null || doc === undefined) return; // an empty file is an empty config, as for kubectl
  if (!isObj(doc)) throw new ConfigError(`kubeconfig ${path} is not a YAML mapping`);
  const base = dirname(resolve(path));
  const file = (p: string | undefined): string | undefined => (p ? resolve(base, p) : undefined);

  for (const [i, named] of entries(doc, 'clusters', path)) {
    const c = obj(named.value, `clusters[${i}].cluster`, path);
    if (model.clusters.has(named.name)) continue;
    model.clusters.set(named.name, {
      name: named.name,
      server: (str(c, 'server', path) ?? '').replace(/\/$/, ''),
      skipTLSVerify: c['insecure-skip-tls-verify'] === true,
      tlsServerName: str(c, 'tls-server-name', path),
      proxyUrl: str(c, 'proxy-url', path),
      caFile: file(str(c, 'certificate-authority', path)),
      caData: str(c, 'certificate-authority-data', path),
    });
  }
  for (const [i, named] of entries(doc, 'users', path)) {
    const u = obj(named.value, `users[${i}].user`, path);
    if (model.users.has(named.name)) continue;
    const exec =
      u.exec === undefined || u.exec === null ? undefined : obj(u.exec, `users[${i}].user.exec`, path);
    const authProvider = u['auth-provider'];
    model.users.set(named.name, {
      name: named.name,
      certFile: file(str(u, 'client-certificate', path)),
      certData: str(u, 'client-certificate-data', path),
      keyFile: file(str(u, 'client-key', path)),
      keyData: str(u, 'client-key-data', path),
      token: str(u, 'token', path),
      // `tokenFile` is kubectl's spelling; client-node 2.x read `token-file`.
      tokenFile: file(str(u, 'tokenFile', path) ?? str(u, 'token-file', path)),
      username: str(u, 'username', path),
      password: str(u, 'password', path),
      as: str(u, 'as', path),
      asGroups: Array.isArray(u['as-groups']) ? u['as-groups'].map(String) : undefined,
      asUid: str(u, 'as-uid', path),
      asUserExtra: isObj(u['as-user-extra'])
        ? Object.fromEntries(
            Object.entries(u['as-user-extra']).map(([k, v]) => [
              k,
              Array.isArray(v) ? v.map(String) : [String(v)],
            ]),
          )
        : undefined,
      // As kubectl: a relative command with a path separator is relative to the file.
      exec:
        exec && typeof exec.command === 'string' && exec.command.includes(sep) && !isAbsolute(exec.command)
          ? { ...exec, command: resolve(base, exec.command) }
          : exec,
      authProvider: isObj(authProvider) ? authProvider : undefined,
    });
  }
  for (const [i, named] of entries(doc, 'contexts', path)) {
    const c = obj(named.value, `contexts[${i}].context`, path);
    if (model.contexts.has(named.name)) continue;
    const namespace = str(c, 'namespace', path);
    model.contexts.set(named.name, {
      name: named.name,
      cluster: str(c, 'cluster', path) ?? '',
      user: str(c, 'user', path) ?? '',
      ...(namespace ? { namespace } : {}),
    });
  }
  const current = str(doc, 'current-context', path);
  if (model.currentContext === undefined && current) model.currentContext = current;
}

/** `clusters`, `users` or `contexts`: a list of `{ name, <kind>: {...} }`. */
function* entries(doc: Obj, key: 'clusters' | 'users' | 'contexts', path: string) {
  const list = doc[key];
  if (list === undefined || list === null) return;
  if (!Array.isArray(list)) throw new ConfigError(`kubeconfig ${path}: ${key} is not a list`);
  const inner = key.slice(0, -1);
  for (const [i, item] of (list as unknown[]).entries()) {
    const named = obj(item, `${key}[${i}]`, path);
    const name = str(named, 'name', path);
    if (!name) throw new ConfigError(`kubeconfig ${path}: ${key}[${i}].name is missing`);
    yield [i, { name, value: named[inner] ?? {} }] as const;
  }
}

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function obj(v: unknown, where: string, path: string): Obj {
  if (!isObj(v)) throw new ConfigError(`kubeconfig ${path}: ${where} is not a mapping`);
  return v;
}

/** A string field; absent or null is undefined, anything else is an error (never echoing the value). */
function str(o: Obj, key: string, path: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new ConfigError(`kubeconfig ${path}: ${key} is not a string`);
  return v;
}
