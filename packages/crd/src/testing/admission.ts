// Bad-input corpora for a kind's schema, run against a real API server: each
// case changes one field of a valid object, and either the API server rejects
// it with a cause that names that field (or the object holding it) and says
// why, or it accepts it. Kinds keep their cases beside their definition
// (apps/<kind>/src/testing); their admission tests and the corpus table
// (tools/scripts/corpus-table.ts) both run them through here.
import { InvalidError, type KubeClient } from '@regulon/client';
import type { CustomObject, Kind } from '../kind.ts';

export interface AdmissionCase {
  /**
   * Where the input goes, and the field the rejection must name, as the API
   * server spells it: `spec.storage.size`, `spec.resources.requests.cpu`,
   * `metadata.name`. Segments are split on dots.
   */
  field: string;
  /** The input, set at `field` on a valid object. `undefined` removes the field. */
  value: unknown;
  /** What makes the input bad, or which edge an accepted one probes: `zero`, `absurd unit`, ... */
  form: string;
  /** Other fields the case needs, set first (dot paths to values): the limit beside a request. */
  with?: Record<string, unknown>;
  /** Rejected, with a message matching this; left out: accepted. */
  rejected?: RegExp;
}

export interface AdmissionCorpus<T extends object = object> {
  kind: Kind;
  /** A valid object of the kind, which each case changes. */
  valid: (metadata: { name: string; namespace: string }) => T;
  cases: AdmissionCase[];
}

/** One cause the API server gave for a rejection: the field it names and its message. */
export interface Cause {
  field: string;
  message: string;
}

export type Admission = { accepted: true } | { accepted: false; causes: Cause[] };

/** The valid object with the case's changes (a `metadata.name` case replaces the name given). */
export function objectFor<T extends object>(
  corpus: AdmissionCorpus<T>,
  c: AdmissionCase,
  metadata: { name: string; namespace: string },
): T {
  const obj = structuredClone(corpus.valid(metadata)) as Record<string, unknown>;
  for (const [path, value] of Object.entries(c.with ?? {})) setPath(obj, path, value);
  setPath(obj, c.field, c.value);
  return obj as T;
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  const last = parts.pop()!;
  let node = obj;
  for (const part of parts) {
    const next = node[part];
    if (typeof next !== 'object' || next === null) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  if (value === undefined) delete node[last];
  else node[last] = structuredClone(value);
}

/** Creates the case's object as a dry run (nothing is stored) and returns what the API server said. */
export async function admit<T extends object>(
  client: KubeClient,
  corpus: AdmissionCorpus<T>,
  c: AdmissionCase,
  metadata: { name: string; namespace: string },
): Promise<Admission> {
  try {
    await client
      .resource(corpus.kind.type)
      // The corpus's objects are built from cases, not typed by the kind: the dry run is what checks them.
      .create(objectFor(corpus, c, metadata) as CustomObject<unknown, unknown>, { dryRun: true });
    return { accepted: true };
  } catch (err) {
    if (!(err instanceof InvalidError)) throw err;
    return {
      accepted: false,
      causes: err.causes.map((x) => ({ field: x.field ?? '', message: x.message ?? '' })),
    };
  }
}

/** `spec.resources.requests[cpu]` (the API server's spelling of a map key) as `spec.resources.requests.cpu`. */
const dotted = (field: string) => field.replace(/\[([^\]]*)\]/g, '.$1');

/**
 * The cause that answers the case: one naming its field, a field inside it
 * (the input is an object or a list), or an object that holds it (a rule
 * across fields, such as requests against limits) but not the whole `spec`,
 * with a message matching `rejected`.
 */
export function causeFor(c: AdmissionCase, causes: Cause[]): Cause | undefined {
  if (!c.rejected) return undefined;
  return causes.find((x) => {
    const f = dotted(x.field);
    const names =
      f !== 'spec' &&
      f !== '' &&
      (f === c.field || c.field.startsWith(`${f}.`) || f.startsWith(`${c.field}.`));
    return names && c.rejected!.test(x.message);
  });
}

/**
 * What is wrong with the outcome, or undefined when it is what the case
 * expects: accepted, or rejected with a cause from {@link causeFor}.
 */
export function problemWith(c: AdmissionCase, admission: Admission): string | undefined {
  if (!c.rejected) {
    if (admission.accepted) return undefined;
    return `expected to be accepted, rejected: ${admission.causes.map((x) => `${x.field}: ${x.message}`).join(' | ')}`;
  }
  if (admission.accepted) return 'expected to be rejected, accepted';
  if (causeFor(c, admission.causes)) return undefined;
  return `no cause names ${c.field} with a message matching ${String(c.rejected)}: ${admission.causes
    .map((x) => `${x.field}: ${x.message}`)
    .join(' | ')}`;
}

/** The case in a line, for a test's name: `rejected: spec.storage.size = "0" (zero)`. */
export const caseTitle = (c: AdmissionCase) =>
  `${c.rejected ? 'rejected' : 'accepted'}: ${c.field} = ${inputOf(c)} (${c.form})`;

const inputOf = (c: AdmissionCase) =>
  shorten(c.value === undefined ? '(left out)' : JSON.stringify(c.value), 48);

/** A row of a corpus table: one input and what happened to it. */
export interface CorpusRow {
  kind: string;
  field: string;
  input: string;
  form: string;
  outcome: string;
  message: string;
}

/** The case and its admission as a table row, the API server's message shortened to `width` characters. */
export function rowFor(kind: string, c: AdmissionCase, admission: Admission, width = 110): CorpusRow {
  const cause = admission.accepted ? undefined : (causeFor(c, admission.causes) ?? admission.causes[0]);
  const message = cause ? `${cause.field}: ${cause.message}` : '';
  return {
    kind,
    field: c.field,
    input: inputOf(c),
    form: c.form,
    outcome: admission.accepted ? 'accepted' : 'rejected at admission',
    message: shorten(message, width),
  };
}

const shorten = (s: string, width: number) =>
  s.length > width ? `${s.slice(0, width - 1)}… (${s.length} characters)` : s;

/** Markdown, grouped by outcome (in the order the outcomes first appear), one row per input. */
export function markdownTable(rows: CorpusRow[]): string {
  const cell = (s: string) =>
    s
      .replaceAll('\\', '\\\\')
      .replaceAll('|', '\\|')
      .replace(/[\r\n]+/g, ' ');
  const outcomes = [...new Set(rows.map((r) => r.outcome))];
  const lines = [
    '| outcome | kind | field | input | form | message |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const outcome of outcomes)
    for (const r of rows.filter((x) => x.outcome === outcome))
      lines.push(
        `| ${[r.outcome, r.kind, r.field, `\`${r.input}\``, r.form, r.message].map(cell).join(' | ')} |`,
      );
  return lines.join('\n');
}
