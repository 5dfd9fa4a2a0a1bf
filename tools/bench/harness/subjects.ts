import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { resolve } from 'node:path';
import { eventually } from '@regulon/testenv';
import { managerCommand, managerUnbundledCommand } from './manager-build.ts';
import { parsePrometheusText, type Sample } from './prom-text.ts';

export type SubjectName = 'regulon' | 'controller-runtime' | 'floor';

/** Client-side rate limits, given to both managers alike. `qps` ≤ 0: unlimited. */
export interface Limits {
  name: string;
  qps: number;
  burst: number;
}

export const LIMITS: Record<string, Limits> = {
  qps50: { name: 'QPS 50', qps: 50, burst: 100 },
  unlimited: { name: 'unlimited', qps: 0, burst: 100_000 },
};

export interface SubjectOptions {
  kubeconfig: string;
  limits: Limits;
  /** Reconciles at once (MaxConcurrentReconciles), the same for both managers. */
  concurrency: number;
  metricsPort: number;
  healthPort: number;
  logFile: string;
  /** The controller-runtime reference binary (tools/bench/reference.ts builds it). */
  referenceBinary: string;
  root: string;
}

/** A running manager or floor process, measured from outside the same way whatever it is. */
export class Subject {
  readonly child: ChildProcess;
  readonly startedAt: number;
  readonly #metricsUrl: string | undefined;
  readonly #healthUrl: string | undefined;
  readonly exited: Promise<number | null>;
  #stdout = '';

  constructor(child: ChildProcess, startedAt: number, metricsPort?: number, healthPort?: number) {
    this.child = child;
    this.startedAt = startedAt;
    this.#metricsUrl = metricsPort ? `http://127.0.0.1:${metricsPort}/metrics` : undefined;
    this.#healthUrl = healthPort ? `http://127.0.0.1:${healthPort}/readyz` : undefined;
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    child.stdout?.on('data', (d: Buffer) => (this.#stdout += d.toString('utf8')));
  }

  get pid(): number {
    return this.child.pid!;
  }

  get stdout(): string {
    return this.#stdout;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async metrics(): Promise<Sample[]> {
    if (!this.#metricsUrl) return [];
    const res = await fetch(this.#metricsUrl);
    if (!res.ok) throw new Error(`${this.#metricsUrl}: HTTP ${res.status}`);
    return parsePrometheusText(await res.text());
  }

  /** Waits until /readyz answers 200: for both managers that means their caches have synced. */
  async waitReady(timeoutMs = 120_000): Promise<number> {
    if (!this.#healthUrl) return 0;
    const url = this.#healthUrl;
    await eventually(
      `${url} to answer 200`,
      async () => {
        if (!this.running) throw new Error(`exited with ${this.child.exitCode ?? this.child.signalCode}`);
        return (await fetch(url)).ok;
      },
      timeoutMs,
      25,
    );
    return performance.now() - this.startedAt;
  }

  /** SIGTERM, then waits for the exit (SIGKILL after `graceMs`). */
  async stop(graceMs = 30_000): Promise<number | null> {
    if (!this.running) return this.child.exitCode;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

function spawnLogged(cmd: string, args: string[], logFile: string, env: NodeJS.ProcessEnv = {}): Subject {
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', fd], env: { ...process.env, ...env } });
    return new Subject(child, performance.now());
  } finally {
    closeSync(fd);
  }
}

/** The manager's command line: the bundle, unless REGULON_BENCH_MANAGER asks for another build. */
function managerVariant(root: string, nodeFlags: readonly string[]): string[] {
  const variant = process.env['REGULON_BENCH_MANAGER'];
  if (variant === 'unbundled') return managerUnbundledCommand(root, nodeFlags);
  if (variant?.endsWith('.js')) return [...managerCommand(root, nodeFlags).slice(0, -1), resolve(variant)];
  return managerCommand(root, nodeFlags);
}

/**
 * Starts the Regulon manager (Database controller only, bundled as its image
 * runs it: `buildManager` first) or the controller-runtime reference.
 */
export function startManager(subject: 'regulon' | 'controller-runtime', o: SubjectOptions): Subject {
  const benchNodeFlags = process.env['REGULON_BENCH_NODE_FLAGS']?.split(' ').filter(Boolean) ?? [];
  const fd = openSync(o.logFile, 'a');
  try {
    const common = [
      '--kubeconfig',
      o.kubeconfig,
      '--kube-api-qps',
      String(o.limits.qps),
      '--kube-api-burst',
      String(o.limits.burst),
      '--metrics-bind-address',
      `127.0.0.1:${o.metricsPort}`,
      '--health-probe-bind-address',
      `127.0.0.1:${o.healthPort}`,
    ];
    const child =
      subject === 'regulon'
        ? spawn(
            process.execPath,
            [
              // As the image runs it: the bundle of the compiled manager (buildManager first)
              // with the image's Node flags. REGULON_BENCH_MANAGER=unbundled runs the same
              // compiled code unbundled, and REGULON_BENCH_MANAGER=DIR/main.js a bundle
              // saved elsewhere (a copy of an earlier build), to compare. REGULON_BENCH_NODE_FLAGS
              // come after the image's flags, so they add to them (e.g. "--cpu-prof
              // --cpu-prof-dir=/tmp/prof" to profile the manager) or override them
              // (--max-semi-space-size=16: V8's default).
              ...managerVariant(o.root, benchNodeFlags),
              ...common,
              '--database-concurrency',
              String(o.concurrency),
              '--log-level',
              'warn',
            ],
            {
              stdio: ['ignore', fd, fd],
              env: {
                ...process.env,
                REGULON_LEADER_ELECT: 'false',
                REGULON_CACHE_ENABLED: 'false',
                REGULON_MYAPP_ENABLED: 'false',
                REGULON_DATABASE_ENABLED: 'true',
              },
            },
          )
        : spawn(o.referenceBinary, ['manager', ...common, '--concurrency', String(o.concurrency)], {
            stdio: ['ignore', fd, fd],
          });
    return new Subject(child, performance.now(), o.metricsPort, o.healthPort);
  } finally {
    closeSync(fd);
  }
}

/**
 * Starts the floor: the reference binary's tight client, which reacts to each
 * Database the harness creates with the reconcile's writes and nothing else.
 * Resolves once its watches are open (it prints "watching").
 */
export async function startFloor(
  o: SubjectOptions & { count: number; concurrency: number },
): Promise<Subject> {
  const s = spawnLogged(
    o.referenceBinary,
    [
      'floor',
      '--kubeconfig',
      o.kubeconfig,
      '--count',
      String(o.count),
      '--concurrency',
      String(o.concurrency),
      '--prefix',
      'db',
      '--timeout',
      '90m',
    ],
    o.logFile,
  );
  await eventually(
    'the floor client to open its watches',
    () => {
      if (!s.running) throw new Error(`floor exited with ${s.child.exitCode}`);
      return s.stdout.includes('watching');
    },
    60_000,
    25,
  );
  return s;
}
