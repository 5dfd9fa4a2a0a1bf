// `npm run bench`: every package's benchmarks side by side in one run, as one
// table. Benchmarks measure; they assert nothing (targets are in the issue notes).
import { runQueueBenchmarks } from '../../packages/queue/src/queue.bench.ts';
import { runCacheBenchmarks } from '../../packages/cache/src/cache.bench.ts';
import { runConvergedBenchmarks } from '../../packages/runtime/src/apply/converged.bench.ts';
import { runLoggingBenchmarks } from '../../packages/runtime/src/observability/logging.bench.ts';

const rows = [
  ...(await runQueueBenchmarks()),
  ...(await runCacheBenchmarks()),
  ...runConvergedBenchmarks(),
  ...runLoggingBenchmarks(),
];
console.table(rows.map((r) => ({ benchmark: r.benchmark, value: r.value, unit: r.unit })));
