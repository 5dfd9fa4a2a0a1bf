import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '@regulon/runtime';
import type { EngineReading } from './exposition.ts';
import { serveMetrics, sharedRead } from './server.ts';

const log = createLogger({ name: 'test', level: 'silent' });
const reading: EngineReading = {
  role: 'replica',
  samples: [{ name: 'redis_connected_clients', help: 'clients', type: 'gauge', value: 7 }],
};
const own = () => [
  { name: 'regulon_instance_primary_lease_held', help: 'held', type: 'gauge' as const, value: 0 },
];

async function scrape(port: number, path = '/metrics') {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
}

test("GET /metrics: the engine's series with its role, <engine>_up 1, the agent's own figures", async () => {
  const server = serveMetrics({ port: 0, engine: 'redis', log, own, read: () => Promise.resolve(reading) });
  try {
    const port = await server.listening;
    const r = await scrape(port);
    assert.equal(r.status, 200);
    assert.match(r.type ?? '', /^text\/plain; version=0\.0\.4/);
    assert.match(r.body, /^redis_connected_clients\{role="replica"\} 7$/m);
    assert.match(r.body, /^redis_up\{role="replica"\} 1$/m);
    assert.match(r.body, /^regulon_instance_primary_lease_held 0$/m);
    assert.match(r.body, /^regulon_instance_scrape_duration_seconds [\d.e-]+$/m);
    assert.equal((await scrape(port, '/')).status, 404);
  } finally {
    await server.close();
  }
});

test('an engine that does not answer in time: redis_up 0 when the timeout ends, and the question aborted', async () => {
  let aborted = false;
  const server = serveMetrics({
    port: 0,
    engine: 'redis',
    log,
    own,
    timeoutMs: 200,
    read: (signal) =>
      new Promise<EngineReading | undefined>((_, reject) =>
        signal.addEventListener('abort', () => {
          aborted = true;
          reject(new Error('aborted'));
        }),
      ),
  });
  try {
    const port = await server.listening;
    const started = Date.now();
    const r = await scrape(port);
    assert.match(r.body, /^redis_up 0$/m);
    assert.doesNotMatch(r.body, /redis_connected_clients/);
    assert.ok(Date.now() - started < 2_000, `answered after ${Date.now() - started} ms`);
    assert.ok(aborted, 'the slow question was aborted');
  } finally {
    await server.close();
  }
});

test('questions asked while a read runs share it; the next one after it reads again', async () => {
  let reads = 0;
  const answers: Array<(r: EngineReading) => void> = [];
  const read = sharedRead(
    () => {
      reads++;
      return new Promise<EngineReading>((resolve) => answers.push(resolve));
    },
    5_000,
    log,
  );
  const together = [read(), read(), read()];
  assert.equal(reads, 1);
  answers[0]!(reading);
  for (const r of await Promise.all(together)) assert.equal(r, reading);
  const later = read();
  assert.equal(reads, 2);
  answers[1]!(reading);
  assert.equal(await later, reading);
});
