import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import type { Informer } from '@regulon/cache';
import type { KubeClient, KubeObject, ResourceType } from '@regulon/client';
import type { Logger } from 'pino';
import type { Manager } from '../manager/manager.ts';
import type { Runnable } from '../reconcile/controller.ts';
import { kindKey } from '../reconcile/context.ts';
import { parseBindAddress } from '../manager/servers.ts';
import {
  AdmissionDeniedError,
  MalformedReviewError,
  allowed,
  denied,
  invalidStatus,
  parseAdmissionReview,
  reviewOf,
  type AdmissionRequest,
  type AdmissionResponse,
  type FieldError,
  type Operation,
} from './admission.ts';
import type { CertificateSource } from './certificates.ts';
import { webhookDefinition, type WebhookDefinition, type WebhookPolicy } from './configurations.ts';
import {
  CONVERSION_PATH,
  ConversionBuilder,
  ConversionRegistry,
  conversionFailed,
  conversionReviewOf,
  parseConversionReview,
  type ConversionDefinition,
  type ConversionRequest,
} from './conversion.ts';
import type { KeyPair } from './generate.ts';
import { webhookMetrics, type WebhookMetrics } from './metrics.ts';
import { jsonPatch } from './patch.ts';

export const DEFAULT_WEBHOOK_BIND_ADDRESS = ':9443';
/**
 * An AdmissionReview carries the object and the old one, each up to the API
 * server's 3 MiB request limit; more than this is no review from an API server.
 */
const MAX_ADMISSION_BODY_BYTES = 8 * 1024 * 1024;
/**
 * A ConversionReview carries every object of a list the API server converts
 * at once: 10,000 objects of 10 KiB are 100 MiB.
 */
const MAX_CONVERSION_BODY_BYTES = 128 * 1024 * 1024;

/** What a handler knows besides the object: the request, a cache of declared kinds, the client, its log and span. */
export interface AdmissionContext {
  readonly request: AdmissionRequest;
  readonly operation: Operation;
  readonly dryRun: boolean;
  /** Aborts when the API server would have given up (the webhook's timeout), or on shutdown. */
  readonly signal: AbortSignal;
  readonly log: Logger;
  readonly span: Span;
  readonly client: KubeClient;
  /** An object of a kind declared with `reads()`, from the manager's shared cache. */
  get<U extends KubeObject>(
    kind: ResourceType<U>,
    namespace: string | undefined,
    name: string,
  ): U | undefined;
  /** The cached objects of a kind declared with `reads()`, in `namespace` (all when undefined). */
  list<U extends KubeObject>(kind: ResourceType<U>, namespace?: string): U[];
}

/**
 * Sets defaults on `obj` (a copy of the request's object) in place; the
 * runtime sends the JSON patch from the request's object to it. Returns
 * warnings, if any, which `kubectl` prints.
 */
export type Defaulter<T> = (obj: T, ctx: AdmissionContext) => void | string[] | Promise<void | string[]>;

/** Field errors (the request is refused, 422 Invalid) and warnings (it is not, but the user sees them). */
export interface Validation {
  errors?: FieldError[] | undefined;
  warnings?: string[] | undefined;
}
type ValidationOutcome = Validation | FieldError[] | void;

/**
 * Checks a kind on create, update and delete; a method left out lets that
 * operation through (and is not registered with the API server). Return
 * field errors for what a person must fix, or throw AdmissionDeniedError for
 * a refusal no field carries.
 */
export interface Validator<T> {
  validateCreate?(obj: T, ctx: AdmissionContext): ValidationOutcome | Promise<ValidationOutcome>;
  validateUpdate?(obj: T, old: T, ctx: AdmissionContext): ValidationOutcome | Promise<ValidationOutcome>;
  validateDelete?(old: T, ctx: AdmissionContext): ValidationOutcome | Promise<ValidationOutcome>;
}

type Handler = (request: AdmissionRequest, ctx: AdmissionContext) => Promise<AdmissionResponse>;

interface AdmissionRoute {
  definition: WebhookDefinition;
  handler: Handler;
  informers: Map<string, Informer<KubeObject>>;
}

/** One path served: what it answers, and how. */
interface Route {
  /** The review it answers: the span's name is `admission` or `conversion`. */
  review: 'AdmissionReview' | 'ConversionReview';
  /** The span's `regulon.webhook`: the admission webhook's name, or `conversion`. */
  name: string;
  maxBodyBytes: number;
  /** The HTTP code and review for a request body; sets the span's status. */
  answer(body: string, span: Span): Promise<{ code: number; review: unknown }>;
}

/** The webhook server could not listen: one line naming the address, as the manager's ListenError. */
export class WebhookListenError extends Error {
  override readonly name = 'WebhookListenError';
  readonly address: string;
  constructor(address: string, cause: unknown) {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    super(
      `webhook address ${address} ${code === 'EADDRINUSE' ? 'is in use' : `cannot be listened on (${code ?? String(cause)})`}`,
      { cause },
    );
    this.address = address;
  }
}

export interface WebhookServerOptions {
  /** Listen address (`:9443`, controller-runtime's default port). */
  bindAddress?: string | undefined;
  /** Where the serving certificate comes from: ManagedCertificates or FileCertificates. */
  certificates: CertificateSource;
}

/**
 * Serves admission and conversion webhooks over HTTPS on its own port, as
 * controller-runtime's webhook.Server: started by the Manager on every replica
 * (not only the leader, so admission and conversion never wait for an
 * election), once the caches the handlers read have synced; stopped with it.
 * Registering it with the Manager is part of constructing it. Each request is
 * counted, timed and traced; a malformed review is answered 400 and reaches
 * no handler; a handler that throws refuses its request (500, logged), a
 * converter that throws fails its conversion, and neither takes the process
 * down.
 */
export class WebhookServer implements Runnable {
  readonly name = 'webhook-server';
  readonly needLeaderElection = false;
  readonly #mgr: Manager;
  readonly #o: WebhookServerOptions;
  readonly #routes = new Map<string, Route>();
  readonly #admission = new Map<string, AdmissionRoute>();
  readonly #conversions = new ConversionRegistry();
  readonly #metrics: WebhookMetrics;
  readonly #log: Logger;
  readonly #inFlight = new Set<Promise<void>>();
  /**
   * Every TCP connection, HTTP or not yet: closeAllConnections() knows only
   * those with an HTTP parser, and a keep-alive connection the API server
   * opened but has not used (Go keeps one idle for 90 s) would otherwise hold
   * close() that long.
   */
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #stopping = new AbortController();
  #failure: Error | undefined;
  port: number | undefined;

  constructor(mgr: Manager, options: WebhookServerOptions) {
    this.#mgr = mgr;
    this.#o = options;
    this.#log = mgr.logger.child({ component: 'webhook' });
    this.#metrics = webhookMetrics(mgr.registry);
    mgr.add(this);
    mgr.health.addReadyCheck('webhook', () =>
      this.#server?.listening ? { ok: true } : { ok: false, detail: 'not serving yet' },
    );
  }

  /** Why the server could not start (its address is busy), if it could not: the binary exits 2 on it. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /** Starts declaring the webhooks of a kind: `.for(Database).withDefaulter(fn, policy).withValidator(v, policy)`. */
  for<T extends KubeObject>(kind: ResourceType<T>): WebhookBuilder<T> {
    return new WebhookBuilder<T>(this, this.#mgr, kind);
  }

  /**
   * Starts declaring the conversions of a kind with several versions, `hub`
   * the version every other converts to and from (usually the stored one):
   * `.conversion(DiskV2).spoke(DiskV1, { toHub, fromHub })`. All kinds are
   * served at {@link CONVERSION_PATH}.
   */
  conversion<H extends KubeObject>(hub: ResourceType<H>): ConversionBuilder<H> {
    if (!this.#routes.has(CONVERSION_PATH))
      this.#routes.set(CONVERSION_PATH, {
        review: 'ConversionReview',
        name: 'conversion',
        maxBodyBytes: MAX_CONVERSION_BODY_BYTES,
        answer: (body, span) => Promise.resolve(this.#convert(body, span)),
      });
    return new ConversionBuilder<H>(this.#conversions, hub);
  }

  /** The admission webhooks registered so far, for the configurations (see webhookConfigurations). */
  definitions(): WebhookDefinition[] {
    return [...this.#admission.values()].map((r) => r.definition);
  }

  /** The kinds converted, for their CRDs' `spec.conversion` (see crdConversion) and CA bundle. */
  conversions(): ConversionDefinition[] {
    return this.#conversions.definitions();
  }

  /** @internal Registers one path; called by WebhookBuilder. */
  register(
    definition: WebhookDefinition,
    handler: Handler,
    informers: Map<string, Informer<KubeObject>>,
  ): void {
    if (this.#routes.has(definition.path))
      throw new Error(`a webhook is already registered at ${definition.path}`);
    const route: AdmissionRoute = { definition, handler, informers };
    this.#admission.set(definition.path, route);
    this.#routes.set(definition.path, {
      review: 'AdmissionReview',
      name: definition.name,
      maxBodyBytes: MAX_ADMISSION_BODY_BYTES,
      answer: (body, span) => this.#admit(route, body, span),
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    const address = this.#o.bindAddress ?? DEFAULT_WEBHOOK_BIND_ADDRESS;
    const certsStop = new AbortController();
    try {
      const pair = await this.#o.certificates.start(
        certsStop.signal,
        (next: KeyPair) => this.#server?.setSecureContext({ ...next, minVersion: 'TLSv1.2' }),
        {
          conversionCRDs: this.conversions().map((c) => c.crdName),
          admission: [...new Set(this.definitions().map((d) => d.type))],
        },
      );
      const server = createServer({ ...pair, minVersion: 'TLSv1.2' }, (req, res) => this.#serve(req, res));
      server.on('connection', (socket: Socket) => {
        this.#sockets.add(socket);
        socket.once('close', () => this.#sockets.delete(socket));
      });
      this.port = await listenOn(server, address);
      this.#server = server;
      this.#log.info({ port: this.port, webhooks: [...this.#routes.keys()] }, 'webhook server serving');
      await new Promise<void>((resolve) =>
        signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }),
      );
    } catch (err) {
      // A webhook server that cannot serve is a manager that cannot admit: stop it, and let the binary say why.
      this.#failure = err instanceof Error ? err : new Error(String(err));
      this.#log.error({ err }, 'webhook server failed to start');
      this.#mgr.stop();
    } finally {
      certsStop.abort();
      await this.#close();
    }
  }

  async #close(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    // No new connection; requests under way finish (each is bounded by its timeout), then nothing stays open.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await Promise.allSettled([...this.#inFlight]);
    this.#stopping.abort();
    server.closeAllConnections();
    for (const socket of this.#sockets) socket.destroy();
    await closed;
    this.#stopping = new AbortController();
  }

  #serve(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0]!;
    const route = this.#routes.get(path);
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`no webhook at ${path}\n`);
      return;
    }
    const done = this.#handle(path, route, req, res).catch((err: unknown) => {
      this.#log.error({ err, webhook: path }, 'webhook response failed');
      if (!res.headersSent) res.writeHead(500).end();
    });
    this.#inFlight.add(done);
    void done.finally(() => this.#inFlight.delete(done));
  }

  async #handle(path: string, route: Route, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const labels = { webhook: path };
    this.#metrics.inFlight.inc(labels);
    const endTimer = this.#metrics.latency.startTimer(labels);
    const write = (code: number, body: unknown) => {
      this.#metrics.requestsTotal.inc({ ...labels, code: String(code) });
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      res
        .writeHead(code, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' })
        .end(text);
    };
    try {
      await this.#mgr.tracer.startActiveSpan(
        route.review === 'AdmissionReview' ? 'admission' : 'conversion',
        {
          kind: SpanKind.SERVER,
          attributes: { 'regulon.webhook': route.name, 'url.path': path },
        },
        async (span) => {
          try {
            const refused = requestProblem(req, route.review);
            if (refused) {
              write(refused.code, refused.message);
              span.setStatus({ code: SpanStatusCode.ERROR, message: refused.message });
              return;
            }
            const body = await readBody(req, route.maxBodyBytes);
            if (body === undefined) {
              write(413, `request body over ${route.maxBodyBytes} bytes\n`);
              span.setStatus({ code: SpanStatusCode.ERROR, message: 'body too large' });
              return;
            }
            const { code, review } = await route.answer(body, span);
            write(code, review);
          } finally {
            span.end();
          }
        },
      );
    } finally {
      endTimer();
      this.#metrics.inFlight.dec(labels);
    }
  }

  async #admit(route: AdmissionRoute, body: string, span: Span): Promise<{ code: number; review: unknown }> {
    let request: AdmissionRequest;
    try {
      request = parseAdmissionReview(body);
    } catch (err) {
      if (!(err instanceof MalformedReviewError)) throw err;
      span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
      // 400 both ways: in the metrics' code and in the review, for a caller that reads only one of them.
      return {
        code: 400,
        review: reviewOf(denied('', { code: 400, reason: 'BadRequest', message: err.message })),
      };
    }
    span.setAttributes({
      'k8s.namespace.name': request.namespace ?? '',
      'regulon.object.name': request.name ?? '',
      'regulon.admission.operation': request.operation,
      'regulon.admission.uid': request.uid,
    });
    const response = await this.#answer(route, request, span);
    span.setAttribute('regulon.admission.allowed', response.allowed);
    span.setStatus({ code: SpanStatusCode.OK });
    return { code: 200, review: reviewOf(response) };
  }

  /** A ConversionReview's answer: 400 for a malformed one, else 200 with Success or a Failure saying why. */
  #convert(body: string, span: Span): { code: number; review: unknown } {
    let request: ConversionRequest;
    try {
      request = parseConversionReview(body);
    } catch (err) {
      if (!(err instanceof MalformedReviewError)) throw err;
      span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
      return {
        code: 400,
        review: conversionReviewOf(conversionFailed('', err.message, { code: 400, reason: 'BadRequest' })),
      };
    }
    span.setAttributes({
      'regulon.conversion.uid': request.uid,
      'regulon.conversion.desired_api_version': request.desiredAPIVersion,
      'regulon.conversion.objects': request.objects.length,
    });
    const log = this.#log.child({
      webhook: 'conversion',
      uid: request.uid,
      desiredAPIVersion: request.desiredAPIVersion,
    });
    let response;
    try {
      response = this.#conversions.review(request, log, span);
    } catch (err) {
      // The registry catches what converters throw; this is a bug of the runtime's own, answered all the same.
      log.error({ err }, 'conversion failed');
      span.recordException(err instanceof Error ? err : new Error(String(err)));
      response = conversionFailed(
        request.uid,
        "internal error in the conversion webhook; the manager's log has the details",
      );
    }
    span.setAttribute('regulon.conversion.succeeded', response.result.status === 'Success');
    span.setStatus(
      response.result.status === 'Success'
        ? { code: SpanStatusCode.OK }
        : { code: SpanStatusCode.ERROR, message: response.result.message ?? '' },
    );
    return { code: 200, review: conversionReviewOf(response) };
  }

  async #answer(route: AdmissionRoute, request: AdmissionRequest, span: Span): Promise<AdmissionResponse> {
    const { definition, informers } = route;
    const log = this.#log.child({
      webhook: definition.name,
      uid: request.uid,
      namespace: request.namespace,
      name: request.name,
      operation: request.operation,
    });
    const informer = (kind: ResourceType) => {
      const found = informers.get(kindKey(kind));
      if (!found)
        throw new Error(
          `webhook ${definition.name} reads ${kindKey(kind)}, which it did not declare with reads()`,
        );
      return found;
    };
    const ctx: AdmissionContext = {
      request,
      operation: request.operation,
      dryRun: request.dryRun === true,
      signal: AbortSignal.any([this.#stopping.signal, AbortSignal.timeout(definition.timeoutSeconds * 1000)]),
      log,
      span,
      client: this.#mgr.client,
      get: <U extends KubeObject>(kind: ResourceType<U>, namespace: string | undefined, name: string) =>
        informer(kind).get(name, namespace) as U | undefined,
      list: <U extends KubeObject>(kind: ResourceType<U>, namespace?: string) =>
        informer(kind).list(namespace) as U[],
    };
    try {
      return await route.handler(request, ctx);
    } catch (err) {
      if (err instanceof AdmissionDeniedError)
        return denied(request.uid, { code: err.code, reason: err.reason, message: err.message });
      // A bug or an outage behind the handler: refused, with no internals in the message the user sees.
      log.error({ err }, 'webhook handler failed');
      span.recordException(err instanceof Error ? err : new Error(String(err)));
      return denied(request.uid, {
        code: 500,
        reason: 'InternalError',
        message: `internal error in webhook ${definition.name}; the manager's log has the details`,
      });
    }
  }
}

/** What makes a request no review at all, before its body is read. */
function requestProblem(
  req: IncomingMessage,
  review: Route['review'],
): { code: number; message: string } | undefined {
  if (req.method !== 'POST')
    return {
      code: 405,
      message: `${req.method} not allowed: POST ${review === 'AdmissionReview' ? 'an' : 'a'} ${review}\n`,
    };
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
  if (type !== 'application/json')
    return { code: 415, message: `content-type ${JSON.stringify(type)}: expected application/json\n` };
  return undefined;
}

async function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function listenOn(server: Server, address: string): Promise<number> {
  let bind: ReturnType<typeof parseBindAddress>;
  try {
    bind = parseBindAddress(address);
  } catch (err) {
    throw new WebhookListenError(address, err);
  }
  if (!bind)
    throw new WebhookListenError(address, new Error('a webhook server cannot be disabled by address 0'));
  const { host, port } = bind;
  await new Promise<void>((resolve, reject) => {
    const fail = (err: Error) => reject(new WebhookListenError(address, err));
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

const nameOf = (request: AdmissionRequest) =>
  request.name || ((request.object ?? request.oldObject) as KubeObject | undefined)?.metadata?.name || '';

function outcome(result: ValidationOutcome): Validation {
  if (!result) return {};
  return Array.isArray(result) ? { errors: result } : result;
}

/**
 * Declares the webhooks of one kind (controller-runtime's
 * `NewWebhookManagedBy(mgr).For(obj).WithDefaulter(d).WithValidator(v)`):
 *
 *   webhooks.for(Database).reads(Kinds.Secret).withValidator({ validateCreate(db, ctx) { … } }, { failurePolicy: 'Fail' })
 *
 * Each `with…` registers its path at once; there is nothing to finish.
 */
export class WebhookBuilder<T extends KubeObject> {
  readonly #server: WebhookServer;
  readonly #mgr: Manager;
  readonly #kind: ResourceType<T>;
  readonly #informers = new Map<string, Informer<KubeObject>>();

  constructor(server: WebhookServer, mgr: Manager, kind: ResourceType<T>) {
    this.#server = server;
    this.#mgr = mgr;
    this.#kind = kind;
  }

  /** A kind the handlers read through `ctx.get`/`ctx.list`, from the manager's shared informer (one watch per kind). */
  reads(kind: ResourceType): this {
    this.#informers.set(kindKey(kind), this.#mgr.informerFor<KubeObject>(kind));
    return this;
  }

  /** A mutating webhook for CREATE and UPDATE that sends the JSON patch from the object to what `defaulter` made of it. */
  withDefaulter(defaulter: Defaulter<T>, policy: WebhookPolicy): this {
    const definition = webhookDefinition('mutating', this.#kind, policy);
    this.#server.register(
      definition,
      async (request, ctx) => {
        if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return allowed(request.uid);
        const obj = structuredClone(request.object) as T;
        const warnings = (await defaulter(obj, ctx)) ?? [];
        const patch = jsonPatch(request.object, obj);
        return allowed(request.uid, {
          ...(patch.length
            ? {
                patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
                patchType: 'JSONPatch' as const,
              }
            : {}),
          ...(warnings.length ? { warnings } : {}),
        });
      },
      new Map(this.#informers),
    );
    return this;
  }

  /** A validating webhook for the operations `validator` has a method for. */
  withValidator(validator: Validator<T>, policy: WebhookPolicy): this {
    const operations: Operation[] = [
      ...(validator.validateCreate ? (['CREATE'] as const) : []),
      ...(validator.validateUpdate ? (['UPDATE'] as const) : []),
      ...(validator.validateDelete ? (['DELETE'] as const) : []),
    ];
    if (!operations.length) throw new Error(`a validator of ${this.#kind.kind} validates no operation`);
    const definition = webhookDefinition('validating', this.#kind, { operations, ...policy });
    this.#server.register(
      definition,
      async (request, ctx) => {
        const obj = request.object as T;
        const old = request.oldObject as T;
        const result = outcome(
          request.operation === 'CREATE'
            ? await validator.validateCreate?.(obj, ctx)
            : request.operation === 'UPDATE'
              ? await validator.validateUpdate?.(obj, old, ctx)
              : request.operation === 'DELETE'
                ? await validator.validateDelete?.(old, ctx)
                : undefined,
        );
        const warnings = result.warnings ?? [];
        if (result.errors?.length)
          return denied(request.uid, invalidStatus(request.kind, nameOf(request), result.errors), warnings);
        return allowed(request.uid, warnings.length ? { warnings } : {});
      },
      new Map(this.#informers),
    );
    return this;
  }
}
