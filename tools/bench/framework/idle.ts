// The memory floor: resident memory of processes that hold no objects, from
// Node with nothing loaded up to the whole manager, so the difference between
// any two rows is what a module or a component costs at rest.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, freePorts } from '@regulon/testenv';
import { DIST_NODE_FLAGS, managerCommand, managerUnbundledCommand } from '../harness/manager-build.ts';
import { processStats } from '../harness/process-stats.ts';

/** How long a process sits idle after it is ready before its RSS is read: timers and lazy init settle. */
export const IDLE_SETTLE_MS = 5_000;

export interface IdleRow {
  what: string;
  rssMiB: number;
  peakRssMiB: number;
}

export interface IdleConfig {
  root: string;
  kubeconfig: string;
  referenceBinary: string;
  logFile: string;
  log: (line: string) => void;
}

/** The modules whose load cost the floor lists one by one: the manager's heavy dependencies. */
export const MODULES = [
  '@opentelemetry/api',
  '@opentelemetry/sdk-node',
  '@kubernetes/client-node',
  'prom-client',
  'pino',
  'yaml',
  'typebox',
  '@regulon/client',
  '@regulon/cache',
  '@regulon/runtime',
] as const;

/**
 * The workspace packages among MODULES, measured a second time compiled (their
 * dist/, as the manager image loads them) beside their TypeScript sources.
 */
export const WORKSPACE_MODULES = MODULES.filter((m) => m.startsWith('@regulon/'));

/** A Node process that loads `modules`, says so on stdout, and then idles. */
export function nodeLoading(modules: readonly string[], nodeFlags: readonly string[] = []): string[] {
  const imports = modules.map((m) => `await import(${JSON.stringify(m)});`).join(' ');
  return [
    ...nodeFlags,
    '--input-type=module',
    '-e',
    `${imports} console.log('ready'); setInterval(() => {}, 1 << 30);`,
  ];
}

async function measure(child: ChildProcess, ready: () => Promise<boolean>): Promise<Omit<IdleRow, 'what'>> {
  try {
    await eventually(
      'the idle process to be ready',
      async () => {
        if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}`);
        return ready();
      },
      120_000,
      25,
    );
    await new Promise((r) => setTimeout(r, IDLE_SETTLE_MS));
    const s = processStats(child.pid!);
    return { rssMiB: s.rssBytes / 2 ** 20, peakRssMiB: s.peakRssBytes / 2 ** 20 };
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
  }
}

function printsReady(child: ChildProcess): () => Promise<boolean> {
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  return () => Promise.resolve(out.includes('ready'));
}

const readyz = (port: number) => () =>
  fetch(`http://127.0.0.1:${port}/readyz`).then(
    (r) => r.ok,
    () => false,
  );

/** Every row of the floor, each process started and measured alone. */
export async function measureIdle(c: IdleConfig): Promise<IdleRow[]> {
  const rows: IdleRow[] = [];
  const fd = openSync(c.logFile, 'a');
  const opts = { cwd: c.root, stdio: ['ignore', 'pipe', fd] as ['ignore', 'pipe', number] };
  try {
    const node = async (what: string, modules: readonly string[], nodeFlags: readonly string[] = []) => {
      const child = spawn(process.execPath, nodeLoading(modules, nodeFlags), opts);
      rows.push({ what, ...(await measure(child, printsReady(child))) });
      c.log(`  idle: ${what}: ${rows.at(-1)!.rssMiB.toFixed(1)} MiB`);
    };
    await node('node -e (nothing loaded)', []);
    for (const m of MODULES) await node(`node + ${m}`, [m]);
    for (const m of WORKSPACE_MODULES) await node(`node + ${m}, compiled`, [m], DIST_NODE_FLAGS);

    // The manager runs bundled, as its image does; `dist` is the compiled
    // manager unbundled, `source` apps/manager/src/main.ts.
    const manager = async (
      what: string,
      nodeFlags: string[],
      controllers: 'database' | 'all',
      from: 'bundle' | 'dist' | 'source' = 'bundle',
    ) => {
      const [metrics, health] = (await freePorts(2)) as [number, number];
      // The bundle and dist/ run with the image's Node flags (MANAGER_NODE_FLAGS), `nodeFlags` after them.
      const script =
        from === 'bundle'
          ? managerCommand(c.root, nodeFlags)
          : from === 'dist'
            ? managerUnbundledCommand(c.root, nodeFlags)
            : [...nodeFlags, join(c.root, 'apps', 'manager', 'src', 'main.ts')];
      const child = spawn(
        process.execPath,
        [
          ...script,
          '--kubeconfig',
          c.kubeconfig,
          '--metrics-bind-address',
          `127.0.0.1:${metrics}`,
          '--health-probe-bind-address',
          `127.0.0.1:${health}`,
          '--log-level',
          'warn',
        ],
        {
          ...opts,
          env: {
            ...process.env,
            REGULON_LEADER_ELECT: 'false',
            REGULON_CACHE_ENABLED: String(controllers === 'all'),
            REGULON_MYAPP_ENABLED: String(controllers === 'all'),
            REGULON_DATABASE_ENABLED: 'true',
          },
        },
      );
      rows.push({ what, ...(await measure(child, readyz(health))) });
      c.log(`  idle: ${what}: ${rows.at(-1)!.rssMiB.toFixed(1)} MiB`);
    };
    await manager(
      'Regulon manager, Database controller, from the TypeScript sources',
      [],
      'database',
      'source',
    );
    await manager('Regulon manager, Database controller, compiled, unbundled', [], 'database', 'dist');
    await manager('Regulon manager, Database controller', [], 'database');
    // The image's semi-spaces (4 MiB) against V8's default (16) and smaller ones.
    for (const mib of [16, 2, 1])
      await manager(
        `Regulon manager, Database controller, --max-semi-space-size=${mib}`,
        [`--max-semi-space-size=${mib}`],
        'database',
      );
    await manager('Regulon manager, every controller, compiled, unbundled', [], 'all', 'dist');
    await manager('Regulon manager, every controller', [], 'all');
    // What the manager cost when the SDK was loaded at start whatever the configuration.
    await manager(
      'Regulon manager, every controller, OpenTelemetry SDK loaded eagerly',
      ['--import', '@opentelemetry/sdk-node'],
      'all',
    );

    const [metrics, health] = (await freePorts(2)) as [number, number];
    const go = spawn(
      c.referenceBinary,
      [
        'manager',
        '--kubeconfig',
        c.kubeconfig,
        '--metrics-bind-address',
        `127.0.0.1:${metrics}`,
        '--health-probe-bind-address',
        `127.0.0.1:${health}`,
      ],
      opts,
    );
    rows.push({
      what: 'controller-runtime reference manager, Database controller',
      ...(await measure(go, readyz(health))),
    });
    c.log(`  idle: ${rows.at(-1)!.what}: ${rows.at(-1)!.rssMiB.toFixed(1)} MiB`);
    return rows;
  } finally {
    closeSync(fd);
  }
}

export function idleMarkdown(rows: readonly IdleRow[]): string {
  const floor = rows[0]?.rssMiB ?? NaN;
  return (
    [
      '| process (no objects) | RSS after idle (MiB) | above `node -e` (MiB) | peak RSS (MiB) |',
      '|---|---:|---:|---:|',
      ...rows.map(
        (r) =>
          `| ${r.what} | ${r.rssMiB.toFixed(1)} | ${r.what.startsWith('controller-runtime') ? '—' : (r.rssMiB - floor).toFixed(1)} | ${r.peakRssMiB.toFixed(1)} |`,
      ),
    ].join('\n') + '\n'
  );
}
