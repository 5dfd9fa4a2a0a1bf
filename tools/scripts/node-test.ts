// A project's `test` script: node's built-in runner with a readable spec report
// on stdout and a JUnit report for the run's summary (REGULON_TEST_RESULTS).
//   node ../../tools/scripts/node-test.ts [--cluster] [--concurrency=N] [globs...]
// --cluster runs the tests against one real control plane (regulon-testenv exec
// reuses the run's control plane when there is one, or starts one).
// --concurrency=N runs N test files at once (node's default is the cores less
// one: a single file on a 2-core machine). For a project whose slow files
// mostly wait on real engines, each in its own namespace with a manager of its own.
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from './run.ts';

const args = process.argv.slice(2);
const cluster = args.includes('--cluster');
const concurrency = args.find((a) => a.startsWith('--concurrency='))?.slice('--concurrency='.length);
if (concurrency !== undefined && !/^[1-9]\d*$/.test(concurrency))
  throw new Error(`--concurrency takes a positive whole number, not "${concurrency}"`);
const globs = args.filter((a) => a !== '--cluster' && !a.startsWith('--concurrency='));
const { name } = JSON.parse(readFileSync('package.json', 'utf8')) as { name: string };
const results = process.env['REGULON_TEST_RESULTS'] ?? tmpdir();
const nodeArgs = [
  '--test',
  '--test-timeout=600000',
  ...(concurrency ? [`--test-concurrency=${concurrency}`] : []),
  '--test-reporter=spec',
  '--test-reporter-destination=stdout',
  '--test-reporter=junit',
  `--test-reporter-destination=${join(results, `${name.replace(/[@/]/g, '_')}.xml`)}`,
  ...(globs.length ? globs : ['src/**/*.test.ts']),
];
const code = cluster
  ? await run('regulon-testenv', ['exec', '--', process.execPath, ...nodeArgs])
  : await run(process.execPath, nodeArgs);
process.exit(code);
