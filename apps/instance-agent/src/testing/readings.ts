// For the engines' metrics tests: what a real server answered (src/metrics/testdata/), and
// the value of one series of a reading.
import { readFileSync } from 'node:fs';
import type { EngineReading } from '../metrics/exposition.ts';

/** A captured answer from src/metrics/testdata/, as the engine's client printed it. */
export const captured = (file: string): string =>
  readFileSync(new URL(`../metrics/testdata/${file}`, import.meta.url), 'utf8');

/** The value of the first sample `name` whose labels include `labels`; undefined when there is none. */
export const valueIn = (
  reading: EngineReading | undefined,
  name: string,
  labels?: Record<string, string>,
): number | undefined =>
  reading?.samples.find(
    (s) => s.name === name && (!labels || Object.entries(labels).every(([k, v]) => s.labels?.[k] === v)),
  )?.value;
