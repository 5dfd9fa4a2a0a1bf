// The README checker reports a broken example at its README line, passes a
// good one beside it, resolves `@regulon/*` as a reader's code would, and
// keeps its not-checked escape hatch visible and justified.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { checkReadmeCode, extractBlocks, findReadmes } from './check-readme-code.ts';

const repo = join(import.meta.dirname, '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'readme-check-'));
// Inside the repository, so that `@regulon/*` resolves through its node_modules.
mkdirSync(join(repo, 'tmp'), { recursive: true });
const outDir = mkdtempSync(join(repo, 'tmp', 'readme-code-test-'));
after(() => {
  rmSync(scratch, { recursive: true, force: true });
  rmSync(outDir, { recursive: true, force: true });
});

const README = [
  '# Demo', // 1
  '', // 2
  '```ts', // 3
  "import { RateLimitingQueue } from '@regulon/queue';", // 4
  '', // 5
  "const queue = new RateLimitingQueue<string>({ name: 'demo' });", // 6
  "queue.add('shop/web');", // 7
  '```', // 8
  '', // 9
  'A shell block is not checked:', // 10
  '', // 11
  '```sh', // 12
  'const nope: number = "sh";', // 13
  '```', // 14
  '', // 15
  '- in a list:', // 16
  '', // 17
  '  ```typescript', // 18
  "  import { RateLimitingQueue } from '@regulon/queue';", // 19
  '', // 20
  "  const queue = new RateLimitingQueue<number>({ name: 'demo' });", // 21
  "  queue.add('not a number');", // 22
  '  ```', // 23
  '',
].join('\n');

test('a bad block is reported at its README line, a good block beside it passes', () => {
  const dir = join(scratch, 'pkg');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'README.md'), README);
  const result = checkReadmeCode({
    root: scratch,
    readmes: [join(dir, 'README.md')],
    outDir,
    tsconfig: join(repo, 'tsconfig.base.json'),
  });
  assert.equal(result.checked, 2);
  assert.equal(result.errors.length, 1, result.errors.join('\n'));
  assert.match(
    result.errors[0]!,
    /^pkg\/README\.md:22: Argument of type 'string' is not assignable to parameter of type 'number'\. \(TS2345, column 13\)$/,
  );
});

test('an import the package does not export is an error at the import line', () => {
  const dir = join(scratch, 'imports');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'README.md'),
    [
      'Intro',
      '',
      '```ts',
      "import { NoSuchThing } from '@regulon/queue';",
      'console.log(NoSuchThing);',
      '```',
      '',
    ].join('\n'),
  );
  const result = checkReadmeCode({
    root: scratch,
    readmes: [join(dir, 'README.md')],
    outDir,
    tsconfig: join(repo, 'tsconfig.base.json'),
  });
  assert.equal(result.errors.length, 1, result.errors.join('\n'));
  assert.match(result.errors[0]!, /^imports\/README\.md:4: .*NoSuchThing/);
});

test('a not-checked marker skips its block only with a reason, and only right before a ts block', () => {
  const { blocks, problems } = extractBlocks(
    [
      '<!-- not-checked: continues the block above -->', // 1
      '```ts', // 2
      'client.close();', // 3
      '```', // 4
      '<!-- not-checked -->', // 5
      '```ts', // 6
      'x;', // 7
      '```', // 8
      '<!-- not-checked: a yaml block is never checked -->', // 9
      '```yaml', // 10
      'a: 1', // 11
      '```', // 12
    ].join('\n'),
  );
  assert.deepEqual(
    blocks.map((b) => [b.firstLine, b.notChecked]),
    [
      [3, 'continues the block above'],
      [7, ''],
    ],
  );
  assert.deepEqual(
    problems.map((p) => p.line),
    [5, 9],
  );
});

test('an unclosed fence is a problem, and a longer fence holds a shorter one', () => {
  const { blocks, problems } = extractBlocks(
    ['````ts', '```', 'const a = 1;', '````', '', '```ts', 'open'].join('\n'),
  );
  assert.deepEqual(
    blocks.map((b) => b.code),
    ['```\nconst a = 1;', 'open'],
  );
  assert.deepEqual(problems, [{ line: 6, message: 'code fence is never closed' }]);
});

test('READMEs are found anywhere except dependency and generated folders', () => {
  const tree = join(scratch, 'tree');
  for (const dir of ['a/b', 'node_modules/x', '.nx/cache', 'c/dist'])
    mkdirSync(join(tree, dir), { recursive: true });
  for (const file of [
    'README.md',
    'a/b/README.md',
    'node_modules/x/README.md',
    '.nx/cache/README.md',
    'c/dist/README.md',
  ])
    writeFileSync(join(tree, file), '# x\n');
  assert.deepEqual(findReadmes(tree), [join(tree, 'README.md'), join(tree, 'a', 'b', 'README.md')]);
});
