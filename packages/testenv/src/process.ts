import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from './wait.ts';

/** How a component was started; persisted so another process can stop or restart it. */
export interface ComponentState {
  name: string;
  bin: string;
  args: string[];
  log: string;
  pid: number;
}

export interface RunningComponent {
  state: ComponentState;
  /** Rejects if the process exits; lets a readiness wait fail fast with the log tail. */
  exited: Promise<number | null> | undefined;
}

/**
 * Starts a component as a detached process group with its output in a log
 * file. Detached, so `npm run cluster -- up` can return while the control plane
 * keeps running, and so a test process can restart a component it did not start.
 */
export function startComponent(
  name: string,
  bin: string,
  args: string[],
  log: string,
  /** The process's environment (default: this process's). Secrets go here, never in `args`, which are recorded. */
  env?: NodeJS.ProcessEnv,
): RunningComponent {
  const fd = openSync(log, 'a');
  const child = spawn(bin, args, { detached: true, stdio: ['ignore', fd, fd], ...(env ? { env } : {}) });
  closeSync(fd);
  child.unref();
  if (child.pid === undefined) throw new Error(`testenv: could not start ${name} (${bin})`);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { state: { name, bin, args, log, pid: child.pid }, exited };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGTERM the component's process group, then SIGKILL if it outlives the grace period. */
export async function stopComponent(
  state: ComponentState,
  graceMs = 5000,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  const kill = (sig: NodeJS.Signals) => {
    try {
      process.kill(-state.pid, sig);
    } catch {
      try {
        process.kill(state.pid, sig);
      } catch {
        // already gone
      }
    }
  };
  kill(signal);
  const deadline = Date.now() + graceMs;
  while (isAlive(state.pid) && Date.now() < deadline) await delay(50);
  if (isAlive(state.pid)) kill('SIGKILL');
  while (isAlive(state.pid) && Date.now() < deadline + 5000) await delay(50);
}

export function logTail(path: string, lines = 30): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Where services started beside a control plane (the object store) are
 * recorded, under its directory: one directory per service, holding its
 * `component.json`, so that stopping the control plane stops them too, also
 * when the test process that started one died without stopping it.
 */
export const SERVICES_DIR = 'services';
const SERVICE_STATE_FILE = 'component.json';

export function recordService(serviceDir: string, state: ComponentState): void {
  writeFileSync(join(serviceDir, SERVICE_STATE_FILE), JSON.stringify(state, null, 2));
}

/** Stops the service recorded in `serviceDir` and deletes the directory with everything in it. */
export async function stopRecordedService(serviceDir: string): Promise<void> {
  let state: ComponentState | undefined;
  try {
    state = JSON.parse(readFileSync(join(serviceDir, SERVICE_STATE_FILE), 'utf8')) as ComponentState;
  } catch {
    // never started, or already stopped
  }
  if (state) await stopComponent(state);
  rmSync(serviceDir, { recursive: true, force: true });
}

/** Stops every service recorded under the control plane in `controlPlaneDir`. */
export async function stopRecordedServices(controlPlaneDir: string): Promise<void> {
  const root = join(controlPlaneDir, SERVICES_DIR);
  if (!existsSync(root)) return;
  for (const name of readdirSync(root)) await stopRecordedService(join(root, name));
}

/**
 * Resumes a stopped (SIGSTOP) child process and waits for it to end: its exit code, or the signal
 * that ended it. A frozen leader resumed must find its leadership lost and exit on its own.
 */
export async function resumeUntilExit(child: ChildProcess, timeoutMs = 30_000): Promise<number | string> {
  child.kill('SIGCONT');
  return eventually(
    `process ${child.pid} exits once resumed`,
    () => Promise.resolve(child.exitCode ?? child.signalCode ?? undefined),
    timeoutMs,
    100,
  );
}
