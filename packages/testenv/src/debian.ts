import { spawn } from 'node:child_process';

/**
 * Debian packages the test environment needs on the machine (image builders,
 * containerd, runc, CNI plugins...), checked in one place. Installed with apt
 * when running as root; otherwise the error names exactly what is missing and
 * the command that installs it, so a user without root knows what to ask for.
 */
export interface DebianPackagesOptions {
  /** Install what is missing with apt-get. Default: only when running as root. */
  install?: boolean | undefined;
  log?: (line: string) => void;
}

/** The packages of `packages` that dpkg does not report as installed. */
export async function missingDebianPackages(packages: readonly string[]): Promise<string[]> {
  if (packages.length === 0) return [];
  const bad = packages.filter((p) => !/^[a-z0-9][a-z0-9+.-]+$/.test(p));
  if (bad.length) throw new Error(`testenv: not Debian package names: ${bad.join(', ')}`);
  // `-f` with one line per name: dpkg-query exits 1 when some are unknown, yet
  // still prints the known ones, so the exit code alone says nothing useful.
  const res = await run('dpkg-query', ['-W', '-f=${Package} ${db:Status-Status}\\n', ...packages]);
  if (res.spawnError) {
    throw new Error(
      `testenv: cannot check for the Debian packages ${packages.join(' ')}: dpkg-query is not available (${res.spawnError}); this needs a Debian-based machine`,
    );
  }
  const installed = new Set(
    res.stdout
      .split('\n')
      .map((l) => l.trim().split(' '))
      .filter(([, status]) => status === 'installed')
      .map(([name]) => name),
  );
  return packages.filter((p) => !installed.has(p));
}

/**
 * Makes sure `packages` are installed. `why` says what needs them; it goes in
 * the error message. Rejects with the missing names when they cannot be
 * installed (not root, or apt fails).
 */
export async function ensureDebianPackages(
  packages: readonly string[],
  why: string,
  options: DebianPackagesOptions = {},
): Promise<void> {
  const missing = await missingDebianPackages(packages);
  if (missing.length === 0) return;
  const command = `apt-get install -y --no-install-recommends ${missing.join(' ')}`;
  const install = options.install ?? process.getuid?.() === 0;
  if (!install) {
    throw new Error(
      `testenv: ${why} needs the Debian packages ${missing.join(', ')}, which are not installed. ` +
        `Install them as root: ${command}`,
    );
  }
  const log = options.log ?? (() => {});
  log(`installing Debian packages for ${why}: ${missing.join(' ')}`);
  let res = await aptGet(['install', '-y', '--no-install-recommends', ...missing]);
  if (res.code !== 0) {
    // A machine whose package lists were never fetched (or were cleaned, as
    // container images do) cannot locate anything: refresh them once and retry.
    log('apt-get install failed; running apt-get update and trying once more');
    const update = await aptGet(['update']);
    if (update.code === 0) res = await aptGet(['install', '-y', '--no-install-recommends', ...missing]);
  }
  const still = await missingDebianPackages(missing);
  if (res.code !== 0 || still.length) {
    throw new Error(
      `testenv: ${why} needs the Debian packages ${still.join(', ') || missing.join(', ')}; ` +
        `\`${command}\` failed (exit ${res.code}):\n${tail(res.stderr || res.stdout)}`,
    );
  }
  log(`installed ${missing.join(' ')}`);
}

function aptGet(args: string[]): Promise<RunResult> {
  // Another apt (the node's set-up, an admin) may hold the dpkg lock: wait for
  // it rather than fail at once.
  return run('apt-get', ['-o', 'DPkg::Lock::Timeout=300', ...args], {
    ...process.env,
    DEBIAN_FRONTEND: 'noninteractive',
  });
}

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  spawnError?: string | undefined;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (err) => resolve({ code: null, stdout, stderr, spawnError: err.message }));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function tail(text: string, lines = 15): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}
