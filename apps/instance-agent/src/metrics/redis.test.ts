import assert from 'node:assert/strict';
import { test } from 'node:test';
import { captured, valueIn as value } from '../testing/readings.ts';
import { renderExposition } from './exposition.ts';
import { parseInfo, redisReading } from './redis.ts';

// INFO as redis 7.0.15 (Debian bookworm's, the catalog's redis:7.0) answered it: a primary with
// one online replica, and that replica; CRLF line ends as on the wire.
const primary = captured('redis-7.0-primary.info');
const replica = captured('redis-7.0-replica.info');

test("a primary's INFO: redis_exporter's names, its replica's offset and lag, memory against maxmemory", () => {
  const r = redisReading(primary);
  assert.equal(r?.role, 'primary');
  const fields = parseInfo(primary);
  assert.equal(value(r, 'redis_memory_used_bytes'), Number(fields.get('used_memory')));
  assert.equal(value(r, 'redis_memory_max_bytes'), 64 * 1024 * 1024);
  assert.equal(value(r, 'redis_connected_slaves'), 1);
  assert.equal(value(r, 'redis_master_repl_offset'), 6407);
  const slave = { slave_ip: '127.0.0.1', slave_port: '7102', slave_state: 'online' };
  assert.equal(value(r, 'redis_connected_slave_offset_bytes', slave), 6407);
  assert.equal(value(r, 'redis_connected_slave_lag_seconds', slave), 1);
  assert.equal(value(r, 'redis_keyspace_hits_total'), 1);
  assert.equal(value(r, 'redis_keyspace_misses_total'), 1);
  assert.equal(value(r, 'redis_evicted_keys_total'), 0);
  assert.equal(value(r, 'redis_db_keys', { db: 'db0' }), 200);
  assert.equal(value(r, 'redis_rdb_last_bgsave_status'), 1);
  assert.equal(
    value(r, 'redis_instance_info', { redis_version: '7.0.15', maxmemory_policy: 'allkeys-lru' }),
    1,
  );
  // No replica's link on a primary.
  assert.equal(value(r, 'redis_master_link_up'), undefined);
  assert.equal(r?.samples.find((s) => s.name === 'redis_keyspace_hits_total')?.type, 'counter');
});

test("a replica's INFO: its link to the primary, up, and no replicas of its own", () => {
  const r = redisReading(replica);
  assert.equal(r?.role, 'replica');
  const link = { master_host: '127.0.0.1', master_port: '7101' };
  assert.equal(value(r, 'redis_master_link_up', link), 1);
  assert.equal(value(r, 'redis_master_sync_in_progress', link), 0);
  assert.equal(value(r, 'redis_connected_slaves'), 0);
  assert.equal(value(r, 'redis_memory_max_bytes'), 0);
});

test('every sample renders, with the role on each series; a link that is down is 0', () => {
  const down = replica.replace('master_link_status:up', 'master_link_status:down');
  const r = redisReading(down)!;
  assert.equal(value(r, 'redis_master_link_up'), 0);
  const text = renderExposition(r.samples, { role: r.role! });
  assert.match(
    text,
    /^redis_master_link_up\{master_host="127\.0\.0\.1",master_port="7101",role="replica"\} 0$/m,
  );
  assert.match(text, /^# TYPE redis_evicted_keys_total counter$/m);
  for (const line of text.split('\n').filter((l) => l && !l.startsWith('#')))
    assert.match(line, /role="replica"\} -?[\d.e+-]+$/, line);
});

test('what is not an INFO answer is no reading: an error, a refused login, nothing', () => {
  assert.equal(redisReading(''), undefined);
  assert.equal(redisReading('NOAUTH Authentication required.\n'), undefined);
  assert.equal(redisReading('LOADING Redis is loading the dataset in memory\n'), undefined);
});
