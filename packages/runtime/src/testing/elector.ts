// Starts elector-process.ts as a child process and collects the JSON lines
// it prints, for the leader-election tests and the hand-over measurement.
import type { ChildProcess } from 'node:child_process';
import { spawnJsonLines } from './json-lines-process.ts';

/** One event line of elector-process.ts. */
export interface ElectorLine {
  event: string;
  identity: string;
  at: number;
  key?: string;
  code?: number;
}

export interface Elector {
  child: ChildProcess;
  /** Every line so far, in order. */
  lines: ElectorLine[];
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** When `event` first happened, if it has. */
  at(event: string): number | undefined;
}

export interface ElectorOptions {
  kubeconfigPath: string;
  namespace: string;
  identity: string;
  reconcileMs?: number;
  /** More environment: LEASE_MS, RENEW_MS, RETRY_MS override the default lease timings. */
  env?: Record<string, string>;
}

export function spawnElector(o: ElectorOptions): Elector {
  const { child, lines, exited } = spawnJsonLines<ElectorLine>('elector-process.ts', {
    NAMESPACE: o.namespace,
    IDENTITY: o.identity,
    KUBECONFIG: o.kubeconfigPath,
    RECONCILE_MS: String(o.reconcileMs ?? 0),
    ...o.env,
  });
  return { child, lines, exited, at: (event) => lines.find((l) => l.event === event)?.at };
}
