import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { summarizeJUnit } from './junit-summary.ts';

/** Runs `source` as a test file through node's own junit reporter, into `dir/<project>.xml`. */
function report(dir: string, project: string, source: string): void {
  const file = join(dir, `${project}.test.mjs`);
  writeFileSync(file, source);
  spawnSync(
    process.execPath,
    ['--test', '--test-reporter=junit', `--test-reporter-destination=${join(dir, `${project}.xml`)}`, file],
    // Without the runner's own marker, or the child reports to it instead of to the file.
    { encoding: 'utf8', env: { ...process.env, NODE_TEST_CONTEXT: undefined } },
  );
}

test("the summary counts node's JUnit reports, per project (its parts together), and names each failure with its cause", () => {
  const dir = mkdtempSync(join(tmpdir(), 'junit-summary-'));
  try {
    report(
      dir,
      '_regulon_alpha',
      `import { test, describe, before } from 'node:test';
       import assert from 'node:assert/strict';
       test('passes', () => {});
       test('is skipped', { skip: 'no engine here' }, () => {});
       test('compares <tags> & "quotes"', () => { assert.equal(1 + 1, 3); });
       describe('a suite', () => {
         before(() => { throw new Error('the store never became ready'); });
         test('inside', () => {});
       });`,
    );
    report(
      dir,
      '_regulon_beta',
      `import { test } from 'node:test'; test('one', () => {}); test('two', () => {});`,
    );
    // A part run apart (node-test.ts --alone) counts with its project.
    report(dir, '_regulon_beta.alone', `import { test } from 'node:test'; test('quiet', () => {});`);

    const summary = summarizeJUnit(dir);
    assert.deepEqual([summary.passed, summary.failed, summary.skipped], [4, 2, 1]);
    const lines = summary.text.split('\n');
    assert.ok(lines.includes('tests per project: alpha 4, beta 3'), summary.text);
    assert.equal(lines.at(-1), 'tests: 4 passed, 2 failed, 1 skipped');
    const failed = lines.filter((l) => l.startsWith('\u2716 '));
    assert.equal(failed.length, 2, summary.text);
    assert.match(failed[0]!, /^✖ alpha: .* > compares <tags> & "quotes" \(.*alpha\.test\.mjs\)$/);
    assert.match(failed[1]!, /^✖ alpha: a suite > inside /);
    assert.match(summary.text, /2 !== 3|3 !== 2|Expected values to be strictly equal/);
    // Node's report keeps no cause for a suite's failed hook: its tests read as cancelled.
    assert.match(summary.text, /a suite > inside [^\n]*\n[^\n]*cancelled/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with no report, the summary says so and counts nothing', () => {
  const summary = summarizeJUnit(join(tmpdir(), 'no-such-junit-dir'));
  assert.deepEqual([summary.passed, summary.failed, summary.skipped], [0, 0, 0]);
  assert.match(summary.text, /tests per project: no report/);
});
