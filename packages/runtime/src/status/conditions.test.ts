import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CONDITION_MESSAGE_MAX_BYTES,
  conditionMatches,
  conditionsEqual,
  findCondition,
  isConditionFalse,
  isConditionTrue,
  isValidConditionReason,
  removeCondition,
  setCondition,
  type Condition,
} from './conditions.ts';

const t0 = new Date('2025-01-02T03:04:05.678Z');
const t1 = new Date('2025-01-02T04:00:00.000Z');

describe('setCondition', () => {
  test('adds a new condition with the transition time at second precision', () => {
    const out = setCondition(
      undefined,
      { type: 'Ready', status: 'True', reason: 'Reconciled', message: 'ok', observedGeneration: 3 },
      t0,
    );
    assert.deepEqual(out, [
      {
        type: 'Ready',
        status: 'True',
        observedGeneration: 3,
        lastTransitionTime: '2025-01-02T03:04:05Z',
        reason: 'Reconciled',
        message: 'ok',
      },
    ]);
  });

  test('keeps lastTransitionTime while the status stays; updates reason, message and observedGeneration in place', () => {
    const first = setCondition(
      [],
      { type: 'Ready', status: 'False', reason: 'Pending', message: 'waiting', observedGeneration: 1 },
      t0,
    );
    const second = setCondition(
      first,
      { type: 'Ready', status: 'False', reason: 'StillPending', message: 'still', observedGeneration: 2 },
      t1,
    );
    assert.equal(second[0]?.lastTransitionTime, '2025-01-02T03:04:05Z');
    assert.equal(second[0]?.reason, 'StillPending');
    assert.equal(second[0]?.message, 'still');
    assert.equal(second[0]?.observedGeneration, 2);
  });

  test('moves lastTransitionTime when the status changes', () => {
    const first = setCondition([], { type: 'Ready', status: 'False', reason: 'Pending' }, t0);
    const second = setCondition(first, { type: 'Ready', status: 'True', reason: 'Done' }, t1);
    assert.equal(second[0]?.lastTransitionTime, '2025-01-02T04:00:00Z');
  });

  test('returns a new array and leaves the input untouched; other conditions keep their order', () => {
    const input: Condition[] = [
      { type: 'A', status: 'True', lastTransitionTime: '2020-01-01T00:00:00Z', reason: 'X', message: '' },
      { type: 'B', status: 'True', lastTransitionTime: '2020-01-01T00:00:00Z', reason: 'X', message: '' },
    ];
    const snapshot = structuredClone(input);
    const out = setCondition(input, { type: 'A', status: 'False', reason: 'Y' }, t1);
    assert.deepEqual(input, snapshot);
    assert.notEqual(out, input);
    assert.deepEqual(
      out.map((c) => c.type),
      ['A', 'B'],
    );
    out[1]!.reason = 'Mutated';
    assert.equal(input[1]?.reason, 'X', 'untouched conditions are copies, not shared');
  });

  test('an omitted observedGeneration clears the old one, as apimachinery does', () => {
    const first = setCondition(
      [],
      { type: 'Ready', status: 'True', reason: 'Ok', observedGeneration: 5 },
      t0,
    );
    const second = setCondition(first, { type: 'Ready', status: 'True', reason: 'Ok' }, t0);
    assert.equal('observedGeneration' in second[0]!, false);
  });

  test('throws on a reason that is not CamelCase, and on a bad type or status', () => {
    for (const reason of ['', 'has space', '1Leading', 'trailing,', 'Dash-ed', 'x'.repeat(1025)]) {
      assert.throws(() => setCondition([], { type: 'Ready', status: 'True', reason }), TypeError, reason);
    }
    for (const reason of ['A', 'Ready', 'a_b:c,D', 'Reconcile_Error9']) {
      assert.doesNotThrow(() => setCondition([], { type: 'Ready', status: 'True', reason }), reason);
    }
    assert.throws(() => setCondition([], { type: 'not valid', status: 'True', reason: 'Ok' }), TypeError);
    assert.throws(
      () => setCondition([], { type: 'Ready', status: 'true' as 'True', reason: 'Ok' }),
      TypeError,
    );
    assert.doesNotThrow(() =>
      setCondition([], { type: 'example.com/Ready', status: 'Unknown', reason: 'Ok' }),
    );
  });

  test('cuts an oversized message at the API limit without breaking UTF-8', () => {
    const out = setCondition(
      [],
      { type: 'Ready', status: 'False', reason: 'Failed', message: 'é'.repeat(20_000) },
      t0,
    );
    const bytes = Buffer.byteLength(out[0]!.message);
    assert.ok(bytes <= CONDITION_MESSAGE_MAX_BYTES, `${bytes} bytes`);
    assert.ok(out[0]!.message.endsWith('...'));
    assert.ok(!out[0]!.message.includes('\uFFFD'));
  });
});

describe('lookups', () => {
  const conds = setCondition(
    setCondition([], { type: 'Ready', status: 'True', reason: 'Ok' }, t0),
    { type: 'Degraded', status: 'False', reason: 'Fine' },
    t0,
  );
  test('findCondition / isConditionTrue / isConditionFalse', () => {
    assert.equal(findCondition(conds, 'Ready')?.reason, 'Ok');
    assert.equal(findCondition(conds, 'Missing'), undefined);
    assert.equal(findCondition(undefined, 'Ready'), undefined);
    assert.equal(isConditionTrue(conds, 'Ready'), true);
    assert.equal(isConditionTrue(conds, 'Degraded'), false);
    assert.equal(isConditionFalse(conds, 'Degraded'), true);
    assert.equal(isConditionFalse(conds, 'Missing'), false, 'a missing condition is neither True nor False');
  });
  test('removeCondition', () => {
    assert.deepEqual(
      removeCondition(conds, 'Ready').map((c) => c.type),
      ['Degraded'],
    );
    assert.deepEqual(removeCondition(undefined, 'Ready'), []);
  });
  test('isValidConditionReason', () => {
    assert.equal(isValidConditionReason('AllGood'), true);
    assert.equal(isValidConditionReason('all good'), false);
  });
});

describe('conditionsEqual', () => {
  const base = setCondition(
    [],
    { type: 'Ready', status: 'True', reason: 'Ok', message: 'm', observedGeneration: 1 },
    t0,
  );
  test('re-stating the same condition later is equal: nothing to write', () => {
    assert.equal(
      conditionsEqual(
        base,
        setCondition(
          base,
          { type: 'Ready', status: 'True', reason: 'Ok', message: 'm', observedGeneration: 1 },
          t1,
        ),
      ),
      true,
    );
  });
  test('any relevant field differs: not equal', () => {
    const changes = [
      { type: 'Ready', status: 'False', reason: 'Ok', message: 'm', observedGeneration: 1 },
      { type: 'Ready', status: 'True', reason: 'Other', message: 'm', observedGeneration: 1 },
      { type: 'Ready', status: 'True', reason: 'Ok', message: 'other', observedGeneration: 1 },
      { type: 'Ready', status: 'True', reason: 'Ok', message: 'm', observedGeneration: 2 },
    ] as const;
    for (const c of changes)
      assert.equal(conditionsEqual(base, setCondition(base, c, t1)), false, JSON.stringify(c));
    assert.equal(conditionsEqual(base, [{ ...base[0]!, lastTransitionTime: '2000-01-01T00:00:00Z' }]), false);
    assert.equal(
      conditionsEqual(base, setCondition(base, { type: 'Other', status: 'True', reason: 'Ok' }, t1)),
      false,
    );
  });
  test('order does not matter; undefined equals empty', () => {
    const two = setCondition(base, { type: 'Synced', status: 'True', reason: 'Ok' }, t0);
    assert.equal(conditionsEqual(two, [...two].reverse()), true);
    assert.equal(conditionsEqual(undefined, []), true);
    assert.equal(conditionsEqual(undefined, base), false);
  });
});

describe('conditionMatches', () => {
  const degraded = setCondition(
    [],
    { type: 'Degraded', status: 'True', reason: 'SecretMissing', message: 'Secret s is missing' },
    t0,
  );
  test('true only when the condition already says the same status, reason and message', () => {
    const same = {
      type: 'Degraded',
      status: 'True',
      reason: 'SecretMissing',
      message: 'Secret s is missing',
    } as const;
    assert.equal(conditionMatches(degraded, same), true);
    assert.equal(conditionMatches(degraded, { ...same, status: 'False' }), false);
    assert.equal(conditionMatches(degraded, { ...same, reason: 'ChildConflict' }), false);
    assert.equal(conditionMatches(degraded, { ...same, message: 'Secret t is missing' }), false);
    assert.equal(conditionMatches(degraded, { ...same, type: 'Ready' }), false);
    assert.equal(conditionMatches(undefined, same), false);
  });
  test('compares an oversized message as setCondition stored it', () => {
    const update = { type: 'Degraded', status: 'True', reason: 'Long', message: 'é'.repeat(20_000) } as const;
    assert.equal(conditionMatches(setCondition([], update, t0), update), true);
  });
});
