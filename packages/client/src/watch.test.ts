import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { WatchDecodeError, decodeWatch, parseWatchLine, splitLines } from './watch.ts';

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const ev = (type: string, name: string) =>
  JSON.stringify({ type, object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name } } });

describe('splitLines', () => {
  it('joins lines split across chunks and splits chunks holding several lines', async () => {
    const text = `${ev('ADDED', 'a')}\n${ev('MODIFIED', 'b')}\n${ev('DELETED', 'c')}\n`;
    const chunks = [text.slice(0, 7), text.slice(7, 50), text.slice(50, 51), text.slice(51)].map((s) =>
      Buffer.from(s),
    );
    const lines = await collect(splitLines(Readable.from(chunks)));
    assert.deepEqual(lines, [ev('ADDED', 'a'), ev('MODIFIED', 'b'), ev('DELETED', 'c')]);
  });

  it('splits at every byte boundary, including inside multi-byte characters', async () => {
    const text = `${ev('ADDED', 'héllo-🌍')}\n${ev('ADDED', 'ünïcode')}\n`;
    const bytes = Buffer.from(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      const lines = await collect(splitLines(Readable.from([bytes.subarray(0, cut), bytes.subarray(cut)])));
      assert.deepEqual(lines, [ev('ADDED', 'héllo-🌍'), ev('ADDED', 'ünïcode')], `cut at ${cut}`);
    }
  });

  it('one byte at a time', async () => {
    const bytes = Buffer.from(`${ev('ADDED', 'ä')}\n\n${ev('DELETED', 'ö')}\n`);
    const chunks = [...bytes].map((b) => Buffer.from([b]));
    assert.equal((await collect(splitLines(Readable.from(chunks)))).length, 2);
  });

  it('yields a final line without newline and skips blank lines and CRs', async () => {
    const lines = await collect(splitLines(Readable.from([Buffer.from('\n{"a":1}\r\n\n{"b":2}')])));
    assert.deepEqual(lines, ['{"a":1}', '{"b":2}']);
  });

  it('accepts string chunks', async () => {
    assert.deepEqual(await collect(splitLines(Readable.from(['a\nb', 'c\n'], { objectMode: true }))), [
      'a',
      'bc',
    ]);
  });
});

describe('parseWatchLine', () => {
  it('parses object events', () => {
    const e = parseWatchLine<{ metadata: { name: string } }>(ev('BOOKMARK', 'x'));
    assert.ok(e.type === 'BOOKMARK');
    assert.equal(e.object.metadata.name, 'x');
  });

  it('turns ERROR into a status', () => {
    const e = parseWatchLine(
      JSON.stringify({
        type: 'ERROR',
        object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' },
      }),
    );
    assert.ok(e.type === 'ERROR');
    assert.equal(e.status.code, 410);
  });

  it('rejects malformed lines without echoing them', () => {
    const secret = '{"type":"ADDED","object":{"data":{"password":"hunter2"}';
    assert.throws(
      () => parseWatchLine(secret),
      (err: unknown) => err instanceof WatchDecodeError && !err.message.includes('hunter2'),
    );
    assert.throws(() => parseWatchLine('{"type":"WHAT","object":{}}'), WatchDecodeError);
    assert.throws(() => parseWatchLine('{"type":"ADDED"}'), WatchDecodeError);
    assert.throws(() => parseWatchLine('42'), WatchDecodeError);
  });
});

describe('decodeWatch', () => {
  it('fills a missing apiVersion and kind, keeps those present', async () => {
    const lines = [
      JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } }),
      JSON.stringify({
        type: 'ADDED',
        object: { apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata' },
      }),
    ].join('\n');
    const events = await collect(
      decodeWatch(Readable.from([Buffer.from(lines)]), { apiVersion: 'apps/v1', kind: 'Deployment' }),
    );
    assert.deepEqual(
      events.map((e) => (e.type === 'ERROR' ? undefined : [e.object.apiVersion, e.object.kind])),
      [
        ['apps/v1', 'Deployment'],
        ['meta.k8s.io/v1', 'PartialObjectMetadata'],
      ],
    );
  });
});
