import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePrometheusText, sumOf } from './prom-text.ts';

describe('parsePrometheusText', () => {
  const text = [
    '# HELP apiserver_request_total Counter of apiserver requests',
    '# TYPE apiserver_request_total counter',
    'apiserver_request_total{code="201",resource="services",subresource="",verb="POST"} 12',
    'apiserver_request_total{code="200",resource="services",subresource="",verb="APPLY"} 3',
    'apiserver_request_total{code="200",resource="pods",subresource="status",verb="PATCH"} 7',
    'process_resident_memory_bytes 5.24288e+07',
    'odd{msg="a \\"quoted\\" \\\\ value"} 1 1700000000000',
  ].join('\n');

  it('reads names, labels and values, skipping comments', () => {
    const s = parsePrometheusText(text);
    assert.equal(s.length, 5);
    assert.deepEqual(s[0], {
      name: 'apiserver_request_total',
      labels: { code: '201', resource: 'services', subresource: '', verb: 'POST' },
      value: 12,
    });
    assert.equal(s[3]!.value, 52428800);
    assert.equal(s[4]!.labels['msg'], 'a "quoted" \\ value');
  });

  it('sums the samples whose labels match', () => {
    const s = parsePrometheusText(text);
    assert.equal(sumOf(s, 'apiserver_request_total', { resource: 'services' }), 15);
    assert.equal(sumOf(s, 'apiserver_request_total', { verb: 'PATCH', subresource: 'status' }), 7);
    assert.equal(sumOf(s, 'apiserver_request_total'), 22);
    assert.equal(sumOf(s, 'missing'), 0);
  });

  it('refuses a line that is not a sample', () => {
    assert.throws(() => parsePrometheusText('what is this {'), /not a Prometheus sample line/);
  });
});
