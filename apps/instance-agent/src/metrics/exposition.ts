// The Prometheus text format for values read from an engine at scrape time.
// Written here because prom-client, which the manager uses for its own
// metrics, instruments the process it runs in: its counters only go up by
// inc() and an unlabelled gauge is always printed. A value mirrored from
// another process when it is scraped (client_golang's "const metrics", which
// redis_exporter and postgres_exporter are built on) has no form there.

export type SampleType = 'gauge' | 'counter';

/** An engine's answer, read for one scrape: its role, and its samples. */
export interface EngineReading {
  role: 'primary' | 'replica' | undefined;
  samples: Sample[];
}

/** One value of one series, as an engine reported it. */
export interface Sample {
  name: string;
  help: string;
  type: SampleType;
  value: number;
  labels?: Readonly<Record<string, string>>;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

const escapeLabelValue = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const escapeHelp = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const formatValue = (v: number) =>
  Number.isNaN(v) ? 'NaN' : v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : String(v);

/**
 * The samples as one exposition (text format 0.0.4): each family's HELP and TYPE once, then its
 * series, `extra` labels (the instance's role) on every one. A name or label name the format
 * cannot carry is a programming error in the engine's mapping, and throws.
 */
export function renderExposition(samples: readonly Sample[], extra: Readonly<Record<string, string>> = {}) {
  const families = new Map<string, Sample[]>();
  for (const s of samples) {
    if (!METRIC_NAME.test(s.name)) throw new Error(`not a metric name: ${JSON.stringify(s.name)}`);
    const family = families.get(s.name);
    if (family && family[0]!.type !== s.type)
      throw new Error(`${s.name} is both a ${family[0]!.type} and a ${s.type}`);
    if (family) family.push(s);
    else families.set(s.name, [s]);
  }
  const lines: string[] = [];
  for (const [name, family] of families) {
    lines.push(`# HELP ${name} ${escapeHelp(family[0]!.help)}`, `# TYPE ${name} ${family[0]!.type}`);
    for (const s of family) {
      const labels = Object.entries({ ...s.labels, ...extra });
      for (const [k] of labels) if (!LABEL_NAME.test(k)) throw new Error(`not a label name: ${k} (${name})`);
      const set = labels.length
        ? `{${labels.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}`
        : '';
      lines.push(`${name}${set} ${formatValue(s.value)}`);
    }
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/** A series' name and help, as an engine's field maps to it. */
export type Mapping = readonly [name: string, help: string];

/**
 * The samples of an answer of `key value` fields (redis's INFO, memcached's stats): `number(key)`
 * reads a field as a finite number (undefined otherwise), `add` appends one sample, and `addFields`
 * one per field of a table that the answer has as a number.
 */
export function fieldSamples(fields: ReadonlyMap<string, string>) {
  const samples: Sample[] = [];
  const number = (key: string): number | undefined => {
    const v = fields.get(key);
    const n = v === undefined || v === '' ? NaN : Number(v);
    return Number.isFinite(n) ? n : undefined;
  };
  const add = (type: SampleType, [name, help]: Mapping, value: number, labels?: Record<string, string>) =>
    samples.push({ name, help, type, value, ...(labels ? { labels } : {}) });
  const addFields = (type: SampleType, table: Readonly<Record<string, Mapping>>) => {
    for (const [key, mapping] of Object.entries(table)) {
      const v = number(key);
      if (v !== undefined) add(type, mapping, v);
    }
  };
  return { samples, number, add, addFields };
}
