// The config file: YAML or JSON (by its `.json` extension), a mapping whose
// keys are option keys (`metricsBindAddress`) or flag names
// (`metrics-bind-address`). Values keep the types the file gives them.
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import type { OptionSpecs } from './spec.ts';
import { suggest } from './suggest.ts';

export interface FileValue {
  value: unknown;
  /** The option key or flag name it was written under, for messages. */
  fileKey: string;
}

/** The file's values by option key; problems are appended. */
export function readConfigFile(spec: OptionSpecs, path: string, problems: string[]): Map<string, FileValue> {
  const values = new Map<string, FileValue>();
  const data = parseFile(path, problems);
  if (data === null || data === undefined) return values;
  if (typeof data !== 'object' || Array.isArray(data)) {
    problems.push(`config file ${path} must hold a mapping of option names to values`);
    return values;
  }

  const byFileKey = new Map<string, string>();
  for (const [key, option] of Object.entries(spec)) {
    byFileKey.set(key, key);
    byFileKey.set(option.flag, key);
  }
  const foundAs = new Map<string, string>();
  for (const [fileKey, value] of Object.entries(data)) {
    const key = byFileKey.get(fileKey);
    if (key === undefined) {
      problems.push(
        `unknown key "${fileKey}" in config file ${path}${suggest(fileKey, [...byFileKey.keys()], '')}`,
      );
      continue;
    }
    const earlier = foundAs.get(key);
    if (earlier !== undefined) {
      problems.push(`config file ${path} sets option ${key} twice, as "${earlier}" and "${fileKey}"`);
      continue;
    }
    foundAs.set(key, fileKey);
    // `key:` with nothing after it is how YAML comments a value out.
    if (value !== null) values.set(key, { value, fileKey });
  }
  return values;
}

/** The parsed document; undefined (with a problem appended) when it cannot be read or parsed. */
function parseFile(path: string, problems: string[]): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    problems.push(
      code === 'ENOENT'
        ? `config file ${path} does not exist`
        : `cannot read config file ${path}: ${(err as Error).message}`,
    );
    return undefined;
  }
  if (path.endsWith('.json')) {
    try {
      return JSON.parse(text);
    } catch (err) {
      problems.push(`config file ${path} is not valid JSON: ${(err as Error).message}`);
      return undefined;
    }
  }
  const doc = parseDocument(text);
  if (doc.errors.length > 0) {
    problems.push(`config file ${path} is not valid YAML: ${doc.errors[0]!.message}`);
    return undefined;
  }
  return doc.toJS();
}
