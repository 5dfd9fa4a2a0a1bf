// The engine as the agent's child. The agent is PID 1 of the engine's
// container, so the engine's fate is the agent's to decide: it starts it,
// passes the kubelet's stop signal on, and can kill it at once (fencing)
// without asking the API server or the engine anything.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

export interface EngineExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class EngineProcess {
  readonly #child: ChildProcess;
  readonly exited: Promise<EngineExit>;
  #fenced = false;

  /**
   * Starts `command` in a process group of its own, so that a fence reaches
   * every process the engine forked (postgres's backends, a start script's
   * children), not only the one the agent started.
   */
  constructor(command: readonly string[], env: NodeJS.ProcessEnv = process.env) {
    const [file, ...args] = command;
    if (!file) throw new TypeError('instance agent: no engine command given');
    this.#child = spawn(file, args, { env, stdio: 'inherit', detached: true });
    this.exited = once(this.#child, 'exit').then(([code, signal]) => ({
      code: code as number | null,
      signal: signal as NodeJS.Signals | null,
    }));
    // A command that cannot start (ENOENT) ends as an exit, not a crash of the agent.
    this.#child.once('error', () => undefined);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  get running(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** True once fence() was called. */
  get fenced(): boolean {
    return this.#fenced;
  }

  /** Passes a signal to the engine's whole process group (the kubelet's SIGTERM on a graceful stop). */
  signal(sig: NodeJS.Signals): void {
    this.#signalGroup(sig);
  }

  /**
   * Kills every process of the engine at once (SIGKILL): nothing it does
   * afterwards can acknowledge a write. Synchronous, so that the caller's
   * deadline covers the kill itself.
   */
  fence(): void {
    this.#fenced = true;
    this.#signalGroup('SIGKILL');
  }

  /** Kills whatever of the engine's process group is still running, without calling it a fence. */
  killRemaining(): void {
    this.#signalGroup('SIGKILL');
  }

  #signalGroup(sig: NodeJS.Signals): void {
    const pid = this.#child.pid;
    // Also after the group's leader exited: its children may still run, and
    // Linux never gives a new process the id of a process group still in use.
    if (pid === undefined) return;
    try {
      // The negative pid names the process group the engine leads (detached).
      process.kill(-pid, sig);
    } catch {
      // Already gone (ESRCH): nothing left to signal.
    }
  }
}
