// Runs a TypeScript file of this folder as a child process and collects the JSON lines it
// prints on stdout: how the leader-election and sharding tests watch managers in processes
// of their own, which they can kill (-9) or freeze (SIGSTOP).
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export interface JsonLinesProcess<L> {
  child: ChildProcess;
  /** Every line so far, in order. */
  lines: L[];
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/** Starts `script` (a file name in this folder) with `env` added to this process's environment. */
export function spawnJsonLines<L>(script: string, env: Record<string, string>): JsonLinesProcess<L> {
  const child = spawn(process.execPath, [join(import.meta.dirname, script)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: L[] = [];
  let buf = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    for (const p of parts) if (p.trim()) lines.push(JSON.parse(p) as L);
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, exited };
}
