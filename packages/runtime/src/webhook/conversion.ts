/**
 * CRD version conversion: the `apiextensions.k8s.io/v1` ConversionReview
 * protocol a CustomResourceDefinition with `spec.conversion.strategy: Webhook`
 * speaks, as controller-runtime's pkg/webhook/conversion. Converters are
 * hub-and-spoke (kubebuilder's Hub and Convertible): every version of a kind
 * converts to and from one hub version, so N versions need N - 1 pairs of
 * functions instead of N² and a conversion between two spokes goes through
 * the hub.
 *
 * The API server sends a review whenever it reads or writes an object at a
 * version other than the one it stores: each object of a list, each watch
 * event, every write. A review either converts every object or fails as a
 * whole with a message the API server passes on to the client
 * (`conversion webhook for <group>/<version>, Kind=<kind> failed: <message>`).
 */
import type { Span } from '@opentelemetry/api';
import type { KubeObject, ObjectMeta, ResourceType } from '@regulon/client';
import type { Logger } from '@regulon/util';
import { isObject, MalformedReviewError, reviewRequest } from './admission.ts';

/**
 * Where conversions are served: one path for every kind of the server, as
 * controller-runtime does (and kubebuilder's CRD patches name). A review says
 * the apiVersion and kind of each object, which is all the routing needs, and
 * one path means one clientConfig for every CRD of the manager.
 */
export const CONVERSION_PATH = '/convert';

export interface ConversionRequest {
  uid: string;
  /** `group/version` every object is to be converted to. */
  desiredAPIVersion: string;
  objects: KubeObject[];
}

/** metav1.Status, as a conversion answers with it: the API server reads `status` and `message`. */
export interface ConversionResult {
  status: 'Success' | 'Failure';
  message?: string | undefined;
  code?: number | undefined;
  reason?: string | undefined;
}

export interface ConversionResponse {
  uid: string;
  /** The objects at `desiredAPIVersion`, in the order of the request's; empty on failure. */
  convertedObjects: KubeObject[];
  result: ConversionResult;
}

export interface ConversionReview {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'ConversionReview';
  request?: ConversionRequest | undefined;
  response?: ConversionResponse | undefined;
}

/**
 * Thrown by a converter for an object the other version cannot represent: the
 * review fails and its message reaches the user (through the API server's
 * error). Anything else a converter throws is a bug: the review fails with a
 * message that has no internals, and the manager's log has the error.
 */
export class ConversionError extends Error {
  override readonly name = 'ConversionError';
}

/**
 * How one version of a kind (a spoke) converts to and from the hub version,
 * kubebuilder's `ConvertTo` and `ConvertFrom`. Each function:
 *
 * - gets its own copy of the object, which it may change and return;
 * - returns the object at the other version: `apiVersion` and `kind` are set
 *   by the runtime, and so is `metadata`, which is the source's but for the
 *   labels and annotations the function returns (the API server keeps no other
 *   change of metadata: see {@link ConversionRegistry});
 * - is synchronous and pure: it runs on every read at a version other than the
 *   stored one, once per object of a list, so it does no I/O;
 * - throws {@link ConversionError} for an object the other version cannot
 *   represent.
 *
 * A spoke → hub → spoke round trip must give back the same object. A field
 * only the hub has is kept in an annotation on the spoke
 * ({@link stashConversionData}) and restored from it on the way back
 * ({@link takeConversionData}).
 */
export interface SpokeConverter<S extends KubeObject, H extends KubeObject> {
  toHub(spoke: S): H;
  fromHub(hub: H): S;
}

/** One kind's conversions, as registered: the CRD whose conversion webhook this server is. */
export interface ConversionDefinition {
  /** The CustomResourceDefinition's name: `plural.group`. */
  crdName: string;
  group: string;
  kind: string;
  plural: string;
  hub: string;
  /** Every version converted: the hub and its spokes. */
  versions: string[];
}

type AnyConverter = SpokeConverter<KubeObject, KubeObject>;

interface KindConversions {
  hub: ResourceType;
  spokes: Map<string, AnyConverter>;
}

/**
 * Parses and checks a ConversionReview body: a request with a uid, a desired
 * apiVersion and objects that each say their apiVersion and kind. Anything
 * else is a MalformedReviewError, answered 400 without reaching a converter.
 */
export function parseConversionReview(body: string): ConversionRequest {
  const req = reviewRequest(body, 'apiextensions.k8s.io/v1', 'ConversionReview');
  const desired = req['desiredAPIVersion'];
  if (typeof desired !== 'string' || desired === '')
    throw new MalformedReviewError('request.desiredAPIVersion is missing');
  const objects = req['objects'];
  if (!Array.isArray(objects)) throw new MalformedReviewError('request.objects is not a list');
  objects.forEach((o: unknown, i) => {
    if (!isObject(o) || typeof o['apiVersion'] !== 'string' || typeof o['kind'] !== 'string')
      throw new MalformedReviewError(`request.objects[${i}] has no apiVersion and kind`);
  });
  return { uid: req['uid'], desiredAPIVersion: desired, objects: objects as KubeObject[] };
}

/** The review to send back for `response`. */
export function conversionReviewOf(response: ConversionResponse): ConversionReview {
  return { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', response };
}

/** A failed conversion: nothing converted, and why. */
export function conversionFailed(
  uid: string,
  message: string,
  extra: Partial<ConversionResult> = {},
): ConversionResponse {
  return { uid, convertedObjects: [], result: { status: 'Failure', message, ...extra } };
}

function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.lastIndexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

const qualified = (kind: string, group: string) => (group ? `${kind}.${group}` : kind);

/** `Disk "ns/name"`, as a message names the object. */
function describe(obj: KubeObject): string {
  const meta = obj.metadata;
  const name = meta?.name || (meta?.generateName ? `${meta.generateName}…` : '(unnamed)');
  return `${obj.kind} ${JSON.stringify(meta?.namespace ? `${meta.namespace}/${name}` : name)}`;
}

/**
 * The converters of every kind a server converts, and the review handling.
 *
 * A review converts each object to the desired version: an object already
 * there is returned unchanged and reaches no converter; another goes through
 * the hub. What a converter returns is made a valid answer: `apiVersion` and
 * `kind` of the target version, and the source's metadata with the labels and
 * annotations the converter returned (a label or annotation map it left out is
 * the source's; an empty one removes them). That is what the API server keeps
 * of a webhook's answer anyway (it refuses a changed name, namespace or uid
 * and restores the rest), so a converter cannot get metadata wrong.
 *
 * The review fails as a whole, naming the object, when an object is of a kind
 * or version nothing is registered for, or a converter throws.
 */
export class ConversionRegistry {
  readonly #kinds = new Map<string, KindConversions>();

  /** Starts a kind's conversions with its hub version. */
  addHub(hub: ResourceType): void {
    const key = qualified(hub.kind, hub.group);
    if (this.#kinds.has(key))
      throw new Error(
        `conversions of ${key} are already registered (hub ${this.#kinds.get(key)!.hub.version})`,
      );
    this.#kinds.set(key, { hub, spokes: new Map() });
  }

  /** Adds a spoke version to the conversions of `hub`'s kind. */
  addSpoke(hub: ResourceType, spoke: ResourceType, converter: AnyConverter): void {
    const key = qualified(hub.kind, hub.group);
    const kind = this.#kinds.get(key);
    if (!kind) throw new Error(`no hub is registered for ${key}`);
    if (spoke.group !== hub.group || spoke.kind !== hub.kind)
      throw new Error(
        `${qualified(spoke.kind, spoke.group)} ${spoke.version} is no version of ${key}: a conversion keeps the group and kind`,
      );
    if (spoke.version === hub.version || kind.spokes.has(spoke.version))
      throw new Error(`${key} ${spoke.version} is already registered`);
    kind.spokes.set(spoke.version, converter);
  }

  definitions(): ConversionDefinition[] {
    return [...this.#kinds.values()].map(({ hub, spokes }) => ({
      crdName: `${hub.plural}.${hub.group}`,
      group: hub.group,
      kind: hub.kind,
      plural: hub.plural,
      hub: hub.version,
      versions: [hub.version, ...spokes.keys()],
    }));
  }

  /** Answers a review; never throws (a converter's error fails the review and is logged). */
  review(request: ConversionRequest, log: Logger, span?: Span): ConversionResponse {
    const convertedObjects: KubeObject[] = [];
    for (const obj of request.objects) {
      const out = this.#convert(obj, request.desiredAPIVersion, log, span);
      if (typeof out === 'string') return conversionFailed(request.uid, out);
      convertedObjects.push(out);
    }
    return { uid: request.uid, convertedObjects, result: { status: 'Success' } };
  }

  /** The object at `desired`, or why it cannot be. */
  #convert(obj: KubeObject, desired: string, log: Logger, span?: Span): KubeObject | string {
    const from = splitApiVersion(obj.apiVersion!);
    const to = splitApiVersion(desired);
    if (from.group !== to.group)
      return `cannot convert ${describe(obj)} from ${obj.apiVersion} to ${desired}: a conversion keeps the group`;
    if (from.version === to.version) return obj;
    const key = qualified(obj.kind!, from.group);
    const kind = this.#kinds.get(key);
    if (!kind)
      return `no conversion of ${key} is registered with this webhook (it converts ${[...this.#kinds.keys()].join(', ') || 'nothing'})`;
    const known = [kind.hub.version, ...kind.spokes.keys()];
    for (const version of [from.version, to.version])
      if (!known.includes(version))
        return `cannot convert ${describe(obj)} from ${from.version} to ${to.version}: ${key} has no version ${version} registered for conversion (registered: ${known.join(', ')})`;
    try {
      const source = kind.spokes.get(from.version);
      const target = kind.spokes.get(to.version);
      const hub = source ? this.#step(obj, (o) => source.toHub(o), from.group, kind.hub.version) : obj;
      return target ? this.#step(hub, (o) => target.fromHub(o), to.group, to.version) : hub;
    } catch (err) {
      const where = `converting ${describe(obj)} from ${from.version} to ${to.version}`;
      if (err instanceof ConversionError) {
        log.warn({ err: err.message, object: describe(obj) }, 'conversion refused');
        return `${where}: ${err.message}`;
      }
      // A bug in a converter: the review fails, with no internals in the message the user sees.
      log.error({ err, object: describe(obj), from: from.version, to: to.version }, 'converter failed');
      span?.recordException(err instanceof Error ? err : new Error(String(err)));
      return `${where} failed: internal error in the converter; the manager's log has the details`;
    }
  }

  /** One converter call on a copy of `source`, its result made a valid object of `group/version`. */
  #step(
    source: KubeObject,
    convert: (obj: KubeObject) => KubeObject,
    group: string,
    version: string,
  ): KubeObject {
    const out: unknown = convert(structuredClone(source));
    if (!isObject(out)) throw new TypeError(`the converter to ${version} returned ${typeof out}`);
    const metadata: ObjectMeta = structuredClone(source.metadata ?? {});
    const returned = isObject(out['metadata']) ? out['metadata'] : {};
    for (const field of ['labels', 'annotations'] as const) {
      const value = field in returned ? returned[field] : metadata[field];
      if (value !== undefined && value !== null && !isStringMap(value))
        throw new ConversionError(`the converter to ${version} set metadata.${field} to other than strings`);
      if (value && Object.keys(value).length) metadata[field] = value;
      else delete metadata[field];
    }
    const { apiVersion: _a, kind: _k, metadata: _m, ...rest } = out;
    return { apiVersion: group ? `${group}/${version}` : version, kind: source.kind, metadata, ...rest };
  }
}

function isStringMap(v: unknown): v is Record<string, string> {
  return isObject(v) && Object.values(v).every((x) => typeof x === 'string');
}

/**
 * Declares the conversions of one kind (controller-runtime's
 * `NewWebhookManagedBy(mgr).For(&v2.Disk{})` with `v2.Disk` the Hub):
 *
 *   webhooks.conversion(DiskV2).spoke(DiskV1, { toHub: (v1) => …, fromHub: (v2) => … })
 *
 * The hub is usually the stored version. Each `spoke` registers at once; there
 * is nothing to finish.
 */
export class ConversionBuilder<H extends KubeObject> {
  readonly #registry: ConversionRegistry;
  readonly #hub: ResourceType<H>;

  constructor(registry: ConversionRegistry, hub: ResourceType<H>) {
    this.#registry = registry;
    this.#hub = hub;
    registry.addHub(hub);
  }

  /** A version of the kind that converts to and from the hub. */
  spoke<S extends KubeObject>(kind: ResourceType<S>, converter: SpokeConverter<S, H>): this {
    this.#registry.addSpoke(this.#hub, kind, converter);
    return this;
  }
}

// ---- fields only one version has: kept in an annotation across a round trip ----

/**
 * Keeps `data` (JSON) in the annotation `annotation` of `obj`, for the
 * converter back to take: what the hub has and `obj`'s version has no field
 * for (Cluster API's `MarshalData`). `undefined` removes the annotation.
 */
export function stashConversionData(obj: KubeObject, annotation: string, data: unknown): void {
  if (data === undefined) {
    takeConversionData(obj, annotation);
    return;
  }
  obj.metadata ??= {};
  obj.metadata.annotations = { ...obj.metadata.annotations, [annotation]: JSON.stringify(data) };
}

/**
 * Removes the annotation {@link stashConversionData} wrote and returns its
 * data (`undefined` when there is none), for the caller to check and restore.
 * The annotations map stays, empty if nothing else is in it: returned so, it
 * removes the annotation from the converted object (a map left out would be
 * the source's). An annotation that is no JSON is a ConversionError naming it.
 */
export function takeConversionData(obj: KubeObject, annotation: string): unknown {
  const annotations = obj.metadata?.annotations;
  const raw = annotations?.[annotation];
  if (raw === undefined) return undefined;
  delete annotations![annotation];
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw new ConversionError(`annotation ${annotation} is not the JSON a conversion wrote: ${raw}`);
  }
}
