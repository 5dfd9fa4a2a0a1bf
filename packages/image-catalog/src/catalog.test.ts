import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { compareVersions, ImageCatalog, ImageCatalogError } from './catalog.ts';

const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const file = (text: string) => {
  const dir = mkdtempSync(join(tmpdir(), 'catalog-'));
  dirs.push(dir);
  const path = join(dir, 'catalog.yaml');
  writeFileSync(path, text);
  return path;
};

test('the official catalog maps each version to <repository>:<version>, oldest first', () => {
  const c = ImageCatalog.official({ postgres: { repository: 'postgres', versions: ['15.10', '16.8'] } });
  assert.equal(c.imageFor('postgres', '16.8'), 'postgres:16.8');
  assert.deepEqual(c.versions('postgres'), ['15.10', '16.8']);
  assert.equal(c.imageFor('postgres', '17.0'), undefined);
  assert.equal(c.imageFor('mysql', '8.4.4'), undefined);
});

test('a catalog file is the whole catalog: what it lacks is reported with what it has', () => {
  const path = file(
    'postgres:\n  - { version: "15.14", image: regulon.local/postgres:15 }\n  - version: 16\n    image: registry.example:5000/db/postgres:16@sha256:' +
      'a'.repeat(64) +
      '\n',
  );
  const c = ImageCatalog.load(path);
  assert.equal(c.imageFor('postgres', '15.14'), 'regulon.local/postgres:15');
  assert.equal(c.imageFor('postgres', '16'), `registry.example:5000/db/postgres:16@sha256:${'a'.repeat(64)}`);
  assert.equal(c.unsupported('postgres', '15.14'), undefined);
  assert.equal(
    c.unsupported('postgres', '17.2'),
    `postgres 17.2 is not in the image catalog (${path}); it has 15.14, 16`,
  );
  assert.equal(c.unsupported('redis', '7.0.15'), `the image catalog (${path}) has no redis images`);
});

test('a malformed catalog is refused with what is wrong and where', () => {
  const cases: Array<[string, RegExp]> = [
    ['postgres: [', /image catalog .*catalog\.yaml: /],
    ['- postgres', /expected a map of engine to a list of versions/],
    ['postgres: { version: "1", image: x }', /postgres: expected a list of \{ version, image \}/],
    ['postgres:\n  - { version: "16.8" }', /postgres\[0\]: expected \{ version: "x\.y", image: "\.\.\." \}/],
    ['postgres:\n  - { version: "16.8", image: p, tag: x }', /postgres\[0\]: unknown field tag/],
    [
      'postgres:\n  - { version: "16.8-rc1", image: p }',
      /postgres version "16\.8-rc1" is not a dotted number/,
    ],
    [
      'postgres:\n  - { version: "16.8", image: "shöp :1" }',
      /postgres 16\.8: "shöp :1" is not an image reference/,
    ],
    [
      'postgres:\n  - { version: "16.8", image: a }\n  - { version: "16.8", image: b }',
      /postgres 16\.8 is listed twice/,
    ],
    [
      'postgres:\n  - { version: "16.10", image: a }\n  - { version: "16.9", image: b }',
      /oldest first .*: 16\.9, 16\.10/,
    ],
  ];
  for (const [text, message] of cases)
    assert.throws(
      () => ImageCatalog.load(file(text)),
      (err: Error) => err instanceof ImageCatalogError && message.test(err.message),
      text,
    );
});

test('versions compare as numbers, part by part', () => {
  assert.equal(compareVersions('16.10', '16.9'), 1);
  assert.equal(compareVersions('16', '16.0.0'), 0);
  assert.equal(compareVersions('7.0.15', '7.2'), -1);
});
