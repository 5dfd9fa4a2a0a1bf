import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { NameError } from './names.ts';
import { createApi, initProject } from './scaffold.ts';
import { tarballDirOf } from './tarballs.ts';

const USAGE = `usage:
  regulon init [DIR] [--name NAME] [--skip-install] [--tarballs TARBALL_DIR]
      a new operator project in DIR (default: the current directory, if empty);
      then npm install and npm run generate, unless --skip-install; the
      @regulon packages from the tarballs in TARBALL_DIR (\`npm run pack\`)
      instead of the registry, by default when npm runs this from a tarball
  regulon create api --group GROUP --version VERSION --kind KIND [--plural PLURAL]
      a kind in the project of the current directory: its schema, controller
      and test; then npm run generate when the project's dependencies are installed`;

interface Io {
  cwd: string;
  /** npm's variables: which tarball npx runs this from (tarballDirOf). */
  env: Readonly<Record<string, string | undefined>>;
  out: (line: string) => void;
  err: (line: string) => void;
  /** Runs a command in the project, its output passed through; returns its exit code. */
  run: (cwd: string, command: string, args: readonly string[]) => number;
}

const processIo: Io = {
  cwd: process.cwd(),
  env: process.env,
  out: (line) => console.log(line),
  err: (line) => console.error(line),
  run: (cwd, command, args) => spawnSync(command, args, { cwd, stdio: 'inherit' }).status ?? 1,
};

/** The CLI: exit 0 on success, 1 when a step after scaffolding failed, 2 on bad usage or a refused name. */
export function main(argv: readonly string[], io: Io = processIo): number {
  try {
    const [command, sub] = argv;
    if (command === 'init') return init(argv.slice(1), io);
    if (command === 'create' && sub === 'api') return api(argv.slice(2), io);
    if (command === '--help' || command === '-h' || command === 'help') {
      io.out(USAGE);
      return 0;
    }
    io.err(`${command ? `unknown command: ${argv.slice(0, 2).join(' ')}` : 'no command'}\n${USAGE}`);
    return 2;
  } catch (err) {
    // parseArgs' own errors (an unknown flag, a missing value) are usage errors too.
    if (err instanceof NameError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.err(`regulon: ${(err as Error).message}`);
      return 2;
    }
    throw err;
  }
}

function init(args: readonly string[], io: Io): number {
  const { values, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      'skip-install': { type: 'boolean' },
      tarballs: { type: 'string' },
    },
  });
  if (positionals.length > 1) throw new NameError(`one directory at most, got: ${positionals.join(' ')}`);
  const dir = resolve(io.cwd, positionals[0] ?? '.');
  const tarballs = values.tarballs === undefined ? tarballDirOf(io.env) : resolve(io.cwd, values.tarballs);
  const written = initProject(dir, { name: values.name, tarballs });
  io.out(`wrote ${written.length} files in ${relative(io.cwd, dir) || '.'}`);
  if (tarballs) io.out(`the @regulon packages come from the tarballs in ${tarballs}, not the registry`);
  const cd = relative(io.cwd, dir);
  if (values['skip-install']) {
    io.out(`next:${cd ? ` cd ${cd} &&` : ''} npm install && npm run generate`);
    return 0;
  }
  for (const step of [
    ['install', '--no-audit', '--no-fund'],
    ['run', 'generate'],
  ]) {
    const code = io.run(dir, 'npm', step);
    if (code !== 0) {
      io.err(
        `npm ${step.join(' ')} failed (exit ${code}); the project is written: fix that, then run it again`,
      );
      return 1;
    }
  }
  io.out(
    `next:${cd ? ` cd ${cd} &&` : ''} npx regulon create api --group example.com --version v1alpha1 --kind MyKind`,
  );
  return 0;
}

function api(args: readonly string[], io: Io): number {
  const { values } = parseArgs({
    args: [...args],
    options: {
      group: { type: 'string' },
      version: { type: 'string' },
      kind: { type: 'string' },
      plural: { type: 'string' },
    },
  });
  const { group, version, kind } = values;
  if (!group || !version || !kind) throw new NameError('create api needs --group, --version and --kind');
  const { names, written } = createApi(io.cwd, { group, version, kind, plural: values.plural });
  io.out(`${names.kind} (${names.plural}.${names.group}/${names.version}): ${written.join(', ')}`);
  if (!existsSync(join(io.cwd, 'node_modules', '@regulon', 'generate'))) {
    io.out('next: npm install && npm run generate && npm test');
    return 0;
  }
  const code = io.run(io.cwd, 'npm', ['run', 'generate']);
  if (code !== 0) {
    io.err(`npm run generate failed (exit ${code}): deploy/ is not current yet`);
    return 1;
  }
  io.out('next: npm test');
  return 0;
}
