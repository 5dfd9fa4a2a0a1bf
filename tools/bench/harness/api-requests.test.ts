import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classify, countRequests, subtract } from './api-requests.ts';
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
