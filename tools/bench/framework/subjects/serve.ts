// The subject side of the line protocol (../protocol.ts), for the Node
// subjects: counters, the one pending wait, and the stdin command loop. The
// subjects run with --expose-gc, so "heap" is measured after a full collection.
import { createInterface } from 'node:readline';
import type { SubjectMessage } from '../protocol.ts';

export interface Served {
  /** The subject's keys, cached, for "requeue" and "stats". */
  keys(): string[];
  /** Adds every key to the subject's queue at once. */
  enqueue(keys: readonly string[]): void;
}

const gc = (globalThis as { gc?: () => void }).gc;

export function heapAfterGc(): number {
  if (!gc) throw new Error('run the subject with --expose-gc: its heap is measured after a full collection');
  gc();
  return process.memoryUsage().heapUsed;
}

const emit = (msg: SubjectMessage) => process.stdout.write(`${JSON.stringify(msg)}\n`);

/** Counts events and reconciles; resolves one wait at a time on either. */
export class Counters {
  events = 0;
  reconciles = 0;
  #wait:
    { of: 'events' | 'reconciles'; target: number; started: number; done: (ms: number) => void } | undefined;

  event(): void {
    this.events++;
    this.#check();
  }

  reconciled(): void {
    this.reconciles++;
    this.#check();
  }

  /** Calls done once `more` further events or reconciles were counted. */
  wait(of: 'events' | 'reconciles', more: number, done: (ms: number) => void): void {
    this.waitUntil(of, this[of] + more, done);
  }

  /** Calls done once the count of events or reconciles reaches `target`. */
  waitUntil(of: 'events' | 'reconciles', target: number, done: (ms: number) => void): void {
    this.#wait = { of, target, started: performance.now(), done };
    this.#check();
  }

  #check(): void {
    const w = this.#wait;
    if (!w || this[w.of] < w.target) return;
    this.#wait = undefined;
    w.done(performance.now() - w.started);
  }
}

/**
 * Announces sync and the end of the initial reconciles, then serves the
 * harness's commands. Call once the subject's cache has synced.
 */
export function serve(
  counters: Counters,
  subject: Served,
  synced: { ms: number; heapBefore: number; startedAt: number },
): void {
  emit({ ev: 'synced', ms: synced.ms, heapBefore: synced.heapBefore });
  const total = subject.keys().length;
  // Every cached object arrived as an add, so each is reconciled once.
  counters.waitUntil('reconciles', total, () =>
    emit({ ev: 'initial', ms: performance.now() - synced.startedAt, reconciles: total }),
  );
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const [command, arg] = line.trim().split(/\s+/);
    if (command === 'stats') {
      emit({
        ev: 'stats',
        events: counters.events,
        reconciles: counters.reconciles,
        heap: heapAfterGc(),
        objects: subject.keys().length,
      });
    } else if (command === 'expect') {
      const n = Number(arg);
      if (!Number.isInteger(n) || n < 1) emit({ ev: 'error', message: 'expect: a positive count' });
      else counters.wait('events', n, (ms) => emit({ ev: 'seen', events: n, ms }));
    } else if (command === 'requeue') {
      const keys = subject.keys();
      counters.wait('reconciles', keys.length, (ms) => emit({ ev: 'drained', count: keys.length, ms }));
      subject.enqueue(keys);
    } else if (command) {
      emit({ ev: 'error', message: `unknown command ${command}` });
    }
  });
}
