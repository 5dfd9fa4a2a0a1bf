import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

const runTs = new URL('./run.ts', import.meta.url).href;

/** Runs `body` (which may call sideBySide) in a fresh node process; its exit code and output. */
function script(body: string) {
  const source = `import { sideBySide } from ${JSON.stringify(runTs)};\n${body}`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', source], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('sideBySide: both lanes run at once, each line behind its lane, each lane in order', () => {
  // a's second step waits for a file that b's first step writes: only lanes run side by side get past it.
  const { code, out } = script(`
    import { mkdtempSync } from 'node:fs';
    import { join } from 'node:path';
    import { tmpdir } from 'node:os';
    const flag = join(mkdtempSync(join(tmpdir(), 'lanes-')), 'b-ran');
    await sideBySide({
      a: [['a1', 'sh', ['-c', 'echo one']], ['a2', 'sh', ['-c', 'while [ ! -e ${'$'}0 ]; do sleep 0.05; done; echo two', flag]]],
      b: [['b1', 'sh', ['-c', 'sleep 0.2; touch ${'$'}0; echo three', flag]]],
    });
  `);
  assert.equal(code, 0, out);
  const lines = out.split('\n');
  for (const line of ['[a] one', '[a] two', '[b] three', '[a] === a2: done in 0 s'])
    assert.ok(lines.includes(line), `${line} in:\n${out}`);
  assert.ok(lines.indexOf('[a] one') < lines.indexOf('[a] two'));
  assert.match(out, /^=== a and b, side by side: done in \d+ s$/m);
});

test('sideBySide: a failed step ends the run with its code; the other lane starts nothing new', () => {
  const { code, out, err } = script(`
    await sideBySide({
      a: [['a1', 'sh', ['-c', 'echo failing >&2; exit 7']]],
      b: [['b1', 'sh', ['-c', 'sleep 0.3; echo finished']], ['b2', 'sh', ['-c', 'echo never']]],
    });
    console.log('after');
  `);
  assert.equal(code, 7);
  assert.match(err, /^\[a\] failing$/m);
  assert.match(err, /\[a\] === a1 failed \(exit 7\)/);
  assert.match(out, /^\[b\] finished$/m, 'the step under way finishes');
  assert.doesNotMatch(out, /never|after/);
});
