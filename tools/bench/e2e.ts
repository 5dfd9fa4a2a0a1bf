// `npm run bench:e2e`: Regulon against controller-runtime and against the
// floor (a tight client doing the same writes), on the same local control
// plane build, in one run. Each (subject, limits, N) gets a fresh control plane.
//
//   npm run bench:e2e -- [--n 100,1000,5000] [--subjects regulon,controller-runtime,floor]
//                        [--limits qps50,unlimited] [--concurrency 10] [--idle 60] [--per-namespace 1000]
//                        [--out DIR] [--append [--more]] [--apiserver-profile SECONDS] [--repeat K]
//
// --repeat runs every (subject, limits) K times per N, in rounds: each round runs
// each subject once, and every other round reverses their order, so no subject
// always runs first. The ratios compare medians; each round's pair is listed too.
// --append --more keeps a cell's earlier runs and adds K rounds after them
// (numbered on, the order still alternating) instead of replacing them.
// --apiserver-profile takes a CPU profile of the API server for SECONDS once the
// creates are done, into the run's work directory (`go tool pprof -top FILE`).
// Writes DIR/results.json, DIR/results.md and DIR/time-to-ready.png (default tools/bench/results).
// The Regulon manager runs bundled, as its image does (./harness/manager-build.ts).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_DATABASES_PER_NAMESPACE, runCell, stopEverything, type CellResult } from './harness/cell.ts';
import { markdownReport, ratios, summaries } from './harness/report.ts';
import { planRounds } from './harness/rounds.ts';
import { LIMITS, type SubjectName } from './harness/subjects.ts';
import { renderTimeToReadyChart } from './chart.ts';
import { buildManager } from './harness/manager-build.ts';
import { referenceBinary } from './reference.ts';

const root = resolve(import.meta.dirname, '..', '..');
const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '100,1000,5000' },
    subjects: { type: 'string', default: 'floor,regulon,controller-runtime' },
    limits: { type: 'string', default: 'qps50,unlimited' },
    concurrency: { type: 'string', default: '10' },
    idle: { type: 'string', default: '60' },
    'per-namespace': { type: 'string', default: String(DEFAULT_DATABASES_PER_NAMESPACE) },
    out: { type: 'string', default: join(root, 'tools', 'bench', 'results') },
    // Keep the runs already in DIR/results.json (a cell run again has its runs replaced, unless --more).
    append: { type: 'boolean', default: false },
    // With --append: add the new rounds to a cell's earlier runs instead of replacing them.
    more: { type: 'boolean', default: false },
    'apiserver-profile': { type: 'string', default: '0' },
    repeat: { type: 'string', default: '1' },
  },
});
const list = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
const ns = list(values.n).map(Number);
const subjects = list(values.subjects) as SubjectName[];
const limits = list(values.limits).map((l) => {
  const found = LIMITS[l];
  if (!found) throw new Error(`--limits: unknown "${l}" (known: ${Object.keys(LIMITS).join(', ')})`);
  return found;
});
for (const s of subjects)
  if (!['regulon', 'controller-runtime', 'floor'].includes(s)) throw new Error(`--subjects: unknown "${s}"`);
if (ns.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--n: positive integers, comma-separated');
const repeat = Number(values.repeat);
if (!Number.isInteger(repeat) || repeat < 1) throw new Error('--repeat: a positive integer');
if (values.more && !values.append) throw new Error('--more adds to earlier runs, so it needs --append');

interface Failure {
  subject: string;
  limits: string;
  n: number;
  run?: number;
  error: string;
}

const log = (line: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);
const out = resolve(values.out);
mkdirSync(out, { recursive: true });
const workDir = join(tmpdir(), `regulon-bench-${process.pid}`);
const reference = await referenceBinary(log);
if (subjects.includes('regulon')) await buildManager(root, log);

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    log(`${signal}: stopping the control plane and subject of the current run`);
    void stopEverything().finally(() => process.exit(130));
  });

const started = new Date().toISOString();
const previous =
  values.append && existsSync(join(out, 'results.json'))
    ? (JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as {
        results: CellResult[];
        failures: Failure[];
      })
    : { results: [], failures: [] };
// A cell run again replaces all of that cell's earlier runs, unless --more adds to them.
const cells = ns.flatMap((n) =>
  subjects.flatMap((subject) =>
    // The floor has no client limits to vary: it is unlimited by definition.
    (subject === 'floor' ? [LIMITS['unlimited']!] : limits).map((l) => ({ n, subject, limits: l })),
  ),
);
const rerun = (r: { subject: string; limits: string; n: number }) =>
  cells.some((c) => c.subject === r.subject && c.limits.name === r.limits && c.n === r.n);
const results: CellResult[] = previous.results.filter((r) => values.more || !rerun(r));
const failures: Failure[] = previous.failures.filter((f) => values.more || !rerun(f));
const save = async () => {
  const doc = {
    startedAt: started,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
    },
    settings: {
      concurrency: Number(values.concurrency),
      idleSeconds: Number(values.idle),
      databasesPerNamespace: Number(values['per-namespace']),
      limits,
    },
    results,
    failures,
    ratios: ratios(results),
  };
  writeFileSync(join(out, 'results.json'), `${JSON.stringify(doc, null, 2)}\n`);
  writeFileSync(
    join(out, 'results.md'),
    markdownReport(results) +
      failures
        .map((f) => `\nFailed: N=${f.n} ${f.subject} (${f.limits}), run ${f.run ?? 1}: ${f.error}\n`)
        .join(''),
  );
  const points = summaries(results).map((g) => ({
    series:
      g.subject === 'floor'
        ? 'floor'
        : `${g.subject === 'regulon' ? 'Regulon' : 'controller-runtime'} (${g.limits})`,
    n: g.n,
    seconds: g.medianTimeToAllReadyS,
  }));
  if (points.length)
    writeFileSync(
      join(out, 'time-to-ready.png'),
      await renderTimeToReadyChart(points, { title: 'Time until every Database is Ready' }),
    );
};

for (const n of ns) {
  // With --more, the runs kept from earlier invocations; otherwise none were kept.
  const earlierRuns = [...results, ...failures].filter((r) => r.n === n && rerun(r)).map((r) => r.run ?? 1);
  const rounds = planRounds(
    cells.filter((c) => c.n === n),
    repeat,
    earlierRuns,
  );
  const last = rounds.at(-1)!.run;
  for (const { run, cells: inOrder } of rounds) {
    for (const cell of inOrder) {
      const { subject, limits: l } = cell;
      log(`N=${n}: ${subject} (${l.name})${last > 1 ? `, run ${run} of ${last}` : ''}`);
      try {
        const result = await runCell({
          subject,
          limits: l,
          n,
          concurrency: Number(values.concurrency),
          idleMs: Number(values.idle) * 1000,
          perNamespace: Number(values['per-namespace']),
          apiServerProfileS: Number(values['apiserver-profile']),
          root,
          workDir,
          referenceBinary: reference,
          log,
        });
        results.push({ ...result, run });
      } catch (err) {
        // One failed run is reported, and the others still run.
        log(`  FAILED: ${(err as Error).message}`);
        failures.push({ subject, limits: l.name, n, run, error: (err as Error).message });
      }
      await save();
    }
  }
}
process.stdout.write(markdownReport(results));
log(`results in ${out}`);
