// Builds the Go reference operator (tools/bench/reference-go) once per source
// version: the binary lives outside the repository, in
// ~/.cache/regulon/bench/reference-go-<hash>/reference-go, keyed by a hash of
// go.mod, go.sum, every .go file and the .json files it embeds, so a
// benchmark run or a test reuses it until the Go code changes.
// REGULON_CACHE_DIR overrides the cache root, as it does for the
// control-plane binaries.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The Go module's directory. */
export const REFERENCE_DIR = join(import.meta.dirname, 'reference-go');

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sourceFiles(path)));
    // .json: files the binary embeds (postgres-files.json).
    else if (/\.(go|json)$/.test(entry.name) || entry.name === 'go.mod' || entry.name === 'go.sum')
      out.push(path);
  }
  return out;
}

/** The first 16 hex digits of SHA-256 over the module's sources (each file's path and content). */
export async function referenceSourceHash(): Promise<string> {
  const hash = createHash('sha256');
  const files = (await sourceFiles(REFERENCE_DIR)).map((f) => relative(REFERENCE_DIR, f)).sort();
  for (const file of files) {
    const content = await readFile(join(REFERENCE_DIR, file));
    hash.update(`${file}\0${content.length}\0`);
    hash.update(content);
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * The path of the reference-go binary, built with `go build` the first time
 * for this version of the sources. Safe to call concurrently: each build
 * writes a temporary name and renames it into place.
 */
export async function referenceBinary(log: (s: string) => void = () => {}): Promise<string> {
  const root = process.env['REGULON_CACHE_DIR'] ?? join(homedir(), '.cache', 'regulon');
  const dir = join(root, 'bench', `reference-go-${await referenceSourceHash()}`);
  const binary = join(dir, 'reference-go');
  if (existsSync(binary)) return binary;
  await mkdir(dir, { recursive: true });
  const tmp = `${binary}.tmp-${process.pid}-${Date.now()}`;
  log(`building ${binary}`);
  const started = Date.now();
  try {
    await run('go', ['build', '-trimpath', '-o', tmp, '.'], {
      cwd: REFERENCE_DIR,
      env: { ...process.env, CGO_ENABLED: '0' },
      maxBuffer: 16 * 1024 * 1024,
    });
    await rename(tmp, binary);
  } catch (err) {
    await rm(tmp, { force: true });
    const e = err as { stderr?: string; message: string };
    throw new Error(`go build of ${REFERENCE_DIR} failed: ${e.stderr || e.message}`);
  }
  log(`built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return binary;
}
