// The manager image's build context as the builder sees it: the repository
// root minus what apps/manager/Dockerfile.dockerignore excludes. Its hash is
// part of the image's cache key, so any file that could end up in the image
// rebuilds it, and a file the context leaves out (a test, node_modules) does not.
//
//   node tools/manager-image/context.ts ROOT IGNOREFILE          prints the hash
//   node tools/manager-image/context.ts ROOT IGNOREFILE --list   prints the files
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Turns .dockerignore lines into matchers of a context-relative path (`/`
 * separators), with the builder's rules: `*` and `?` stay inside one path
 * segment, `**` spans any number of them, a leading `/` is dropped, and a
 * directory that matches takes everything under it. Negations (`!pattern`)
 * re-include paths inside excluded directories, which a walk that prunes
 * cannot honour: they are refused rather than silently ignored.
 */
export function ignoreMatchers(lines: string): Array<(path: string) => boolean> {
  const matchers: Array<(path: string) => boolean> = [];
  for (const raw of lines.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('!'))
      throw new Error(`manager image: .dockerignore negation '${line}' is not supported by the context hash`);
    const pattern = line.replace(/^\/+/, '').replace(/\/+$/, '');
    matchers.push(globToRegExp(pattern));
  }
  return matchers;
}

function globToRegExp(pattern: string): (path: string) => boolean {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      // `**/` matches zero or more whole segments; a trailing `**` matches the rest.
      if (pattern[i + 2] === '/') {
        re += '(?:.*/)?';
        i += 2;
      } else {
        re += '.*';
        i += 1;
      }
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = pattern.indexOf(']', i);
      if (end < 0) throw new Error(`manager image: unterminated '[' in .dockerignore pattern '${pattern}'`);
      re += pattern.slice(i, end + 1);
      i = end;
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  const rx = new RegExp(`^${re}$`);
  return (path) => rx.test(path);
}

/** Every file and symlink of the context under `root`, sorted, as context-relative paths. */
export function contextFiles(root: string, ignore: string): string[] {
  const matchers = ignoreMatchers(ignore);
  const ignored = (rel: string) => matchers.some((m) => m(rel));
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (ignored(path)) continue;
      if (entry.isDirectory()) walk(path);
      else out.push(path);
    }
  };
  walk('');
  return out.sort();
}

/** sha256 over each context file's path, mode and content (a symlink's target). */
export function contextHash(root: string, ignore: string): string {
  const h = createHash('sha256');
  for (const rel of contextFiles(root, ignore)) {
    const full = join(root, rel);
    const st = lstatSync(full);
    h.update(`${rel}\0${(st.mode & 0o777).toString(8)}\0`);
    h.update(st.isSymbolicLink() ? `-> ${readlinkSync(full)}` : readFileSync(full));
    h.update('\0');
  }
  return h.digest('hex');
}

if (import.meta.main) {
  const [root, ignoreFile, flag] = process.argv.slice(2);
  if (!root || !ignoreFile) {
    process.stderr.write('usage: context.ts ROOT IGNOREFILE [--list]\n');
    process.exit(2);
  }
  const ignore = readFileSync(ignoreFile, 'utf8');
  process.stdout.write(
    flag === '--list' ? contextFiles(root, ignore).join('\n') + '\n' : contextHash(root, ignore) + '\n',
  );
}
