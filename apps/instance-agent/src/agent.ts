// One run of the agent: the engine as its child, the primary Lease kept in
// step with the engine's role, and the order of a stop (engine first, Lease
// after) that keeps two writable instances from ever overlapping.
import { execFile } from 'node:child_process';
import { constants } from 'node:os';
import type { KubeClient } from '@regulon/client';
import { LeaderElector } from '@regulon/runtime';
import { realClock, type Logger } from '@regulon/util';
import type { AgentConfig } from './config.ts';
import { PrimaryGuard } from './primary-guard.ts';
import { EngineProcess, type EngineExit } from './supervisor.ts';

/** The agent's exit code after it fenced its engine: the kubelet restarts the container. */
export const FENCED_EXIT_CODE = 75;

/** How long one role question may take: longer counts as no answer. */
const ROLE_COMMAND_TIMEOUT_MS = 3_000;

/** Runs the role command: true for `primary`, false for `replica`, undefined for anything else or no answer. */
export function askRole(command: string, signal: AbortSignal): Promise<boolean | undefined> {
  return new Promise((resolve) => {
    execFile(
      '/bin/sh',
      ['-c', command],
      { signal, timeout: ROLE_COMMAND_TIMEOUT_MS, killSignal: 'SIGKILL' },
      (err, stdout) => {
        const answer = err ? '' : String(stdout).trim();
        resolve(answer === 'primary' ? true : answer === 'replica' ? false : undefined);
      },
    );
  });
}

export interface AgentRun {
  /** Resolves with the agent's exit code: the engine's own, or FENCED_EXIT_CODE. */
  done: Promise<number>;
  /** A graceful stop (the kubelet's SIGTERM): the engine is stopped, then the Lease released. */
  stop(): void;
  engine: EngineProcess;
  guard: PrimaryGuard;
}

export function runAgent(config: AgentConfig, client: KubeClient, log: Logger): AgentRun {
  const engine = new EngineProcess(config.engine);
  log.info(
    { identity: config.identity, lease: `${config.namespace}/${config.lease}`, pid: engine.pid },
    'engine started',
  );
  const guard = new PrimaryGuard({
    identity: config.identity,
    clock: realClock,
    log,
    roleIntervalMs: config.roleIntervalMs,
    acquireGraceMs: config.acquireGraceMs,
    acceptsWrites: (signal) => askRole(config.roleCommand, signal),
    fence: () => engine.fence(),
    campaign: (callbacks) =>
      new LeaderElector({
        client,
        namespace: config.namespace,
        name: config.lease,
        identity: config.identity,
        leaseDurationMs: config.leaseDurationMs,
        renewDeadlineMs: config.renewDeadlineMs,
        retryPeriodMs: config.retryPeriodMs,
        logger: log,
        onStartedLeading: () => callbacks.onStartedLeading(),
        onStoppedLeading: () => callbacks.onStoppedLeading(),
        onNewLeader: (identity) => callbacks.onNewLeader(identity),
      }),
  });
  const guarding = guard.run();

  const done = (async (): Promise<number> => {
    const exit: EngineExit = await engine.exited;
    // Whatever the engine left running (a backend that outlived its
    // postmaster) goes too: only then is nothing left that accepts writes,
    // and only then may the Lease go.
    engine.killRemaining();
    await guard.stop();
    await guarding;
    const reason = guard.fencedBecause;
    if (reason !== undefined) {
      log.error({ reason, exit }, 'engine fenced; exiting so that the container restarts');
      return FENCED_EXIT_CODE;
    }
    log.info({ exit }, 'engine exited');
    return exit.code ?? 128 + signalNumber(exit.signal);
  })();

  return {
    done,
    stop: () => engine.signal('SIGTERM'),
    engine,
    guard,
  };
}

function signalNumber(signal: NodeJS.Signals | null): number {
  return (signal && constants.signals[signal]) || 1;
}
