import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planRounds } from './rounds.ts';

describe('planRounds', () => {
  it('numbers rounds from 1 and reverses the order of every even round', () => {
    assert.deepEqual(planRounds(['regulon', 'controller-runtime'], 3), [
      { run: 1, cells: ['regulon', 'controller-runtime'] },
      { run: 2, cells: ['controller-runtime', 'regulon'] },
      { run: 3, cells: ['regulon', 'controller-runtime'] },
    ]);
  });

  it('continues after the earlier runs, keeping the alternation', () => {
    assert.deepEqual(planRounds(['regulon', 'controller-runtime'], 2, [1, 2, 3, 1, 2, 3]), [
      { run: 4, cells: ['controller-runtime', 'regulon'] },
      { run: 5, cells: ['regulon', 'controller-runtime'] },
    ]);
  });

  it('does not reorder the cells it was given', () => {
    const cells = ['a', 'b'];
    planRounds(cells, 2);
    assert.deepEqual(cells, ['a', 'b']);
  });
});
