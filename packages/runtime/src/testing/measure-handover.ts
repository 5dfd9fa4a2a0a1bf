// Measures the hand-over after SIGTERM with a full queue: two manager
// processes (elector-process.ts, the default lease timings unless LEASE_MS,
// RENEW_MS, RETRY_MS are set), QUEUED ConfigMaps queued on the leader, each
// reconcile taking RECONCILE_MS; SIGTERM to the leader once it reconciles;
// prints the time until the standby holds the Lease. ROUNDS rounds.
//   npx regulon-testenv exec -- npx node packages/runtime/src/testing/measure-handover.ts
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { KubeClient, Kinds } from '@regulon/client';
import { eventually, start } from '@regulon/testenv';

const queued = Number(process.env['QUEUED'] ?? '200');
const reconcileMs = Number(process.env['RECONCILE_MS'] ?? '1000');
const rounds = Number(process.env['ROUNDS'] ?? '3');

interface Line {
  event: string;
  at: number;
}

const env = await start();
const client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 500, burst: 500 });

function manager(namespace: string, identity: string) {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'elector-process.ts')], {
    env: {
      ...process.env,
      NAMESPACE: namespace,
      IDENTITY: identity,
      KUBECONFIG: env.kubeconfigPath,
      RECONCILE_MS: String(reconcileMs),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: Line[] = [];
  let buf = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    for (const p of parts) if (p.trim()) lines.push(JSON.parse(p) as Line);
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return { child, lines, exited, at: (event: string) => lines.find((l) => l.event === event)?.at };
}

try {
  for (let round = 1; round <= rounds; round++) {
    const ns = await env.newNamespace('handover');
    await Promise.all(
      Array.from({ length: queued }, (_, i) =>
        client
          .resource(Kinds.ConfigMap)
          .create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `q-${i}`, namespace: ns } }),
      ),
    );
    const a = manager(ns, 'a');
    const b = manager(ns, 'b');
    const leader = await eventually(
      'a leader',
      () => (a.at('leading') ? a : b.at('leading') ? b : undefined),
      60_000,
    );
    const standby = leader === a ? b : a;
    await eventually('leader reconciling', () => leader.at('reconcile-start') !== undefined, 30_000);
    const termAt = Date.now();
    leader.child.kill('SIGTERM');
    await leader.exited;
    const leadingAt = await eventually('standby leads', () => standby.at('leading'), 60_000);
    const started = leader.lines.filter((l) => l.event === 'reconcile-start').length;
    console.log(
      `round ${round}: standby leads ${leadingAt - termAt} ms after SIGTERM (leader exited after ${(leader.at('exit') ?? 0) - termAt} ms; ${started} of ${queued} items reconciled by the leader, reconcile ${reconcileMs} ms)`,
    );
    standby.child.kill('SIGTERM');
    await standby.exited;
  }
} finally {
  client.close();
  await env.stop();
}
