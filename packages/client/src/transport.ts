import type {
  Agent,
  ClientRequest,
  IncomingHttpHeaders,
  IncomingMessage,
  OutgoingHttpHeaders,
} from 'node:http';
import * as https from 'node:https';
import type { Duplex } from 'node:stream';
import { abortReason } from '@regulon/util';
import { ConfigError, TimeoutError } from './errors.ts';
import type { KubeConfigSource } from './kubeconfig.ts';

export interface TransportRequest {
  method: string;
  /** Path and query, relative to the server URL (which may carry a prefix). */
  path: string;
  headers: Record<string, string>;
  body?: Buffer | undefined;
  signal?: AbortSignal | undefined;
  /** 0 or undefined: no deadline. */
  timeoutMs?: number | undefined;
}

export interface TransportResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface OpenStream {
  response: IncomingMessage;
  /** Destroys the socket if still open and releases the abort listener. */
  close(): void;
}

/** What the client needs from the wire; an interface so tests can script it. */
export interface HttpTransport {
  readonly server: URL;
  readonly host: string;
  send(req: TransportRequest): Promise<TransportResponse>;
  open(req: TransportRequest): Promise<OpenStream>;
  close(): void;
}

/**
 * Idle keep-alive sockets are closed after this long, well under the API
 * server's own idle timeout, so a request is rarely written to a socket the
 * server has just closed (which would surface as ECONNRESET).
 */
const FREE_SOCKET_IDLE_MS = 30_000;

// node:http's exports, taken without an ES module import: Node's ES module
// wrapper of a built-in reads every export, and node:http exports WebSocket,
// CloseEvent and MessageEvent as getters that load Node's copy of undici (its
// fetch), which this client never uses: 2.4 MiB of heap and 7.7 MiB RSS
// (tools/bench/results/memory-floor.md). node:https has no such getters.
const http = process.getBuiltinModule('node:http');

type TlsMaterial = Pick<
  https.AgentOptions,
  'ca' | 'cert' | 'key' | 'pfx' | 'passphrase' | 'rejectUnauthorized' | 'servername'
>;
const TLS_FIELDS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

/**
 * HTTP/1.1 to one API server over a keep-alive agent owned by this client.
 * Authentication comes from applyToHTTPSOptions of the kubeconfig on every request,
 * so rotating bearer tokens (in-cluster token files, exec plugins) are picked
 * up; when the TLS material itself changes the agent is replaced.
 */
export class Transport implements HttpTransport {
  readonly server: URL;
  /** host:port, the `host` label of metrics. */
  readonly host: string;
  readonly #kc: KubeConfigSource;
  readonly #isHttps: boolean;
  readonly #basePath: string;
  readonly #hasProxy: boolean;
  #agent: Agent | undefined;
  #tls: TlsMaterial | undefined;
  readonly #agents = new Set<Agent>();

  constructor(kc: KubeConfigSource) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new ConfigError('kubeconfig has no current cluster');
    let url: URL;
    try {
      url = new URL(cluster.server);
    } catch (err) {
      throw new ConfigError(`invalid cluster server URL in kubeconfig`, { cause: err });
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new ConfigError(`unsupported server protocol ${url.protocol}`);
    }
    this.#kc = kc;
    this.server = url;
    this.#isHttps = url.protocol === 'https:';
    this.#basePath = url.pathname.replace(/\/+$/, '');
    this.host = `${url.hostname}:${url.port || (this.#isHttps ? '443' : '80')}`;
    this.#hasProxy = Boolean(cluster.proxyUrl);
  }

  /** Sends a request and buffers the whole response. */
  send(req: TransportRequest): Promise<TransportResponse> {
    return this.#prepare(req).then(
      (options) =>
        new Promise<TransportResponse>((resolve, reject) => {
          const cleanup = this.#guard(req, options, reject, true);
          options.req.on('response', (res: IncomingMessage) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              cleanup();
              resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
            });
            res.on('error', (err) => {
              cleanup();
              reject(err);
            });
          });
          options.req.end(req.body);
        }),
    );
  }

  /**
   * Sends a request and resolves once response headers arrive, leaving the
   * body to the caller. `timeoutMs` only bounds the wait for headers.
   */
  open(req: TransportRequest): Promise<OpenStream> {
    return this.#prepare(req).then(
      (options) =>
        new Promise<OpenStream>((resolve, reject) => {
          const cleanup = this.#guard(req, options, reject, false);
          options.req.on('response', (res: IncomingMessage) => {
            options.clearTimer();
            resolve({
              response: res,
              close: () => {
                cleanup();
                // A stream the server ended cleanly has already handed its
                // socket back to the pool; anything else is cut off here.
                if (!options.req.destroyed) options.req.destroy();
              },
            });
          });
          options.req.end(req.body);
        }),
    );
  }

  /** Destroys every socket of this client, idle or busy. */
  close(): void {
    for (const agent of this.#agents) agent.destroy();
    this.#agents.clear();
    this.#agent = undefined;
    this.#tls = undefined;
  }

  async #prepare(req: TransportRequest): Promise<{ req: ClientRequest; clearTimer: () => void }> {
    req.signal?.throwIfAborted();
    const opts: https.RequestOptions = { headers: {} };
    await this.#kc.applyToHTTPSOptions(opts);
    req.signal?.throwIfAborted();
    const authHeaders =
      opts.headers && !Array.isArray(opts.headers) ? (opts.headers as OutgoingHttpHeaders) : {};
    const headers: OutgoingHttpHeaders = { ...authHeaders, ...req.headers };
    if (req.body) headers['content-length'] = req.body.length;
    const agent = this.#hasProxy && opts.agent instanceof http.Agent ? opts.agent : this.#agentFor(opts);
    const request = (this.#isHttps ? https : http).request({
      protocol: this.server.protocol,
      hostname: this.server.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: this.server.port || undefined,
      path: this.#basePath + req.path,
      method: req.method,
      headers,
      agent,
      ...(opts.auth ? { auth: opts.auth } : {}),
    });
    let timer: NodeJS.Timeout | undefined;
    if (req.timeoutMs && req.timeoutMs > 0) {
      const ms = req.timeoutMs;
      timer = setTimeout(() => {
        request.destroy(
          new TimeoutError(0, {
            kind: 'Status',
            status: 'Failure',
            reason: 'Timeout',
            code: 0,
            message: `no response from the API server within ${ms}ms (client-side request timeout)`,
          }),
        );
      }, ms);
    }
    return { req: request, clearTimer: () => clearTimeout(timer) };
  }

  /** Wires abort, timeout and error handling; returns a cleanup function. */
  #guard(
    req: TransportRequest,
    options: { req: ClientRequest; clearTimer: () => void },
    reject: (err: unknown) => void,
    settleOnlyOnce: boolean,
  ): () => void {
    const { signal } = req;
    const onAbort = (): void => {
      options.req.destroy(abortReason(signal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    let done = false;
    const cleanup = (): void => {
      if (done) return;
      done = true;
      options.clearTimer();
      signal?.removeEventListener('abort', onAbort);
    };
    options.req.on('error', (err) => {
      if (settleOnlyOnce) cleanup();
      else options.clearTimer();
      reject(err);
    });
    return cleanup;
  }

  #agentFor(opts: https.RequestOptions): Agent {
    const tls: TlsMaterial = {};
    for (const field of TLS_FIELDS) {
      if (opts[field] !== undefined) (tls as Record<string, unknown>)[field] = opts[field];
    }
    if (this.#agent && this.#tls && sameTls(this.#tls, tls)) return this.#agent;
    // A superseded agent is left to finish its in-flight requests (watches
    // included); its idle sockets expire on their own.
    const agent = this.#isHttps
      ? new https.Agent({ keepAlive: true, ...tls })
      : new http.Agent({ keepAlive: true });
    expireIdleSockets(agent);
    this.#agents.add(agent);
    this.#agent = agent;
    this.#tls = tls;
    return agent;
  }
}

function expireIdleSockets(agent: Agent): void {
  const keepSocketAlive = agent.keepSocketAlive.bind(agent) as (socket: Duplex) => boolean;
  const reuseSocket = agent.reuseSocket.bind(agent);
  // Node destroys a socket whose timeout fires while it sits in the free pool.
  (agent as unknown as { keepSocketAlive: (socket: Duplex) => boolean }).keepSocketAlive = (socket) => {
    const keep = keepSocketAlive(socket);
    (socket as Duplex & { setTimeout(ms: number): void }).setTimeout(FREE_SOCKET_IDLE_MS);
    return keep;
  };
  agent.reuseSocket = (socket, request) => {
    (socket as Duplex & { setTimeout(ms: number): void }).setTimeout(0);
    reuseSocket(socket, request);
  };
}

function sameTls(a: TlsMaterial, b: TlsMaterial): boolean {
  return TLS_FIELDS.every((f) => sameValue(a[f], b[f]));
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((x, i) => sameValue(x, b[i]));
  return false;
}
