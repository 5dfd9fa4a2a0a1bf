import { Writable } from 'node:stream';
import type { BenchmarkResult } from '../apply/converged.bench.ts';
import { createLogger, lazyChild } from './logging.ts';

/** Calls per second of `run`, after a warm-up of the JIT. */
function rate(n: number, run: (i: number) => void): number {
  for (let i = 0; i < 2_000; i++) run(i);
  const start = performance.now();
  for (let i = 0; i < n; i++) run(i);
  return n / ((performance.now() - start) / 1000);
}

/**
 * The logger a reconcile gets, as a converged reconcile uses it: bound to its
 * object and reconcile ID, with one debug line (off at the default level).
 * pino's child against lazyChild, side by side in one run.
 */
export function runLoggingBenchmarks(): BenchmarkResult[] {
  const sink = new Writable({ write: (_c, _e, cb) => cb() });
  const parent = createLogger({ level: 'info', destination: sink }).child({ controller: 'database' });
  const bindings = (i: number) => ({ namespace: 'bench', name: `db-${i}`, reconcileID: `id-${i}` });
  const n = 200_000;
  const eager = rate(n, (i) => parent.child(bindings(i)).debug({ result: 'success' }, 'reconciled'));
  const lazy = rate(n, (i) => lazyChild(parent, bindings(i)).debug({ result: 'success' }, 'reconciled'));
  const micros = (perSecond: number) => Number((1e6 / perSecond).toFixed(2));
  return [
    { benchmark: 'reconcile logger, pino child (µs per reconcile)', value: micros(eager), unit: 'µs' },
    { benchmark: 'reconcile logger, lazy child (µs per reconcile)', value: micros(lazy), unit: 'µs' },
  ];
}
