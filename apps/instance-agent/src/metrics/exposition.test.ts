import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderExposition } from './exposition.ts';

test('one HELP and TYPE per family, its series after, label values escaped', () => {
  const text = renderExposition(
    [
      { name: 'x_total', help: 'a\\b\nc', type: 'counter', value: 3, labels: { k: 'q"u\\o\nte' } },
      { name: 'x_total', help: 'ignored', type: 'counter', value: 4, labels: { k: 'b' } },
      { name: 'y', help: 'y', type: 'gauge', value: NaN },
    ],
    { role: 'primary' },
  );
  assert.equal(
    text,
    [
      '# HELP x_total a\\\\b\\nc',
      '# TYPE x_total counter',
      'x_total{k="q\\"u\\\\o\\nte",role="primary"} 3',
      'x_total{k="b",role="primary"} 4',
      '# HELP y y',
      '# TYPE y gauge',
      'y{role="primary"} NaN',
      '',
    ].join('\n'),
  );
  assert.equal(renderExposition([]), '');
});

test('a name the format cannot carry, or one family of two types, is a mapping bug: it throws', () => {
  assert.throws(
    () => renderExposition([{ name: 'a-b', help: '', type: 'gauge', value: 1 }]),
    /not a metric name/,
  );
  assert.throws(
    () =>
      renderExposition([
        { name: 'a', help: '', type: 'gauge', value: 1 },
        { name: 'a', help: '', type: 'counter', value: 1 },
      ]),
    /a is both a gauge and a counter/,
  );
  assert.throws(
    () => renderExposition([{ name: 'a', help: '', type: 'gauge', value: 1, labels: { 'x-y': '1' } }]),
    /not a label name: x-y/,
  );
});
