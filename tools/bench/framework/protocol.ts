// The line protocol between the framework benchmark's harness and a subject
// process. Every subject (Regulon, controller-runtime, client-node's
// informer) speaks it the same way, so the harness measures all alike:
//
//   out {"ev":"synced","ms":…,"heapBefore":…}   the cache synced, ms after the subject's informers started
//   out {"ev":"initial","ms":…,"reconciles":N}  every cached object reconciled once
//   in  stats        out {"ev":"stats","events":…,"reconciles":…,"heap":…,"objects":…}
//   in  expect U     out {"ev":"seen","events":U,"ms":…}       once U more events were handled
//   in  requeue      out {"ev":"drained","count":N,"ms":…}     once every cached key, added at once, was reconciled
//   out {"ev":"error","message":…}                            a command it could not carry out
//
// The sharded benchmark's replicas (../sharded/replica.ts) speak it too, with two more:
//
//   out {"ev":"reconciled","ids":[…],"at":…}   the objects reconciled since the last such line, by
//                                              index (obj-000123 is 123), repeats included; at: epoch
//                                              ms of the last of them
//   in  shard   out {"ev":"shard","objects":…,"buckets":[…],"changes":…,"informers":…,"mode":…}
//                 the objects its sharded cache holds, the buckets it owns, how often the owned set
//                 changed and how many informers have served the cache, and where the shard is cut
//                 ("server", "client", or "" before any informer served)
//
// heap: the runtime's heap after a full collection (Node: heapUsed after gc();
// Go: HeapAlloc after runtime.GC()), so the live objects' bytes.

export type SubjectMessage =
  | { ev: 'synced'; ms: number; heapBefore: number }
  | { ev: 'initial'; ms: number; reconciles: number }
  | { ev: 'stats'; events: number; reconciles: number; heap: number; objects: number }
  | { ev: 'seen'; events: number; ms: number }
  | { ev: 'drained'; count: number; ms: number }
  | { ev: 'error'; message: string }
  | { ev: 'reconciled'; ids: number[]; at: number }
  | {
      ev: 'shard';
      objects: number;
      buckets: number[];
      changes: number;
      informers: number;
      mode: string;
    };

const NUMERIC: Record<SubjectMessage['ev'], readonly string[]> = {
  synced: ['ms', 'heapBefore'],
  initial: ['ms', 'reconciles'],
  stats: ['events', 'reconciles', 'heap', 'objects'],
  seen: ['events', 'ms'],
  drained: ['count', 'ms'],
  error: [],
  reconciled: ['at'],
  shard: ['objects', 'changes', 'informers'],
};

/** The fields that carry a list of whole numbers. */
const INTEGER_LISTS: Partial<Record<SubjectMessage['ev'], readonly string[]>> = {
  reconciled: ['ids'],
  shard: ['buckets'],
};

/** One line of a subject's stdout as a message; a line that is not one throws, naming what is wrong. */
export function parseSubjectLine(line: string): SubjectMessage {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new Error(`subject wrote a line that is not JSON: ${line.slice(0, 200)}`);
  }
  const ev = (value as { ev?: unknown } | null)?.ev;
  if (typeof ev !== 'string' || !(ev in NUMERIC))
    throw new Error(`subject wrote an unknown message: ${line.slice(0, 200)}`);
  const msg = value as Record<string, unknown>;
  for (const field of NUMERIC[ev as SubjectMessage['ev']])
    if (typeof msg[field] !== 'number' || !Number.isFinite(msg[field]))
      throw new Error(`subject's "${ev}" message lacks a number "${field}": ${line.slice(0, 200)}`);
  for (const field of INTEGER_LISTS[ev as SubjectMessage['ev']] ?? [])
    if (!Array.isArray(msg[field]) || !(msg[field] as unknown[]).every((x) => Number.isSafeInteger(x)))
      throw new Error(
        `subject's "${ev}" message lacks a list of whole numbers "${field}": ${line.slice(0, 200)}`,
      );
  if (ev === 'shard' && typeof msg['mode'] !== 'string')
    throw new Error(`subject's "shard" message lacks its mode: ${line.slice(0, 200)}`);
  if (ev === 'error' && typeof msg['message'] !== 'string')
    throw new Error(`subject's "error" message lacks its text: ${line.slice(0, 200)}`);
  return value as SubjectMessage;
}
