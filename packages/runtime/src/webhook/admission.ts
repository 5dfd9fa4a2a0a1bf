/**
 * The admission.k8s.io/v1 wire format and the answers a webhook gives, shaped
 * as the API server's own: a refusal is a `Status` of reason `Invalid` whose
 * causes name the fields (what `kubectl` prints for a schema violation), so a
 * user cannot tell a webhook's check from a built-in one but by its prefix.
 */

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
const OPERATIONS: readonly Operation[] = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface UserInfo {
  username?: string | undefined;
  uid?: string | undefined;
  groups?: string[] | undefined;
  extra?: Record<string, string[]> | undefined;
}

export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  resource: { group: string; version: string; resource: string };
  subResource?: string | undefined;
  name?: string | undefined;
  namespace?: string | undefined;
  operation: Operation;
  userInfo: UserInfo;
  object?: unknown;
  oldObject?: unknown;
  dryRun?: boolean | undefined;
  options?: unknown;
}

/** metav1.StatusCause. */
export interface StatusCause {
  reason: string;
  message: string;
  field: string;
}

/** metav1.Status, as a webhook returns it in `response.status`. */
export interface AdmissionStatus {
  status?: 'Success' | 'Failure' | undefined;
  code: number;
  reason?: string | undefined;
  message: string;
  details?: { name?: string; group?: string; kind?: string; causes?: StatusCause[] } | undefined;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: AdmissionStatus | undefined;
  patch?: string | undefined;
  patchType?: 'JSONPatch' | undefined;
  warnings?: string[] | undefined;
}

export interface AdmissionReview {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  request?: AdmissionRequest | undefined;
  response?: AdmissionResponse | undefined;
}

/** A request body that is no AdmissionReview the handlers can answer. */
export class MalformedReviewError extends Error {
  override readonly name = 'MalformedReviewError';
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The `request` of a review body (AdmissionReview, ConversionReview) of
 * `apiVersion` and `kind`, with its uid: what every review starts with. The
 * rest each kind of review checks itself.
 */
export function reviewRequest(
  body: string,
  apiVersion: string,
  kind: string,
): Record<string, unknown> & { uid: string } {
  let review: unknown;
  try {
    review = JSON.parse(body);
  } catch (err) {
    throw new MalformedReviewError(`request body is not JSON: ${(err as Error).message}`);
  }
  if (!isObject(review)) throw new MalformedReviewError('request body is not a JSON object');
  if (review['apiVersion'] !== apiVersion || review['kind'] !== kind)
    throw new MalformedReviewError(
      `expected an ${apiVersion} ${kind}, got ${String(review['apiVersion'])} ${String(review['kind'])}`,
    );
  const req = review['request'];
  if (!isObject(req)) throw new MalformedReviewError(`${kind} has no request`);
  if (typeof req['uid'] !== 'string' || req['uid'] === '')
    throw new MalformedReviewError('request.uid is missing');
  return req as Record<string, unknown> & { uid: string };
}

/**
 * Parses and checks an AdmissionReview body: everything a handler relies on is
 * there and of its type, so a malformed review is answered 400 here and never
 * reaches (or crashes) a handler.
 */
export function parseAdmissionReview(body: string): AdmissionRequest {
  const req = reviewRequest(body, 'admission.k8s.io/v1', 'AdmissionReview');
  if (!OPERATIONS.includes(req['operation'] as Operation))
    throw new MalformedReviewError(`request.operation ${JSON.stringify(req['operation'])} is not known`);
  const kind = req['kind'];
  if (!isObject(kind) || typeof kind['kind'] !== 'string' || typeof kind['version'] !== 'string')
    throw new MalformedReviewError('request.kind is missing');
  const operation = req['operation'] as Operation;
  if ((operation === 'CREATE' || operation === 'UPDATE') && !isObject(req['object']))
    throw new MalformedReviewError(`a ${operation} request without request.object`);
  if ((operation === 'UPDATE' || operation === 'DELETE') && !isObject(req['oldObject']))
    throw new MalformedReviewError(`a ${operation} request without request.oldObject`);
  return {
    ...(req as unknown as AdmissionRequest),
    kind: {
      group: typeof kind['group'] === 'string' ? kind['group'] : '',
      version: kind['version'],
      kind: kind['kind'],
    },
    userInfo: isObject(req['userInfo']) ? req['userInfo'] : {},
  };
}

/** The review to send back for `response`. */
export function reviewOf(response: AdmissionResponse): AdmissionReview {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}

// ---- field errors: apimachinery's field.Error, as the API server words them ----

/** field.ErrorType, as its CauseType string. */
export type FieldErrorType =
  | 'FieldValueNotFound'
  | 'FieldValueRequired'
  | 'FieldValueDuplicate'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong';

const TYPE_TEXT: Record<FieldErrorType, string> = {
  FieldValueNotFound: 'Not found',
  FieldValueRequired: 'Required value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
};

/** One field's problem: `field` is the path as the API server writes it (`spec.credentials.secretName`). */
export interface FieldError {
  type: FieldErrorType;
  field: string;
  /** The offending value; shown for the types that show one (Invalid, Duplicate, Not found, Unsupported). */
  value?: unknown;
  detail: string;
}

const SHOWS_VALUE = new Set<FieldErrorType>([
  'FieldValueNotFound',
  'FieldValueDuplicate',
  'FieldValueInvalid',
  'FieldValueNotSupported',
]);

/** Go's %q of a string, %v of a number or boolean, JSON otherwise: how apimachinery shows a value. */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === undefined || value === null) return 'null';
  return JSON.stringify(value);
}

/** field.Error.ErrorBody(): the message without the field (`Invalid value: "x": why`). */
export function errorBody(err: FieldError): string {
  const head = SHOWS_VALUE.has(err.type)
    ? `${TYPE_TEXT[err.type]}: ${shown(err.value)}`
    : TYPE_TEXT[err.type];
  return err.detail ? `${head}: ${err.detail}` : head;
}

export const fieldErrors = {
  invalid: (field: string, value: unknown, detail: string): FieldError => ({
    type: 'FieldValueInvalid',
    field,
    value,
    detail,
  }),
  required: (field: string, detail: string): FieldError => ({ type: 'FieldValueRequired', field, detail }),
  forbidden: (field: string, detail: string): FieldError => ({ type: 'FieldValueForbidden', field, detail }),
  duplicate: (field: string, value: unknown, detail = ''): FieldError => ({
    type: 'FieldValueDuplicate',
    field,
    value,
    detail,
  }),
  notFound: (field: string, value: unknown, detail = ''): FieldError => ({
    type: 'FieldValueNotFound',
    field,
    value,
    detail,
  }),
};

/**
 * The Status of apierrors.NewInvalid: 422, reason Invalid, one cause per
 * field, and the message `Kind.group "name" is invalid: field: body` (a list
 * in brackets for several), which the API server prefixes with
 * `admission webhook "<name>" denied the request: `.
 */
export function invalidStatus(
  gvk: GroupVersionKind,
  name: string,
  errors: readonly FieldError[],
): AdmissionStatus {
  const each = errors.map((e) => `${e.field}: ${errorBody(e)}`);
  const qualified = gvk.group ? `${gvk.kind}.${gvk.group}` : gvk.kind;
  return {
    status: 'Failure',
    code: 422,
    reason: 'Invalid',
    message: `${qualified} ${JSON.stringify(name)} is invalid: ${each.length === 1 ? each[0] : `[${each.join(', ')}]`}`,
    details: {
      name,
      group: gvk.group,
      kind: gvk.kind,
      causes: errors.map((e) => ({ reason: e.type, message: errorBody(e), field: e.field })),
    },
  };
}

/**
 * Thrown by a handler to refuse a request for a reason no field carries
 * (`403 Forbidden` by default), as controller-runtime's `admission.Denied`.
 */
export class AdmissionDeniedError extends Error {
  override readonly name = 'AdmissionDeniedError';
  readonly code: number;
  readonly reason: string;
  constructor(message: string, opts: { code?: number; reason?: string } = {}) {
    super(message);
    this.code = opts.code ?? 403;
    this.reason = opts.reason ?? 'Forbidden';
  }
}

/** An allowed response. */
export function allowed(uid: string, extra: Partial<AdmissionResponse> = {}): AdmissionResponse {
  return { uid, allowed: true, ...extra };
}

/** A refused response carrying `status`. */
export function denied(uid: string, status: AdmissionStatus, warnings?: string[]): AdmissionResponse {
  return {
    uid,
    allowed: false,
    status: { status: 'Failure', ...status },
    ...(warnings?.length ? { warnings } : {}),
  };
}
