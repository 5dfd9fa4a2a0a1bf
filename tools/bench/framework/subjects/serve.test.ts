import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counters } from './serve.ts';

describe('Counters', () => {
  it('reports a wait once `more` further events were counted, and only once', () => {
    const c = new Counters();
    c.event();
    const done: number[] = [];
    c.wait('events', 2, (ms) => done.push(ms));
    c.event();
    assert.equal(done.length, 0);
    c.event();
    c.event();
    assert.equal(done.length, 1);
    assert.ok(done[0]! >= 0);
  });

  it('reports at once a target already reached', () => {
    const c = new Counters();
    c.reconciled();
    c.reconciled();
    let fired = false;
    c.waitUntil('reconciles', 2, () => (fired = true));
    assert.ok(fired);
  });

  it('counts events and reconciles apart', () => {
    const c = new Counters();
    let fired = false;
    c.wait('reconciles', 1, () => (fired = true));
    c.event();
    assert.equal(fired, false);
    c.reconciled();
    assert.equal(fired, true);
  });
});
