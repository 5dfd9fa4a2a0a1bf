// The manager image for tests and `npm test`: tools/manager-image/build.sh
// builds it from apps/manager/Dockerfile (buildah, no Docker, no registry)
// the first time, then it is cached by the build context's content.
//
//   node tools/manager-image/image.ts   build if needed, print the archive
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ensureDebianPackages, runScript } from '@regulon/testenv';

export interface ManagerImage {
  name: 'manager';
  /** What `ctr images import` names it: regulon.local/manager:<apps/manager version>. */
  ref: string;
  /** An OCI image layout in a tar, for `ctr -n k8s.io images import`. */
  archive: string;
  /** Bytes of the OCI archive (compressed layers). */
  size: number;
  /** Seconds the build took when it was built (a cached image keeps its first figure). */
  buildSeconds: number;
}

const script = join(import.meta.dirname, 'build.sh');

/**
 * Returns the manager image's OCI archive, building it first when the
 * Dockerfile, its ignore file, the build context or the base changed. A cold
 * build (base included) takes a few minutes on 2 cores; a warm call reads the
 * cache. Building needs root and the Debian packages `build.sh --needs` lists
 * (installed with apt when running as root).
 */
export async function ensureManagerImage(log: (line: string) => void = () => {}): Promise<ManagerImage> {
  let [archive = ''] = await buildScript(['--print'], log);
  if (!built(archive)) {
    await ensureDebianPackages(await buildScript(['--needs'], log), 'building the manager image', { log });
    [archive = ''] = await buildScript([], log);
    if (!built(archive)) throw new Error(`manager image: ${script} did not produce ${archive}`);
  }
  const manifest = JSON.parse(readFileSync(join(dirname(archive), 'image.json'), 'utf8')) as {
    ref: string;
    size: number;
    buildSeconds: number;
  };
  return {
    name: 'manager',
    archive,
    ref: manifest.ref,
    size: manifest.size,
    buildSeconds: manifest.buildSeconds,
  };
}

function built(archive: string): boolean {
  return archive !== '' && existsSync(archive) && existsSync(join(dirname(archive), 'image.json'));
}

/** Runs build.sh (see runScript). */
function buildScript(args: string[], log: (line: string) => void): Promise<string[]> {
  return runScript(script, args, log);
}

if (import.meta.main) {
  const image = await ensureManagerImage((l) => process.stderr.write(`${l}\n`));
  process.stdout.write(`${image.archive}\n`);
}
