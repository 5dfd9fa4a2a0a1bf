// The commands the README gives a new user, read from the README itself, so
// that the tests which run them (readme-tutorial.integration.test.ts) and
// check their package names (readme-commands.test.ts) cannot drift from what
// the page says.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');

/** The lines of the first ```sh block under the `## <heading>` of a markdown text. */
export function shellBlockUnder(markdown: string, heading: string): string[] {
  const at = markdown.indexOf(`\n## ${heading}\n`);
  if (at < 0) throw new Error(`no "## ${heading}" section`);
  const next = markdown.indexOf('\n## ', at + 1);
  const section = markdown.slice(at, next < 0 ? undefined : next);
  const block = /^```sh\n([\s\S]*?)^```$/m.exec(section)?.[1];
  if (block === undefined) throw new Error(`no sh block under "## ${heading}"`);
  return block.trimEnd().split('\n');
}

/** The README's "Writing your own operator" commands. */
export function tutorialCommands(readme = readFileSync(join(root, 'README.md'), 'utf8')): string[] {
  return shellBlockUnder(readme, 'Writing your own operator');
}

/**
 * The packages a command line names: `@scope/name` specs, `npm create @scope`
 * (npm's shorthand for `@scope/create`) and npm pack's tarball names
 * (`regulon-create-0.1.0.tgz` → `@regulon/create` at `0.1.0`).
 */
export function packagesNamed(line: string): Array<{ name: string; version?: string }> {
  const out: Array<{ name: string; version?: string }> = [];
  const command = line.replace(/\s+#.*$/, '');
  for (const m of command.matchAll(/\bregulon-([a-z-]+?)-(\d+\.\d+\.\d+(?:-[\w.]+)?)\.tgz\b/g))
    out.push({ name: `@regulon/${m[1]}`, version: m[2]! });
  const create = /\bnpm (?:create|init) (@[a-z0-9-]+)(?:\s|$)/.exec(command);
  if (create) out.push({ name: `${create[1]}/create` });
  for (const m of command.matchAll(/(?:^|\s)(@[a-z0-9-]+\/[a-z0-9-]+)/g)) out.push({ name: m[1]! });
  return out;
}
