// Handing the primary Lease to a promotion target against the real API
// server: the compare-and-swap that keeps a promotion from racing a renewal,
// and what the old holder's elector (the agent's, @regulon/runtime's
// LeaderElector) makes of a Lease moved under it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Kinds, KubeClient, retyped } from '@regulon/client';
import { LeaderElector } from '@regulon/runtime';
import { realClock } from '@regulon/util';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import {
  PrimaryLeaseView,
  primaryLeaseName,
  transferPrimaryLease,
  type PrimaryLease,
} from './primary-lease.ts';

describe('transferPrimaryLease', () => {
  let env: TestEnv;
  let client: KubeClient;
  const electors: LeaderElector[] = [];
  before(async () => {
    env = await start();
    client = KubeClient.fromKubeConfig(env.kubeConfig);
  });
  after(async () => {
    await Promise.all(electors.map((e) => e.release()));
    await env.stop();
  });

  const name = primaryLeaseName('orders');
  const leases = () => client.resource(retyped<PrimaryLease>(Kinds.Lease));
  const read = async (namespace: string) => {
    try {
      return await leases().get(name, { namespace });
    } catch {
      return undefined;
    }
  };

  test('creates the Lease for the target when none exists, and only once', async () => {
    const namespace = await env.newNamespace('lease-create');
    const view = new PrimaryLeaseView(realClock, 5_000);
    view.observe(await read(namespace));
    const judged = view.judge();
    assert.ok(
      judged.state === 'free' && judged.resourceVersion === undefined,
      `absent: ${JSON.stringify(judged)}`,
    );
    const t = { namespace, name, judged, leaseDurationSeconds: 15 };
    assert.equal(await transferPrimaryLease(client, { ...t, to: 'orders-0' }), true);
    assert.equal((await read(namespace))?.spec?.holderIdentity, 'orders-0');
    // A second manager, having judged the same absent Lease, loses.
    assert.equal(await transferPrimaryLease(client, { ...t, to: 'orders-1' }), false);
    assert.equal((await read(namespace))?.spec?.holderIdentity, 'orders-0');
  });

  test('moves a judged Lease to the target; a renewal after the judgement makes it refuse', async () => {
    const namespace = await env.newNamespace('lease-move');
    let leading = false;
    const holder = new LeaderElector({
      client,
      namespace,
      name,
      identity: 'orders-0',
      leaseDurationMs: 3_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 500,
      onStartedLeading: () => {
        leading = true;
      },
      onStoppedLeading: () => {
        leading = false;
      },
    });
    electors.push(holder);
    const lost = holder.run().then(
      () => 'stopped',
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );
    await eventually('the holder to lead', () => leading);

    // Judged at one version; the holder renews (every 500 ms) before the write.
    const version = async () => (await read(namespace))?.metadata?.resourceVersion ?? '';
    const stale = await version();
    await eventually('a renewal', async () => (await version()) !== stale);
    const refused = await transferPrimaryLease(client, {
      namespace,
      name,
      to: 'orders-1',
      judged: { state: 'expired', holder: 'orders-0', resourceVersion: stale },
      leaseDurationSeconds: 3,
    });
    assert.equal(refused, false, 'the record changed since the judgement: nothing may be promoted');
    assert.equal((await read(namespace))?.spec?.holderIdentity, 'orders-0');

    // Judged at the current version and written at once: the target holds it,
    // and the old holder's elector sees another holder and stops leading.
    let moved = false;
    for (let i = 0; i < 20 && !moved; i++) {
      const current = await version();
      moved = await transferPrimaryLease(client, {
        namespace,
        name,
        to: 'orders-1',
        judged: { state: 'expired', holder: 'orders-0', resourceVersion: current },
        leaseDurationSeconds: 3,
      });
    }
    assert.ok(moved, 'a write at the judged version went through within 20 tries');
    const after = await read(namespace);
    assert.equal(after?.spec?.holderIdentity, 'orders-1');
    assert.equal(after?.spec?.leaseDurationSeconds, 3, "the holder's duration is kept");
    assert.match(await lost, /now held by orders-1/);
    assert.equal(leading, false);
  });
});
