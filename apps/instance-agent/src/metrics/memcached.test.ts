import assert from 'node:assert/strict';
import { test } from 'node:test';
import { captured, valueIn as value } from '../testing/readings.ts';
import { renderExposition } from './exposition.ts';
import { memcachedReading, parseStats } from './memcached.ts';

// `stats` as memcached 1.6.18 (Debian bookworm's, the catalog's memcached:1.6) answered it after
// a login (-Y), 200 values of 100 kB stored in 8 MiB (so 130 evicted) and 31 gets; CRLF line ends
// as on the wire, as the metrics command prints them.
const stats = captured('memcached-1.6.txt');

test("memcached's stats: memcached_exporter's names, bytes against the limit, evictions, gets by status", () => {
  const r = memcachedReading(stats);
  assert.ok(r, 'a stats answer reads');
  assert.equal(r.role, undefined, 'memcached has no primary');
  const s = parseStats(stats);
  assert.equal(value(r, 'memcached_current_bytes'), Number(s.get('bytes')));
  assert.equal(value(r, 'memcached_limit_bytes'), 8 * 1024 * 1024);
  assert.equal(value(r, 'memcached_current_items'), 71);
  assert.equal(value(r, 'memcached_items_evicted_total'), 130);
  assert.equal(value(r, 'memcached_commands_total', { command: 'get', status: 'hit' }), 11);
  assert.equal(value(r, 'memcached_commands_total', { command: 'get', status: 'miss' }), 20);
  assert.equal(value(r, 'memcached_max_connections'), 1024);
  assert.equal(value(r, 'memcached_version', { version: '1.6.18' }), 1);
  assert.equal(r.samples.find((x) => x.name === 'memcached_items_evicted_total')?.type, 'counter');
  assert.equal(r.samples.find((x) => x.name === 'memcached_current_bytes')?.type, 'gauge');
  // The exposition renders: one family for every command and status.
  const text = renderExposition(r.samples);
  assert.equal(text.match(/^# TYPE memcached_commands_total counter$/gm)?.length, 1);
});

test('what is not a whole stats answer reads as none: a refused login, an answer cut short, nothing', () => {
  assert.equal(memcachedReading(''), undefined);
  assert.equal(memcachedReading('CLIENT_ERROR unauthenticated\r\n'), undefined);
  const cut = stats.slice(0, stats.indexOf('STAT evictions'));
  assert.equal(memcachedReading(cut), undefined, 'no END: cut short');
});
