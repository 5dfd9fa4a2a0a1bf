// The end of `npm test`'s output: counts aggregated from every project's JUnit
// report (node's junit reporter), the count per project, and each failed test
// named with its cause. CI keeps only the tail of a run's output, so this is
// what has to say which test failed and whether a project ran no test at all.
// Node's reporter writes flat <testcase> elements with quoted attributes (where
// it leaves '>' unescaped) and a <failure> body; a regular expression reads
// that one shape without an XML parser.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface JUnitSummary {
  passed: number;
  failed: number;
  skipped: number;
  text: string;
}

const CAUSE_LINES = 12;
const LINE_WIDTH = 240;

export function summarizeJUnit(dir: string): JUnitSummary {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const perProject = new Map<string, number>();
  const failures: string[] = [];
  const files = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.xml'))
        .sort()
    : [];
  for (const file of files) {
    // A project that runs its files in parts writes `<project>.<part>.xml` beside `<project>.xml`.
    const project = file
      .replace(/\.xml$/, '')
      .replace(/^_regulon_/, '')
      .split('.')[0]!;
    let count = 0;
    for (const m of readFileSync(join(dir, file), 'utf8').matchAll(
      /<testcase((?:\s+[\w:.-]+="[^"]*")*)\s*(\/>|>([\s\S]*?)<\/testcase>)/g,
    )) {
      count++;
      const body = m[3] ?? '';
      if (/<failure\b/.test(body)) {
        failed++;
        failures.push(describeFailure(project, m[1]!, body));
      } else if (/<skipped\b/.test(body)) skipped++;
      else passed++;
    }
    perProject.set(project, (perProject.get(project) ?? 0) + count);
  }
  const text = [
    '',
    `tests per project: ${[...perProject].map(([p, n]) => `${p} ${n}`).join(', ') || 'no report'}`,
    ...failures,
    '',
    `tests: ${passed} passed, ${failed} failed, ${skipped} skipped`,
  ].join('\n');
  return { passed, failed, skipped, text };
}

function describeFailure(project: string, attributes: string, body: string): string {
  // Node escapes a quote in an attribute twice (&amp;quot;), so it takes a second pass.
  const attr = (name: string) =>
    unescapeXml(new RegExp(`\\b${name}="([^"]*)"`).exec(attributes)?.[1] ?? '').replace(/&quot;/g, '"');
  const file = attr('file').split('/').slice(-2).join('/');
  const cause = unescapeXml(body.replace(/<[^>]+>/g, ''))
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .slice(0, CAUSE_LINES)
    .map((line) => `    ${line.slice(0, LINE_WIDTH)}`);
  return [`\u2716 ${project}: ${attr('classname')} > ${attr('name')} (${file})`, ...cause].join('\n');
}

function unescapeXml(text: string): string {
  return text
    .replace(/&#x([0-9a-f]+);/gi, (_, hex: string) => String.fromCodePoint(parseInt(hex, 16)))
    .replace(/&#(\d+);/g, (_, dec: string) => String.fromCodePoint(Number(dec)))
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}
