import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { runBuildScript } from './binaries.ts';

/** What kstatus (sigs.k8s.io/cli-utils) makes of an object: how Flux and kpt decide that an apply is done. */
export interface KstatusResult {
  status: 'Current' | 'InProgress' | 'Failed' | 'Terminating' | 'Unknown';
  message: string;
}

let binary: Promise<string> | undefined;

/**
 * Returns the path of the kstatus CLI (tools/kstatus: the pinned cli-utils
 * library's status computation), built from the Go module proxy the first
 * time and cached like Prometheus. REGULON_KSTATUS_BIN points at a prebuilt
 * directory instead.
 */
export function ensureKstatus(log: (line: string) => void = () => {}): Promise<string> {
  binary ??= (async () =>
    join(
      process.env['REGULON_KSTATUS_BIN'] ?? (await runBuildScript(['tools', 'kstatus', 'build.sh'], log)),
      'kstatus',
    ))();
  return binary;
}

/** Runs kstatus' Compute on `obj` (a whole object as the API server returns it, status included). */
export async function kstatus(obj: unknown): Promise<KstatusResult> {
  const bin = await ensureKstatus();
  return new Promise((resolve, reject) => {
    const child = spawn(bin, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    // 'close', not 'exit': only then is all of stdout read. Under load 'exit' came first, and
    // parsing half the output threw inside this handler, where no promise caught it.
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`kstatus exited with ${code}: ${err.trim()}`));
      try {
        resolve(JSON.parse(out) as KstatusResult);
      } catch (e) {
        reject(new Error(`kstatus printed no JSON (${(e as Error).message}): ${JSON.stringify(out)}`));
      }
    });
    child.stdin.end(JSON.stringify(obj));
  });
}
