import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Fifo } from './fifo.ts';

describe('Fifo', () => {
  it('keeps first-in-first-out order across wrap-around and growth', () => {
    const fifo = new Fifo<number>();
    const expected: number[] = [];
    let next = 0;
    // Interleave pushes and shifts so the head wraps before the buffer has to grow.
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 7; i++) {
        fifo.push(next);
        expected.push(next++);
      }
      for (let i = 0; i < 5; i++) assert.equal(fifo.shift(), expected.shift());
    }
    assert.equal(fifo.length, expected.length);
    while (expected.length > 0) assert.equal(fifo.shift(), expected.shift());
    assert.equal(fifo.shift(), undefined);
    assert.equal(fifo.length, 0);
  });
});
