// Measures the hand-over after SIGTERM with a full queue: two manager
// processes (elector-process.ts, the default lease timings unless LEASE_MS,
// RENEW_MS, RETRY_MS are set), QUEUED ConfigMaps queued on the leader, each
// reconcile taking RECONCILE_MS; SIGTERM to the leader once it reconciles;
// prints the time until the standby holds the Lease. ROUNDS rounds.
//   npx regulon-testenv exec -- npx node packages/runtime/src/testing/measure-handover.ts
import { KubeClient, Kinds } from '@regulon/client';
import { eventually, start } from '@regulon/testenv';
import { spawnElector } from './elector.ts';

const queued = Number(process.env['QUEUED'] ?? '200');
const reconcileMs = Number(process.env['RECONCILE_MS'] ?? '1000');
const rounds = Number(process.env['ROUNDS'] ?? '3');

const env = await start();
const client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 500, burst: 500 });

const manager = (namespace: string, identity: string) =>
  spawnElector({ kubeconfigPath: env.kubeconfigPath, namespace, identity, reconcileMs });

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
