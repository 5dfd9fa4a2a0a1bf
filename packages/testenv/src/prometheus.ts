// A real Prometheus for a test: the pinned build (ensurePrometheus), started
// on a free port with the test's configuration, and asked through its HTTP
// API. Scrape and discovery are Prometheus's own, so a scrape job that passes
// here is one a user's Prometheus runs the same way.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensurePrometheus } from './binaries.ts';
import { freePort } from './ports.ts';
import { eventually } from './wait.ts';

/** One series of an instant query's answer. */
export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface RunningPrometheus {
  url: string;
  /** An instant query; throws with Prometheus's error when it refuses the expression. */
  query(expr: string): Promise<PromSample[]>;
  /** What it logged so far (warnings and errors). */
  log(): string;
  /** Stops it, and removes its data once it has exited. */
  stop(): Promise<void>;
}

/**
 * Starts Prometheus with `config` (prometheus.yml as an object: written as
 * JSON, which YAML reads as it is) and waits until it is ready.
 */
export async function runPrometheus(config: object): Promise<RunningPrometheus> {
  const { prometheus: bin } = await ensurePrometheus();
  const dir = mkdtempSync(join(tmpdir(), 'regulon-prometheus-'));
  writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify(config, null, 2));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let log = '';
  const child = spawn(
    bin,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await eventually(
      'Prometheus ready',
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited ${child.exitCode}: ${log}`);
        return (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok;
      },
      30_000,
      200,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url,
    log: () => log,
    stop,
    async query(expr) {
      const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
      const body = (await res.json()) as { status: string; error?: string; data?: { result: PromSample[] } };
      if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
      return body.data?.result ?? [];
    },
  };
}
