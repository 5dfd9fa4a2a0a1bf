import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createLogger, lazyChild } from './logging.ts';

function capture(): { stream: Writable; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  return {
    stream,
    lines: () =>
      chunks
        .join('')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

test('Secret data, tokens and passwords never reach the log', () => {
  const out = capture();
  const log = createLogger({ level: 'info', destination: out.stream });
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's' },
    data: { password: 'aHVudGVyMg==' },
    stringData: { password: 'hunter2' },
  };
  log.info({ secret }, 'applied');
  log.info({ token: 'eyJhbGciOi', request: { headers: { authorization: 'Bearer eyJhbGciOi' } } }, 'called');
  log.info({ password: 'hunter2', db: { password: 'hunter2' } }, 'connected');
  const text = JSON.stringify(out.lines());
  for (const leaked of ['aHVudGVyMg==', 'hunter2', 'eyJhbGciOi'])
    assert.equal(text.includes(leaked), false, `${leaked} leaked: ${text}`);
  assert.equal(out.lines()[0]!['secret'] !== undefined, true, 'the rest of the object is still logged');
  assert.equal((out.lines()[0]!['secret'] as { metadata: { name: string } }).metadata.name, 's');
});

test('levels are configurable and lines are JSON with a level label', () => {
  const out = capture();
  const log = createLogger({ level: 'warn', destination: out.stream });
  log.info('hidden');
  log.warn({ controller: 'x' }, 'shown');
  const lines = out.lines();
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!['level'], 'warn');
  assert.equal(lines[0]!['msg'], 'shown');
});

test('a lazy child is made only when it logs, and then carries its bindings and the redaction', () => {
  const out = capture();
  const parent = createLogger({ level: 'info', destination: out.stream });
  let made = 0;
  const child = parent.child.bind(parent);
  parent.child = ((...args: Parameters<typeof parent.child>) => {
    made++;
    return child(...args);
  }) as typeof parent.child;
  const quiet = lazyChild(parent, { name: 'orders', reconcileID: 'r1' });
  quiet.debug({ result: 'success' }, 'reconciled');
  assert.equal(made, 0, 'a line at a level that is off makes no child');
  const loud = lazyChild(parent, { name: 'orders', reconcileID: 'r2' });
  loud.info({ password: 'hunter2' }, 'connected');
  loud.warn({}, 'again');
  assert.equal(made, 1, 'one child, on the first line');
  const lines = out.lines();
  assert.deepEqual(
    lines.map((l) => [l['name'], l['reconcileID'], l['msg'], l['password']]),
    [
      ['orders', 'r2', 'connected', '[REDACTED]'],
      ['orders', 'r2', 'again', undefined],
    ],
  );
  // The rest of pino's interface reaches the real child.
  assert.deepEqual(loud.bindings(), { name: 'orders', reconcileID: 'r2' });
  parent.level = 'debug';
  quiet.debug({}, 'now on');
  assert.equal(out.lines().at(-1)?.['msg'], 'now on', "the parent's level is read at each call");
});
