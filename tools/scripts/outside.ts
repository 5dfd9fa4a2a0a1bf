// Running commands as a user does, outside the repository: in a project of
// its own, with the environment a terminal would have rather than the one
// `npm test` gives this repository's scripts. Shared by the tests that install
// the packed tarballs (pack.integration.test.ts) and that follow the README
// (readme-tutorial.integration.test.ts).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/**
 * This process's environment minus what `npm test` sets for its own scripts
 * (the project's npm sees only its own configuration), minus node:test's
 * NODE_TEST_CONTEXT (with it, the project's `node --test` would report to
 * this runner in its binary protocol instead of printing its results), and
 * minus what would lead the project's testenv to this run's control plane or
 * binaries (REGULON_TESTENV_DIR, KUBECONFIG, REGULON_*_BIN): it finds its own.
 * REGULON_CACHE_DIR stays: it is the machine's cache, not the repository's.
 */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (
      !/^npm_(config|package|lifecycle)_/i.test(k) &&
      !['INIT_CWD', 'NODE_TEST_CONTEXT', 'KUBECONFIG'].includes(k) &&
      !(k.startsWith('REGULON_') && k !== 'REGULON_CACHE_DIR')
    )
      out[k] = v;
  return { ...out, ...extra };
}

/** Runs a command to its end; a failure throws with the tail of its output. */
export async function sh(cmd: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) {
  try {
    return await execFileAsync(cmd, args, {
      cwd: options.cwd,
      env: options.env ?? cleanEnv(),
      maxBuffer: 64 << 20,
    });
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(' ')} failed:\n${stdout.slice(-4000)}\n${stderr.slice(-4000)}`, {
      cause: err,
    });
  }
}
