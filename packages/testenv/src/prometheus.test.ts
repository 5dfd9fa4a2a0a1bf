import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { runPrometheus } from './prometheus.ts';
import { eventually } from './wait.ts';

test('runPrometheus: the real Prometheus scrapes what its configuration names, answers queries, refuses a bad one, and stops', async () => {
  const target = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end('answer{kind="test"} 42\n'),
  );
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  const prometheus = await runPrometheus({
    global: { scrape_interval: '1s', scrape_timeout: '1s' },
    scrape_configs: [
      {
        job_name: 'probe',
        static_configs: [{ targets: [`127.0.0.1:${(target.address() as AddressInfo).port}`] }],
      },
    ],
  });
  try {
    const [sample] = await eventually(
      'the target scraped',
      async () => {
        const r = await prometheus.query('answer');
        return r.length > 0 && r;
      },
      30_000,
      200,
    );
    assert.deepEqual(sample!.metric, {
      __name__: 'answer',
      instance: sample!.metric['instance']!,
      job: 'probe',
      kind: 'test',
    });
    assert.equal(sample!.value[1], '42');
    await assert.rejects(prometheus.query('sum('), /sum\(: .*parse error/);
  } finally {
    await prometheus.stop();
    target.close();
  }
  await assert.rejects(fetch(`${prometheus.url}/-/ready`), 'stopped');
});
