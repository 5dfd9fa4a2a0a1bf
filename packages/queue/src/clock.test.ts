import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock, realClock } from './clock.ts';

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
