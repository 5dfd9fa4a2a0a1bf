/**
 * Parses the Prometheus text exposition format into samples, so tests assert
 * on series and values rather than grep for names. Test-only: the format is a
 * few line rules, and the npm parsers for it are unmaintained.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) throw new Error(`unparseable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\"/g, '"').replace(/\\n/g, '\n').replace(/\\\\/g, '\\');
    }
    const raw = m[4]!;
    samples.push({
      name: m[1]!,
      labels,
      value: raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw),
    });
  }
  return samples;
}

/** The value of the one sample with this name whose labels include `labels`; throws if none or several match. */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length !== 1)
    throw new Error(`expected one sample ${name}${JSON.stringify(labels)}, found ${found.length}`);
  return found[0]!.value;
}
