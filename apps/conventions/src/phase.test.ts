import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setCondition, type Condition } from '@regulon/runtime';
import { derivePhase } from './phase.ts';

const conds = (...xs: Array<[string, 'True' | 'False' | 'Unknown']>): Condition[] =>
  xs.reduce<Condition[]>((acc, [type, status]) => setCondition(acc, { type, status, reason: 'Test' }), []);

test('the phase follows the conditions and never contradicts Ready', () => {
  assert.equal(derivePhase([], false), 'Pending');
  assert.equal(derivePhase(conds(['Ready', 'Unknown']), false), 'Pending');
  assert.equal(derivePhase(conds(['Ready', 'False']), false), 'Provisioning');
  assert.equal(derivePhase(conds(['Ready', 'False']), true), 'Updating');
  assert.equal(derivePhase(conds(['Ready', 'True'], ['Degraded', 'False']), true), 'Ready');
  assert.equal(derivePhase(conds(['Ready', 'False'], ['Degraded', 'True']), true), 'Degraded');
  for (const everReady of [false, true]) {
    for (const r of ['True', 'False', 'Unknown'] as const) {
      const phase = derivePhase(conds(['Ready', r], ['Degraded', 'False']), everReady);
      assert.equal(phase === 'Ready', r === 'True', `Ready=${r} gave ${phase}`);
    }
  }
});
