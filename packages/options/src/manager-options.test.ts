// The standard operator options: their defaults, their variables under a
// prefix, and the Manager settings they resolve to in and out of a cluster.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  controllerOptions,
  defineOptions,
  helpText,
  loadConfig,
  managerOptions,
  managerSettings,
  type ConfigOf,
  type OptionSpecs,
} from './index.ts';

const OUTSIDE = { POD_NAMESPACE: 'ops' };
const INSIDE = { KUBERNETES_SERVICE_HOST: '10.96.0.1', POD_NAMESPACE: 'ops' };

function load<S extends OptionSpecs>(spec: S, argv: string[] = [], env: NodeJS.ProcessEnv = {}): ConfigOf<S> {
  const loaded = loadConfig(spec, { argv, env });
  if (loaded.help) throw new Error('unexpected --help');
  return loaded.config;
}

describe('managerOptions', () => {
  test('the defaults, with the Lease named after the operator', () => {
    const config = load(managerOptions({ leaderElectionId: 'shop-operator' }));
    assert.deepEqual(config, {
      kubeconfig: undefined,
      namespace: undefined,
      kubeApiQps: 50,
      kubeApiBurst: 100,
      metricsBindAddress: ':8080',
      healthProbeBindAddress: ':8081',
      leaderElect: 'auto',
      leaderElectionNamespace: undefined,
      leaderElectionId: 'shop-operator',
      leaseDuration: 15_000,
      renewDeadline: 10_000,
      retryPeriod: 2_000,
      sharding: false,
      shardingBuckets: 16,
      shardCaches: false,
      cacheSyncTimeout: 120_000,
      gracefulShutdownTimeout: 30_000,
      logLevel: 'info',
    });
  });

  test('the variables carry the prefix, except KUBECONFIG and LOG_LEVEL', () => {
    const spec = managerOptions({ envPrefix: 'SHOP', leaderElectionId: 'shop-operator' });
    assert.deepEqual(Object.fromEntries(Object.entries(spec).map(([key, option]) => [key, option.env])), {
      kubeconfig: 'KUBECONFIG',
      namespace: 'SHOP_NAMESPACE',
      kubeApiQps: 'SHOP_KUBE_API_QPS',
      kubeApiBurst: 'SHOP_KUBE_API_BURST',
      metricsBindAddress: 'SHOP_METRICS_BIND_ADDRESS',
      healthProbeBindAddress: 'SHOP_HEALTH_PROBE_BIND_ADDRESS',
      leaderElect: 'SHOP_LEADER_ELECT',
      leaderElectionNamespace: 'SHOP_LEADER_ELECTION_NAMESPACE',
      leaderElectionId: 'SHOP_LEADER_ELECTION_ID',
      leaseDuration: 'SHOP_LEASE_DURATION',
      renewDeadline: 'SHOP_RENEW_DEADLINE',
      retryPeriod: 'SHOP_RETRY_PERIOD',
      sharding: 'SHOP_SHARDING',
      shardingBuckets: 'SHOP_SHARDING_BUCKETS',
      shardCaches: 'SHOP_SHARD_CACHES',
      cacheSyncTimeout: 'SHOP_CACHE_SYNC_TIMEOUT',
      gracefulShutdownTimeout: 'SHOP_GRACEFUL_SHUTDOWN_TIMEOUT',
      logLevel: 'LOG_LEVEL',
    });
    const config = load(spec, [], {
      SHOP_NAMESPACE: 'shop',
      REGULON_NAMESPACE: 'not-this-one',
      SHOP_LEASE_DURATION: '1m',
      KUBECONFIG: '/tmp/kubeconfig',
      LOG_LEVEL: 'debug',
    });
    assert.equal(config.namespace, 'shop');
    assert.equal(config.leaseDuration, 60_000);
    assert.equal(config.kubeconfig, '/tmp/kubeconfig');
    assert.equal(config.logLevel, 'debug');
  });

  test('REGULON is the default prefix', () => {
    const spec = managerOptions({ leaderElectionId: 'regulon-manager' });
    assert.equal(spec.namespace.env, 'REGULON_NAMESPACE');
    assert.equal(load(spec, [], { REGULON_KUBE_API_QPS: '7' }).kubeApiQps, 7);
  });

  test('spread with controller and own options, --help lists them all and a flag beats its variable', () => {
    const spec = defineOptions({
      ...managerOptions({ leaderElectionId: 'shop-operator' }),
      shopUrl: { flag: 'shop-url', env: 'SHOP_URL', type: 'string', description: 'The shop.' },
      ...controllerOptions(['orders']),
    });
    const config = load(spec, ['--namespace=a', '--orders-concurrency=4'], { REGULON_NAMESPACE: 'b' });
    assert.equal(config.namespace, 'a');
    assert.equal(config.ordersConcurrency, 4);
    const help = helpText(spec, { program: 'shop-operator', summary: 'Runs the shop.' });
    for (const flag of ['--leader-election-id', '--log-level', '--shop-url', '--orders-enabled'])
      assert.ok(help.includes(flag), `${flag} in --help`);
  });

  test('a prefix that is not an upper-case variable name, or an empty Lease name, is refused at once', () => {
    assert.throws(() => managerOptions({ envPrefix: 'shop', leaderElectionId: 'x' }), TypeError);
    assert.throws(() => managerOptions({ leaderElectionId: '' }), /leaderElectionId/);
  });
});

describe('managerSettings', () => {
  const spec = managerOptions({ leaderElectionId: 'shop-operator' });

  test('the defaults outside a cluster: no leader election, the Lease in the own namespace', () => {
    assert.deepEqual(managerSettings(load(spec), OUTSIDE), {
      qps: 50,
      burst: 100,
      metricsBindAddress: ':8080',
      healthBindAddress: ':8081',
      cacheSyncTimeoutMs: 120_000,
      gracefulShutdownTimeoutMs: 30_000,
      leaderElection: {
        enabled: false,
        namespace: 'ops',
        name: 'shop-operator',
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
      },
    });
  });

  test('--leader-elect=auto elects in a cluster; true and false hold anywhere', () => {
    const enabled = (argv: string[], env: NodeJS.ProcessEnv) =>
      managerSettings(load(spec, argv), env).leaderElection.enabled;
    assert.equal(enabled([], INSIDE), true);
    assert.equal(enabled([], OUTSIDE), false);
    assert.equal(enabled(['--leader-elect=true'], OUTSIDE), true);
    assert.equal(enabled(['--leader-elect=false'], INSIDE), false);
  });

  test('the named kubeconfig, namespace and Lease namespace, durations in milliseconds', () => {
    const settings = managerSettings(
      load(spec, [
        '--kubeconfig=/home/me/.kube/shop',
        '--namespace=shop',
        '--leader-election-namespace=leases',
        '--leader-election-id=other',
        '--renew-deadline=5s',
        '--cache-sync-timeout=1500ms',
      ]),
      OUTSIDE,
    );
    assert.equal(settings.kubeconfigPath, '/home/me/.kube/shop');
    assert.equal(settings.namespace, 'shop');
    assert.equal(settings.leaderElection.namespace, 'leases');
    assert.equal(settings.leaderElection.name, 'other');
    assert.equal(settings.leaderElection.renewDeadlineMs, 5_000);
    assert.equal(settings.cacheSyncTimeoutMs, 1_500);
  });

  test('--sharding: the bucket Leases beside the leader election Lease, with its timings; off by default', () => {
    assert.equal(managerSettings(load(spec), INSIDE).sharding, undefined);
    const settings = managerSettings(
      load(spec, [
        '--sharding',
        '--sharding-buckets=32',
        '--leader-election-namespace=leases',
        '--lease-duration=6s',
        '--renew-deadline=4s',
        '--retry-period=1s',
      ]),
      OUTSIDE,
    );
    assert.deepEqual(settings.sharding, {
      namespace: 'leases',
      name: 'shop-operator-shards',
      buckets: 32,
      leaseDurationMs: 6_000,
      renewDeadlineMs: 4_000,
      retryPeriodMs: 1_000,
      shardCaches: false,
    });
    const fromEnv = managerSettings(
      load(spec, [], { REGULON_SHARDING: 'true', REGULON_SHARD_CACHES: 'true' }),
      OUTSIDE,
    );
    assert.equal(fromEnv.sharding?.shardCaches, true);
    assert.equal(fromEnv.sharding?.buckets, 16);
    assert.equal(fromEnv.sharding?.namespace, 'ops');
    assert.throws(() => load(spec, ['--sharding-buckets=0']), /sharding-buckets/);
  });

  test('--kube-api-qps of 0 or less is unlimited', () => {
    assert.equal(managerSettings(load(spec, ['--kube-api-qps=0']), OUTSIDE).qps, Infinity);
    assert.equal(managerSettings(load(spec, ['--kube-api-qps=-1']), OUTSIDE).qps, Infinity);
    assert.equal(managerSettings(load(spec, ['--kube-api-qps=2.5']), OUTSIDE).qps, 2.5);
  });

  test("takes a wider binary's config: the other options are ignored", () => {
    const wide = defineOptions({
      ...managerOptions({ leaderElectionId: 'shop-operator' }),
      shopUrl: { flag: 'shop-url', env: 'SHOP_URL', type: 'string', default: 'x', description: 'The shop.' },
    });
    const settings = managerSettings(load(wide, ['--metrics-bind-address=0']), OUTSIDE);
    assert.equal(settings.metricsBindAddress, '0');
    assert.equal('shopUrl' in settings, false);
  });
});
