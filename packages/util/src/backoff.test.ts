import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backoffDelay } from './backoff.ts';

const delays = (n: number, ...args: [Parameters<typeof backoffDelay>[1], (() => number)?]): number[] =>
  Array.from({ length: n }, (_, attempt) => backoffDelay(attempt, ...args));

describe('backoffDelay', () => {
  it('without jitter, multiplies from the initial delay per attempt and stops at the cap', () => {
    assert.deepEqual(
      delays(10, { initialMs: 5, maxMs: 1000 }),
      [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000],
    );
    assert.deepEqual(delays(4, { initialMs: 1, maxMs: 100, factor: 3 }), [1, 3, 9, 27]);
  });

  it('stays at the cap however many attempts overflow the growth, and a zero delay stays zero', () => {
    assert.equal(backoffDelay(5000, { initialMs: 5, maxMs: 1_000_000 }), 1_000_000);
    assert.equal(backoffDelay(5000, { initialMs: 0, maxMs: 1_000_000 }), 0);
  });

  it('with jitter, draws from [d * (1 - jitter), d]', () => {
    const b = { initialMs: 200, maxMs: 30_000, jitter: 0.5 };
    assert.deepEqual(
      delays(3, b, () => 0),
      [100, 200, 400],
    );
    assert.deepEqual(
      delays(3, b, () => 1),
      [200, 400, 800],
    );
    assert.equal(
      backoffDelay(1, { initialMs: 100, maxMs: 1000, jitter: 1 }, () => 0.25),
      50,
    );
    assert.equal(
      backoffDelay(20, b, () => 0),
      15_000,
      'jitter applies to the capped delay',
    );
  });
});
