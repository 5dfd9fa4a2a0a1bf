import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { engines } from './engines/index.ts';
import { ENGINE_NAMES, ENGINE_VERSIONS } from './versions.ts';

const SRC = import.meta.dirname;

/** Where an engine's name may decide behaviour: its own folders, and the registry that maps a name to its object. */
const ENGINE_FOLDERS = ['postgres', 'mariadb', 'mysql', 'engines'];
/**
 * Files outside those that name engines on purpose, without branching in TypeScript:
 * - api.ts: the CRD's CEL rules, which the API server evaluates on `self.engine`;
 * - versions.ts: the catalog itself (versions, images, defaults and reserved names by engine).
 */
const CATALOGS = ['api.ts', 'versions.ts'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The neutral files: every source file but the engines' own, the catalogs and the test helpers. */
const neutral = sources(SRC)
  .map((p) => relative(SRC, p))
  .filter(
    (p) => !ENGINE_FOLDERS.includes(p.split('/')[0]!) && !p.startsWith('testing/') && !CATALOGS.includes(p),
  );

const NAME = `['"\`](${ENGINE_NAMES.join('|')})['"\`]`;
/** A branch on an engine's name: a comparison either way round, a `case`, or a lookup table keyed by it. */
const BRANCH = new RegExp(
  [
    `[!=]==?\\s*${NAME}`,
    `${NAME}\\s*[!=]==?`,
    `\\bcase\\s+${NAME}`,
    `^\\s*(${ENGINE_NAMES.join('|')})\\s*:`,
  ].join('|'),
  'm',
);

describe('the engine seam', () => {
  test('every engine the API offers has a behaviour object of that name', () => {
    assert.deepEqual(Object.keys(engines).sort(), Object.keys(ENGINE_VERSIONS).sort());
    for (const name of ENGINE_NAMES) assert.equal(engines[name].name, name);
  });

  test('an engine that replicates names its driver and account; one that has a backup tool keeps a recovery Secret', () => {
    for (const e of Object.values(engines)) {
      if (e.replication) assert.ok(e.replication.driver && e.replication.user, e.name);
      if (e.backupTool) assert.ok(e.keepsRecoverySecret, e.name);
    }
  });

  test('the neutral files never branch on an engine name', () => {
    // The check sees these files: a list that lost them would pass vacuously.
    for (const f of ['reconciler.ts', 'children.ts', 'status.ts', 'parameters.ts', 'config.ts'])
      assert.ok(neutral.includes(f), f);
    assert.ok(neutral.some((f) => f.startsWith('replication/')));
    assert.ok(neutral.includes('backup/controller.ts'));
    const branching = neutral.flatMap((f) => {
      const lines = readFileSync(join(SRC, f), 'utf8').split('\n');
      return lines.flatMap((line, i) => (BRANCH.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : []));
    });
    assert.deepEqual(branching, []);
  });

  test('the branch pattern catches the forms it looks for', () => {
    for (const line of [
      "if (db.spec.engine === 'mysql') return;",
      "engine !== 'postgres'",
      "'mariadb' == engine",
      "case 'postgres':",
      '  mariadb: () => mariadbFiles(db),',
    ])
      assert.match(line, BRANCH, line);
    assert.doesNotMatch("container: 'postgres',", BRANCH);
  });
});
