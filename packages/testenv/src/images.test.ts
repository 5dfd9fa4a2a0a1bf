// Unit tests of the image cache's rules: what a cache key depends on, and what
// ensureImages() does with a cached, a missing or an unknown image. No image is
// built here (images.integration.test.ts builds and runs them).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { ensureImages, upstreamVersion, IMAGE_NAMES } from './images.ts';
import { repoRoot } from './paths.ts';

const run = promisify(execFile);
const imagesDir = join(repoRoot(), 'tools', 'images');

describe('image recipes', () => {
  test('IMAGE_NAMES lists exactly the recipes in tools/images/recipes', () => {
    const recipes = readdirSync(join(imagesDir, 'recipes'))
      .filter((f) => f.endsWith('.sh'))
      .map((f) => f.slice(0, -3));
    assert.deepEqual([...IMAGE_NAMES].sort(), recipes.sort());
  });

  test('build.sh --list names the same images', async () => {
    const { stdout } = await run('bash', [join(imagesDir, 'build.sh'), '--list']);
    assert.deepEqual(stdout.trim().split('\n').sort(), [...IMAGE_NAMES].sort());
  });

  test('build.sh rejects an unknown image name, listing the known ones', async () => {
    await assert.rejects(run('bash', [join(imagesDir, 'build.sh'), '--print', 'nginx']), (err: Error) => {
      assert.match(err.message, /no recipe for image 'nginx'; known: .*postgres/);
      return true;
    });
  });
});

describe('image cache key', () => {
  let copy: string;
  let cacheEnv: NodeJS.ProcessEnv;
  const print = async (name: string) =>
    (await run('bash', [join(copy, 'images', 'build.sh'), '--print', name], { env: cacheEnv })).stdout.trim();

  before(() => {
    // A copy of tools/images and the shared cached-build library, so that the
    // test can edit a recipe without touching the repository.
    copy = mkdtempSync(join(tmpdir(), 'regulon-images-key-'));
    cpSync(imagesDir, join(copy, 'images'), { recursive: true });
    cpSync(join(repoRoot(), 'tools', 'lib'), join(copy, 'lib'), { recursive: true });
    cacheEnv = { ...process.env, REGULON_CACHE_DIR: join(copy, 'cache') };
  });
  after(() => rmSync(copy, { recursive: true, force: true }));

  test('is the same for the same recipe, and lives under REGULON_CACHE_DIR/images', async () => {
    const first = await print('redis');
    assert.equal(await print('redis'), first);
    assert.match(
      first,
      new RegExp(`^${join(copy, 'cache', 'images')}/redis-[0-9a-f]{16}/image\\.oci\\.tar$`),
    );
  });

  test("changes when the image's recipe changes, and only that image's", async () => {
    const redis = await print('redis');
    const postgres = await print('postgres');
    appendFileSync(join(copy, 'images', 'recipes', 'redis.sh'), '# edited\n');
    assert.notEqual(await print('redis'), redis);
    assert.equal(await print('postgres'), postgres);
  });

  test('changes for every image when the shared Debian settings change', async () => {
    const old = await Promise.all(IMAGE_NAMES.map(print));
    appendFileSync(join(copy, 'images', 'debian.env'), '# edited\n');
    const now = await Promise.all(IMAGE_NAMES.map(print));
    for (const [i, name] of IMAGE_NAMES.entries()) assert.notEqual(now[i], old[i], name);
  });
});

describe('ensureImages', () => {
  let cache: string;
  const saved = process.env['REGULON_CACHE_DIR'];

  before(() => {
    cache = mkdtempSync(join(tmpdir(), 'regulon-images-cache-'));
    process.env['REGULON_CACHE_DIR'] = cache;
  });
  after(() => {
    if (saved === undefined) delete process.env['REGULON_CACHE_DIR'];
    else process.env['REGULON_CACHE_DIR'] = saved;
    rmSync(cache, { recursive: true, force: true });
  });

  test('rejects an unknown name before building anything', async () => {
    await assert.rejects(
      ensureImages(['postgres', 'nginx']),
      /no image named nginx; known images: pause, postgres/,
    );
  });

  test('without build, names the missing images and the command that builds them', async () => {
    await assert.rejects(
      ensureImages(['redis', 'client'], { build: false }),
      /images not built: redis, client; build them with tools\/images\/build.sh redis client/,
    );
  });

  test('returns a cached image with the ref its manifest records, without building', async () => {
    const { stdout } = await run('bash', [join(imagesDir, 'build.sh'), '--print', 'redis']);
    const archive = stdout.trim();
    mkdirSync(dirname(archive), { recursive: true });
    writeFileSync(archive, 'not really an image');
    writeFileSync(
      join(dirname(archive), 'image.json'),
      JSON.stringify({ name: 'redis', ref: 'regulon.local/redis:x', version: '5:7.0.15-1~deb12u10' }),
    );
    const lines: string[] = [];
    const [image] = await ensureImages(['redis'], { build: false, log: (l) => lines.push(l) });
    assert.deepEqual(image, { name: 'redis', ref: 'regulon.local/redis:x', archive, version: '7.0.15' });
    assert.deepEqual(lines, []);
  });

  test("an image's version is what the engine calls itself: no Debian epoch or revision", () => {
    assert.equal(upstreamVersion('5:7.0.15-1~deb12u10'), '7.0.15');
    assert.equal(upstreamVersion('15.20-0+deb12u1'), '15.20');
    assert.equal(upstreamVersion('1:10.11.19-0+deb12u1'), '10.11.19');
    assert.equal(upstreamVersion('1.6.18-1+deb12u1'), '1.6.18');
  });
});
