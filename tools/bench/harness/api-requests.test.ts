import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  classify,
  clientWriteTime,
  countRequests,
  meanMs,
  serverWriteTimes,
  subtract,
  subtractTimed,
  totalOf,
} from './api-requests.ts';
import { parsePrometheusText } from './prom-text.ts';

const line = (verb: string, resource: string, subresource: string, n: number) =>
  `apiserver_request_total{code="200",resource="${resource}",subresource="${subresource}",verb="${verb}"} ${n}`;

describe('classify', () => {
  it("counts the reconcile's writes", () => {
    assert.equal(classify({ verb: 'APPLY', resource: 'statefulsets', subresource: '' }), 'write');
    assert.equal(classify({ verb: 'POST', resource: 'secrets', subresource: '' }), 'write');
    assert.equal(classify({ verb: 'APPLY', resource: 'databases', subresource: 'status' }), 'write');
    assert.equal(classify({ verb: 'PATCH', resource: 'pods', subresource: '' }), 'write');
  });
  it("leaves out other components' writes and the harness's creates", () => {
    assert.equal(classify({ verb: 'PUT', resource: 'statefulsets', subresource: 'status' }), undefined);
    assert.equal(classify({ verb: 'POST', resource: 'pods', subresource: '' }), undefined);
    assert.equal(classify({ verb: 'PATCH', resource: 'pods', subresource: 'status' }), undefined);
    assert.equal(classify({ verb: 'POST', resource: 'pods', subresource: 'binding' }), undefined);
    assert.equal(classify({ verb: 'POST', resource: 'databases', subresource: '' }), undefined);
    assert.equal(classify({ verb: 'POST', resource: 'events', subresource: '' }), undefined);
    assert.equal(classify({ verb: 'PATCH', resource: 'persistentvolumeclaims', subresource: '' }), undefined);
  });
  it('counts reads of the watched resources only', () => {
    assert.equal(classify({ verb: 'LIST', resource: 'databases', subresource: '' }), 'read');
    assert.equal(classify({ verb: 'GET', resource: 'persistentvolumeclaims', subresource: '' }), 'read');
    assert.equal(classify({ verb: 'LIST', resource: 'nodes', subresource: '' }), undefined);
  });
});

describe('countRequests', () => {
  it('sums by kind, keeps a per-verb detail, and subtracts two scrapes', () => {
    const before = countRequests(parsePrometheusText([line('APPLY', 'services', '', 2)].join('\n')));
    const after = countRequests(
      parsePrometheusText(
        [
          line('APPLY', 'services', '', 5),
          line('APPLY', 'databases', 'status', 4),
          line('LIST', 'databases', '', 1),
          line('PUT', 'statefulsets', 'status', 9),
        ].join('\n'),
      ),
    );
    assert.deepEqual(subtract(after, before), {
      reads: 1,
      writes: 7,
      detail: { 'APPLY services': 3, 'APPLY databases/status': 4, 'LIST databases': 1 },
    });
  });
});

describe('write times', () => {
  it("averages the server's attributed writes and the client's non-GET requests over a span", () => {
    const server = (sum: number, count: number) => [
      `apiserver_request_duration_seconds_sum{resource="statefulsets",subresource="",verb="APPLY"} ${sum}`,
      `apiserver_request_duration_seconds_count{resource="statefulsets",subresource="",verb="APPLY"} ${count}`,
      // Another component's write: not the subject's.
      `apiserver_request_duration_seconds_sum{resource="statefulsets",subresource="status",verb="PUT"} 100`,
      `apiserver_request_duration_seconds_count{resource="statefulsets",subresource="status",verb="PUT"} 1`,
      `apiserver_request_duration_seconds_bucket{le="0.1",resource="statefulsets",subresource="",verb="APPLY"} ${count}`,
    ];
    const client = (sum: number, count: number) => [
      `rest_client_request_duration_seconds_sum{host="h",verb="PATCH"} ${sum}`,
      `rest_client_request_duration_seconds_count{host="h",verb="PATCH"} ${count}`,
      `rest_client_request_duration_seconds_sum{host="h",verb="GET"} 50`,
      `rest_client_request_duration_seconds_count{host="h",verb="GET"} 2`,
    ];
    const before = parsePrometheusText([...server(1, 10), ...client(2, 10)].join('\n'));
    const after = parsePrometheusText([...server(3, 30), ...client(6, 30)].join('\n'));
    const s = subtractTimed(
      totalOf(Object.values(serverWriteTimes(after))),
      totalOf(Object.values(serverWriteTimes(before))),
    );
    const c = subtractTimed(clientWriteTime(after), clientWriteTime(before));
    assert.deepEqual(s, { count: 20, seconds: 2 });
    assert.deepEqual(Object.keys(serverWriteTimes(after)), ['APPLY statefulsets']);
    assert.equal(meanMs(s), 100);
    assert.equal(meanMs(c), 200);
    assert.ok(Number.isNaN(meanMs({ count: 0, seconds: 0 })));
  });
});
