// `npm test`: every check CI runs, in order, failing fast.
//   1. formatting, generated-file drift, lint, typecheck, build (no cluster needed)
//   2. the real parts the tests run against, built from the Go module proxy on
//      a machine's first run and reused from the versioned cache after that:
//      the control plane, and Prometheus with promtool (alerts, dashboard)
//   3. every project's tests, against one real control plane for the whole run
//   4. a one-line summary of the test counts, aggregated from JUnit reports
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { run, steps } from './run.ts';

const root = join(import.meta.dirname, '..', '..');
const results = join(root, '.test-results');
rmSync(results, { recursive: true, force: true });
mkdirSync(results, { recursive: true });

const nx = ['nx', 'run-many', '--outputStyle=stream'];
await steps([
  ['format', 'prettier', ['--check', '.']],
  ['generated files', process.execPath, [join(root, 'tools', 'scripts', 'generate.ts'), '--check']],
  ['lint, typecheck, build', 'npx', [...nx, '-t', 'lint', 'typecheck', 'build']],
  [
    'control plane (cached; a first build takes about 8-13 min)',
    'bash',
    [join(root, 'tools', 'control-plane', 'build.sh')],
  ],
  [
    'prometheus (cached; a first build takes about 3 min)',
    'bash',
    [join(root, 'tools', 'prometheus', 'build.sh')],
  ],
]);

// Tests are not cached: they talk to a live control plane, and a replayed
// pass would prove nothing about this run.
const code = await run('regulon-testenv', ['exec', '--', 'npx', ...nx, '-t', 'test', '--skipNxCache'], {
  ...process.env,
  REGULON_TEST_RESULTS: results,
});

let passed = 0;
let failed = 0;
let skipped = 0;
if (existsSync(results)) {
  for (const file of readdirSync(results).filter((f) => f.endsWith('.xml'))) {
    const xml = readFileSync(join(results, file), 'utf8');
    for (const m of xml.matchAll(/<testcase\b[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g)) {
      const body = m[2] ?? '';
      if (/<failure\b/.test(body)) failed++;
      else if (/<skipped\b/.test(body)) skipped++;
      else passed++;
    }
  }
}
console.log(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(code !== 0 ? code : failed > 0 ? 1 : 0);
