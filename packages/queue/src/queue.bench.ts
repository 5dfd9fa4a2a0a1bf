import { Registry } from 'prom-client';
import { WorkQueue } from './queue.ts';

export interface BenchmarkResult {
  benchmark: string;
  value: number;
  unit: string;
}

const KEYS = 200_000;

function makeKeys(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `ns-${i % 100}/object-${i}`);
}

// Time for `workers` concurrent workers to drain `keys` distinct keys through add -> get -> done.
async function drainSeconds(keys: readonly string[], workers: number, registry?: Registry): Promise<number> {
  const q = new WorkQueue<string>(registry ? { name: 'bench', registry } : {});
  let processed = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const r = await q.get();
      if (r.shutdown) return;
      processed++;
      q.done(r.item);
    }
  };

  const start = performance.now();
  const running = Array.from({ length: workers }, worker);
  for (const key of keys) q.add(key);
  q.shutDown();
  await Promise.all(running);
  const seconds = (performance.now() - start) / 1000;

  if (processed !== keys.length) throw new Error(`processed ${processed} of ${keys.length} keys`);
  return seconds;
}

export async function runQueueBenchmarks(): Promise<BenchmarkResult[]> {
  const keys = makeKeys(KEYS);
  // Warm up so the figures measure optimised code rather than the JIT's first tiers.
  for (let i = 0; i < 3; i++) await drainSeconds(keys.slice(0, 20_000), 4);

  const cases: Array<{ benchmark: string; workers: number; registry?: Registry }> = [
    { benchmark: `add->get->done, 1 worker, ${KEYS} keys`, workers: 1 },
    { benchmark: `add->get->done, 16 workers, ${KEYS} keys`, workers: 16 },
    {
      benchmark: `add->get->done, 1 worker, ${KEYS} keys, with metrics`,
      workers: 1,
      registry: new Registry(),
    },
  ];
  const results: BenchmarkResult[] = [];
  for (const c of cases) {
    const seconds = await drainSeconds(keys, c.workers, c.registry);
    results.push({ benchmark: c.benchmark, value: Math.round(keys.length / seconds), unit: 'keys/s' });
  }
  return results;
}

if (import.meta.main) {
  console.table(await runQueueBenchmarks());
}
