// A manager process for leader-election tests: one leader-only controller over
// the ConfigMaps of $NAMESPACE whose reconcile takes $RECONCILE_MS. Prints one
// JSON line per event on stdout: leading, reconcile-start, reconcile-end,
// stopping (SIGTERM received), exit.
import { KubeClient, Kinds } from '@regulon/client';
import type { DestinationStream } from 'pino';
import { Manager } from '../manager/manager.ts';
import { createLogger } from '../observability/logging.ts';
import { stopOnSignals } from '../manager/signals.ts';

const env = (k: string) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is required`);
  return v;
};
const say = (event: string, extra: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ event, identity: env('IDENTITY'), at: Date.now(), ...extra })}\n`);

const namespace = env('NAMESPACE');
const reconcileMs = Number(process.env['RECONCILE_MS'] ?? '0');
const mgr = new Manager({
  client: KubeClient.load({ kubeconfigPath: env('KUBECONFIG') }),
  logger: createLogger({
    level: 'warn',
    destination: process.stderr as unknown as DestinationStream,
  }),
  metricsBindAddress: '0',
  healthBindAddress: '0',
  namespace,
  leaderElection: {
    enabled: true,
    namespace,
    name: 'elector-test',
    identity: env('IDENTITY'),
    leaseDurationMs: Number(process.env['LEASE_MS'] ?? '15000'),
    renewDeadlineMs: Number(process.env['RENEW_MS'] ?? '10000'),
    retryPeriodMs: Number(process.env['RETRY_MS'] ?? '2000'),
  },
});
mgr
  .controller('elector-test')
  .for(Kinds.ConfigMap)
  .complete({
    async reconcile(req) {
      say('reconcile-start', { key: req.name });
      await new Promise((r) => setTimeout(r, reconcileMs));
      say('reconcile-end', { key: req.name });
    },
  });
const leading = setInterval(() => {
  if (mgr.leading) {
    say('leading');
    clearInterval(leading);
  }
}, 20);
// Registered before the manager's handler, so the line precedes everything the stop causes.
process.once('SIGTERM', () => say('stopping'));
stopOnSignals(mgr);
mgr.start().then(
  () => {
    say('exit', { code: 0 });
    process.exit(0);
  },
  (err: unknown) => {
    say('exit', { code: 1, err: String(err) });
    process.exit(1);
  },
);
