import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { splitTarPath, tarGz, zip, type ArchiveEntry } from './archive.ts';

// Read back by the system's tar and unzip, which check headers, checksums and CRCs.
const dir = mkdtempSync(join(tmpdir(), 'kubectl-regulon-archive-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const long = `r/${'children/statefulsets/'.repeat(4)}${'x'.repeat(60)}.yaml`;
const entries: ArchiveEntry[] = [
  { path: 'r/README.txt', content: 'hello\n' },
  { path: 'r/empty.txt', content: '' },
  { path: 'r/logs/orders-0/postgres.log', content: 'é line\n'.repeat(1000) },
  { path: long, content: Buffer.from([0, 1, 2, 255]) },
];
const at = new Date('2026-12-01T14:00:00Z');

function extracted(root: string): Record<string, string> {
  return Object.fromEntries(
    entries.map((e) => [e.path, readFileSync(join(root, e.path)).toString('base64')]),
  );
}
const expected = Object.fromEntries(
  entries.map((e) => [
    e.path,
    (typeof e.content === 'string' ? Buffer.from(e.content) : e.content).toString('base64'),
  ]),
);

describe('archives', () => {
  test('tar.gz: tar lists and extracts every file, a long path split into prefix and name', () => {
    const file = join(dir, 'b.tar.gz');
    writeFileSync(file, tarGz(entries, at));
    assert.deepEqual(
      execFileSync('tar', ['-tzf', file], { encoding: 'utf8' }).trim().split('\n'),
      entries.map((e) => e.path),
    );
    const out = join(dir, 'tar');
    execFileSync('mkdir', ['-p', out]);
    execFileSync('tar', ['-xzf', file, '-C', out]);
    assert.deepEqual(extracted(out), expected);
    assert.match(
      execFileSync('tar', ['-tvzf', file], { encoding: 'utf8', env: { ...process.env, TZ: 'UTC' } }),
      /2026-12-01 14:00/,
    );
  });

  test('zip: unzip tests every CRC and extracts every file', () => {
    const file = join(dir, 'b.zip');
    writeFileSync(file, zip(entries, at));
    assert.match(execFileSync('unzip', ['-t', file], { encoding: 'utf8' }), /No errors detected/);
    const out = join(dir, 'zip');
    execFileSync('unzip', ['-q', file, '-d', out]);
    assert.deepEqual(extracted(out), expected);
  });

  test('splitTarPath keeps short paths whole and refuses what ustar cannot hold', () => {
    assert.deepEqual(splitTarPath('a/b'), { name: 'a/b', prefix: '' });
    assert.throws(() => splitTarPath(`a/${'x'.repeat(101)}`), /too long/);
  });
});
