// A project's `test` script: node's built-in runner with a readable spec report
// on stdout and a JUnit report for the run's summary (REGULON_TEST_RESULTS).
//   node ../../tools/scripts/node-test.ts [--cluster] [globs...]
// --cluster runs the tests against one real control plane (regulon-testenv exec
// reuses the run's control plane when there is one, or starts one).
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from './run.ts';

const args = process.argv.slice(2);
const cluster = args.includes('--cluster');
const globs = args.filter((a) => a !== '--cluster');
const { name } = JSON.parse(readFileSync('package.json', 'utf8')) as { name: string };
const results = process.env['REGULON_TEST_RESULTS'] ?? tmpdir();
const nodeArgs = [
  '--test',
  '--test-timeout=600000',
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
