import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

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
export function startComponent(name: string, bin: string, args: string[], log: string): RunningComponent {
  const fd = openSync(log, 'a');
  const child = spawn(bin, args, { detached: true, stdio: ['ignore', fd, fd] });
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
