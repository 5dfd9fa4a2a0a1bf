import { TokenBucket, abortReason, realClock, sleep, type Clock } from '@regulon/util';
import {
  CLIENT_VERSION,
  DEFAULT_BURST,
  DEFAULT_QPS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  defaultUserAgent,
  loadKubeConfig,
  type ClientOptions,
  type LoadOptions,
} from './config.ts';
import { Discovery } from './discovery.ts';
import { ApiError, ConfigError, TimeoutError, errorFromStatus, isStatus, syntheticStatus } from './errors.ts';
import { apiVersionOf, resourcePath, type ResourceType } from './kinds.ts';
import type { KubeConfigSource } from './kubeconfig.ts';
import { requestMetrics, type RequestMetrics } from './metrics.ts';
import { METADATA_ACCEPT, buildPath, encodeBody, type RequestOptions } from './request.ts';
import { ResourceClientImpl, type ResourceClient } from './resource.ts';
import {
  backoffDelayMs,
  defaultRetryPolicy,
  isIdempotent,
  isRetryable,
  parseRetryAfter,
  type AttemptOutcome,
  type RetryPolicy,
} from './retry.ts';
import { endSpanError, endSpanOk, recordRetry, startRequestSpan } from './tracing.ts';
import { Transport, type HttpTransport, type OpenStream, type TransportResponse } from './transport.ts';
import type { KubeObject, PartialObjectMetadata, WatchEvent } from './types.ts';
import { decodeWatch, type WatchOptions } from './watch.ts';

/**
 * Typed access to one Kubernetes API server. Every request is rate limited,
 * metered, traced, and (where safe) retried; see README for the policies.
 */
export class KubeClient {
  /** The API server URL, e.g. `https://127.0.0.1:6443`. */
  readonly server: string;
  readonly #transport: HttpTransport;
  readonly #limiter: TokenBucket;
  readonly #retry: RetryPolicy;
  readonly #timeoutMs: number;
  readonly #userAgent: string;
  readonly #clock: Clock;
  readonly #metrics: RequestMetrics;
  readonly #discovery: Discovery;
  #writeGuard: (() => void) | undefined;

  /** `transport` is for tests of this package; it replaces the HTTP layer. */
  constructor(kc: KubeConfigSource, opts: ClientOptions = {}, transport?: HttpTransport) {
    this.#transport = transport ?? new Transport(kc);
    this.server = this.#transport.server.href.replace(/\/$/, '');
    this.#clock = opts.clock ?? realClock;
    // At qps Infinity the bucket is always full: no request waits.
    this.#limiter = TokenBucket.perSecond(opts.qps ?? DEFAULT_QPS, opts.burst ?? DEFAULT_BURST, this.#clock);
    this.#retry = { ...defaultRetryPolicy, maxRetries: opts.maxRetries ?? defaultRetryPolicy.maxRetries };
    this.#timeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#userAgent = opts.userAgent ?? defaultUserAgent();
    this.#metrics = requestMetrics(opts.registry, this.#transport.host);
    this.#discovery = new Discovery((o) => this.request(o));
  }

  static readonly version = CLIENT_VERSION;

  static fromKubeConfig(kc: KubeConfigSource, opts: ClientOptions = {}): KubeClient {
    return new KubeClient(kc, opts);
  }

  /**
   * `opts.kubeConfig` if given; else an explicit `kubeconfigPath`; else
   * KUBECONFIG or ~/.kube/config; else the in-cluster service account.
   */
  static load(opts: LoadOptions = {}): KubeClient {
    const { kubeconfigPath, context, ...clientOpts } = opts;
    let kc = clientOpts.kubeConfig;
    if (!kc)
      kc = loadKubeConfig({ ...(kubeconfigPath ? { kubeconfigPath } : {}), ...(context ? { context } : {}) });
    else if (context) {
      if (!kc.getContextObject(context)) throw new ConfigError(`kubeconfig has no context "${context}"`);
      kc.setCurrentContext(context);
    }
    return new KubeClient(kc, clientOpts);
  }

  resource<T extends KubeObject = KubeObject>(type: ResourceType<T>): ResourceClient<T> {
    return new ResourceClientImpl<T>(this, type);
  }

  /**
   * Resolves a kind to its REST resource through API discovery; cached per
   * group-version. Discovery cannot know the object type: `T` is the caller's
   * word for it (KubeObject unless given).
   */
  async discover<T extends KubeObject = KubeObject>(
    group: string,
    version: string,
    kind: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<ResourceType<T>> {
    return (await this.#discovery.resolve(group, version, kind, opts.signal)) as ResourceType<T>;
  }

  /**
   * `guard` runs before every attempt of a request that is not a read (GET, HEAD), after the
   * rate limiter and right before the request is sent; what it throws fails the request unsent
   * and is not retried. The Manager guards with its leader election: a leader whose renew
   * deadline has passed sends nothing, even in the turn of its event loop that runs before its
   * deadline timer (a process resumed after a freeze handles the replies that came meanwhile
   * first). One guard per client; `undefined` removes it.
   */
  guardWrites(guard: (() => void) | undefined): void {
    this.#writeGuard = guard;
  }

  /** Low-level request: JSON in, JSON out, typed errors. */
  async request<R = unknown>(opts: RequestOptions): Promise<R> {
    const res = await this.#exchange(opts);
    return decodeResponse<R>(res);
  }

  /**
   * Streams a watch. Ends when the server closes the stream or the signal
   * aborts (without an error); throws a typed ApiError when the server
   * refuses the watch. Never retried and not bound by the request timeout.
   */
  watch(
    type: ResourceType,
    opts: WatchOptions & { metadataOnly: true },
  ): AsyncIterable<WatchEvent<PartialObjectMetadata>>;
  watch<T extends KubeObject = KubeObject>(
    type: ResourceType,
    opts?: WatchOptions,
  ): AsyncIterable<WatchEvent<T>>;
  watch<T extends KubeObject = KubeObject>(
    type: ResourceType,
    opts: WatchOptions = {},
  ): AsyncIterable<WatchEvent<T>> {
    return this.#watch<T>(type, opts);
  }

  /** Closes all sockets, idle and busy (watches included). */
  close(): void {
    this.#transport.close();
  }

  async *#watch<T extends KubeObject>(type: ResourceType, opts: WatchOptions): AsyncGenerator<WatchEvent<T>> {
    const { signal } = opts;
    let stream: OpenStream;
    try {
      stream = await this.#openWatch(type, opts);
    } catch (err) {
      if (signal?.aborted) return;
      throw err;
    }
    const typeMeta = opts.metadataOnly ? undefined : { apiVersion: apiVersionOf(type), kind: type.kind };
    try {
      opts.onOpen?.();
      yield* decodeWatch<T>(stream.response, typeMeta);
    } catch (err) {
      if (signal?.aborted) return;
      throw err;
    } finally {
      stream.close();
    }
  }

  async #openWatch(type: ResourceType, opts: WatchOptions): Promise<OpenStream> {
    const path = resourcePath(type, opts.namespace);
    const query = {
      watch: '1',
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
      shardSelector: opts.shardSelector,
      resourceVersion: opts.resourceVersion,
      resourceVersionMatch: opts.resourceVersionMatch,
      allowWatchBookmarks: opts.allowWatchBookmarks ? 'true' : undefined,
      sendInitialEvents: opts.sendInitialEvents === undefined ? undefined : String(opts.sendInitialEvents),
      timeoutSeconds: opts.timeoutSeconds,
    };
    const { signal } = opts;
    const started = performance.now();
    await this.#limiter.take(signal);
    const span = startRequestSpan('GET', path, this.#transport.server);
    let stream: OpenStream;
    try {
      stream = await this.#transport.open({
        method: 'GET',
        path: buildPath(path, query),
        headers: this.#headers(opts.metadataOnly ? METADATA_ACCEPT : 'application/json'),
        ...(signal ? { signal } : {}),
        // Bounds the wait for response headers only; the stream is unbounded.
        timeoutMs: this.#timeoutMs,
      });
    } catch (err) {
      if (!signal?.aborted) {
        this.#metrics.attempt('GET', '<error>');
        this.#metrics.request('GET', (performance.now() - started) / 1000);
      }
      endSpanError(span, err);
      throw err;
    }
    const code = stream.response.statusCode ?? 0;
    // A watch's latency is the wait for its response headers, as in client-go.
    this.#metrics.attempt('GET', code);
    this.#metrics.request('GET', (performance.now() - started) / 1000);
    if (code === 200) {
      endSpanOk(span, code);
      return stream;
    }
    let error: unknown;
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of stream.response) chunks.push(chunk as Buffer);
      error = toApiError({ statusCode: code, headers: stream.response.headers, body: Buffer.concat(chunks) });
    } catch (err) {
      error = err;
    } finally {
      stream.close();
    }
    endSpanError(span, error, code);
    throw error;
  }

  /** Rate limit, send, meter, retry; returns a 2xx response or throws. */
  async #exchange(opts: RequestOptions): Promise<TransportResponse> {
    const method = opts.method.toUpperCase();
    const { signal } = opts;
    const body = encodeBody(opts.body);
    const contentType = body ? (opts.contentType ?? 'application/json') : undefined;
    const idempotent = opts.idempotent ?? isIdempotent(method, contentType);
    const headers = this.#headers(opts.accept ?? 'application/json');
    if (contentType) headers['content-type'] = contentType;
    const path = buildPath(opts.path, opts.query);
    const timeoutMs = opts.timeoutMs ?? this.#timeoutMs;
    const span = startRequestSpan(method, opts.path, this.#transport.server);
    const started = performance.now();
    let lastCode: number | undefined;
    try {
      for (let retry = 0; ; retry++) {
        await this.#limiter.take(signal);
        if (method !== 'GET' && method !== 'HEAD') this.#writeGuard?.();
        let res: TransportResponse | undefined;
        let failure: unknown;
        try {
          res = await this.#transport.send({
            method,
            path,
            headers,
            ...(body ? { body } : {}),
            ...(signal ? { signal } : {}),
            timeoutMs,
          });
        } catch (err) {
          failure = err;
        }
        if (!res && signal?.aborted) throw abortReason(signal);
        this.#metrics.attempt(method, res ? res.statusCode : '<error>');
        if (res && res.statusCode >= 200 && res.statusCode < 300) {
          endSpanOk(span, res.statusCode);
          return res;
        }
        lastCode = res?.statusCode;
        const error = res ? toApiError(res) : failure;
        const outcome: AttemptOutcome = res
          ? { kind: 'response', code: res.statusCode }
          : { kind: 'network', errorCode: networkErrorCode(failure) };
        if (retry >= this.#retry.maxRetries || !isRetryable(outcome, idempotent)) throw error;
        const retryAfter = error instanceof ApiError ? error.retryAfterSeconds : undefined;
        const delay = backoffDelayMs(retry, this.#retry, retryAfter);
        recordRetry(span, {
          'http.request.resend_count': retry + 1,
          'retry.delay_ms': Math.round(delay),
          'retry.reason': res ? String(res.statusCode) : (networkErrorCode(failure) ?? 'error'),
        });
        await sleep(this.#clock, delay, signal);
      }
    } catch (err) {
      endSpanError(span, err, lastCode);
      throw err;
    } finally {
      if (!signal?.aborted) this.#metrics.request(method, (performance.now() - started) / 1000);
    }
  }

  #headers(accept: string): Record<string, string> {
    return { accept, 'user-agent': this.#userAgent };
  }
}

function networkErrorCode(err: unknown): string | undefined {
  if (err instanceof TimeoutError) return undefined;
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

function toApiError(res: TransportResponse): ApiError {
  const text = res.body.toString('utf8');
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  const status = isStatus(parsed) ? parsed : syntheticStatus(res.statusCode, isJsonLike(text) ? '' : text);
  return errorFromStatus(res.statusCode, status, parseRetryAfter(res.headers['retry-after']));
}

function isJsonLike(text: string): boolean {
  const t = text.trimStart();
  return t.startsWith('{') || t.startsWith('[');
}

function decodeResponse<R>(res: TransportResponse): R {
  if (res.statusCode === 204 || res.body.length === 0) return undefined as R;
  const type = String(res.headers['content-type'] ?? '');
  const text = res.body.toString('utf8');
  if (!type.includes('json')) return text as R;
  try {
    return JSON.parse(text) as R;
  } catch {
    // The body is deliberately not quoted: it may be a Secret.
    throw new Error(`invalid JSON in ${res.statusCode} response from the API server`);
  }
}
