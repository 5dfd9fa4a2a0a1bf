// `npm run bench:sharded`: Regulon's sharded manager (issue 39) with 1, 2 and 4 active
// replicas against one controller-runtime replica doing the same work, framework-bound: the
// framework benchmark's Widgets and its trivial reconcile (one cached read, no write), on one
// control plane whose API server has the ShardedListAndWatch gate on, so that each Regulon
// replica (sharding.shardCaches) lists and watches only its buckets' objects.
//
// Per cell (N objects, a subject with R replicas): the time from spawning the replicas until
// every object was reconciled once by one of them; per replica its peak RSS (VmHWM), CPU, heap,
// the objects it cached and reconciled, the buckets it owned; with 2 replicas or more, the
// takeover after one is killed -9 (until its buckets' objects are reconciled by the others).
//
// The objects are Widgets spread round-robin over --namespaces namespaces: the sharded manager
// hashes keys by namespace, so the objects of one namespace are one replica's whatever R is.
//
//   npm run bench:sharded -- [--sizes 20000,50000] [--replicas 1,2,4] [--rounds 1]
//     [--subjects controller-runtime,regulon] [--caches owned[,whole]] [--namespaces 64]
//     [--buckets 16] [--concurrency 1] [--lease-ms 15000 --renew-ms 10000 --retry-ms 2000]
//     [--no-takeover] [--gate off] [--timeout 600] [--append] [--out DIR]
//
// --caches whole runs Regulon with sharding.shardCaches off too (every replica caches every
// object: a warm takeover). --gate off starts the API server without ShardedListAndWatch (the
// replicas then filter their shards on the client). --append keeps the runs in DIR/sharded.json
// of the cells this run does not measure; a cell it measures has its earlier runs replaced.
//
// Writes DIR/sharded.json, DIR/sharded.md, DIR/sharded-rss.png and DIR/sharded-time.png
// (default tools/bench/results).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { KubeClient, Kinds } from '@regulon/client';
import { ControlPlane } from '@regulon/testenv';
import { renderTimeToReadyChart, type ChartPoint } from './chart.ts';
import { WIDGET_CRD } from './framework/population.ts';
import { median } from './harness/report.ts';
import { planRounds } from './harness/rounds.ts';
import { referenceBinary } from './reference.ts';
import { objectsPerBucket, populateSpread } from './sharded/population.ts';
import {
  cellKey,
  runsMarkdown,
  summarize,
  summaryMarkdown,
  type CacheMode,
  type ShardedRun,
  type ShardedSubject,
} from './sharded/report.ts';
import { killSubjects, runControllerRuntimeCell, runRegulonCell } from './sharded/run.ts';

const exec = promisify(execFile);
const root = resolve(import.meta.dirname, '..', '..');
const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '20000,50000' },
    replicas: { type: 'string', default: '1,2,4' },
    rounds: { type: 'string', default: '1' },
    subjects: { type: 'string', default: 'controller-runtime,regulon' },
    caches: { type: 'string', default: 'owned' },
    namespaces: { type: 'string', default: '64' },
    buckets: { type: 'string', default: '16' },
    concurrency: { type: 'string', default: '1' },
    'create-concurrency': { type: 'string', default: '64' },
    'lease-ms': { type: 'string', default: '15000' },
    'renew-ms': { type: 'string', default: '10000' },
    'retry-ms': { type: 'string', default: '2000' },
    'no-takeover': { type: 'boolean', default: false },
    gate: { type: 'string', default: 'on' },
    timeout: { type: 'string', default: '600' },
    append: { type: 'boolean', default: false },
    out: { type: 'string', default: join(root, 'tools', 'bench', 'results') },
  },
});
const positive = (name: string, v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: a positive integer, not "${v}"`);
  return n;
};
const list = (name: string, s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
const sizes = list('sizes', values.sizes)
  .map((x) => positive('sizes', x))
  .sort((a, b) => a - b);
const replicaCounts = list('replicas', values.replicas).map((x) => positive('replicas', x));
const oneOf = <T extends string>(name: string, known: readonly T[], v: string): T => {
  if (!(known as readonly string[]).includes(v))
    throw new Error(`--${name}: ${known.join(' or ')}, not "${v}"`);
  return v as T;
};
const subjects = list('subjects', values.subjects).map((s) =>
  oneOf<ShardedSubject>('subjects', ['controller-runtime', 'regulon'], s),
);
const cacheModes = list('caches', values.caches).map((m) =>
  oneOf<CacheMode>('caches', ['owned', 'whole'], m),
);
const gate = oneOf('gate', ['on', 'off'], values.gate);
const rounds = positive('rounds', values.rounds);
const namespaces = positive('namespaces', values.namespaces);
const buckets = positive('buckets', values.buckets);
const concurrency = positive('concurrency', values.concurrency);
const createConcurrency = positive('create-concurrency', values['create-concurrency']);
const timings = {
  leaseMs: positive('lease-ms', values['lease-ms']),
  renewMs: positive('renew-ms', values['renew-ms']),
  retryMs: positive('retry-ms', values['retry-ms']),
};
const timeoutMs = positive('timeout', values.timeout) * 1000;
if (!sizes.length || !subjects.length) throw new Error('nothing to measure: --sizes or --subjects is empty');

const log = (line: string) =>
  console.error(`[bench:sharded ${new Date().toISOString().slice(11, 19)}] ${line}`);
const out = resolve(values.out);
mkdirSync(out, { recursive: true });
const workDir = join(tmpdir(), `regulon-bench-sharded-${process.pid}`);
mkdirSync(workDir, { recursive: true });
const reference = subjects.includes('controller-runtime') ? await referenceBinary(log) : '';

/** One cell of a round: a subject with its replica count and cache mode. */
type Cell = { subject: ShardedSubject; replicas: number; caches: CacheMode | null };
const cells: Cell[] = [
  ...(subjects.includes('controller-runtime')
    ? [{ subject: 'controller-runtime' as const, replicas: 1, caches: null }]
    : []),
  ...(subjects.includes('regulon')
    ? cacheModes.flatMap((caches) =>
        replicaCounts.map((replicas) => ({ subject: 'regulon' as const, replicas, caches })),
      )
    : []),
];

type Failure = { cell: string; run: number; error: string };
type Saved = { runs: ShardedRun[]; failures: Failure[] };
const started = new Date().toISOString();
const earlier: Saved =
  values.append && existsSync(join(out, 'sharded.json'))
    ? (JSON.parse(readFileSync(join(out, 'sharded.json'), 'utf8')) as Saved)
    : { runs: [], failures: [] };
const measuredNow = new Set(sizes.flatMap((n) => cells.map((c) => cellKey({ ...c, n }))));
const runs = earlier.runs.filter((r) => !measuredNow.has(cellKey(r)));
const failures = earlier.failures.filter((f) => !measuredNow.has(f.cell));

async function save(): Promise<void> {
  const doc = {
    startedAt: started,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
    },
    settings: {
      sizes,
      replicas: replicaCounts,
      rounds,
      subjects,
      caches: cacheModes,
      namespaces,
      buckets,
      concurrency,
      timings,
      takeover: !values['no-takeover'],
      gate,
    },
    runs,
    failures,
  };
  writeFileSync(join(out, 'sharded.json'), `${JSON.stringify(doc, null, 2)}\n`);
  const loads = runs.map((r) => r.loadAvg1);
  writeFileSync(
    join(out, 'sharded.md'),
    [
      `Latest run started ${started}; ${rounds} round(s) per cell measured then; ${namespaces} namespaces, ${buckets} buckets, ${concurrency} worker(s) per replica, Lease ${timings.leaseMs} / renew ${timings.renewMs} / retry ${timings.retryMs} ms, ShardedListAndWatch ${gate}; 1-minute load average at each cell's start, over every run listed: ${loads.length ? `${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}` : '—'} on ${cpus().length} cores.`,
      '',
      'Medians over the rounds, (min–max) when there are several:',
      '',
      summaryMarkdown(runs),
      'Every run, each replica’s figures in order (replica 1 / replica 2 / …):',
      '',
      runsMarkdown(runs),
      ...failures.map((f) => `Failed: ${f.cell}, round ${f.run}: ${f.error}\n`),
    ].join('\n'),
  );
  const summaries = summarize(runs);
  const points = (of: (c: (typeof summaries)[number]) => number[]): ChartPoint[] =>
    summaries.map((c) => ({ series: c.name, n: c.n, seconds: median(of(c)) }));
  if (new Set(runs.map((r) => r.n)).size > 1) {
    // The chart's y field is named for seconds; the RSS chart carries MiB in it.
    writeFileSync(
      join(out, 'sharded-rss.png'),
      await renderTimeToReadyChart(
        points((c) => c.maxPeakRssMiB),
        {
          title: 'Peak RSS of the largest replica (median of the rounds)',
          xTitle: 'Widgets (N, log scale)',
          yTitle: 'Peak RSS (MiB, log scale)',
        },
      ),
    );
    writeFileSync(
      join(out, 'sharded-time.png'),
      await renderTimeToReadyChart(
        points((c) => c.allReconciledS),
        {
          title: 'From spawn until every object was reconciled once (median of the rounds)',
          xTitle: 'Widgets (N, log scale)',
          yTitle: 'Seconds (log scale)',
        },
      ),
    );
  }
}

const cp = await ControlPlane.start({
  dir: join(workDir, 'control-plane'),
  scale: { componentQps: 2000 },
  ...(gate === 'on' ? { featureGates: { ShardedListAndWatch: true } } : {}),
});
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    log(`${signal}: stopping the replicas and the control plane`);
    killSubjects();
    void cp.stop().finally(() => process.exit(130));
  });
try {
  const kubectl = (...args: string[]) => exec(cp.state.kubectl, ['--kubeconfig', cp.kubeconfigPath, ...args]);
  const crdFile = join(workDir, 'widgets-crd.json');
  writeFileSync(crdFile, JSON.stringify(WIDGET_CRD));
  await kubectl('apply', '--server-side', '-f', crdFile);
  await kubectl('wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all');
  const client = KubeClient.load({ kubeconfigPath: cp.kubeconfigPath, qps: Infinity });
  const leaseNamespace = 'bench-sharding';
  await client.resource(Kinds.Namespace).create({ metadata: { name: leaseNamespace } });

  let created = 0;
  for (const n of sizes) {
    const t0 = performance.now();
    await populateSpread(client, namespaces, created, n, createConcurrency);
    log(
      `${n - created} Widgets created over ${namespaces} namespaces in ${((performance.now() - t0) / 1000).toFixed(1)} s (${n} in all)`,
    );
    created = n;
    const perBucket = objectsPerBucket(n, namespaces, buckets);
    log(`objects per bucket: ${perBucket.join(' ')}`);
    for (const { run, cells: order } of planRounds(cells, rounds)) {
      for (const cell of order) {
        const name = cellKey({ ...cell, n });
        log(`${name.replace('|', ' Widgets: ')}, round ${run} of ${rounds}`);
        const logDir = join(workDir, `${n}-${cell.subject}-${cell.replicas}-${cell.caches ?? ''}-${run}`);
        mkdirSync(logDir, { recursive: true });
        const common = {
          n,
          namespaces,
          buckets,
          perBucket,
          run,
          kubeconfig: cp.kubeconfigPath,
          root,
          referenceBinary: reference,
          logDir,
          concurrency,
          timeoutMs,
          loadAvg1: loadavg()[0]!,
          log,
        };
        try {
          const result =
            cell.subject === 'controller-runtime'
              ? await runControllerRuntimeCell(common)
              : await runRegulonCell({
                  ...common,
                  replicas: cell.replicas,
                  caches: cell.caches!,
                  leaseNamespace,
                  timings,
                  takeover: !values['no-takeover'],
                });
          runs.push(result);
          const f = result.replicaFigures;
          log(
            `  ${result.allReconciledS.toFixed(2)} s to all reconciled; settled ${result.settledS?.toFixed(2) ?? '—'} s; peak RSS ${f.map((x) => x.peakRssMiB.toFixed(0)).join(' / ')} MiB; cached ${f.map((x) => x.cached).join(' / ')}; shard ${result.shardMode || '—'}`,
          );
        } catch (err) {
          log(`  FAILED: ${(err as Error).message}`);
          failures.push({ cell: name, run, error: (err as Error).message });
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
process.stdout.write(summaryMarkdown(runs));
log(`results in ${out}; replica logs in ${workDir}`);
