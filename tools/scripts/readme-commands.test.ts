// Once the packages are published the README's commands are the registry's
// (`npm create @regulon my-operator`); before, they name the tarballs of
// `npm run pack`. Either way a command must name a package this repository
// publishes, at the version it would publish, or a new user's first command
// fails: checked here without packing (npm pack's names are derived from the
// manifests; pack.integration.test.ts packs them for real).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { PUBLISHABLE } from './pack.ts';
import { packagesNamed, shellBlockUnder, tutorialCommands } from './readme-commands.ts';

const root = join(import.meta.dirname, '..', '..');
const published = new Map(
  PUBLISHABLE.map((dir) => {
    const m = JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
    };
    return [m.name, m.version];
  }),
);

/** What a command names that `npm run pack` does not produce: a package, or a package at another version. */
function unpublished(lines: readonly string[]): string[] {
  return lines.flatMap((line) =>
    packagesNamed(line).flatMap(({ name, version }) => {
      const ours = published.get(name);
      if (!ours) return [`${name} (in: ${line})`];
      return version && version !== ours ? [`${name}@${version}, packed at ${ours} (in: ${line})`] : [];
    }),
  );
}

test("the README's and the tutorial's commands name only packages `npm run pack` produces, at its version", () => {
  const doc = readFileSync(join(root, 'docs', 'your-first-operator.md'), 'utf8');
  const lines = [...tutorialCommands(), ...shellBlockUnder(doc, '1. The project')];
  assert.deepEqual(unpublished(lines), []);
  // The first command a new user types makes the project with the scaffolder.
  assert.ok(
    lines.some((l) => packagesNamed(l).some((p) => p.name === '@regulon/create')),
    lines.join('\n'),
  );
});

test('the registry form and the tarball form name the scaffolder; a misspelt scope or a stale tarball is caught', () => {
  const version = published.get('@regulon/create')!;
  assert.deepEqual(packagesNamed('npm create @regulon my-operator'), [{ name: '@regulon/create' }]);
  assert.deepEqual(packagesNamed(`npx --package ./r/regulon-create-${version}.tgz create op   # @x/y`), [
    { name: '@regulon/create', version },
  ]);
  assert.deepEqual(unpublished(['npm create @regulon op', 'npm i @regulon/runtime']), []);
  assert.equal(unpublished(['npm create @regulonn op']).length, 1);
  assert.equal(unpublished(['npx --package ./regulon-create-0.0.9.tgz create op']).length, 1);
  assert.equal(unpublished(['npm i @regulon/manager']).length, 1, 'the manager is an image, not a package');
});
