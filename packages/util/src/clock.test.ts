import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock, realClock, sleep, timeoutSignal, type Clock } from './clock.ts';

describe('FakeClock', () => {
  it('fires due timers in due-time order and keeps later ones pending', () => {
    const clock = new FakeClock(1000);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('c@30'), 30);
    clock.setTimeout(() => fired.push('a@10'), 10);
    clock.setTimeout(() => fired.push('b@10'), 10);
    clock.setTimeout(() => fired.push('d@50'), 50);

    clock.advance(30);

    assert.deepEqual(fired, ['a@10', 'b@10', 'c@30']);
    assert.equal(clock.now(), 1030);
    assert.equal(clock.pendingTimers(), 1);
  });

  it('fires timers scheduled by fired callbacks when they fall inside the window, at their own due time', () => {
    const clock = new FakeClock();
    const seen: Array<[string, number]> = [];
    clock.setTimeout(() => {
      seen.push(['outer', clock.now()]);
      clock.setTimeout(() => seen.push(['inner', clock.now()]), 5);
      clock.setTimeout(() => seen.push(['late', clock.now()]), 100);
    }, 10);

    clock.advance(20);

    assert.deepEqual(seen, [
      ['outer', 10],
      ['inner', 15],
    ]);
    assert.equal(clock.pendingTimers(), 1);
  });

  it('does not fire a cleared timer', () => {
    const clock = new FakeClock();
    let fired = false;
    const handle = clock.setTimeout(() => (fired = true), 10);
    clock.clearTimeout(handle);
    clock.advance(100);
    assert.equal(fired, false);
    assert.equal(clock.pendingTimers(), 0);
  });

  it('step() jumps to the next timer only', () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    clock.setTimeout(() => fired.push(1), 40);
    clock.setTimeout(() => fired.push(2), 70);

    assert.equal(clock.step(), true);
    assert.deepEqual(fired, [1]);
    assert.equal(clock.now(), 40);
    assert.equal(clock.step(), true);
    assert.equal(clock.now(), 70);
    assert.equal(clock.step(), false);
    assert.equal(clock.now(), 70);
  });

  it('rejects moving time backwards', () => {
    assert.throws(() => new FakeClock().advance(-1), RangeError);
  });
});

describe('realClock', () => {
  it('never goes backwards and fires timers', async () => {
    const before = realClock.now();
    const firedAt = await new Promise<number>((resolve) =>
      realClock.setTimeout(() => resolve(realClock.now()), 1),
    );
    assert.ok(firedAt >= before);
  });
});

describe('sleep', () => {
  it('resolves only once its delay has passed on the given clock', async () => {
    const clock = new FakeClock();
    let done = false;
    const slept = sleep(clock, 100).then(() => (done = true));
    clock.advance(99);
    await Promise.resolve();
    assert.equal(done, false);
    clock.advance(1);
    await slept;
    assert.equal(done, true);
  });

  it('resolves at once, without a timer, for a delay of zero or less', async () => {
    const clock = new FakeClock();
    await sleep(clock, 0);
    await sleep(clock, -5);
    assert.equal(clock.pendingTimers(), 0);
  });

  it("rejects with the signal's reason when aborted, and cancels its timer", async () => {
    const clock = new FakeClock();
    const ac = new AbortController();
    const slept = sleep(clock, 100, ac.signal);
    ac.abort(new Error('stop'));
    await assert.rejects(slept, /stop/);
    assert.equal(clock.pendingTimers(), 0);
  });

  it('rejects, leaving no timer, when the signal aborts while the timer is being scheduled', async () => {
    const fake = new FakeClock();
    const ac = new AbortController();
    const clock: Clock = {
      now: () => fake.now(),
      setTimeout: (fn, ms) => {
        const handle = fake.setTimeout(fn, ms);
        ac.abort(new Error('shutting down'));
        return handle;
      },
      clearTimeout: (handle) => fake.clearTimeout(handle),
    };
    await assert.rejects(sleep(clock, 100, ac.signal), /shutting down/);
    assert.equal(fake.pendingTimers(), 0);
  });

  it('rejects with an AbortError when the signal was already aborted without an Error reason', async () => {
    const ac = new AbortController();
    ac.abort('not an error');
    await assert.rejects(sleep(new FakeClock(), 10, ac.signal), { name: 'AbortError' });
  });
});

describe('timeoutSignal', () => {
  it('aborts with a TimeoutError after its delay on the given clock', () => {
    const clock = new FakeClock();
    const { signal } = timeoutSignal(clock, 50);
    clock.advance(49);
    assert.equal(signal.aborted, false);
    clock.advance(1);
    assert.equal(signal.aborted, true);
    assert.equal((signal.reason as Error).name, 'TimeoutError');
  });

  it('never aborts once cancelled', () => {
    const clock = new FakeClock();
    const { signal, cancel } = timeoutSignal(clock, 50);
    cancel();
    clock.advance(100);
    assert.equal(signal.aborted, false);
  });
});
