import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { checkProjectName, kindNames, NameError, type ApiRequest, type KindNames } from './names.ts';
import { localPackages } from './tarballs.ts';
import { apiFiles, registrations } from './templates/api.ts';
import { MARKERS, projectFiles } from './templates/project.ts';

export interface InitOptions {
  /** Default: the directory's name. */
  name?: string | undefined;
  /** A directory of the @regulon packages' tarballs (`npm run pack`) to install them from, instead of the registry. */
  tarballs?: string | undefined;
}

/**
 * Writes a new project into `dir` (made if missing; refused if it holds
 * anything but dot-files, so nothing of the user's is overwritten). Returns
 * the paths written, relative to `dir`.
 */
export function initProject(dir: string, options: InitOptions = {}): string[] {
  const target = resolve(dir);
  const name = checkProjectName(options.name ?? basename(target));
  if (existsSync(target)) {
    const present = readdirSync(target).filter((f) => !f.startsWith('.'));
    if (present.length)
      throw new NameError(
        `${target} is not empty (${present.slice(0, 3).join(', ')}…): choose a new directory`,
      );
  }
  const local = options.tarballs ? localPackages(resolve(options.tarballs), target) : undefined;
  return writeAll(target, projectFiles({ name, local }));
}

/**
 * Adds a kind to the project in `dir`: its schema, controller and test, and
 * their lines in src/kinds.ts and src/controllers.ts. Refused, with nothing
 * written, when the kind's files exist or a registry lost its marker.
 */
export function createApi(dir: string, request: ApiRequest): { names: KindNames; written: string[] } {
  const project = resolve(dir);
  const names = kindNames(request);
  const files = apiFiles(names);
  for (const path of files.keys())
    if (existsSync(join(project, path)))
      throw new NameError(`${path} exists: the kind ${names.kind} is there already`);
  const lines = registrations(names);
  const kinds = insertAtMarkers(project, 'src/kinds.ts', [
    [MARKERS.kindImports, lines.kindImport],
    [MARKERS.kinds, lines.kind],
  ]);
  const controllers = insertAtMarkers(project, 'src/controllers.ts', [
    [MARKERS.controllerImports, lines.controllerImport],
    [MARKERS.controllers, lines.controller],
  ]);
  const written = writeAll(project, files);
  writeFileSync(join(project, 'src/kinds.ts'), kinds);
  writeFileSync(join(project, 'src/controllers.ts'), controllers);
  return { names, written: [...written, 'src/kinds.ts', 'src/controllers.ts'] };
}

/** The file's text with each line put above its marker line, at the marker's indentation. */
function insertAtMarkers(project: string, path: string, inserts: ReadonlyArray<[string, string]>): string {
  const file = join(project, path);
  if (!existsSync(file))
    throw new NameError(`${path} is missing: run regulon create api in a project made by regulon init`);
  return insertAboveMarkers(path, readFileSync(file, 'utf8'), inserts);
}

/**
 * `text` with each `[marker, line]`'s line put above the line holding the
 * marker, at its indentation: entries added one after another stay in order.
 * Throws when a marker is gone (`path` names the file in the message).
 */
export function insertAboveMarkers(
  path: string,
  text: string,
  inserts: ReadonlyArray<[string, string]>,
): string {
  let out = text;
  for (const [marker, line] of inserts) {
    const lines = out.split('\n');
    // The marker alone on its line, or followed by a comment for the reader.
    const at = lines.findIndex((l) => l.trim() === marker || l.trim().startsWith(`${marker} `));
    if (at < 0)
      throw new NameError(`${path}: the line "${marker}" is gone; put it back where new entries belong`);
    const indent = /^\s*/.exec(lines[at]!)![0];
    lines.splice(at, 0, `${indent}${line}`);
    out = lines.join('\n');
  }
  return out;
}

function writeAll(root: string, files: ReadonlyMap<string, string>): string[] {
  for (const [path, content] of files) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return [...files.keys()];
}
