// A ListerWatcher that answers from queues of scripted lists and watches, for
// the reflector's unit tests: what the loop does with each answer, and what it
// asked. What the real API server answers is covered by the integration tests.
import type { KubeObject, ListResult, WatchEvent } from '@regulon/client';
import type { ListerWatcher, ListRequest, WatchRequest } from '../lister-watcher.ts';

export type WatchScript = (req: WatchRequest) => AsyncIterable<WatchEvent<KubeObject>>;

/** Serves lists and watches from queues of scripted answers; records the requests. */
export class ScriptedListerWatcher implements ListerWatcher<KubeObject> {
  lists: Array<(req: ListRequest | undefined) => ListResult<KubeObject>> = [];
  watches: WatchScript[] = [];
  listCalls: Array<ListRequest | undefined> = [];
  watchCalls: WatchRequest[] = [];
  list(_signal: AbortSignal, req?: ListRequest): Promise<ListResult<KubeObject>> {
    this.listCalls.push(req);
    const next = this.lists.shift();
    return next ? Promise.resolve(next(req)) : Promise.reject(new Error('no list scripted'));
  }
  watch(req: WatchRequest): AsyncIterable<WatchEvent<KubeObject>> {
    this.watchCalls.push(req);
    return (this.watches.shift() ?? hang)(req);
  }
}

/** A watch that stays open, silent, until aborted. */
export async function* hang(req: WatchRequest): AsyncIterable<WatchEvent<KubeObject>> {
  await new Promise<void>((_, reject) =>
    req.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
  );
  yield* [];
}

/** A watch that sends these events, then ends. */
export function events(...evs: WatchEvent<KubeObject>[]): WatchScript {
  return async function* () {
    await Promise.resolve();
    yield* evs;
  };
}

/** Waits, a turn of the event loop at a time, until `cond` holds; throws naming `what` after the timeout. */
export async function until(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}
