import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FakeClock } from '@regulon/util';
import type { CommandEnv } from './env.ts';
import { UserError } from './errors.ts';
import { POLL_INTERVAL_MS, waitFor } from './wait.ts';

/** Lets the wait run its check, then fires the sleep it set, until it settles: time moves only as the wait asks. */
async function drive(clock: FakeClock, settled: () => boolean): Promise<void> {
  for (;;) {
    await new Promise((r) => setImmediate(r));
    if (settled() || !clock.step()) return;
  }
}

const envWith = (clock: FakeClock) => ({ clock }) as unknown as CommandEnv;

describe('waitFor', () => {
  test('resolves with the first answer, checking once per interval', async () => {
    const clock = new FakeClock();
    let checks = 0;
    let done = false;
    const waiting = waitFor(envWith(clock), 'x', 60_000, () =>
      Promise.resolve(++checks === 3 ? 'yes' : undefined),
    );
    void waiting.finally(() => (done = true));
    await drive(clock, () => done);
    assert.equal(await waiting, 'yes');
    assert.equal(checks, 3);
    assert.equal(clock.now(), 2 * POLL_INTERVAL_MS);
  });

  test('fails with a UserError naming what it waited for, once the deadline has passed, not before', async () => {
    const clock = new FakeClock();
    let checks = 0;
    let done = false;
    const waiting = waitFor(envWith(clock), 'orders-2 to become the primary', 5_000, () => {
      checks++;
      return Promise.resolve(undefined);
    });
    void waiting.catch(() => undefined).finally(() => (done = true));
    await drive(clock, () => done);
    await assert.rejects(waiting, (err: unknown) => {
      assert.ok(err instanceof UserError);
      assert.equal(err.message, 'timed out after 5 s waiting for orders-2 to become the primary');
      return true;
    });
    // Checks at 0, 2 s, 4 s and at the deadline (5 s: the last sleep is cut to what is left).
    assert.equal(checks, 4);
    assert.equal(clock.now(), 5_000);
  });
});
