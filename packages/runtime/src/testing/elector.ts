// Starts elector-process.ts as a child process and collects the JSON lines
// it prints, for the leader-election tests and the hand-over measurement.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

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
  const child = spawn(process.execPath, [join(import.meta.dirname, 'elector-process.ts')], {
    env: {
      ...process.env,
      NAMESPACE: o.namespace,
      IDENTITY: o.identity,
      KUBECONFIG: o.kubeconfigPath,
      RECONCILE_MS: String(o.reconcileMs ?? 0),
      ...o.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: ElectorLine[] = [];
  let buf = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    for (const p of parts) if (p.trim()) lines.push(JSON.parse(p) as ElectorLine);
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, exited, at: (event) => lines.find((l) => l.event === event)?.at };
}
