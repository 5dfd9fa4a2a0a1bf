import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ensureDebianPackages } from './debian.ts';
import { runScript } from './binaries.ts';
import { repoRoot } from './paths.ts';

/**
 * The images tools/images/build.sh knows, one recipe each in
 * tools/images/recipes/ (a test keeps this list and the recipes equal):
 * - `pause`: catatonit in pause mode, containerd's sandbox image;
 * - `postgres`, `mariadb`, `redis`, `memcached`: the engines, each running as
 *   the uid of its official image, with no data and no entrypoint script;
 * - `client`: psql, mariadb, redis-cli, memcached tools, curl, dig;
 * - `app`: a MyApp's application, whose /readyz answers 200 only when its
 *   database and cache accept the credentials the MyApp controller injects.
 */
export const IMAGE_NAMES = ['pause', 'postgres', 'mariadb', 'redis', 'memcached', 'client', 'app'] as const;

export type ImageName = (typeof IMAGE_NAMES)[number];

export interface ImageArchive {
  name: string;
  /** What `ctr images import` names it, e.g. `regulon.local/postgres:15`. */
  ref: string;
  /** An OCI image layout in a tar, for `ctr -n k8s.io images import`. */
  archive: string;
  /** The upstream version the image runs (Debian's version without epoch and revision), e.g. `7.0.15`. */
  version: string;
}

export interface EnsureImagesOptions {
  /** Build the missing images (default). When false, a missing image is an error. */
  build?: boolean | undefined;
  log?: (line: string) => void;
}

/** What tools/images/build.sh writes beside each archive (the fields read here). */
interface ImageManifest {
  name: string;
  ref: string;
  /** The Debian version of the image's main package, e.g. `5:7.0.15-1~deb12u10`. */
  version: string;
}

/**
 * Returns the archives of `names` (default: all), building the missing ones
 * from Debian packages first: about 30-60 s an image on 2 cores, once per
 * recipe change, then cached by recipe content under
 * `${REGULON_CACHE_DIR:-~/.cache/regulon}/images`. Building needs root or
 * the Debian packages `tools/images/build.sh --needs` lists (installed with
 * apt when running as root). Nothing is loaded anywhere: the caller imports
 * the archives into its containerd.
 */
export async function ensureImages(
  names: readonly string[] = IMAGE_NAMES,
  options: EnsureImagesOptions = {},
): Promise<ImageArchive[]> {
  const unknown = names.filter((n) => !(IMAGE_NAMES as readonly string[]).includes(n));
  if (unknown.length) {
    throw new Error(`testenv: no image named ${unknown.join(', ')}; known images: ${IMAGE_NAMES.join(', ')}`);
  }
  if (names.length === 0) return [];
  const log = options.log ?? (() => {});
  const archives = await buildScript(['--print', ...names], log);
  const missing = names.filter((_, i) => !built(archives[i] ?? ''));
  if (missing.length) {
    if (options.build === false) {
      throw new Error(
        `testenv: images not built: ${missing.join(', ')}; build them with tools/images/build.sh ${missing.join(' ')}`,
      );
    }
    const needs = await buildScript(['--needs'], log);
    await ensureDebianPackages(needs, 'building the test images (tools/images)', { log });
    log(`building images: ${missing.join(' ')}`);
    await buildScript([...missing], log);
  }
  return names.map((name, i) => {
    const archive = archives[i] ?? '';
    if (!built(archive)) throw new Error(`testenv: tools/images/build.sh did not produce ${archive}`);
    const manifest = JSON.parse(readFileSync(manifestOf(archive), 'utf8')) as ImageManifest;
    return { name, ref: manifest.ref, archive, version: upstreamVersion(manifest.version) };
  });
}

function manifestOf(archive: string): string {
  return join(dirname(archive), 'image.json');
}

function built(archive: string): boolean {
  return archive !== '' && existsSync(archive) && existsSync(manifestOf(archive));
}

/** Runs tools/images/build.sh (see runScript). */
function buildScript(args: string[], log: (line: string) => void): Promise<string[]> {
  return runScript(join(repoRoot(), 'tools', 'images', 'build.sh'), args, log);
}

/** `5:7.0.15-1~deb12u10` → `7.0.15`: what the engine itself calls its version. */
export function upstreamVersion(debian: string): string {
  return debian.replace(/^\d+:/, '').replace(/[-+~].*$/, '');
}

/** The engines the operators run, by the image that runs each. */
const ENGINE_IMAGES = ['postgres', 'mariadb', 'redis', 'memcached'] as const;

/**
 * An image catalog (the format of @regulon/image-catalog and the manager's
 * --image-catalog) naming the local images by the versions they really run:
 * tests run the operators on the real node with it, and nothing is re-tagged.
 */
export async function localImageCatalog(
  options: EnsureImagesOptions = {},
): Promise<Record<string, Array<{ version: string; image: string }>>> {
  const images = await ensureImages(ENGINE_IMAGES, options);
  return Object.fromEntries(images.map((i) => [i.name, [{ version: i.version, image: i.ref }]]));
}
