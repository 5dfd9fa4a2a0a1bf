// `npm run bench:framework`: where the framework, not the API server, sets the
// pace. Regulon (packages/cache + packages/runtime), the controller-runtime
// reference (reference-go framework) and @kubernetes/client-node's informer
// with a plain reconcile loop, side by side in one run on one control plane:
//
//   initial sync of Widgets (a small custom resource) at each --sizes, and of
//   --configmaps ConfigMaps of 4 KiB: time to synced, cold start to /readyz,
//   peak RSS, heap per object;
//   watch throughput at --watch-at objects: --watch-updates patches as fast as
//   the API server takes them; events handled per second and CPU per event;
//   reconcile throughput at --requeue-at objects: every key requeued at once,
//   a trivial reconcile (one cached read, one status check, no write).
//
// Every object is created before any subject starts, and each subject is a
// process of its own, so what is measured is the subject's work alone.
// --rounds K runs each cell K times, in rounds whose subject order alternates.
// First it measures the memory floor (idle RSS with no objects, ./framework/idle.ts).
//
//   npm run bench:framework -- [--sizes 10000,50000,100000] [--configmaps 20000]
//     [--watch-at 10000] [--watch-updates 20000] [--requeue-at 50000] [--rounds 2]
//     [--subjects regulon,controller-runtime,client-node] [--concurrency 1] [--no-idle] [--append] [--out DIR]
//
// --append keeps the runs in DIR/framework.json of every cell this run does not
// measure (and the floor, with --no-idle): e.g. `--sizes '' --append` runs the
// ConfigMap cell again alone, and `--sizes '' --configmaps 0 --append` the
// memory floor alone. A cell it measures has its earlier runs replaced.
//
// Writes DIR/framework.json, DIR/framework.md and DIR/framework-sync.png (default tools/bench/results).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { KubeClient, Kinds } from '@regulon/client';
import { ControlPlane } from '@regulon/testenv';
import { renderTimeToReadyChart } from './chart.ts';
import { idleMarkdown, measureIdle, type IdleRow } from './framework/idle.ts';
import { KIND_TYPES, WIDGET_CRD, populate, type PopulationKind } from './framework/population.ts';
import { cellName, frameworkMarkdown } from './framework/report.ts';
import {
  FRAMEWORK_SUBJECTS,
  runFrameworkSubject,
  type FrameworkRun,
  type FrameworkSubject,
} from './framework/run.ts';
import { buildManager } from './harness/manager-build.ts';
import { planRounds } from './harness/rounds.ts';
import { referenceBinary } from './reference.ts';

const exec = promisify(execFile);
const root = resolve(import.meta.dirname, '..', '..');
const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10000,50000,100000' },
    configmaps: { type: 'string', default: '20000' },
    'watch-at': { type: 'string', default: '10000' },
    'watch-updates': { type: 'string', default: '20000' },
    'requeue-at': { type: 'string', default: '50000' },
    rounds: { type: 'string', default: '2' },
    subjects: { type: 'string', default: FRAMEWORK_SUBJECTS.join(',') },
    concurrency: { type: 'string', default: '1' },
    'create-concurrency': { type: 'string', default: '64' },
    'no-idle': { type: 'boolean', default: false },
    // Keep DIR/framework.json's runs of the cells (and the floor) this run does not measure.
    append: { type: 'boolean', default: false },
    out: { type: 'string', default: join(root, 'tools', 'bench', 'results') },
  },
});
const positive = (name: string, v: string, allowZero = false) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < (allowZero ? 0 : 1))
    throw new Error(`--${name}: ${allowZero ? 'a whole number' : 'a positive integer'}, not "${v}"`);
  return n;
};
const list = (name: string, s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)
    .map((x) => positive(name, x));
const sizes = list('sizes', values.sizes).sort((a, b) => a - b);
// With both empty only the memory floor is measured (unless --no-idle too).
if (!sizes.length && !Number(values.configmaps) && values['no-idle'])
  throw new Error('nothing to measure: --sizes and --configmaps are both empty, and --no-idle');
const configmaps = positive('configmaps', values.configmaps, true);
const watchAt = positive('watch-at', values['watch-at'], true);
const watchUpdates = positive('watch-updates', values['watch-updates'], true);
const requeueAt = positive('requeue-at', values['requeue-at'], true);
const rounds = positive('rounds', values.rounds);
const concurrency = positive('concurrency', values.concurrency);
const createConcurrency = positive('create-concurrency', values['create-concurrency']);
const subjects = values.subjects.split(',').map((s) => s.trim()) as FrameworkSubject[];
for (const s of subjects)
  if (!FRAMEWORK_SUBJECTS.includes(s))
    throw new Error(`--subjects: unknown "${s}" (known: ${FRAMEWORK_SUBJECTS.join(', ')})`);

const log = (line: string) =>
  console.error(`[bench:framework ${new Date().toISOString().slice(11, 19)}] ${line}`);
const out = resolve(values.out);
mkdirSync(out, { recursive: true });
const workDir = join(tmpdir(), `regulon-bench-framework-${process.pid}`);
mkdirSync(workDir, { recursive: true });
const reference = await referenceBinary(log);

type Failure = { subject: string; cell: string; run: number; error: string };
const started = new Date().toISOString();
type Saved = { runs: Array<FrameworkRun & { loadAvg1: number }>; failures: Failure[]; idle: IdleRow[] };
const earlier: Saved =
  values.append && existsSync(join(out, 'framework.json'))
    ? (JSON.parse(readFileSync(join(out, 'framework.json'), 'utf8')) as Saved)
    : { runs: [], failures: [], idle: [] };
const measuredNow = new Set([
  ...sizes.map((n) => cellName({ kind: 'widgets', n })),
  ...(configmaps > 0 ? [cellName({ kind: 'configmaps', n: configmaps })] : []),
]);
const runs = earlier.runs.filter((r) => !measuredNow.has(cellName(r)));
const failures = earlier.failures.filter((f) => !measuredNow.has(f.cell));
let idle: IdleRow[] = values['no-idle'] ? earlier.idle : [];

async function save(): Promise<void> {
  const doc = {
    startedAt: started,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
    },
    settings: { sizes, configmaps, watchAt, watchUpdates, requeueAt, rounds, concurrency, subjects },
    idle,
    runs,
    failures,
  };
  writeFileSync(join(out, 'framework.json'), `${JSON.stringify(doc, null, 2)}\n`);
  const loads = runs.map((r) => r.loadAvg1);
  writeFileSync(
    join(out, 'framework.md'),
    [
      `Latest run started ${started}; ${rounds} round(s) per cell measured then; 1-minute load average at each subject's start, over every run listed: ${loads.length ? `${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}` : '—'} on ${cpus().length} cores.`,
      '',
      frameworkMarkdown(runs),
      ...(idle.length ? ['', idleMarkdown(idle)] : []),
      ...failures.map((f) => `\nFailed: ${f.cell} ${f.subject}, round ${f.run}: ${f.error}\n`),
    ].join('\n'),
  );
  const names: Record<FrameworkSubject, string> = {
    regulon: 'Regulon',
    'controller-runtime': 'controller-runtime',
    'client-node': 'client-node informer',
  };
  // The medians of the Widget sync cells, one line per subject.
  const medianOf = (s: FrameworkSubject, n: number, of: (r: FrameworkRun) => number) => {
    const vs = runs
      .filter((r) => r.subject === s && r.kind === 'widgets' && r.n === n)
      .map(of)
      .sort((a, b) => a - b);
    return vs.length
      ? vs.length % 2
        ? vs[(vs.length - 1) / 2]!
        : (vs[vs.length / 2 - 1]! + vs[vs.length / 2]!) / 2
      : undefined;
  };
  const points = (of: (r: FrameworkRun) => number) =>
    FRAMEWORK_SUBJECTS.flatMap((s) =>
      [...new Set(runs.filter((r) => r.kind === 'widgets').map((r) => r.n))]
        .sort((a, b) => a - b)
        .flatMap((n) => {
          const v = medianOf(s, n, of);
          return v === undefined ? [] : [{ series: names[s], n, seconds: v }];
        }),
    );
  const sync = points((r) => r.syncS);
  if (sync.length)
    writeFileSync(
      join(out, 'framework-sync.png'),
      await renderTimeToReadyChart(sync, {
        title: 'Initial sync of N small custom resources (median of the rounds)',
        xTitle: 'Widgets cached (N, log scale)',
        yTitle: 'Time to synced (seconds, log scale)',
      }),
    );
  // The chart's y field is named for seconds; here it carries MiB.
  const rss = points((r) => r.peakRssMiB);
  if (rss.length)
    writeFileSync(
      join(out, 'framework-rss.png'),
      await renderTimeToReadyChart(rss, {
        title: 'Peak RSS after the initial sync and reconciles (median of the rounds)',
        xTitle: 'Widgets cached (N, log scale)',
        yTitle: 'Peak RSS (MiB, log scale)',
      }),
    );
}

const cp = await ControlPlane.start({ dir: join(workDir, 'control-plane'), scale: { componentQps: 2000 } });
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    log(`${signal}: stopping the control plane`);
    void cp.stop().finally(() => process.exit(130));
  });
try {
  const kubectl = (...args: string[]) => exec(cp.state.kubectl, ['--kubeconfig', cp.kubeconfigPath, ...args]);
  const crdFile = join(workDir, 'widgets-crd.json');
  writeFileSync(crdFile, JSON.stringify(WIDGET_CRD));
  await kubectl('apply', '--server-side', '-f', crdFile, '-f', join(root, 'deploy', 'crds'));
  await kubectl('wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all');
  const client = KubeClient.load({ kubeconfigPath: cp.kubeconfigPath, qps: Infinity });
  const namespaceOf = (kind: PopulationKind) => `bench-${kind}`;
  for (const kind of Object.keys(KIND_TYPES) as PopulationKind[])
    await client.resource(Kinds.Namespace).create({ metadata: { name: namespaceOf(kind) } });

  if (!values['no-idle']) {
    log('the memory floor: idle RSS with no objects');
    await buildManager(root, log);
    idle = await measureIdle({
      root,
      kubeconfig: cp.kubeconfigPath,
      referenceBinary: reference,
      logFile: join(workDir, 'idle.log'),
      log,
    });
    await save();
  }

  const populations: Array<{ kind: PopulationKind; n: number }> = [
    ...sizes.map((n) => ({ kind: 'widgets' as const, n })),
    ...(configmaps > 0 ? [{ kind: 'configmaps' as const, n: configmaps }] : []),
  ];
  const created: Record<PopulationKind, number> = { widgets: 0, configmaps: 0 };
  for (const { kind, n } of populations) {
    const t0 = performance.now();
    await populate(client, kind, namespaceOf(kind), created[kind], n, createConcurrency);
    log(
      `${kind}: ${n - created[kind]} created in ${((performance.now() - t0) / 1000).toFixed(1)} s (${n} in all)`,
    );
    created[kind] = n;
    // The namespace's own objects too (a kube-root-ca.crt ConfigMap): every subject caches those as well.
    const objects = (
      await client.resource(KIND_TYPES[kind]).listAll({ namespace: namespaceOf(kind), metadataOnly: true })
    ).items.length;
    for (const { run, cells } of planRounds(subjects, rounds)) {
      for (const subject of cells) {
        const cell = cellName({ kind, n });
        log(`${cell}: ${subject}, round ${run} of ${rounds}`);
        const loadAvg1 = loadavg()[0]!;
        try {
          const result = await runFrameworkSubject({
            subject,
            kind,
            namespace: namespaceOf(kind),
            n,
            objects,
            run,
            kubeconfig: cp.kubeconfigPath,
            client,
            referenceBinary: reference,
            root,
            logFile: join(workDir, `${subject}.log`),
            concurrency,
            watchUpdates: kind === 'widgets' && n === watchAt ? watchUpdates : 0,
            watchObjects: n,
            requeue: kind === 'widgets' && n === requeueAt,
          });
          runs.push({ ...result, loadAvg1 });
          log(
            `  synced ${result.syncS.toFixed(2)} s, ready ${result.coldStartS.toFixed(2)} s, peak RSS ${result.peakRssMiB.toFixed(0)} MiB, heap/object ${result.heapPerObjectBytes.toFixed(0)} B` +
              (result.watch
                ? `, ${result.watch.eventsPerS.toFixed(0)} events/s at ${result.watch.cpuUsPerEvent.toFixed(0)} µs CPU each`
                : '') +
              (result.reconcile
                ? `, ${result.reconcile.perS.toFixed(0)} reconciles/s at ${result.reconcile.cpuUsPerReconcile.toFixed(1)} µs CPU each`
                : ''),
          );
        } catch (err) {
          log(`  FAILED: ${(err as Error).message}`);
          failures.push({ subject, cell, run, error: (err as Error).message });
        }
        await save();
      }
    }
  }
  client.close();
} finally {
  await cp.stop();
  rmSync(join(workDir, 'control-plane'), { recursive: true, force: true });
}
process.stdout.write(frameworkMarkdown(runs));
log(`results in ${out}; subject logs in ${workDir}`);
