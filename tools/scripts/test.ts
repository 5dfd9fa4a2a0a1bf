// `npm test`: every check CI runs, in order, failing fast.
//   1. formatting, README code blocks, generated-file drift, lint, typecheck, build
//      (no cluster needed)
//   2. the real parts the tests run against (two lanes side by side: the Go builds
//      and the images), built from the Go module proxy on
//      a machine's first run and reused from the versioned cache after that:
//      the control plane, Prometheus with promtool (alerts, dashboard), the
//      kstatus CLI (what Flux and kpt make of each kind's status), Helm and the
//      OLM bundle validator (the chart's and the bundle's checks), the S3 object store,
//      the real node's kubelet, kube-proxy and CoreDNS, the Debian-built
//      images its Pods run, and the manager image from its Dockerfile
//   3. the real node's crash test and the real `npm start` (start-real.test.ts),
//      which need the machine's one real node to themselves
//   4. every project's tests, against one real control plane for the whole run
//   5. a one-line summary of the test counts, aggregated from JUnit reports
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { summarizeJUnit } from './junit-summary.ts';
import { run, sideBySide, steps, type Step } from './run.ts';

const root = join(import.meta.dirname, '..', '..');
const results = join(root, '.test-results');
rmSync(results, { recursive: true, force: true });
mkdirSync(results, { recursive: true });

const nx = ['nx', 'run-many', '--outputStyle=stream'];
/** A step that runs one of tools/'s build scripts. */
const build = (title: string, ...script: string[]): Step => [title, 'bash', [join(root, 'tools', ...script)]];
await steps([
  ['format', 'prettier', ['--check', '.']],
  [
    'README code blocks type-check',
    process.execPath,
    [join(root, 'tools', 'scripts', 'check-readme-code.ts')],
  ],
  ['generated files', process.execPath, [join(root, 'tools', 'scripts', 'generate.ts'), '--check']],
  // Two at a time: nothing else runs yet, and each task (eslint, tsc) keeps one core busy.
  ['lint, typecheck, build', 'npx', [...nx, '-t', 'lint', 'typecheck', 'build', '--parallel=2']],
]);
// The real parts, in two lanes side by side: on a machine's first run the Go builds keep both
// cores busy for about 15 min while the images mostly wait on Debian's and npm's downloads
// (their builds need none of the Go lane's output). Cached, each step takes a second or so, and
// only a changed manager image builds.
await sideBySide({
  go: [
    build('control plane (cached; a first build takes about 8-13 min)', 'control-plane', 'build.sh'),
    build('prometheus (cached; a first build takes about 3 min)', 'prometheus', 'build.sh'),
    build('kstatus (cached; a first build takes about 40 s)', 'kstatus', 'build.sh'),
    // The chart's and the bundle's checks (tools/scripts/chart.test.ts).
    build('helm (cached; a first build takes about 2-5 min)', 'helm', 'build.sh'),
    build(
      "bundle-validate, operator-sdk bundle validate's checks (cached; a first build takes about 1-3 min)",
      'olm',
      'build.sh',
    ),
    build('object store: versitygw (cached; a first build takes about 2 min)', 'object-store', 'build.sh'),
    build(
      'real node: kubelet, kube-proxy, CoreDNS (cached; a first build takes about 3 min after the control plane)',
      'control-plane',
      'build-node.sh',
    ),
  ],
  images: [
    [
      'real node: images from Debian packages (cached by recipe; a first build takes about 5 min)',
      process.execPath,
      [join(root, 'packages', 'testenv', 'src', 'cli.ts'), 'images'],
    ],
    [
      'real node: the manager image from apps/manager/Dockerfile (buildah; cached by build context; a first build takes about 2 min)',
      process.execPath,
      [join(root, 'tools', 'manager-image', 'image.ts')],
    ],
  ],
});
await steps([
  [
    'real node: down after a crash leaves the machine as it was',
    process.execPath,
    [
      '--test',
      '--test-timeout=600000',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=junit',
      `--test-reporter-destination=${join(results, 'real-node-crash.xml')}`,
      join(root, 'packages', 'testenv', 'src', 'real-node.crash-test.ts'),
    ],
  ],
  [
    // Also needs the real node to itself: the projects' control plane keeps it once a test asks.
    'npm start on the real node: real engine Pods Ready, the printed psql answers',
    process.execPath,
    [
      '--test',
      '--test-timeout=1200000',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=junit',
      `--test-reporter-destination=${join(results, 'start-real.xml')}`,
      join(root, 'tools', 'scripts', 'start-real.test.ts'),
    ],
  ],
]);

// Tests are not cached: they talk to a live control plane, and a replayed
// pass would prove nothing about this run. One project at a time (nx.json's
// parallel: 1): database-controller's real-engine suites beside the other
// projects' (tried in two lanes) kept a 2-core machine at a load of 17, and
// eight of its scenarios and two of the manager's missed their deadlines.
const code = await run('regulon-testenv', ['exec', '--', 'npx', ...nx, '-t', 'test', '--skipNxCache'], {
  ...process.env,
  REGULON_TEST_RESULTS: results,
});

const summary = summarizeJUnit(results);
console.log(summary.text);
process.exit(code !== 0 ? code : summary.failed > 0 ? 1 : 0);
