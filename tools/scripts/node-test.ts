// A project's `test` script: node's built-in runner with a readable spec report
// on stdout and a JUnit report for the run's summary (REGULON_TEST_RESULTS).
//   node ../../tools/scripts/node-test.ts [--cluster] [--concurrency=N] [--slowest-first=F,...] [--alone=F,...] [--test-name-pattern=RE] [globs...]
// --cluster runs the tests against one real control plane (regulon-testenv exec
// reuses the run's control plane when there is one, or starts one).
// --concurrency=N runs N test files at once (node's default is the cores less
// one: a single file on a 2-core machine). For a project whose slow files
// mostly wait on real engines, each in its own namespace with a manager of its own.
// --slowest-first=F,... starts those files first, in that order, then the rest by
// name. `node --test` sorts its files by name, so with N at once a slow file that
// sorts late starts when the others are nearly done and alone makes the run long;
// started first, the short files fill the other slots beside it. The runner's own
// API (`run()` from node:test) takes the files in the order given.
// --alone=F,... runs those files first, one by one with nothing beside them, then
// the rest N at once: a file that measures the machine (a benchmark's harness)
// needs it quiet, and the others need not wait for each other on its account.
// --test-name-pattern=RE runs only the tests whose name (or a suite's) matches,
// as node's own flag does: one scenario of a long suite, with the tests it needs.
import { createWriteStream, globSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { finished } from 'node:stream/promises';
import { run as runTests } from 'node:test';
import { junit, spec } from 'node:test/reporters';
import { run } from './run.ts';

const args = process.argv.slice(2);
const cluster = args.includes('--cluster');
const option = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(`--${name}=`.length);
const concurrency = option('concurrency');
if (concurrency !== undefined && !/^[1-9]\d*$/.test(concurrency))
  throw new Error(`--concurrency takes a positive whole number, not "${concurrency}"`);
const slowest = option('slowest-first')?.split(',') ?? [];
const alone = option('alone')?.split(',') ?? [];
const namePattern = option('test-name-pattern');
const globs = args.filter((a) => !a.startsWith('--'));

// Under --cluster, this script runs again inside `regulon-testenv exec`, which
// gives it the control plane's environment; that second run has INSIDE set.
const INSIDE = 'REGULON_NODE_TEST_IN_CLUSTER';
if (cluster && !process.env[INSIDE]) {
  const code = await run('regulon-testenv', ['exec', '--', process.execPath, import.meta.filename, ...args], {
    ...process.env,
    [INSIDE]: '1',
  });
  process.exit(code);
}

const found = [...new Set((globs.length ? globs : ['src/**/*.test.ts']).flatMap((g) => globSync(g)))].sort();
for (const [flag, named] of [
  ['slowest-first', slowest],
  ['alone', alone],
] as const)
  for (const f of named)
    if (!found.includes(f)) throw new Error(`--${flag} names ${f}, which is not among the test files`);
const rest = [...slowest, ...found.filter((f) => !slowest.includes(f))].filter((f) => !alone.includes(f));

/**
 * Node's junit reporter copies a failed assertion's coloured diff into the XML as is, and XML
 * 1.0 allows no control character but tab, newline and carriage return: strict JUnit readers
 * (CI systems', Python's) refuse the whole file. Drops the colour sequences, then any control
 * character left (one whose sequence a chunk boundary split leaves its visible "[32m").
 */
// eslint-disable-next-line no-control-regex -- the control characters are what it removes
const NOT_XML = /\x1b\[[0-9;]*[A-Za-z]|[\x00-\x08\x0b\x0c\x0e-\x1f]/g;
const xmlSafe = () => {
  const text = new StringDecoder('utf8');
  return new Transform({
    transform(chunk: Buffer | string, _encoding, done) {
      done(null, (typeof chunk === 'string' ? chunk : text.write(chunk)).replace(NOT_XML, ''));
    },
    flush(done) {
      done(null, text.end().replace(NOT_XML, ''));
    },
  });
};

const { name } = JSON.parse(readFileSync('package.json', 'utf8')) as { name: string };
const results = process.env['REGULON_TEST_RESULTS'] ?? tmpdir();
const report = name.replace(/[@/]/g, '_');
/** Runs `files` N at once; resolves once their spec report is written (JUnit to `<report><part>.xml`). */
const runFiles = async (files: string[], n: number | undefined, part: string) => {
  const stream = runTests({
    files,
    timeout: 600_000,
    ...(n ? { concurrency: n } : {}),
    ...(namePattern ? { testNamePatterns: [namePattern] } : {}),
  });
  stream.on('test:fail', () => {
    process.exitCode = 1;
  });
  // compose() types its result loosely: both are readable streams of the report's text.
  const shown = stream.compose(new spec()) as Readable;
  shown.pipe(process.stdout, { end: false });
  (stream.compose(junit) as Readable)
    .pipe(xmlSafe())
    .pipe(createWriteStream(join(results, `${report}${part}.xml`)));
  await finished(shown);
};
if (alone.length) await runFiles(alone, 1, '.alone');
if (rest.length) await runFiles(rest, concurrency ? Number(concurrency) : undefined, '');
