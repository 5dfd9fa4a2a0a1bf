import { sumOf, type Sample } from './prom-text.ts';

/**
 * The API server counts requests by verb, resource and subresource, not by
 * client (apiserver_request_total has no user label). The benchmark counts the
 * requests of the Database reconcile by the resources it touches and the verbs
 * no other component uses on them while a benchmark runs:
 *  - writes: any write to the children's resources (the controller-manager
 *    writes only their status subresources), status writes of Databases (the
 *    harness only creates them), and PATCHes of Pods (the controller-manager
 *    creates Pods, KWOK and the scheduler write their status and binding
 *    subresources). PVCs are left out: the volume binder patches them, and the
 *    controller only does when storage grows, which the benchmark never asks;
 *  - reads: GET, LIST and WATCH of those resources, Databases, Pods, Jobs and
 *    PVCs. Other components' informers started before the measurement, so what
 *    remains of theirs is a watch renewed now and then.
 * The subjects' own client-side counters are reported beside these as a check.
 */
const CHILDREN = new Set([
  'statefulsets',
  'services',
  'configmaps',
  'serviceaccounts',
  'secrets',
  'poddisruptionbudgets',
  'cronjobs',
]);
const READ_ALSO = new Set(['databases', 'pods', 'jobs', 'persistentvolumeclaims']);
const READ_VERBS = new Set(['GET', 'LIST', 'WATCH', 'WATCHLIST']);
const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION']);

export type Kind = 'read' | 'write';

export function classify(labels: Record<string, string>): Kind | undefined {
  const verb = labels['verb'] ?? '';
  const resource = labels['resource'] ?? '';
  const sub = labels['subresource'] ?? '';
  if (READ_VERBS.has(verb)) return CHILDREN.has(resource) || READ_ALSO.has(resource) ? 'read' : undefined;
  if (!WRITE_VERBS.has(verb)) return undefined;
  if (CHILDREN.has(resource) && sub === '') return 'write';
  if (resource === 'databases' && sub === 'status') return 'write';
  if (resource === 'pods' && sub === '' && verb === 'PATCH') return 'write';
  return undefined;
}

const requestKey = (labels: Record<string, string>) =>
  `${labels['verb']} ${labels['resource']}${labels['subresource'] ? `/${labels['subresource']}` : ''}`;

export interface RequestCounts {
  reads: number;
  writes: number;
  /** `VERB resource[/subresource]` → count, for the attributed requests. */
  detail: Record<string, number>;
}

export function countRequests(samples: readonly Sample[]): RequestCounts {
  const out: RequestCounts = { reads: 0, writes: 0, detail: {} };
  for (const s of samples) {
    if (s.name !== 'apiserver_request_total') continue;
    const kind = classify(s.labels);
    if (!kind) continue;
    const key = requestKey(s.labels);
    out.detail[key] = (out.detail[key] ?? 0) + s.value;
    if (kind === 'read') out.reads += s.value;
    else out.writes += s.value;
  }
  return out;
}

export function subtract(after: RequestCounts, before: RequestCounts): RequestCounts {
  const detail: Record<string, number> = {};
  for (const [k, v] of Object.entries(after.detail)) {
    const d = v - (before.detail[k] ?? 0);
    if (d !== 0) detail[k] = d;
  }
  return { reads: after.reads - before.reads, writes: after.writes - before.writes, detail };
}

/** A client's own count (rest_client_requests_total, the same name in client-go and Regulon). */
export function clientRequests(samples: readonly Sample[]): RequestCounts {
  const out: RequestCounts = { reads: 0, writes: 0, detail: {} };
  for (const s of samples) {
    if (s.name !== 'rest_client_requests_total') continue;
    const key = `${s.labels['method']} ${s.labels['code']}`;
    out.detail[key] = (out.detail[key] ?? 0) + s.value;
    if (s.labels['method'] === 'GET') out.reads += s.value;
    else out.writes += s.value;
  }
  return out;
}

export { sumOf };

/** A duration histogram's total, for a mean over a span: subtract two scrapes, then divide. */
export interface Timed {
  count: number;
  seconds: number;
}

export const subtractTimed = (after: Timed, before: Timed): Timed => ({
  count: after.count - before.count,
  seconds: after.seconds - before.seconds,
});

export const meanMs = (t: Timed): number => (t.count > 0 ? (t.seconds / t.count) * 1000 : NaN);

/**
 * The subject's writes as the API server timed them (apiserver_request_duration_seconds,
 * attributed by the same rule as the counts), by `VERB resource[/subresource]`:
 * arrival to response, including any wait in API Priority and Fairness,
 * excluding the network and the client.
 */
export function serverWriteTimes(samples: readonly Sample[]): Record<string, Timed> {
  const out: Record<string, Timed> = {};
  for (const s of samples) {
    const sum = s.name === 'apiserver_request_duration_seconds_sum';
    if (!sum && s.name !== 'apiserver_request_duration_seconds_count') continue;
    if (classify(s.labels) !== 'write') continue;
    const t = (out[requestKey(s.labels)] ??= { count: 0, seconds: 0 });
    if (sum) t.seconds += s.value;
    else t.count += s.value;
  }
  return out;
}

export const totalOf = (times: readonly Timed[]): Timed =>
  times.reduce((a, t) => ({ count: a.count + t.count, seconds: a.seconds + t.seconds }), {
    count: 0,
    seconds: 0,
  });

/**
 * The subject's writes as it timed them itself (rest_client_request_duration_seconds,
 * the same name and meaning in client-go and Regulon): from before the client-side
 * rate limiter to the response. Without a limit, the gap to serverWriteTimes is
 * the network plus the client's own delays, such as a busy event loop.
 */
export function clientWriteTime(samples: readonly Sample[]): Timed {
  const out = { count: 0, seconds: 0 };
  for (const s of samples) {
    const sum = s.name === 'rest_client_request_duration_seconds_sum';
    if (!sum && s.name !== 'rest_client_request_duration_seconds_count') continue;
    if (s.labels['verb'] === 'GET') continue;
    if (sum) out.seconds += s.value;
    else out.count += s.value;
  }
  return out;
}
